// avgpool2d "direct" on CUDA: one thread per output element sums its
// window's in-bounds elements and divides as PyTorch divides (the CPU
// kernel's rule): by divisor_override if set; else, with count_include_pad,
// by the window clipped to the padded input; else by the in-bounds count.
#include <algorithm>
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
__global__ void AvgPool(Pool2dGeometry g, bool nhwc, bool count_include_pad,
                        int64_t divisor_override, const T* __restrict__ x,
                        T* __restrict__ y) {
  const int64_t total = g.n * g.c * g.oh * g.ow;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const cuda::OutputIndex o = cuda::OutputIndexOf(i, g.c, g.oh, g.ow, nhwc);
    const int64_t hs = o.oh * g.sh - g.pt, ws = o.ow * g.sw - g.pl;
    const int64_t he = min(hs + g.kh, g.h + g.pb), we = min(ws + g.kw, g.w + g.pr);
    const int64_t h0 = max(hs, int64_t(0)), h1 = min(he, g.h);
    const int64_t w0 = max(ws, int64_t(0)), w1 = min(we, g.w);
    const T* xp = x + o.n * g.xs.n + o.c * g.xs.c;
    T sum = 0;
    for (int64_t ih = h0; ih < h1; ++ih) {
      for (int64_t iw = w0; iw < w1; ++iw) sum += xp[ih * g.xs.h + iw * g.xs.w];
    }
    const int64_t divisor = divisor_override > 0 ? divisor_override
                            : count_include_pad  ? (he - hs) * (we - ws)
                                                 : (h1 - h0) * (w1 - w0);
    y[o.n * g.ys.n + o.c * g.ys.c + o.oh * g.ys.h + o.ow * g.ys.w] =
        sum / static_cast<T>(divisor);
  }
}

class DirectKernel : public cuda::CudaKernel {
 public:
  explicit DirectKernel(const AvgPool2dAttrs& attrs) : attrs_(attrs) {}

 protected:
  void RunOnDevice(const Tensor& input, const Tensor& output,
                   cudaStream_t stream) override {
    const Pool2dGeometry g = Pool2dGeometryOf(attrs_, input.shape);
    const int64_t total = output.numel();
    DispatchFloat(input.dtype, [&](auto zero) {
      using T = decltype(zero);
      AvgPool<T><<<cuda::BlocksFor(total), cuda::kThreads, 0, stream>>>(
          g, attrs_.layout == Layout::kNHWC, attrs_.count_include_pad,
          attrs_.divisor_override, input.data_as<const T>(),
          output.data_as<T>());
    });
    cuda::CheckLaunch("avgpool2d");
  }

 private:
  AvgPool2dAttrs attrs_;
};

using Direct = KernelAlgorithm<AvgPool2dAttrs, DirectKernel>;

AI3_REGISTER_ALGORITHM(AvgPool2dAttrs, "direct", Device::kCUDA, Direct);

}  // namespace
}  // namespace ai3
