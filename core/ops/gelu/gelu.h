// gelu: the Gaussian error linear unit elementwise (nn.GELU, F.gelu; ONNX
// Gelu; keras.activations.gelu):
//   approximate == kNone: y = x * Phi(x) = x/2 * erfc(-x / sqrt(2))
//   approximate == kTanh: y = x/2 * (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
// No weights; any shape; float32 or float64 from the input.
#ifndef AI3_CORE_OPS_GELU_GELU_H_
#define AI3_CORE_OPS_GELU_GELU_H_

#include <memory>
#include <vector>

#include "core/ops/elementwise.h"

namespace ai3 {

struct GeluAttrs : ElementwiseAttrs<GeluAttrs> {
  static constexpr char kOp[] = "gelu";
  enum class Approximate { kNone, kTanh };
  Approximate approximate = Approximate::kNone;
};

// An algorithm of gelu or of its gradient (`Attrs`) that prepares the
// kernel of `Erf` or of `Tanh`, two algorithms, as the layer's
// approximation says: a per-element branch between the two forms kept the
// loop from vectorising.
template <class Attrs, class Erf, class Tanh>
class GeluForms : public Algorithm<Attrs> {
 public:
  std::unique_ptr<Kernel> Prepare(
      const Attrs& attrs, const std::vector<Tensor>& params) const override {
    if (attrs.approximate == GeluAttrs::Approximate::kTanh) {
      return Tanh().Prepare(attrs, params);
    }
    return Erf().Prepare(attrs, params);
  }
};

// gelu_backward_data: dx = dy * d/dx gelu(x), in the layer's approximation
// (backward_direct.cc), as torch's gelu_backward.
struct GeluBackwardDataAttrs : DataGradientAttrs<GeluAttrs> {
  static constexpr char kOp[] = "gelu_backward_data";
};

}  // namespace ai3

#endif  // AI3_CORE_OPS_GELU_GELU_H_
