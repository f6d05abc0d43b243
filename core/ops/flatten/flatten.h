// flatten: merges dimensions start_dim..end_dim (inclusive) of the input into
// one, as torch.flatten / nn.Flatten. Negative dims count from the end; a
// rank-0 input is treated as rank 1, so it flattens to shape (1,). No weights;
// the dtype is the input's.
#ifndef AI3_CORE_OPS_FLATTEN_FLATTEN_H_
#define AI3_CORE_OPS_FLATTEN_FLATTEN_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "core/ops/backward.h"
#include "core/tensor.h"

namespace ai3 {

struct FlattenAttrs {
  static constexpr char kOp[] = "flatten";

  int64_t start_dim = 1;  // nn.Flatten's defaults
  int64_t end_dim = -1;

  // flatten takes no parameter tensors.
  void Validate(const std::vector<Tensor>& params) const;
  // Checks start_dim and end_dim against the input's rank.
  Shape OutputShape(const Tensor& input) const;
  // Always 0: flattening keeps the elements in their order (core/layer.h).
  std::optional<int64_t> ViewOffset(const Shape& input) const {
    (void)input;
    return 0;
  }
};

// flatten_backward_data: dy's bytes in x's shape (flattening changes only
// the shape), backward_direct.cc.
struct FlattenBackwardDataAttrs : DataGradientAttrs<FlattenAttrs> {
  static constexpr char kOp[] = "flatten_backward_data";
};

}  // namespace ai3

#endif  // AI3_CORE_OPS_FLATTEN_FLATTEN_H_
