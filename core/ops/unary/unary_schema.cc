// The declarations (core/op_schema.h) of the ops of unary.h: "direct" their
// one algorithm, on the CPU.
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

const bool kDeclared =
    Declare<ExpAttrs>("exp(x) elementwise").Register() &&
    Declare<LogAttrs>("log(x) elementwise (-inf at 0, NaN below)").Register() &&
    Declare<SqrtAttrs>("sqrt(x) elementwise (NaN below 0)").Register() &&
    Declare<NegAttrs>("-x elementwise").Register() &&
    Declare<AbsAttrs>("|x| elementwise").Register() &&
    Declare<ErfAttrs>("erf(x) elementwise").Register() &&
    Declare<ReciprocalAttrs>("1 / x elementwise").Register() &&
    Declare<FloorAttrs>("floor(x) elementwise").Register() &&
    Declare<CeilAttrs>("ceil(x) elementwise").Register() &&
    Declare<SignAttrs>("-1, 0 or 1 by the sign of x (0 for NaN, as torch)")
        .Register() &&
    Declare<SinAttrs>("sin(x) elementwise").Register() &&
    Declare<CosAttrs>("cos(x) elementwise").Register() &&
    Declare<TanAttrs>("tan(x) elementwise").Register() &&
    Declare<AsinAttrs>("asin(x) elementwise (NaN outside [-1, 1])")
        .Register() &&
    Declare<AcosAttrs>("acos(x) elementwise (NaN outside [-1, 1])")
        .Register() &&
    Declare<AtanAttrs>("atan(x) elementwise").Register() &&
    Declare<SinhAttrs>("sinh(x) elementwise").Register() &&
    Declare<CoshAttrs>("cosh(x) elementwise").Register() &&
    Declare<AsinhAttrs>("asinh(x) elementwise").Register() &&
    Declare<AcoshAttrs>("acosh(x) elementwise (NaN below 1)").Register() &&
    Declare<AtanhAttrs>("atanh(x) elementwise (+-inf at +-1, NaN beyond)")
        .Register() &&
    Declare<SoftsignAttrs>("x / (1 + |x|) elementwise").Register() &&
    Declare<MishAttrs>("x tanh(softplus(x)) elementwise").Register() &&
    Declare<EluAttrs>("x if x > 0 else alpha (exp(x) - 1)")
        .Field("alpha", &EluAttrs::alpha, "the scale of the negative side")
        .Register() &&
    Declare<CeluAttrs>("max(0, x) + min(0, alpha (exp(x / alpha) - 1))")
        .Field("alpha", &CeluAttrs::alpha, "not 0")
        .Register() &&
    Declare<SeluAttrs>("gamma (x if x > 0 else alpha (exp(x) - 1))")
        .Field("alpha", &SeluAttrs::alpha, "torch's constant by default")
        .Field("gamma", &SeluAttrs::gamma,
               "the scale (torch's constant by default)")
        .Register() &&
    Declare<SoftplusAttrs>(
        "log(1 + exp(beta x)) / beta; x where beta x > threshold")
        .Field("beta", &SoftplusAttrs::beta, "not 0")
        .Field("threshold", &SoftplusAttrs::threshold,
               "torch's 20 by default; inf: none (ONNX, Keras)")
        .Register() &&
    Declare<ThresholdedReluAttrs>("x if x > alpha else 0")
        .Field("alpha", &ThresholdedReluAttrs::alpha, "the threshold")
        .Register();

}  // namespace
}  // namespace ai3
