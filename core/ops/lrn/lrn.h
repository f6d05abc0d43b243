// lrn: local response normalisation across channels (nn.LocalResponseNorm,
// F.local_response_norm, ONNX LRN; AlexNet, ZFNet, Inception v1):
//   y[n, c, s] = x[n, c, s] / (bias + alpha / size * sum of x[n, c', s]^2
//                              over c' in [c - before, c - before + size),
//                              clipped to [0, C))^beta
// `before` is where the window starts: ONNX's floor((size - 1) / 2) (its
// default), torch's size / 2 (they differ for even sizes). The input is
// (N, C, *) (NCHW, rank >= 3, as torch takes it) or (N, *, C) (NHWC).
#ifndef AI3_CORE_OPS_LRN_LRN_H_
#define AI3_CORE_OPS_LRN_LRN_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "core/ops/backward.h"
#include "core/tensor.h"

namespace ai3 {

struct LrnAttrs {
  static constexpr char kOp[] = "lrn";

  int64_t size = 1;
  double alpha = 1e-4, beta = 0.75, bias = 1.0;
  int64_t before = 0;  // set from size unless given
  Layout layout = Layout::kNCHW;

  // No parameter tensors; size >= 1, 0 <= before < size, finite alpha,
  // beta and bias.
  void Validate(const std::vector<Tensor>& params) const;
  Shape OutputShape(const Tensor& input) const;
};

// lrn_backward_data: x's shape (backward_direct.cc). With d_c the divisor's
// base bias + alpha / size * (window sum of x^2) of channel c, so that
// y_c = x_c d_c^-beta:
//   dx_i = dy_i d_i^-beta
//          - 2 alpha beta / size * x_i * sum of dy_j y_j / d_j
//            over the channels j whose window holds i.
struct LrnBackwardDataAttrs : DataGradientAttrs<LrnAttrs> {
  static constexpr char kOp[] = "lrn_backward_data";
};

}  // namespace ai3

#endif  // AI3_CORE_OPS_LRN_LRN_H_
