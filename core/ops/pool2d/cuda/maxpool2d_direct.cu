// maxpool2d "direct" on CUDA: one thread per output element scans its
// window's in-bounds taps (cuda::TapRange: the CPU's PoolTapRange), keeping NaN
// once seen, as PyTorch does. Both layouts, through the element strides.
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "core/cuda/kernel.h"
#include "core/math/dispatch.h"
#include "core/ops/pool2d/cuda/pool_kernel.h"
#include "core/ops/pool2d/pool2d.h"

namespace ai3 {
namespace {

template <typename T>
__global__ void MaxPool(Pool2dGeometry g, bool nhwc, const T* __restrict__ x,
                        T* __restrict__ y) {
  const int64_t total = g.n * g.c * g.oh * g.ow;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const cuda::OutputIndex o = cuda::OutputIndexOf(i, g.c, g.oh, g.ow, nhwc);
    const int64_t h0 = o.oh * g.sh - g.pt, w0 = o.ow * g.sw - g.pl;
    int64_t r0, r1, s0, s1;
    cuda::TapRange(h0, g.kh, g.dh, g.h, &r0, &r1);
    cuda::TapRange(w0, g.kw, g.dw, g.w, &s0, &s1);
    const T* xp = x + o.n * g.xs.n + o.c * g.xs.c;
    T m = -std::numeric_limits<T>::infinity();
    for (int64_t r = r0; r < r1; ++r) {
      for (int64_t s = s0; s < s1; ++s) {
        const T v = xp[(h0 + r * g.dh) * g.xs.h + (w0 + s * g.dw) * g.xs.w];
        if (v > m || isnan(v)) m = v;
      }
    }
    y[o.n * g.ys.n + o.c * g.ys.c + o.oh * g.ys.h + o.ow * g.ys.w] = m;
  }
}

class DirectKernel : public cuda::CudaKernel {
 public:
  explicit DirectKernel(const MaxPool2dAttrs& attrs) : attrs_(attrs) {}

 protected:
  void RunOnDevice(const Tensor& input, const Tensor& output,
                   cudaStream_t stream) override {
    const Pool2dGeometry g = Pool2dGeometryOf(attrs_, input.shape);
    const int64_t total = output.numel();
    DispatchFloat(input.dtype, [&](auto zero) {
      using T = decltype(zero);
      MaxPool<T><<<cuda::BlocksFor(total), cuda::kThreads, 0, stream>>>(
          g, attrs_.layout == Layout::kNHWC, input.data_as<const T>(),
          output.data_as<T>());
    });
    cuda::CheckLaunch("maxpool2d");
  }

 private:
  MaxPool2dAttrs attrs_;
};

using Direct = KernelAlgorithm<MaxPool2dAttrs, DirectKernel>;

AI3_REGISTER_ALGORITHM(MaxPool2dAttrs, "direct", Device::kCUDA, Direct);

}  // namespace
}  // namespace ai3
