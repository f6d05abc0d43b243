// batchnorm2d "direct" on CUDA: as on the CPU, Prepare folds the four
// parameter vectors into one scale and shift per channel (in double, then
// rounded to the layer's dtype) and uploads them; a forward pass is one fused
// multiply-add per element. The channel of element i follows from the
// layout: (i / (h*w)) % c for NCHW, i % c for NHWC.
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/buffer.h"
#include "core/cuda/kernel.h"
#include "core/math/dispatch.h"
#include "core/ops/batchnorm2d/batchnorm2d.h"

namespace ai3 {
namespace {

template <typename T>
__global__ void ScaleShift(const T* __restrict__ x, T* __restrict__ y,
                           int64_t n, int64_t c, int64_t hw, bool nhwc,
                           const T* __restrict__ scale,
                           const T* __restrict__ shift) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t k = nhwc ? i % c : (i / hw) % c;
    y[i] = x[i] * scale[k] + shift[k];
  }
}

class DirectKernel : public cuda::CudaKernel {
 public:
  DirectKernel(const BatchNorm2dAttrs& attrs, const std::vector<Tensor>& params)
      : attrs_(attrs) {
    const int64_t c = attrs.channels;
    Buffer folded(2 * c * SizeOf(attrs.dtype));
    DispatchFloat(attrs.dtype, [&](auto zero) {
      using T = decltype(zero);
      const T* gamma = params[BatchNorm2dAttrs::kWeight].data_as<const T>();
      const T* beta = params[BatchNorm2dAttrs::kBias].data_as<const T>();
      const T* mean = params[BatchNorm2dAttrs::kRunningMean].data_as<const T>();
      const T* var = params[BatchNorm2dAttrs::kRunningVar].data_as<const T>();
      T* scale = folded.as<T>();
      T* shift = scale + c;
      for (int64_t k = 0; k < c; ++k) {
        const double s = double(gamma[k]) / std::sqrt(double(var[k]) + attrs.eps);
        scale[k] = static_cast<T>(s);
        shift[k] = static_cast<T>(double(beta[k]) - double(mean[k]) * s);
      }
    });
    folded_ = cuda::Upload(folded.data(), folded.size());
  }

 protected:
  void RunOnDevice(const Tensor& input, const Tensor& output,
                   cudaStream_t stream) override {
    const ImageDims d = ImageDimsOf(input.shape, attrs_.layout);
    const int64_t n = input.numel();
    DispatchFloat(attrs_.dtype, [&](auto zero) {
      using T = decltype(zero);
      const T* scale = folded_.as<const T>();
      ScaleShift<T><<<cuda::BlocksFor(n), cuda::kThreads, 0, stream>>>(
          input.data_as<const T>(), output.data_as<T>(), n, d.c, d.h * d.w,
          attrs_.layout == Layout::kNHWC, scale, scale + d.c);
    });
    cuda::CheckLaunch("batchnorm2d");
  }

 private:
  BatchNorm2dAttrs attrs_;
  cuda::DeviceBuffer folded_;  // scale[c] then shift[c]
};

class Direct : public Algorithm<BatchNorm2dAttrs> {
 public:
  std::unique_ptr<Kernel> Prepare(
      const BatchNorm2dAttrs& attrs,
      const std::vector<Tensor>& params) const override {
    return std::make_unique<DirectKernel>(attrs, params);
  }
};

AI3_REGISTER_ALGORITHM(BatchNorm2dAttrs, "direct", Device::kCUDA, Direct);

}  // namespace
}  // namespace ai3
