// hardsigmoid "direct" through ElementwiseDirect (core/ops/elementwise.h).
#include "core/ops/elementwise.h"
#include "core/ops/hardsigmoid/hardsigmoid.h"
#include "core/registry.h"

namespace ai3 {
namespace {

template <typename T>
struct HardsigmoidFn {
  explicit HardsigmoidFn(const HardsigmoidAttrs& a)
      : alpha(T(a.alpha)), beta(T(a.beta)) {}
  T operator()(T x) const {
    T r = alpha * x + beta;
    r = r < T(0) ? T(0) : r;  // NaN compares false and passes
    return r > T(1) ? T(1) : r;
  }
  T alpha, beta;
};

using Direct = ElementwiseDirect<HardsigmoidAttrs, HardsigmoidFn, (1 << 15)>;
AI3_REGISTER_ALGORITHM(HardsigmoidAttrs, "direct", Device::kCPU, Direct);

AI3_REGISTER_ELEMENTWISE_GRADIENT_DIRECT(Hardsigmoid, (1 << 15));

}  // namespace
}  // namespace ai3
