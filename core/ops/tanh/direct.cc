// tanh "direct" through ElementwiseDirect (core/ops/elementwise.h): one
// pass, split over OpenMP threads from 2^13 elements, the loop vectorised by
// the compiler (std::tanh would not be). Branch-free, on a = |x|:
//   a <  kSmall: the odd Taylor series (to x^13 in double, x^7 in float;
//                truncation below 1e-16 / 1e-9 relative), exact near 0;
//   a >= kSmall: (1 - e) / (1 + e) with e = exp(-2a) (vmath::Exp, which
//                vectorises), where 1 - e no longer cancels badly;
// then the sign of x. Both are computed and one kept by a multiply with a
// 0/1 mask, so the compiler has no branch to keep.
#include <cmath>

#include "core/ops/elementwise.h"
#include "core/ops/sigmoid/exp.h"
#include "core/ops/tanh/tanh.h"
#include "core/registry.h"

namespace ai3 {
namespace {

// Below this |x| the series; above, the exp form.
constexpr double kSmall = 0.1;

template <typename T>
inline T TanhSeries(T a) {  // a in [0, kSmall]
  const T a2 = a * a;
  T p;
  if constexpr (sizeof(T) == 8) {
    p = 21844.0 / 6081075.0;
    p = p * a2 - 1382.0 / 155925.0;
    p = p * a2 + 62.0 / 2835.0;
    p = p * a2 - 17.0 / 315.0;
    p = p * a2 + 2.0 / 15.0;
    p = p * a2 - 1.0 / 3.0;
  } else {
    p = -17.0f / 315.0f;
    p = p * a2 + 2.0f / 15.0f;
    p = p * a2 - 1.0f / 3.0f;
  }
  return a + a * a2 * p;
}

template <typename T>
struct TanhFn {
  explicit TanhFn(const TanhAttrs&) {}
  T operator()(T x) const {
    const T a = std::fabs(x);
    const T use_series = a < small ? T(1) : T(0);
    const T series = TanhSeries(a < small ? a : small);  // finite everywhere
    const T e = vmath::Exp(T(-2) * a, range);
    const T big = (T(1) - e) / (T(1) + e);
    return std::copysign(series * use_series + big * (T(1) - use_series), x);
  }
  // Members, not literals: see exp.h.
  vmath::ExpRange<T> range;
  T small = static_cast<T>(kSmall);
};

using Direct = ElementwiseDirect<TanhAttrs, TanhFn>;
AI3_REGISTER_ALGORITHM(TanhAttrs, "direct", Device::kCPU, Direct);

// tanh_backward_data's "direct": the gradient tanh.h declares beside the
// op, threaded and vectorised as the forward.
AI3_REGISTER_ALGORITHM(TanhBackwardDataAttrs, "direct", Device::kCPU,
                       ElementwiseGradientDirect<TanhBackwardDataAttrs>);

}  // namespace
}  // namespace ai3
