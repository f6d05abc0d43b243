// adaptivemaxpool2d: nn.AdaptiveMaxPool2d — output (i, j) is the max over
// input rows floor(i * H / OH) to ceil((i + 1) * H / OH) - 1 and the
// matching columns; NaN propagates, as in PyTorch. Attributes as
// adaptiveavgpool2d's (output size, layout); rank-4 input; no weights.
#ifndef AI3_CORE_OPS_ADAPTIVEMAXPOOL2D_ADAPTIVEMAXPOOL2D_H_
#define AI3_CORE_OPS_ADAPTIVEMAXPOOL2D_ADAPTIVEMAXPOOL2D_H_

#include <vector>

#include "core/ops/backward.h"
#include "core/ops/pool2d/pool2d.h"

namespace ai3 {

struct AdaptiveMaxPool2dAttrs : AdaptiveAvgPool2dAttrs {
  static constexpr char kOp[] = "adaptivemaxpool2d";

  void Validate(const std::vector<Tensor>& params) const {
    PoolNoParams(kOp, params);
    ValidateOutputSize();
  }
};

// adaptivemaxpool2d_backward_data: each output's gradient to its window's
// first maximum, as PyTorch (core/ops/pool2d/pool2d_backward.h).
struct AdaptiveMaxPool2dBackwardDataAttrs
    : DataGradientAttrs<AdaptiveMaxPool2dAttrs> {
  static constexpr char kOp[] = "adaptivemaxpool2d_backward_data";
};

}  // namespace ai3

#endif  // AI3_CORE_OPS_ADAPTIVEMAXPOOL2D_ADAPTIVEMAXPOOL2D_H_
