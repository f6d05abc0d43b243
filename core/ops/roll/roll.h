// roll: torch.roll(x, shifts, dims) — elements shifted cyclically along
// each of `axes` by the matching entry of `shifts` (positive: towards
// higher indices); an axis given twice shifts by the sum. Axes in memory
// order, negative from the end; `shifts` and `axes` have one length >= 1.
// No weights. (Swin's shifted windows.)
#ifndef AI3_CORE_OPS_ROLL_ROLL_H_
#define AI3_CORE_OPS_ROLL_ROLL_H_

#include <cstdint>
#include <vector>

#include "core/ops/backward.h"
#include "core/tensor.h"

namespace ai3 {

struct RollAttrs {
  static constexpr char kOp[] = "roll";

  std::vector<int64_t> shifts;
  std::vector<int64_t> axes;

  void Validate(const std::vector<Tensor>& params) const;
  Shape OutputShape(const Tensor& input) const;
  // The shift of each dimension of `shape`, in [0, size); throws kShape for
  // an axis out of range.
  std::vector<int64_t> ShiftPerDim(const Shape& shape) const;
};

// roll_backward_data: dy rolled back, by the negated shifts (direct.cc).
struct RollBackwardDataAttrs : DataGradientAttrs<RollAttrs> {
  static constexpr char kOp[] = "roll_backward_data";
};

}  // namespace ai3

#endif  // AI3_CORE_OPS_ROLL_ROLL_H_
