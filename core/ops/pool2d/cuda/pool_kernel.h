// What the CUDA pooling kernels share: one thread per output element, its
// (n, c, oh, ow) recovered from a flat index in the output's layout, and a
// CudaKernel launching it on the input's dtype; each pool's file holds only
// the value of one output element. Included by the pooling .cu files only.
#ifndef AI3_CORE_OPS_POOL2D_CUDA_POOL_KERNEL_H_
#define AI3_CORE_OPS_POOL2D_CUDA_POOL_KERNEL_H_

#include <cstdint>

#include "core/cuda/kernel.h"
#include "core/math/dispatch.h"
#include "core/ops/pool2d/pool2d.h"
#include "core/registry.h"
#include "core/tensor.h"

namespace ai3 {
namespace cuda {

struct OutputIndex {
  int64_t n, c, oh, ow;
};

// The output position of flat element i of an (n, c, oh, ow) output laid out
// as `nhwc` says.
__device__ inline OutputIndex OutputIndexOf(int64_t i, int64_t c, int64_t oh,
                                            int64_t ow, bool nhwc) {
  // The three inner dims, fastest first: (c, ow, oh) in NHWC, (ow, oh, c)
  // in NCHW; n is outermost in both.
  const int64_t d0 = nhwc ? c : ow, d1 = nhwc ? ow : oh, d2 = nhwc ? oh : c;
  const int64_t i0 = i % d0, i1 = (i / d0) % d1, rest = i / d0 / d1;
  const int64_t i2 = rest % d2;
  OutputIndex o;
  o.n = rest / d2;
  o.c = nhwc ? i0 : i2;
  o.ow = nhwc ? i1 : i0;
  o.oh = nhwc ? i2 : i1;
  return o;
}

// One thread per output element (a grid-stride loop): element o of the
// output is window(g, o, xp), xp the input at image o.n, channel o.c.
template <typename T, class Window>
__global__ void PoolEach(Pool2dGeometry g, bool nhwc, Window window,
                         const T* __restrict__ x, T* __restrict__ y) {
  const int64_t total = g.n * g.c * g.oh * g.ow;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const OutputIndex o = OutputIndexOf(i, g.c, g.oh, g.ow, nhwc);
    y[o.n * g.ys.n + o.c * g.ys.c + o.oh * g.ys.h + o.ow * g.ys.w] =
        window(g, o, x + o.n * g.xs.n + o.c * g.xs.c);
  }
}

// The CUDA "direct" kernel of a pool: `Window`, built from the layer's
// attributes on the host and passed to the GPU by value, has
//   template <typename T>
//   __device__ T operator()(const Pool2dGeometry&, const OutputIndex&,
//                           const T* xp) const;
// the value of one output element.
template <class Attrs, class Window>
class PoolKernel : public CudaKernel {
 public:
  explicit PoolKernel(const Attrs& attrs) : attrs_(attrs) {}

 protected:
  void RunOnDevice(const Tensor& input, const Tensor& output,
                   cudaStream_t stream) override {
    const Pool2dGeometry g = Pool2dGeometryOf(attrs_, input.shape);
    const int64_t total = output.numel();
    DispatchFloat(input.dtype, [&](auto zero) {
      using T = decltype(zero);
      PoolEach<T><<<BlocksFor(total), kThreads, 0, stream>>>(
          g, attrs_.layout == Layout::kNHWC, Window(attrs_),
          input.data_as<const T>(), output.data_as<T>());
    });
    CheckLaunch(Attrs::kOp);
  }

 private:
  Attrs attrs_;
};

template <class Attrs, class Window>
using PoolAlgorithm = KernelAlgorithm<Attrs, PoolKernel<Attrs, Window>>;

}  // namespace cuda
}  // namespace ai3

#endif  // AI3_CORE_OPS_POOL2D_CUDA_POOL_KERNEL_H_
