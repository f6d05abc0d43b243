// The one index helper the conv2d algorithms' loops share: which outputs of
// a row (or column) read inside the input for one kernel tap.
//
// In an unnamed namespace like the kernel headers (see
// implicit_gemm_kernel.h): the AVX-512 translation units include it too, and
// each keeps its own copy.
#ifndef AI3_CORE_OPS_CONV2D_CONV2D_RANGES_H_
#define AI3_CORE_OPS_CONV2D_CONV2D_RANGES_H_

#include <algorithm>
#include <cstdint>

namespace ai3 {
namespace {

// Output indices [lo, hi) among `count` whose input index
// o*stride + offset is in [0, size).
inline void ValidRange(int64_t offset, int64_t stride, int64_t size,
                       int64_t count, int64_t* lo, int64_t* hi) {
  *lo = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  *hi = size - 1 - offset < 0 ? 0 : (size - 1 - offset) / stride + 1;
  *lo = std::min(*lo, count);
  *hi = std::min(*hi, count);
  if (*hi < *lo) *hi = *lo;
}

}  // namespace
}  // namespace ai3

#endif  // AI3_CORE_OPS_CONV2D_CONV2D_RANGES_H_
