// The elementwise functions of one input that ONNX, torch and Keras share
// (issue 17): math (exp, log, sqrt, neg, abs, erf, reciprocal, floor, ceil,
// sign, sin, cos, tan and the inverse and hyperbolic trigonometric
// functions) and activations with scalar attributes (elu, selu, celu,
// softplus, softsign, mish, thresholded_relu). Each op is its attributes
// here, derived from ElementwiseAttrs (core/ops/elementwise.h: no weights,
// any shape, float32 or float64 from the input), and its formula in
// direct.cc; they share one "direct" template (ElementwiseDirect). NaN and
// infinities follow PyTorch (log(0) = -inf, sqrt(-1) = NaN, 1/0 = inf).
#ifndef AI3_CORE_OPS_UNARY_UNARY_H_
#define AI3_CORE_OPS_UNARY_UNARY_H_

#include <cmath>
#include <vector>

#include "core/errors.h"
#include "core/ops/elementwise.h"

namespace ai3 {

// An op of one input and no attributes: Name##Attrs with kOp = op.
#define AI3_UNARY_ATTRS(Name, op)                      \
  struct Name##Attrs : ElementwiseAttrs<Name##Attrs> { \
    static constexpr char kOp[] = op;                  \
  }

AI3_UNARY_ATTRS(Exp, "exp");
AI3_UNARY_ATTRS(Log, "log");
AI3_UNARY_ATTRS(Sqrt, "sqrt");
AI3_UNARY_ATTRS(Neg, "neg");
AI3_UNARY_ATTRS(Abs, "abs");
AI3_UNARY_ATTRS(Erf, "erf");
AI3_UNARY_ATTRS(Reciprocal, "reciprocal");
AI3_UNARY_ATTRS(Floor, "floor");
AI3_UNARY_ATTRS(Ceil, "ceil");
AI3_UNARY_ATTRS(Sign, "sign");
AI3_UNARY_ATTRS(Sin, "sin");
AI3_UNARY_ATTRS(Cos, "cos");
AI3_UNARY_ATTRS(Tan, "tan");
AI3_UNARY_ATTRS(Asin, "asin");
AI3_UNARY_ATTRS(Acos, "acos");
AI3_UNARY_ATTRS(Atan, "atan");
AI3_UNARY_ATTRS(Sinh, "sinh");
AI3_UNARY_ATTRS(Cosh, "cosh");
AI3_UNARY_ATTRS(Asinh, "asinh");
AI3_UNARY_ATTRS(Acosh, "acosh");
AI3_UNARY_ATTRS(Atanh, "atanh");
AI3_UNARY_ATTRS(Softsign, "softsign");
AI3_UNARY_ATTRS(Mish, "mish");

#undef AI3_UNARY_ATTRS

// An activation whose attributes must be finite numbers (`what` names
// them for the error).
template <class Derived>
struct FiniteAttrs : ElementwiseAttrs<Derived> {
  void CheckFinite(const std::vector<Tensor>& params, const char* what,
                   double value) const {
    ElementwiseAttrs<Derived>::Validate(params);
    if (!std::isfinite(value)) {
      Fail(ErrorKind::kInvalidArgument, what, " must be finite, got ", value);
    }
  }
};

// elu: x for x > 0, alpha (exp(x) - 1) below (torch nn.ELU, ONNX Elu, Keras
// ELU; alpha 1 in all three).
struct EluAttrs : FiniteAttrs<EluAttrs> {
  static constexpr char kOp[] = "elu";
  double alpha = 1.0;
  void Validate(const std::vector<Tensor>& p) const {
    CheckFinite(p, "alpha", alpha);
  }
};

// celu: max(0, x) + min(0, alpha (exp(x / alpha) - 1)) (torch nn.CELU,
// ONNX Celu); alpha must not be 0.
struct CeluAttrs : FiniteAttrs<CeluAttrs> {
  static constexpr char kOp[] = "celu";
  double alpha = 1.0;
  void Validate(const std::vector<Tensor>& p) const {
    CheckFinite(p, "alpha", alpha);
    if (alpha == 0) Fail(ErrorKind::kInvalidArgument, "alpha must not be 0");
  }
};

// selu: gamma (x for x > 0, alpha (exp(x) - 1) below). The defaults are
// torch's constants; ONNX Selu's attributes (its defaults are these rounded
// to float) are passed as given.
struct SeluAttrs : FiniteAttrs<SeluAttrs> {
  static constexpr char kOp[] = "selu";
  double alpha = 1.6732632423543772848170429916717;
  double gamma = 1.0507009873554804934193349852946;
  void Validate(const std::vector<Tensor>& p) const {
    CheckFinite(p, "alpha", alpha);
    CheckFinite(p, "gamma", gamma);
  }
};

// softplus: log(1 + exp(beta x)) / beta, and x itself where beta x >
// threshold (torch nn.Softplus: beta 1, threshold 20; ONNX Softplus and
// Keras: beta 1, no threshold, i.e. infinity). Computed without overflow
// for large beta x.
struct SoftplusAttrs : ElementwiseAttrs<SoftplusAttrs> {
  static constexpr char kOp[] = "softplus";
  double beta = 1.0;
  double threshold = 20.0;
  void Validate(const std::vector<Tensor>& p) const {
    ElementwiseAttrs<SoftplusAttrs>::Validate(p);
    if (!std::isfinite(beta) || beta == 0) {
      Fail(ErrorKind::kInvalidArgument, "beta must be finite and not 0, got ",
           beta);
    }
    if (std::isnan(threshold)) {
      Fail(ErrorKind::kInvalidArgument, "threshold must not be NaN");
    }
  }
};

