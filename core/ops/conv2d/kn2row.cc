// conv2d "kn2row": a kh x kw convolution as kh*kw 1x1 convolutions, each a
// GEMM, whose results are shifted and added into the output.
//
// Per image and group, for each kernel position (r, s):
//   T[kg, H*W]  = W_rs[kg, cg] x X_g[cg, H*W]          (ai3::Gemm)
//   y[k, oh, ow] += T[k, oh*sh - ph + r*dh, ow*sw - pw + s*dw]   (in range)
// with the output first set to the bias (or zero). The weights are reordered
// once in Prepare to [r][s][k][c], so each W_rs is a dense [K, cg] matrix.
// Only one kernel position's partial result lives in the workspace at a time
// (kg*H*W elements), which is kn2row's memory advantage over im2col's
// cg*kh*kw*OH*OW. A position that maps the input onto the output unshifted
// (stride 1, same spatial size, r*dh == ph and s*dw == pw: the centre tap of
// a "same" convolution) accumulates straight into the output with beta = 1.
//
// With stride > 1 the 1x1 GEMMs still cover every input pixel, of which the
// shift-add keeps only those a window uses; correct, but wasteful.
//
// Both layouts. NCHW: W_rs[kg, cg] x X_g[cg, H*W] into [k][H][W] planes, the
// shift-add moving rectangles within them. NHWC: the same products
// transposed, T[H*W, kg] = X_g[H*W, cg] (rows of C, the group's cg columns)
// x W_rs^T, the shift-add moving runs of kg contiguous channels from pixel
// to pixel; the output's bias, its pixels' channel runs and the unshifted
// tap's beta = 1 product work the same way on [H*W][K].
#include <algorithm>
#include <memory>

#include "core/buffer.h"
#include "core/math/activation.h"
#include "core/math/dispatch.h"
#include "core/math/gemm.h"
#include "core/ops/conv2d/conv2d.h"
#include "core/ops/conv2d/conv2d_ranges.h"

namespace ai3 {
namespace {

class Kn2rowKernel : public Conv2dKernelBase<Kn2rowKernel> {
 public:
  Kn2rowKernel(const Conv2dAttrs& attrs, const std::vector<Tensor>& params)
      : Conv2dKernelBase(attrs, params) {
    const int64_t k = attrs.out_channels, cg = attrs.in_channels_per_group();
    const int64_t kw = attrs.kernel_w;
    reordered_ =
        ReorderedWeights([&](int64_t o, int64_t c, int64_t r, int64_t s) {
          return ((r * kw + s) * k + o) * cg + c;
        });
  }

  size_t WorkspaceBytes(const Shape& input_shape) const override {
    const Conv2dGeometry g = GeometryOf(attrs_, input_shape);
    return static_cast<size_t>(g.kg * g.h * g.w) * SizeOf(attrs_.dtype);
  }

