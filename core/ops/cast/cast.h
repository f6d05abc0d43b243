// cast: ONNX Cast / torch .to(dtype), .float(), .long(), .bool() — the input
// converted elementwise to the dtype `to` (float32, float64, int64, bool).
// Float to int64 truncates toward zero, as ONNX (and C) do; NaN and values
// outside int64's range give INT64_MIN, what x86's conversion (and so torch
// and ONNX Runtime on x86) gives, rather than C++'s undefined behaviour. To
// bool: x != 0 (NaN is true); from bool: 0 or 1.
#ifndef AI3_CORE_OPS_CAST_CAST_H_
#define AI3_CORE_OPS_CAST_CAST_H_

#include <vector>

#include "core/tensor.h"

namespace ai3 {

struct CastAttrs {
  static constexpr char kOp[] = "cast";
  static constexpr bool kAnyDType = true;

  DType to = DType::kFloat32;

  void Validate(const std::vector<Tensor>& params) const;
  Shape OutputShape(const Tensor& input) const;
  DType OutputDType(const Tensor&) const { return to; }
};

}  // namespace ai3

#endif  // AI3_CORE_OPS_CAST_CAST_H_
