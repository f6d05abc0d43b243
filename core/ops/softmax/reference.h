// The walk the softmax and log_softmax tests' references share, written
// apart from SoftmaxAttrs::SplitOf: `shape` viewed as [outer, len, inner]
// around `axis` (negative counts from the end; rank 0 is one slice of one
// element), and fn(at, len) called once per slice, at(k) being the flat
// index of its k-th element.
#ifndef AI3_CORE_OPS_SOFTMAX_REFERENCE_H_
#define AI3_CORE_OPS_SOFTMAX_REFERENCE_H_

#include <cstdint>

#include "core/tensor.h"

namespace ai3 {
namespace testing {

template <class Fn>
void ForEachReferenceSlice(const Shape& shape, int64_t axis, Fn fn) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  int64_t outer = 1, len = 1, inner = 1;
  if (rank > 0) {
    const int64_t a = axis < 0 ? axis + rank : axis;
    for (int64_t i = 0; i < a; ++i) outer *= shape[i];
    len = shape[a];
    for (int64_t i = a + 1; i < rank; ++i) inner *= shape[i];
  }
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      fn([&](int64_t k) { return (o * len + k) * inner + i; }, len);
    }
  }
}

}  // namespace testing
}  // namespace ai3

#endif  // AI3_CORE_OPS_SOFTMAX_REFERENCE_H_
