// maxpool3d "direct": the largest input in each window (pool3d_direct.h's
// loops). A NaN wins over any number, as in PyTorch; an output whose
// window holds no input element is -inf.
#include <limits>

#include "core/math/dispatch.h"
#include "core/ops/function_kernel.h"
#include "core/ops/pool3d/pool3d.h"
#include "core/ops/pool3d/pool3d_direct.h"
#include "core/registry.h"

namespace ai3 {
namespace {

template <typename T>
struct MaxOp {
  T Init() const { return -std::numeric_limits<T>::infinity(); }
  T Combine(T acc, T v) const { return v > acc || v != v ? v : acc; }
  T Finish(T acc, int64_t, int64_t, int64_t) const { return acc; }
};

void MaxPool3dDirect(const MaxPool3dAttrs& a, const Tensor& x,
                     const Tensor& y) {
  const Pool3dGeometry g = Pool3dGeometryOf(a, x.shape);
  DispatchFloat(y.dtype, [&](auto zero) {
    using T = decltype(zero);
    RunPool3d(g, x.data_as<const T>(), y.data_as<T>(), MaxOp<T>{});
    return 0;
  });
}

AI3_REGISTER_ALGORITHM(MaxPool3dAttrs, "direct", Device::kCPU,
                       FunctionAlgorithm<MaxPool3dAttrs, MaxPool3dDirect>);

}  // namespace
}  // namespace ai3
