// Running a function template on the dtype of a tensor.
#ifndef AI3_CORE_MATH_DISPATCH_H_
#define AI3_CORE_MATH_DISPATCH_H_

#include <utility>

#include "core/tensor.h"

namespace ai3 {

// Calls fn(T{}) with T = float or double according to `dtype`.
template <typename Fn>
auto DispatchFloat(DType dtype, Fn&& fn) {
  if (dtype == DType::kFloat64) return std::forward<Fn>(fn)(double{});
  return std::forward<Fn>(fn)(float{});
}

}  // namespace ai3

#endif  // AI3_CORE_MATH_DISPATCH_H_
