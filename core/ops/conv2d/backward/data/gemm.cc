// conv2d_backward_data "gemm": per image and group, one GEMM of the weights
// with the output gradient into a columns matrix (the transpose of the
// forward gemm's product), then col2im, which sums each input element's
// columns into it.
//
// NCHW: col[(c, r, s), (oh, ow)] = W_g^T [cg*kh*kw, kg] x dY_g[kg, OH*OW]
// (the OIHW weights read transposed in place).
// NHWC: col[(oh, ow), (r, s, c)] = dY_g[OH*OW, kg] (a column slice of the
// NHWC gradient, lda = K) x W_g[kg, (r, s, c)], with the weights reordered
// once to [k][r][s][c] (as the forward gemm does).
// A 1x1 stride-1 unpadded layer needs no col2im: the GEMM writes dx (for
// NHWC, over all images of the batch at once).
//
// col2im gathers (each thread writes its own input rows, so nothing is
// added twice at once) and is spread over OpenMP threads; the GEMM calls,
// which thread themselves, are made outside any parallel region.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/buffer.h"
#include "core/math/gemm.h"
#include "core/ops/conv2d/backward/data/conv2d_backward_data.h"
#include "core/ops/conv2d/conv2d_ranges.h"
#include "core/parallel.h"
#include "core/registry.h"

