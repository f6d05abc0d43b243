// adaptiveavgpool2d "direct" on CUDA: one thread per output element averages
// input rows floor(i * h / oh) .. ceil((i + 1) * h / oh) - 1 and likewise
// for columns, PyTorch's adaptive windows.
#include <cstdint>
#include <memory>
#include <vector>

#include "core/cuda/kernel.h"
#include "core/math/dispatch.h"
#include "core/ops/pool2d/cuda/pool_kernel.h"
#include "core/ops/pool2d/pool2d.h"

namespace ai3 {
namespace {

template <typename T>
__global__ void AdaptiveAvgPool(ImageDims in, int64_t oh, int64_t ow,
                                ImageStrides xs, ImageStrides ys, bool nhwc,
                                const T* __restrict__ x, T* __restrict__ y) {
  const int64_t total = in.n * in.c * oh * ow;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const cuda::OutputIndex o = cuda::OutputIndexOf(i, in.c, oh, ow, nhwc);
    const int64_t h0 = o.oh * in.h / oh, h1 = ((o.oh + 1) * in.h + oh - 1) / oh;
    const int64_t w0 = o.ow * in.w / ow, w1 = ((o.ow + 1) * in.w + ow - 1) / ow;
    const T* xp = x + o.n * xs.n + o.c * xs.c;
    T sum = 0;
    for (int64_t ih = h0; ih < h1; ++ih) {
      for (int64_t iw = w0; iw < w1; ++iw) sum += xp[ih * xs.h + iw * xs.w];
    }
    y[o.n * ys.n + o.c * ys.c + o.oh * ys.h + o.ow * ys.w] =
        sum / static_cast<T>((h1 - h0) * (w1 - w0));
  }
}

class DirectKernel : public cuda::CudaKernel {
 public:
  explicit DirectKernel(const AdaptiveAvgPool2dAttrs& attrs) : attrs_(attrs) {}

 protected:
  void RunOnDevice(const Tensor& input, const Tensor& output,
                   cudaStream_t stream) override {
    const ImageDims in = ImageDimsOf(input.shape, attrs_.layout);
    const ImageDims out{in.n, in.c, attrs_.output_h, attrs_.output_w};
    const int64_t total = output.numel();
    DispatchFloat(input.dtype, [&](auto zero) {
      using T = decltype(zero);
      AdaptiveAvgPool<T><<<cuda::BlocksFor(total), cuda::kThreads, 0,
                           stream>>>(
          in, out.h, out.w, ImageStridesOf(in, attrs_.layout),
          ImageStridesOf(out, attrs_.layout), attrs_.layout == Layout::kNHWC,
          input.data_as<const T>(), output.data_as<T>());
    });
    cuda::CheckLaunch("adaptiveavgpool2d");
  }

 private:
  AdaptiveAvgPool2dAttrs attrs_;
};

using Direct = KernelAlgorithm<AdaptiveAvgPool2dAttrs, DirectKernel>;

AI3_REGISTER_ALGORITHM(AdaptiveAvgPool2dAttrs, "direct", Device::kCUDA,
                       Direct);

}  // namespace
}  // namespace ai3
