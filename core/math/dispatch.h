// Running a function template on the dtype of a tensor.
#ifndef AI3_CORE_MATH_DISPATCH_H_
#define AI3_CORE_MATH_DISPATCH_H_

#include <cstdint>
#include <utility>

#include "core/tensor.h"

namespace ai3 {

// Calls fn(T{}) with T = float or double according to `dtype`.
template <typename Fn>
auto DispatchFloat(DType dtype, Fn&& fn) {
  if (dtype == DType::kFloat64) return std::forward<Fn>(fn)(double{});
  return std::forward<Fn>(fn)(float{});
}

// Calls fn(T{}) with T the C++ type of any dtype: float, double, int64_t or
// bool (the ops that take every dtype: cast, where, comparisons).
template <typename Fn>
auto DispatchAnyDType(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kFloat64:
      return std::forward<Fn>(fn)(double{});
    case DType::kInt64:
      return std::forward<Fn>(fn)(int64_t{});
    case DType::kBool:
      return std::forward<Fn>(fn)(bool{});
    case DType::kFloat32:
      break;
  }
  return std::forward<Fn>(fn)(float{});
}

}  // namespace ai3

#endif  // AI3_CORE_MATH_DISPATCH_H_
