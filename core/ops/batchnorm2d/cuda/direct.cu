// batchnorm2d "direct" on CUDA: as on the CPU, Prepare folds the four
// parameter vectors into one scale and shift per channel
// (BatchNorm2dAttrs::FoldScaleShift) and uploads them; a forward pass is one
// fused multiply-add per element. The channel of element i follows from the
// layout: (i / (h*w)) % c for NCHW, i % c for NHWC. A fused clamp (ReLU)
// runs after it (cuda::ApplyActivation); fused functions are CPU only.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/buffer.h"
#include "core/cuda/activation.h"
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
    const Buffer folded = attrs.FoldScaleShift(params);
    folded_ = cuda::Upload(folded.data(), folded.size());
  }

 protected:
  void RunOnDevice(const Tensor& input, const Tensor& output,
                   cudaStream_t stream) override {
    const ImageDims d = ChannelDims(input.shape, attrs_.layout);
    const int64_t n = input.numel();
    DispatchFloat(attrs_.dtype, [&](auto zero) {
      using T = decltype(zero);
      const T* scale = folded_.as<const T>();
      ScaleShift<T><<<cuda::BlocksFor(n), cuda::kThreads, 0, stream>>>(
          input.data_as<const T>(), output.data_as<T>(), n, d.c, d.h * d.w,
          attrs_.layout == Layout::kNHWC, scale, scale + d.c);
    });
    cuda::CheckLaunch("batchnorm2d");
    cuda::ApplyActivation(attrs_.activation, attrs_.dtype, output.data, n,
                          stream);
  }

 private:
  BatchNorm2dAttrs attrs_;
  cuda::DeviceBuffer folded_;  // scale[c] then shift[c]
};

class DirectAlgorithm : public KernelAlgorithm<BatchNorm2dAttrs, DirectKernel> {
 public:
  std::string WhyNot(const BatchNorm2dAttrs& a) const override {
    return a.activation.WhyNotClampOnly();  // cuda::ApplyActivation clamps
  }
};

AI3_REGISTER_ALGORITHM(BatchNorm2dAttrs, "direct", Device::kCUDA,
                       DirectAlgorithm);

}  // namespace
}  // namespace ai3
