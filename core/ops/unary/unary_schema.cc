// The declarations (core/op_schema.h) of the ops of unary.h and of their
// input gradients (<op>_backward_data): "direct" their one algorithm, on
// the CPU.
#include "core/op_schema.h"
#include "core/ops/unary/unary.h"

namespace ai3 {
namespace {

template <class A>
OpDeclaration<A> Declare(const char* doc) {
  OpDeclaration<A> d(doc);
  d.DirectOn({Device::kCPU});
  return d;
}

// The op Name and its gradient, which takes the op's attributes as they
// are: `fields(declaration)` adds them to either.
template <class Op, class Gradient, class Fields>
bool DeclareWithGradient(const char* doc, const char* gradient_doc,
                         Fields fields) {
  OpDeclaration<Op> op = Declare<Op>(doc);
  OpDeclaration<Gradient> gradient = Declare<Gradient>(gradient_doc);
  fields(op);
  fields(gradient);
  return op.Register() && gradient.Register();
}

// An op without attributes and its gradient.
template <class Op, class Gradient>
bool DeclareWithGradient(const char* doc, const char* gradient_doc) {
  return DeclareWithGradient<Op, Gradient>(doc, gradient_doc, [](auto&) {});
}

#define AI3_UNARY(Name, doc, gradient_doc) \
  DeclareWithGradient<Name##Attrs, Name##BackwardDataAttrs>(doc, gradient_doc)

const bool kDeclared =
    AI3_UNARY(Exp, "exp(x) elementwise", "exp's input gradient: dy y") &&
    AI3_UNARY(Log, "log(x) elementwise (-inf at 0, NaN below)",
              "log's input gradient: dy / x") &&
    AI3_UNARY(Sqrt, "sqrt(x) elementwise (NaN below 0)",
              "sqrt's input gradient: dy / (2 y)") &&
    AI3_UNARY(Neg, "-x elementwise", "neg's input gradient: -dy") &&
    AI3_UNARY(Abs, "|x| elementwise", "abs's input gradient: sign(x) dy") &&
    AI3_UNARY(Erf, "erf(x) elementwise",
              "erf's input gradient: dy 2 / sqrt(pi) exp(-x^2)") &&
    AI3_UNARY(Reciprocal, "1 / x elementwise",
              "reciprocal's input gradient: -dy y^2") &&
    AI3_UNARY(Floor, "floor(x) elementwise", "floor's input gradient: 0") &&
    AI3_UNARY(Ceil, "ceil(x) elementwise", "ceil's input gradient: 0") &&
    AI3_UNARY(Sign, "-1, 0 or 1 by the sign of x (0 for NaN, as torch)",
              "sign's input gradient: 0") &&
    AI3_UNARY(Sin, "sin(x) elementwise", "sin's input gradient: dy cos(x)") &&
    AI3_UNARY(Cos, "cos(x) elementwise", "cos's input gradient: -dy sin(x)") &&
    AI3_UNARY(Tan, "tan(x) elementwise",
              "tan's input gradient: dy (1 + y^2)") &&
    AI3_UNARY(Asin, "asin(x) elementwise (NaN outside [-1, 1])",
              "asin's input gradient: dy / sqrt(1 - x^2)") &&
    AI3_UNARY(Acos, "acos(x) elementwise (NaN outside [-1, 1])",
              "acos's input gradient: -dy / sqrt(1 - x^2)") &&
    AI3_UNARY(Atan, "atan(x) elementwise",
              "atan's input gradient: dy / (1 + x^2)") &&
    AI3_UNARY(Sinh, "sinh(x) elementwise",
              "sinh's input gradient: dy cosh(x)") &&
    AI3_UNARY(Cosh, "cosh(x) elementwise",
              "cosh's input gradient: dy sinh(x)") &&
    AI3_UNARY(Asinh, "asinh(x) elementwise",
              "asinh's input gradient: dy / sqrt(x^2 + 1)") &&
    AI3_UNARY(Acosh, "acosh(x) elementwise (NaN below 1)",
              "acosh's input gradient: dy / sqrt(x^2 - 1)") &&
    AI3_UNARY(Atanh, "atanh(x) elementwise (+-inf at +-1, NaN beyond)",
              "atanh's input gradient: dy / (1 - x^2)") &&
    AI3_UNARY(Softsign, "x / (1 + |x|) elementwise",
              "softsign's input gradient: dy / (1 + |x|)^2") &&
    AI3_UNARY(Mish, "x tanh(softplus(x)) elementwise",
              "mish's input gradient: dy (t + x sigmoid(x) (1 - t^2)), "
              "t = tanh(softplus(x))") &&
    DeclareWithGradient<EluAttrs, EluBackwardDataAttrs>(
        "x if x > 0 else alpha (exp(x) - 1)",
        "elu's input gradient: dy where x > 0, else dy alpha exp(x)",
        [](auto& d) {
          d.Field("alpha", &EluAttrs::alpha, "the scale of the negative side");
        }) &&
    DeclareWithGradient<CeluAttrs, CeluBackwardDataAttrs>(
        "max(0, x) + min(0, alpha (exp(x / alpha) - 1))",
        "celu's input gradient: dy where x > 0, else dy exp(x / alpha)",
        [](auto& d) { d.Field("alpha", &CeluAttrs::alpha, "not 0"); }) &&
    DeclareWithGradient<SeluAttrs, SeluBackwardDataAttrs>(
        "gamma (x if x > 0 else alpha (exp(x) - 1))",
        "selu's input gradient: dy gamma where x > 0, else dy gamma alpha "
        "exp(x)",
        [](auto& d) {
          d.Field("alpha", &SeluAttrs::alpha, "torch's constant by default")
              .Field("gamma", &SeluAttrs::gamma,
                     "the scale (torch's constant by default)");
        }) &&
    DeclareWithGradient<SoftplusAttrs, SoftplusBackwardDataAttrs>(
        "log(1 + exp(beta x)) / beta; x where beta x > threshold",
        "softplus's input gradient: dy sigmoid(beta x); dy where beta x > "
        "threshold",
        [](auto& d) {
          d.Field("beta", &SoftplusAttrs::beta, "not 0")
              .Field("threshold", &SoftplusAttrs::threshold,
                     "torch's 20 by default; inf: none (ONNX, Keras)");
        }) &&
    DeclareWithGradient<ThresholdedReluAttrs, ThresholdedReluBackwardDataAttrs>(
        "x if x > alpha else 0",
        "thresholded_relu's input gradient: dy where x > alpha, else 0",
        [](auto& d) {
          d.Field("alpha", &ThresholdedReluAttrs::alpha, "the threshold");
        });

#undef AI3_UNARY

}  // namespace
}  // namespace ai3
