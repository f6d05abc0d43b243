// avgpool3d "direct": each window's sum divided by its divisor, PyTorch's
// way (pool3d_direct.h's loops): divisor_override where given, else the
// window's extent inside the padded input with count_include_pad, else the
// number of taps inside the input.
#include <array>

#include "core/math/dispatch.h"
#include "core/ops/function_kernel.h"
#include "core/ops/pool2d/pool2d.h"  // AvgSpanOf
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
    if (a->divisor_override > 0) return acc / T(a->divisor_override);
    const std::array<int64_t, 3> o = {z, i, j};
    int64_t padded = 1, inside = 1;
    for (int d = 0; d < 3; ++d) {
      const AvgSpan span = AvgSpanOf(o[d], g->stride[d], g->pad_before[d],
                                     g->pad_after[d], g->kernel[d], g->in[d]);
      padded *= span.padded;
      inside *= span.end - span.begin;
    }
    return acc / T(a->count_include_pad ? padded : inside);
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