  template <typename T>
  void RunTyped(const Conv2dGeometry& g, const T* x, T* y,
                void* workspace) const {
    const T* b = bias<T>();
    const T* wr = reordered_.as<T>();
    T* partial = static_cast<T*>(workspace);
    const bool nhwc = g.layout == Layout::kNHWC;
    const int64_t in_plane = g.h * g.w;
    const int64_t out_plane = g.oh * g.ow;

    for (int64_t n = 0; n < g.n; ++n) {
      T* yn = y + n * g.k * out_plane;
      if (nhwc) {
#pragma omp parallel for schedule(static)
        for (int64_t pix = 0; pix < out_plane; ++pix) {
          T* yp = yn + pix * g.k;
          if (b) {
            std::copy(b, b + g.k, yp);
          } else {
            std::fill(yp, yp + g.k, T(0));
          }
        }
      } else {
#pragma omp parallel for schedule(static)
        for (int64_t k = 0; k < g.k; ++k) {
          std::fill(yn + k * out_plane, yn + (k + 1) * out_plane,
                    b ? b[k] : T(0));
        }
      }
      for (int64_t grp = 0; grp < g.groups; ++grp) {
        // NCHW: the group's cg planes and kg output planes; NHWC: its first
        // channel of pixel (0, 0), in rows of C (input) and K (output).
        const T* xg = nhwc ? x + n * g.c * in_plane + grp * g.cg
                           : x + (n * g.c + grp * g.cg) * in_plane;
        T* yg = nhwc ? yn + grp * g.kg : yn + grp * g.kg * out_plane;
        for (int64_t r = 0; r < g.kh; ++r) {
          // Output rows [oh_lo, oh_hi) read input rows in range.
          int64_t oh_lo, oh_hi;
          ValidRange(r * g.dh - g.ph, g.sh, g.h, g.oh, &oh_lo, &oh_hi);
          if (oh_lo == oh_hi) continue;
          for (int64_t s = 0; s < g.kw; ++s) {
            int64_t ow_lo, ow_hi;
            ValidRange(s * g.dw - g.pw, g.sw, g.w, g.ow, &ow_lo, &ow_hi);
            if (ow_lo == ow_hi) continue;  // this tap only ever sees padding
            const T* w_rs = wr + ((r * g.kw + s) * g.k + grp * g.kg) * g.cg;
            const bool identity = g.sh == 1 && g.sw == 1 && g.oh == g.h &&
                                  g.ow == g.w && r * g.dh == g.ph &&
                                  s * g.dw == g.pw;
            // Unshifted, the product accumulates straight into the output.
            T* dst = identity ? yg : partial;
            const T beta = identity ? T(1) : T(0);
            if (nhwc) {
              Gemm<T>(false, true, in_plane, g.kg, g.cg, T(1), xg, g.c, w_rs,
                      g.cg, beta, dst, identity ? g.k : g.kg);
            } else {
              Gemm<T>(false, false, g.kg, in_plane, g.cg, T(1), w_rs, g.cg, xg,
                      in_plane, beta, dst, identity ? out_plane : in_plane);
            }
            if (identity) continue;
            if (nhwc) {
              ShiftAddNhwc(g, partial, yg, r, s, oh_lo, oh_hi, ow_lo, ow_hi);
            } else {
              ShiftAdd(g, partial, yg, r, s, oh_lo, oh_hi, ow_lo, ow_hi);
            }
          }
        }
      }
      ApplyActivationParallelWidest(attrs_.activation.As<T>(), yn,
                                    g.k * out_plane);
    }
  }

 private:
  // yg[k][oh][ow] += partial[k][oh*sh - ph + r*dh][ow*sw - pw + s*dw] over
  // the output rectangle [oh_lo, oh_hi) x [ow_lo, ow_hi) whose sources are
  // inside the input.
  template <typename T>
  static void ShiftAdd(const Conv2dGeometry& g, const T* partial, T* yg,
                       int64_t r, int64_t s, int64_t oh_lo, int64_t oh_hi,
                       int64_t ow_lo, int64_t ow_hi) {
    const int64_t rows = oh_hi - oh_lo;
    const int64_t col_shift = s * g.dw - g.pw;
    const int64_t sw = g.sw;
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t k = 0; k < g.kg; ++k) {
      for (int64_t i = 0; i < rows; ++i) {
        const int64_t oh = oh_lo + i;
        const int64_t ih = oh * g.sh - g.ph + r * g.dh;
        const T* __restrict src = partial + (k * g.h + ih) * g.w;
        T* __restrict dst = yg + (k * g.oh + oh) * g.ow;
        if (sw == 1) {
          for (int64_t ow = ow_lo; ow < ow_hi; ++ow) {
            dst[ow] += src[ow + col_shift];
          }
        } else {
          for (int64_t ow = ow_lo; ow < ow_hi; ++ow) {
            dst[ow] += src[ow * sw + col_shift];
          }
        }
      }
    }
  }

  // NHWC: yg[oh][ow][k] += partial[oh*sh - ph + r*dh][ow*sw - pw + s*dw][k]
  // over the same rectangle, yg's pixels K apart, partial's kg.
  template <typename T>
  static void ShiftAddNhwc(const Conv2dGeometry& g, const T* partial, T* yg,
                           int64_t r, int64_t s, int64_t oh_lo, int64_t oh_hi,
                           int64_t ow_lo, int64_t ow_hi) {
    const int64_t col_shift = s * g.dw - g.pw;
#pragma omp parallel for schedule(static)
    for (int64_t oh = oh_lo; oh < oh_hi; ++oh) {
      const int64_t ih = oh * g.sh - g.ph + r * g.dh;
      for (int64_t ow = ow_lo; ow < ow_hi; ++ow) {
        const T* __restrict src =
            partial + (ih * g.w + ow * g.sw + col_shift) * g.kg;
        T* __restrict dst = yg + (oh * g.ow + ow) * g.k;
        for (int64_t k = 0; k < g.kg; ++k) dst[k] += src[k];
      }
    }
  }

  Buffer reordered_;  // weights as [r][s][k][c]
};

AI3_REGISTER_ALGORITHM(Conv2dAttrs, "kn2row", Device::kCPU,
                       KernelAlgorithm<Conv2dAttrs, Kn2rowKernel>);

}  // namespace
}  // namespace ai3
