// log_softmax along one axis (F.log_softmax, ONNX LogSoftmax):
//   y = x - m - log(sum_j exp(x_j - m)),  m the max over the axis,
// computed directly rather than as log(softmax(x)), which would lose the
// small probabilities to underflow. Same attributes as softmax: `axis` in
// memory order (negative counts from the end); no weights; any rank.
#ifndef AI3_CORE_OPS_LOG_SOFTMAX_LOG_SOFTMAX_H_
#define AI3_CORE_OPS_LOG_SOFTMAX_LOG_SOFTMAX_H_

#include <vector>

#include "core/errors.h"
#include "core/ops/softmax/softmax.h"

namespace ai3 {

struct LogSoftmaxAttrs : SoftmaxAttrs {
  static constexpr char kOp[] = "log_softmax";

  void Validate(const std::vector<Tensor>& params) const {
    if (!params.empty()) {
      Fail(ErrorKind::kInvalidArgument,
           "log_softmax takes no parameter tensors, got ", params.size());
    }
  }
};

// log_softmax_backward_data: dx = dy - exp(y) sum over the axis of dy, from
// y as torch's _log_softmax_backward_data.
struct LogSoftmaxBackwardDataAttrs : DataGradientAttrs<LogSoftmaxAttrs> {
  static constexpr char kOp[] = "log_softmax_backward_data";
};

}  // namespace ai3

#endif  // AI3_CORE_OPS_LOG_SOFTMAX_LOG_SOFTMAX_H_