namespace ai3 {
namespace {

// dx_g[c][ih][iw] (one image's group, NCHW) = the sum of the columns of
// col[(c*kh + r)*kw + s][oh*OW + ow] that read it.
template <typename T>
void Col2imNchw(const Conv2dGeometry& g, const T* col, T* dxg) {
  const int64_t pixels = g.oh * g.ow;
  ParallelFor(0, g.cg * g.h, true, [&](int64_t row) {
    const int64_t c = row / g.h, ih = row % g.h;
    T* dst = dxg + (c * g.h + ih) * g.w;
    std::fill(dst, dst + g.w, T(0));
    for (int64_t r = 0; r < g.kh; ++r) {
      const int64_t th = ih + g.ph - r * g.dh;  // oh * sh
      if (th < 0 || th % g.sh || th / g.sh >= g.oh) continue;
      const int64_t oh = th / g.sh;
      for (int64_t s = 0; s < g.kw; ++s) {
        const T* src = col + ((c * g.kh + r) * g.kw + s) * pixels + oh * g.ow;
        // Output column ow reads input column ow*sw + shift.
        const int64_t shift = s * g.dw - g.pw;
        int64_t lo, hi;
        ValidRange(shift, g.sw, g.w, g.ow, &lo, &hi);
        for (int64_t ow = lo; ow < hi; ++ow) dst[ow * g.sw + shift] += src[ow];
      }
    }
  });
}

// dx[ih][iw][c of the group] (one image, NHWC; dxg at the group's first
// channel of pixel (0, 0)) = the sum of the columns of
// col[oh*OW + ow][(r*kw + s)*cg + c] that read it.
template <typename T>
void Col2imNhwc(const Conv2dGeometry& g, const T* col, T* dxg) {
  const int64_t depth = g.kh * g.kw * g.cg;
  ParallelFor(0, g.h, true, [&](int64_t ih) {
    T* row = dxg + ih * g.w * g.c;
    for (int64_t iw = 0; iw < g.w; ++iw) {
      std::fill(row + iw * g.c, row + iw * g.c + g.cg, T(0));
    }
    for (int64_t r = 0; r < g.kh; ++r) {
      const int64_t th = ih + g.ph - r * g.dh;  // oh * sh
      if (th < 0 || th % g.sh || th / g.sh >= g.oh) continue;
      const int64_t oh = th / g.sh;
      for (int64_t s = 0; s < g.kw; ++s) {
        const int64_t shift = s * g.dw - g.pw;
        int64_t lo, hi;
        ValidRange(shift, g.sw, g.w, g.ow, &lo, &hi);
        for (int64_t ow = lo; ow < hi; ++ow) {
          const T* src = col + (oh * g.ow + ow) * depth + (r * g.kw + s) * g.cg;
          T* dst = row + (ow * g.sw + shift) * g.c;
#pragma omp simd
          for (int64_t c = 0; c < g.cg; ++c) dst[c] += src[c];
        }
      }
    }
  });
}

class GemmKernel
    : public Conv2dGradientKernel<Conv2dBackwardDataAttrs, GemmKernel> {
 public:
  GemmKernel(const Conv2dBackwardDataAttrs& attrs,
             const std::vector<Tensor>& params)
      : Conv2dGradientKernel(attrs, params) {
    if (attrs.layout == Layout::kNHWC && !attrs.is_1x1_unit()) {
      const int64_t cg = attrs.in_channels_per_group();
      const int64_t kh = attrs.kernel_h, kw = attrs.kernel_w;
      reordered_ = ReorderConv2dWeights(
          attrs, weight_, [&](int64_t o, int64_t c, int64_t r, int64_t s) {
            return ((o * kh + r) * kw + s) * cg + c;
          });
    }
  }

  size_t ScratchBytes(const std::vector<Tensor>& inputs) const {
    if (attrs_.is_1x1_unit()) return 0;
    const Conv2dGeometry g = Geometry(inputs);
    return static_cast<size_t>(g.cg * g.kh * g.kw * g.oh * g.ow) *
           SizeOf(attrs_.dtype);
  }

  template <typename T>
  void RunTyped(const std::vector<Tensor>& inputs, const T* dy, T* dx,
                void* scratch) const {
    const Conv2dGeometry g = Geometry(inputs);
    T* col = static_cast<T*>(scratch);
    const int64_t pixels = g.oh * g.ow;
    const int64_t depth = g.cg * g.kh * g.kw;  // the GEMM's M (NCHW) or N
    const bool unit = attrs_.is_1x1_unit();
    if (g.layout == Layout::kNHWC) {
      if (unit) {
        // dx[N*H*W, cg slice] = dY[N*H*W, kg slice] x W_g[kg, cg].
        for (int64_t grp = 0; grp < g.groups; ++grp) {
          Gemm<T>(false, false, g.n * pixels, g.cg, g.kg, T(1), dy + grp * g.kg,
                  g.k, weight<T>() + grp * g.kg * g.cg, g.cg, T(0),
                  dx + grp * g.cg, g.c);
        }
        return;
      }
      const T* w = reordered_.as<T>();
      for (int64_t n = 0; n < g.n; ++n) {
        for (int64_t grp = 0; grp < g.groups; ++grp) {
          Gemm<T>(false, false, pixels, depth, g.kg, T(1),
                  dy + n * pixels * g.k + grp * g.kg, g.k,
                  w + grp * g.kg * depth, depth, T(0), col, depth);
          Col2imNhwc(g, col, dx + n * g.h * g.w * g.c + grp * g.cg);
        }
      }
      return;
    }
    const T* w = weight<T>();
    for (int64_t n = 0; n < g.n; ++n) {
      for (int64_t grp = 0; grp < g.groups; ++grp) {
        const T* dyg = dy + (n * g.k + grp * g.kg) * pixels;
        T* dxg = dx + (n * g.c + grp * g.cg) * g.h * g.w;
        Gemm<T>(true, false, depth, pixels, g.kg, T(1), w + grp * g.kg * depth,
                depth, dyg, pixels, T(0), unit ? dxg : col, pixels);
        if (!unit) Col2imNchw(g, col, dxg);
      }
    }
  }

 private:
  Buffer reordered_;  // NHWC: weights as [k][r][s][c]
};

AI3_REGISTER_ALGORITHM(Conv2dBackwardDataAttrs, "gemm", Device::kCPU,
                       KernelAlgorithm<Conv2dBackwardDataAttrs, GemmKernel>);

}  // namespace
}  // namespace ai3
