// conv2d_backward_weight "gemm": per image and group, im2col of x (the
// forward gemm's, conv2d_im2col.h), then one GEMM with the output gradient
// accumulating into dW over the batch (beta = 1 after the first image).
//
// NCHW: dW_g[kg, (c, r, s)] += dY_g[kg, OH*OW] x col[(c, r, s), OH*OW]^T,
// straight into the OIHW gradient.
// NHWC: dWr_g[kg, (r, s, c)] += dY_g^T (dY_g: a column slice [OH*OW, kg]
// of the NHWC gradient, lda = K) x col[OH*OW, (r, s, c)], into a
// [k][r][s][c] scratch copied to OIHW at the end.
// A 1x1 stride-1 unpadded layer needs no im2col: x is the matrix (for
// NHWC, one GEMM per group over the whole batch).
//
// The GEMM calls, which thread themselves, are made outside any parallel
// region; im2col and the final reorder are spread over OpenMP threads.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/math/gemm.h"
#include "core/ops/conv2d/backward/weight/conv2d_backward_weight.h"
#include "core/ops/conv2d/conv2d_im2col.h"
#include "core/parallel.h"
#include "core/registry.h"

namespace ai3 {
namespace {

class GemmKernel
    : public Conv2dGradientKernel<Conv2dBackwardWeightAttrs, GemmKernel> {
 public:
  using Conv2dGradientKernel::Conv2dGradientKernel;

  // im2col's columns, then (NHWC) the [k][r][s][c] gradient.
  size_t ScratchBytes(const std::vector<Tensor>& inputs) const {
    if (attrs_.is_1x1_unit()) return 0;
    const Conv2dGeometry g = Geometry(inputs);
    const int64_t depth = g.cg * g.kh * g.kw;
    const int64_t reordered = g.layout == Layout::kNHWC ? g.k * depth : 0;
    return static_cast<size_t>(depth * g.oh * g.ow + reordered) *
           SizeOf(attrs_.dtype);
  }

  template <typename T>
  void RunTyped(const std::vector<Tensor>& inputs, const T* dy, T* dw,
                void* scratch) const {
    const Conv2dGeometry g = Geometry(inputs);
    const T* x = inputs[1].data_as<const T>();
    const int64_t pixels = g.oh * g.ow;
    const int64_t depth = g.cg * g.kh * g.kw;
    if (g.n == 0) {  // an empty batch: an empty sum, which no GEMM is asked
      std::fill(dw, dw + g.k * depth, T(0));
      return;
    }
    T* col = static_cast<T*>(scratch);
    const bool unit = attrs_.is_1x1_unit();
    if (g.layout == Layout::kNHWC) {
      if (unit) {
        for (int64_t grp = 0; grp < g.groups; ++grp) {
          Gemm<T>(true, false, g.kg, g.cg, g.n * pixels, T(1), dy + grp * g.kg,
                  g.k, x + grp * g.cg, g.c, T(0), dw + grp * g.kg * g.cg, g.cg);
        }
        return;
      }
      T* dwr = col + depth * pixels;
      for (int64_t n = 0; n < g.n; ++n) {
        for (int64_t grp = 0; grp < g.groups; ++grp) {
          Im2colNhwc(g, x + n * g.h * g.w * g.c + grp * g.cg, col);
          Gemm<T>(true, false, g.kg, depth, pixels, T(1),
                  dy + n * pixels * g.k + grp * g.kg, g.k, col, depth,
                  n ? T(1) : T(0), dwr + grp * g.kg * depth, depth);
        }
      }
      // [k][r][s][c] -> OIHW.
      ParallelFor(0, g.k, g.k * depth >= (1 << 14), [&](int64_t k) {
        for (int64_t c = 0; c < g.cg; ++c)
          for (int64_t r = 0; r < g.kh; ++r)
            for (int64_t s = 0; s < g.kw; ++s)
              dw[((k * g.cg + c) * g.kh + r) * g.kw + s] =
                  dwr[k * depth + (r * g.kw + s) * g.cg + c];
      });
      return;
    }
    for (int64_t n = 0; n < g.n; ++n) {
      for (int64_t grp = 0; grp < g.groups; ++grp) {
        const T* xg = x + (n * g.c + grp * g.cg) * g.h * g.w;
        if (!unit) Im2colNchw(g, xg, col);
        Gemm<T>(false, true, g.kg, depth, pixels, T(1),
                dy + (n * g.k + grp * g.kg) * pixels, pixels, unit ? xg : col,
                pixels, n ? T(1) : T(0), dw + grp * g.kg * depth, depth);
      }
    }
  }
};

AI3_REGISTER_ALGORITHM(Conv2dBackwardWeightAttrs, "gemm", Device::kCPU,
                       KernelAlgorithm<Conv2dBackwardWeightAttrs, GemmKernel>);

}  // namespace
}  // namespace ai3
