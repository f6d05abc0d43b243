// Every op of unary.h against its definition in double through the shared
// elementwise-op test (core/testing/unary_op_test.h: every CPU algorithm,
// tensors of several ranks and sizes, float32 and float64, NaN, infinities,
// 0 and large values, so log(0), sqrt(-1), 1/0 and exp(200) are checked),
// the activations over several attribute values; then bad attributes.
#include <cmath>
#include <string>

#include "core/ops/unary/unary.h"
#include "core/testing/unary_op_test.h"

namespace ai3 {
namespace {

using testing::RunUnaryCases;
using testing::UnaryTolerance;

// vmath::Exp is a few ulp from std::exp; exp - 1 near 0 loses the relative
// precision expm1 keeps, which the tolerance (relative to 1 + |want|) allows.
constexpr UnaryTolerance kExp{4e-6, 1e-13};

double Sign(double v) { return v > 0 ? 1 : (v < 0 ? -1 : 0); }
double Mish(double v) {
  return v * std::tanh(std::fmax(v, 0.0) + std::log1p(std::exp(-std::fabs(v))));
}

template <class Attrs, class Ref>
int Plain(const Ref& ref, UnaryTolerance tol = {}) {
  testing::UnaryErrorCases<Attrs>();
  return RunUnaryCases(Attrs{}, ref, "", tol);
}

}  // namespace

int Main() {
  int ran = 0;
  ran += Plain<ExpAttrs>([](double v) { return std::exp(v); }, kExp);
  ran += Plain<LogAttrs>([](double v) { return std::log(v); });
  ran += Plain<SqrtAttrs>([](double v) { return std::sqrt(v); });
  ran += Plain<NegAttrs>([](double v) { return -v; }, {0, 0});
  ran += Plain<AbsAttrs>([](double v) { return std::fabs(v); }, {0, 0});
  ran += Plain<ErfAttrs>([](double v) { return std::erf(v); });
  ran += Plain<ReciprocalAttrs>([](double v) { return 1 / v; });
  ran += Plain<FloorAttrs>([](double v) { return std::floor(v); }, {0, 0});
  ran += Plain<CeilAttrs>([](double v) { return std::ceil(v); }, {0, 0});
  ran += Plain<SignAttrs>(Sign, {0, 0});
  ran += Plain<SinAttrs>([](double v) { return std::sin(v); });
  ran += Plain<CosAttrs>([](double v) { return std::cos(v); });
  ran += Plain<TanAttrs>([](double v) { return std::tan(v); });
  ran += Plain<AsinAttrs>([](double v) { return std::asin(v); });
  ran += Plain<AcosAttrs>([](double v) { return std::acos(v); });
  ran += Plain<AtanAttrs>([](double v) { return std::atan(v); });
  ran += Plain<SinhAttrs>([](double v) { return std::sinh(v); });
  ran += Plain<CoshAttrs>([](double v) { return std::cosh(v); });
  ran += Plain<AsinhAttrs>([](double v) { return std::asinh(v); });
  ran += Plain<AcoshAttrs>([](double v) { return std::acosh(v); });
  ran += Plain<AtanhAttrs>([](double v) { return std::atanh(v); });
  ran += Plain<SoftsignAttrs>([](double v) { return v / (1 + std::fabs(v)); });
  ran += Plain<MishAttrs>(Mish, {2e-6, 1e-14});
  for (double alpha : {1.0, 0.5, 2.0, -0.3}) {
    const std::string label = " alpha " + std::to_string(alpha);
    EluAttrs elu;
    elu.alpha = alpha;
    ran += RunUnaryCases(
        elu, [&](double v) { return v > 0 ? v : alpha * std::expm1(v); }, label,
        kExp);
    ThresholdedReluAttrs t;
    t.alpha = alpha;
    ran += RunUnaryCases(t, [&](double v) { return v > alpha ? v : 0.0; },
                         label, {0, 0});
    CeluAttrs celu;
    celu.alpha = alpha;
    ran += RunUnaryCases(
        celu,
        [&](double v) {
          return std::isnan(v)
                     ? v
                     : std::fmax(v, 0.0) +
                           std::fmin(0.0, alpha * std::expm1(v / alpha));
        },
        label, kExp);
  }
  SeluAttrs selu;
  ran += RunUnaryCases(
      selu,
      [&](double v) {
        return selu.gamma * (v > 0 ? v : selu.alpha * std::expm1(v));
      },
      "", kExp);
  for (double beta : {1.0, 2.0, 0.5}) {
    for (double threshold : {20.0, 1.0, double(INFINITY)}) {
      SoftplusAttrs sp;
      sp.beta = beta;
      sp.threshold = threshold;
      ran += RunUnaryCases(
          sp,
          [&](double v) {
            const double b = beta * v;
            return b > threshold ? v
                                 : (std::fmax(b, 0.0) +
                                    std::log1p(std::exp(-std::fabs(b)))) /
                                       beta;
          },
          " beta " + std::to_string(beta) + " threshold " +
              std::to_string(threshold));
    }
  }
  testing::UnaryErrorCases<EluAttrs>();
  testing::UnaryErrorCases<SoftplusAttrs>();
  EluAttrs bad_elu;
  bad_elu.alpha = std::nan("");
  testing::ExpectRefused("elu alpha", bad_elu, "alpha must be finite");
  CeluAttrs zero_celu;
  zero_celu.alpha = 0;
  testing::ExpectRefused("celu alpha", zero_celu, "alpha must not be 0");
  SoftplusAttrs zero_beta;
  zero_beta.beta = 0;
  testing::ExpectRefused("softplus beta", zero_beta,
                         "beta must be finite and not 0");
  SeluAttrs bad_selu;
  bad_selu.gamma = INFINITY;
  testing::ExpectRefused("selu gamma", bad_selu, "gamma must be finite");
  return testing::Summary("unary", ran);
}

}  // namespace ai3
