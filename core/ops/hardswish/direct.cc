// hardswish "direct" through ElementwiseDirect (core/ops/elementwise.h):
// compares that keep NaN (a NaN compares false and passes) and vectorise.
#include "core/ops/elementwise.h"
#include "core/ops/hardswish/hardswish.h"
#include "core/registry.h"

namespace ai3 {
namespace {

template <typename T>
struct HardswishFn {
  explicit HardswishFn(const HardswishAttrs&) {}
  T operator()(T x) const {
    T r = x + T(3);
    r = r < T(0) ? T(0) : r;
    r = r > T(6) ? T(6) : r;
    return x * r / T(6);
  }
};

using Direct = ElementwiseDirect<HardswishAttrs, HardswishFn, (1 << 15)>;
AI3_REGISTER_ALGORITHM(HardswishAttrs, "direct", Device::kCPU, Direct);

AI3_REGISTER_ELEMENTWISE_GRADIENT_DIRECT(Hardswish, (1 << 15));

}  // namespace
}  // namespace ai3
