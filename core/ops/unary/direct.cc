// "direct" of every op of unary.h: ElementwiseDirect (core/ops/elementwise.h)
// of a one-line formula per op, one pass split over OpenMP threads. Where
// the formula is arithmetic, a compare or exp the loop vectorises (exp is
// vmath::Exp, core/ops/sigmoid/exp.h: std::exp would not vectorise); log,
// erf, the trigonometric and hyperbolic functions and log1p are the C
// library's, element by element, whose
// results torch and NumPy match to the last bit or two.
#include <cmath>

#include "core/ops/elementwise.h"
#include "core/ops/sigmoid/exp.h"
#include "core/ops/unary/unary.h"
#include "core/registry.h"

namespace ai3 {
namespace {

// Name##Fn<T>: y for one x of dtype T, reading the layer's attributes as
// `a` and calling exp as Exp(v); then its "direct".
#define AI3_UNARY_DIRECT(Name, ...)                               \
  template <typename T>                                           \
  struct Name##Fn {                                               \
    explicit Name##Fn(const Name##Attrs& attrs) : a(attrs) {}     \
    T operator()(T x) const { return __VA_ARGS__; }               \
    T Exp(T v) const { return vmath::Exp(v, range); }             \
    Name##Attrs a;                                                \
    vmath::ExpRange<T> range; /* a member, not literals: exp.h */ \
  };                                                              \
  AI3_REGISTER_ALGORITHM(Name##Attrs, "direct", Device::kCPU,     \
                         ElementwiseDirect<Name##Attrs, Name##Fn>)

AI3_UNARY_DIRECT(Exp, Exp(x));
AI3_UNARY_DIRECT(Log, std::log(x));
AI3_UNARY_DIRECT(Sqrt, std::sqrt(x));
AI3_UNARY_DIRECT(Neg, -x);
AI3_UNARY_DIRECT(Abs, std::fabs(x));
AI3_UNARY_DIRECT(Erf, std::erf(x));
AI3_UNARY_DIRECT(Reciprocal, T(1) / x);
AI3_UNARY_DIRECT(Floor, std::floor(x));
AI3_UNARY_DIRECT(Ceil, std::ceil(x));
// torch.sign: 0 for NaN (NumPy's is NaN).
AI3_UNARY_DIRECT(Sign, x > T(0) ? T(1) : (x < T(0) ? T(-1) : T(0)));
AI3_UNARY_DIRECT(Sin, std::sin(x));
AI3_UNARY_DIRECT(Cos, std::cos(x));
AI3_UNARY_DIRECT(Tan, std::tan(x));
AI3_UNARY_DIRECT(Asin, std::asin(x));
AI3_UNARY_DIRECT(Acos, std::acos(x));
AI3_UNARY_DIRECT(Atan, std::atan(x));
AI3_UNARY_DIRECT(Sinh, std::sinh(x));
AI3_UNARY_DIRECT(Cosh, std::cosh(x));
AI3_UNARY_DIRECT(Asinh, std::asinh(x));
AI3_UNARY_DIRECT(Acosh, std::acosh(x));
AI3_UNARY_DIRECT(Atanh, std::atanh(x));
AI3_UNARY_DIRECT(Softsign, x / (T(1) + std::fabs(x)));
AI3_UNARY_DIRECT(Mish, x* TanhSoftplus(x));
AI3_UNARY_DIRECT(Elu, x > T(0) ? x : static_cast<T>(a.alpha) * (Exp(x) - T(1)));
// max(0, x) + min(0, alpha (exp(x / alpha) - 1)) as one select, for
// either sign of alpha, so that NaN passes (fmax would drop it).
AI3_UNARY_DIRECT(Celu, x > T(0)
                           ? x
                           : static_cast<T>(a.alpha) *
                                 (Exp(x / static_cast<T>(a.alpha)) - T(1)));
AI3_UNARY_DIRECT(Selu,
                 static_cast<T>(a.gamma) *
                     (x > T(0) ? x
                               : static_cast<T>(a.alpha) * (Exp(x) - T(1))));
// log(1 + exp(b)) = max(b, 0) + log1p(exp(-|b|)) for b = beta x: no
// overflow; x itself above the threshold as torch.
AI3_UNARY_DIRECT(
    Softplus,
    x* static_cast<T>(a.beta) > static_cast<T>(a.threshold)
        ? x
        : (std::fmax(x * static_cast<T>(a.beta), T(0)) +
           std::log1p(std::exp(-std::fabs(x * static_cast<T>(a.beta))))) /
              static_cast<T>(a.beta));
AI3_UNARY_DIRECT(ThresholdedRelu, x > static_cast<T>(a.alpha) ? x : T(0));

#undef AI3_UNARY_DIRECT

// The gradients' "direct"s (unary.h), threaded from the forwards' threshold.
AI3_REGISTER_ELEMENTWISE_GRADIENT_DIRECT(Exp, (1 << 13));
AI3_REGISTER_ELEMENTWISE_GRADIENT_DIRECT(Log, (1 << 13));
AI3_REGISTER_ELEMENTWISE_GRADIENT_DIRECT(Sqrt, (1 << 13));
AI3_REGISTER_ELEMENTWISE_GRADIENT_DIRECT(Neg, (1 << 13));
AI3_REGISTER_ELEMENTWISE_GRADIENT_DIRECT(Abs, (1 << 13));
AI3_REGISTER_ELEMENTWISE_GRADIENT_DIRECT(Erf, (1 << 13));
AI3_REGISTER_ELEMENTWISE_GRADIENT_DIRECT(Reciprocal, (1 << 13));
AI3_REGISTER_ELEMENTWISE_GRADIENT_DIRECT(Floor, (1 << 13));
AI3_REGISTER_ELEMENTWISE_GRADIENT_DIRECT(Ceil, (1 << 13));
AI3_REGISTER_ELEMENTWISE_GRADIENT_DIRECT(Sign, (1 << 13));
AI3_REGISTER_ELEMENTWISE_GRADIENT_DIRECT(Sin, (1 << 13));
AI3_REGISTER_ELEMENTWISE_GRADIENT_DIRECT(Cos, (1 << 13));
AI3_REGISTER_ELEMENTWISE_GRADIENT_DIRECT(Tan, (1 << 13));
AI3_REGISTER_ELEMENTWISE_GRADIENT_DIRECT(Asin, (1 << 13));
AI3_REGISTER_ELEMENTWISE_GRADIENT_DIRECT(Acos, (1 << 13));
AI3_REGISTER_ELEMENTWISE_GRADIENT_DIRECT(Atan, (1 << 13));
AI3_REGISTER_ELEMENTWISE_GRADIENT_DIRECT(Sinh, (1 << 13));
AI3_REGISTER_ELEMENTWISE_GRADIENT_DIRECT(Cosh, (1 << 13));
AI3_REGISTER_ELEMENTWISE_GRADIENT_DIRECT(Asinh, (1 << 13));
AI3_REGISTER_ELEMENTWISE_GRADIENT_DIRECT(Acosh, (1 << 13));
AI3_REGISTER_ELEMENTWISE_GRADIENT_DIRECT(Atanh, (1 << 13));
AI3_REGISTER_ELEMENTWISE_GRADIENT_DIRECT(Softsign, (1 << 13));
AI3_REGISTER_ELEMENTWISE_GRADIENT_DIRECT(Mish, (1 << 13));
AI3_REGISTER_ELEMENTWISE_GRADIENT_DIRECT(Elu, (1 << 13));
AI3_REGISTER_ELEMENTWISE_GRADIENT_DIRECT(Celu, (1 << 13));
AI3_REGISTER_ELEMENTWISE_GRADIENT_DIRECT(Selu, (1 << 13));
AI3_REGISTER_ELEMENTWISE_GRADIENT_DIRECT(Softplus, (1 << 13));
AI3_REGISTER_ELEMENTWISE_GRADIENT_DIRECT(ThresholdedRelu, (1 << 13));

}  // namespace
}  // namespace ai3
