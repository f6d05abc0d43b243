// gelu: the Gaussian error linear unit elementwise (nn.GELU, F.gelu; ONNX
// Gelu; keras.activations.gelu):
//   approximate == kNone: y = x * Phi(x) = x/2 * erfc(-x / sqrt(2))
//   approximate == kTanh: y = x/2 * (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
// No weights; any shape; float32 or float64 from the input.
#ifndef AI3_CORE_OPS_GELU_GELU_H_
#define AI3_CORE_OPS_GELU_GELU_H_

#include "core/ops/elementwise.h"

namespace ai3 {

struct GeluAttrs : ElementwiseAttrs<GeluAttrs> {
  static constexpr char kOp[] = "gelu";
  enum class Approximate { kNone, kTanh };
  Approximate approximate = Approximate::kNone;
};

}  // namespace ai3

#endif  // AI3_CORE_OPS_GELU_GELU_H_