// thresholded_relu: x where x > alpha, else 0 (ONNX ThresholdedRelu, alpha
// 1; Keras ReLU(threshold=...)).
struct ThresholdedReluAttrs : FiniteAttrs<ThresholdedReluAttrs> {
  static constexpr char kOp[] = "thresholded_relu";
  double alpha = 1.0;
  void Validate(const std::vector<Tensor>& p) const {
    CheckFinite(p, "alpha", alpha);
  }
};

// tanh(softplus(x)), the softplus without overflow: mish's factor.
template <typename T>
inline T TanhSoftplus(T x) {
  return std::tanh(std::fmax(x, T(0)) + std::log1p(std::exp(-std::fabs(x))));
}

// mish's input gradient, as torch's mish_backward: d/dx x tanh(sp(x)) =
// tanh(sp) + x sigmoid(x) (1 - tanh(sp)^2).
template <typename T>
inline T MishGradient(T dy, T x) {
  const T t = TanhSoftplus(x);
  return dy * (t + x / (T(1) + std::exp(-x)) * (T(1) - t * t));
}

// The input gradients (<op>_backward_data: dx from dy, x and y, as
// torch's autograd formulas), each from whichever of x and y gives it
// exactly and cheaply. floor, ceil and sign have 0 (torch's too).
AI3_ELEMENTWISE_GRADIENT(Exp, "exp", dy* y);
AI3_ELEMENTWISE_GRADIENT(Log, "log", dy / x);
AI3_ELEMENTWISE_GRADIENT(Sqrt, "sqrt", dy / (T(2) * y));
AI3_ELEMENTWISE_GRADIENT(Neg, "neg", -dy);
// sign(x) dy: 0 at 0, as torch's abs_backward.
AI3_ELEMENTWISE_GRADIENT(Abs, "abs",
                         x > T(0) ? dy : (x < T(0) ? -dy : T(0) * dy));
AI3_ELEMENTWISE_GRADIENT(Erf, "erf",
                         dy* T(1.12837916709551257390) * std::exp(-x * x));
AI3_ELEMENTWISE_GRADIENT(Reciprocal, "reciprocal", -dy * y * y);
AI3_ELEMENTWISE_GRADIENT(Floor, "floor", T(0) * dy);
AI3_ELEMENTWISE_GRADIENT(Ceil, "ceil", T(0) * dy);
AI3_ELEMENTWISE_GRADIENT(Sign, "sign", T(0) * dy);
AI3_ELEMENTWISE_GRADIENT(Sin, "sin", dy* std::cos(x));
AI3_ELEMENTWISE_GRADIENT(Cos, "cos", -dy* std::sin(x));
AI3_ELEMENTWISE_GRADIENT(Tan, "tan", dy*(T(1) + y * y));
AI3_ELEMENTWISE_GRADIENT(Asin, "asin", dy / std::sqrt(T(1) - x * x));
AI3_ELEMENTWISE_GRADIENT(Acos, "acos", -dy / std::sqrt(T(1) - x * x));
AI3_ELEMENTWISE_GRADIENT(Atan, "atan", dy / (T(1) + x * x));
AI3_ELEMENTWISE_GRADIENT(Sinh, "sinh", dy* std::cosh(x));
AI3_ELEMENTWISE_GRADIENT(Cosh, "cosh", dy* std::sinh(x));
AI3_ELEMENTWISE_GRADIENT(Asinh, "asinh", dy / std::sqrt(x * x + T(1)));
AI3_ELEMENTWISE_GRADIENT(Acosh, "acosh", dy / std::sqrt(x * x - T(1)));
AI3_ELEMENTWISE_GRADIENT(Atanh, "atanh", dy / (T(1) - x * x));
AI3_ELEMENTWISE_GRADIENT(Softsign, "softsign",
                         dy / ((T(1) + std::fabs(x)) * (T(1) + std::fabs(x))));
AI3_ELEMENTWISE_GRADIENT(Mish, "mish", MishGradient(dy, x));
AI3_ELEMENTWISE_GRADIENT(Elu, "elu",
                         x > T(0) ? dy
                                  : dy * static_cast<T>(alpha) * std::exp(x));
AI3_ELEMENTWISE_GRADIENT(Celu, "celu",
                         x > T(0) ? dy
                                  : dy * std::exp(x / static_cast<T>(alpha)));
AI3_ELEMENTWISE_GRADIENT(Selu, "selu",
                         dy* static_cast<T>(gamma) *
                             (x > T(0) ? T(1)
                                       : static_cast<T>(alpha) * std::exp(x)));
// dy sigmoid(beta x), and dy where beta x > threshold (the identity there).
AI3_ELEMENTWISE_GRADIENT(Softplus, "softplus",
                         x* static_cast<T>(beta) > static_cast<T>(threshold)
                             ? dy
                             : dy / (T(1) +
                                     std::exp(-x * static_cast<T>(beta))));
AI3_ELEMENTWISE_GRADIENT(ThresholdedRelu, "thresholded_relu",
                         x > static_cast<T>(alpha) ? dy : T(0) * dy);

}  // namespace ai3

#endif  // AI3_CORE_OPS_UNARY_UNARY_H_
