// What the CUDA pooling kernels share: one thread per output element, its
// (n, c, oh, ow) recovered from a flat index in the output's layout, and a
// CudaKernel running a typed launch on the input's dtype. Included by the
// pooling .cu files only.
#ifndef AI3_CORE_OPS_POOL2D_CUDA_POOL_KERNEL_H_
#define AI3_CORE_OPS_POOL2D_CUDA_POOL_KERNEL_H_

#include <cstdint>

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
  OutputIndex o;
  if (nhwc) {
    o.c = i % c;
    i /= c;
    o.ow = i % ow;
    i /= ow;
    o.oh = i % oh;
    o.n = i / oh;
  } else {
    o.ow = i % ow;
    i /= ow;
    o.oh = i % oh;
    i /= oh;
    o.c = i % c;
    o.n = i / c;
  }
  return o;
}

// PoolTapRange (core/ops/pool2d/pool2d.h) for device code: the taps
// [*lo, *hi) of a window starting at `start` that land inside [0, size).
__device__ inline void TapRange(int64_t start, int64_t kernel,
                                int64_t dilation, int64_t size, int64_t* lo,
                                int64_t* hi) {
  *lo = start >= 0 ? 0 : (-start + dilation - 1) / dilation;
  *hi = start >= size ? 0 : (size - 1 - start) / dilation + 1;
  if (*hi > kernel) *hi = kernel;
  if (*hi < *lo) *hi = *lo;
}

}  // namespace cuda
}  // namespace ai3

#endif  // AI3_CORE_OPS_POOL2D_CUDA_POOL_KERNEL_H_
