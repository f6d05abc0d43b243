// avgpool3d "direct": each window's sum divided by its divisor
// (AvgDivisor3d, PyTorch's way), on pool3d_direct.h's loops.
#include "core/math/dispatch.h"
#include "core/ops/function_kernel.h"
#include "core/ops/pool3d/pool3d.h"
#include "core/ops/pool3d/pool3d_direct.h"
#include "core/registry.h"

namespace ai3 {
namespace {

template <typename T>
struct AvgOp {
  const Pool3dGeometry* g;
  const AvgPool3dAttrs* a;

  T Init() const { return T(0); }
  T Combine(T acc, T v) const { return acc + v; }
  T Finish(T acc, int64_t z, int64_t i, int64_t j) const {
    return acc / T(AvgDivisor3d(*a, *g, z, i, j));
  }
};

void AvgPool3dDirect(const AvgPool3dAttrs& a, const Tensor& x,
                     const Tensor& y) {
  const Pool3dGeometry g = Pool3dGeometryOf(a, x.shape);
  DispatchFloat(y.dtype, [&](auto zero) {
    using T = decltype(zero);
    RunPool3d(g, x.data_as<const T>(), y.data_as<T>(), AvgOp<T>{&g, &a});
    return 0;
  });
}

AI3_REGISTER_ALGORITHM(AvgPool3dAttrs, "direct", Device::kCPU,
                       FunctionAlgorithm<AvgPool3dAttrs, AvgPool3dDirect>);

}  // namespace
}  // namespace ai3
