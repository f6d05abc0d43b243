// conv2d "gemm": im2col, then one GEMM per image and group through
// ai3::Gemm (BLIS).
//
// NCHW: the columns matrix is col[(c, r, s), (oh, ow)], so
//   Y_g[kg, OH*OW] = W_g[kg, cg*kh*kw] x col   (+ bias)
// with the weights used as they are (OIHW rows are (c, r, s) already).
// NHWC: the columns matrix is col[(oh, ow), (r, s, c)], so
//   Y[OH*OW, kg] (a column slice of the NHWC output, ldc = K)
//       = col x W_g^T
// with the weights reordered once in Prepare to [k][r][s][c].
// A 1x1 stride-1 unpadded layer needs no im2col: the input is the matrix (for
// NHWC, all images of the batch form one matrix).
//
// im2col (conv2d_im2col.h) is spread over OpenMP threads; the GEMM calls, which
// thread themselves, are made outside any parallel region.
#include <algorithm>
#include <cstring>
#include <memory>

#include "core/buffer.h"
#include "core/math/activation.h"
#include "core/math/dispatch.h"
#include "core/math/gemm.h"
#include "core/ops/conv2d/conv2d.h"
#include "core/ops/conv2d/conv2d_im2col.h"

namespace ai3 {
namespace {

class GemmKernel : public Conv2dKernelBase<GemmKernel> {
 public:
  GemmKernel(const Conv2dAttrs& attrs, const std::vector<Tensor>& params)
      : Conv2dKernelBase(attrs, params) {
    if (attrs.layout == Layout::kNHWC && !attrs.is_1x1_unit()) {
      const int64_t cg = attrs.in_channels_per_group();
      const int64_t kh = attrs.kernel_h, kw = attrs.kernel_w;
      reordered_ =
          ReorderedWeights([&](int64_t o, int64_t c, int64_t r, int64_t s) {
            return ((o * kh + r) * kw + s) * cg + c;
          });
    }
  }

  size_t WorkspaceBytes(const Shape& input_shape) const override {
    if (attrs_.is_1x1_unit()) return 0;
    const Conv2dGeometry g = GeometryOf(attrs_, input_shape);
    return static_cast<size_t>(g.cg * g.kh * g.kw * g.oh * g.ow) *
           SizeOf(attrs_.dtype);
  }

  template <typename T>
  void RunTyped(const Conv2dGeometry& g, const T* x, T* y,
                void* workspace) const {
    if (g.layout == Layout::kNHWC) {
      RunNhwc(g, x, y, static_cast<T*>(workspace));
    } else {
      RunNchw(g, x, y, static_cast<T*>(workspace));
    }
  }

 private:
  template <typename T>
  void RunNchw(const Conv2dGeometry& g, const T* x, T* y, T* col) const {
    const T* w = weight<T>();
    const T* b = bias<T>();
    const int64_t pixels = g.oh * g.ow;
    const int64_t depth = g.cg * g.kh * g.kw;  // GEMM K
    const bool direct = attrs_.is_1x1_unit();
    const T beta = b ? T(1) : T(0);

    for (int64_t n = 0; n < g.n; ++n) {
      T* yn = y + n * g.k * pixels;
      if (b) {
#pragma omp parallel for schedule(static)
        for (int64_t k = 0; k < g.k; ++k) {
          std::fill(yn + k * pixels, yn + (k + 1) * pixels, b[k]);
        }
      }
      for (int64_t grp = 0; grp < g.groups; ++grp) {
        const T* xg = x + (n * g.c + grp * g.cg) * g.h * g.w;
        const T* matrix = xg;
        if (!direct) {
          Im2colNchw(g, xg, col);
          matrix = col;
        }
        Gemm<T>(false, false, g.kg, pixels, depth, T(1), w + grp * g.kg * depth,
                depth, matrix, pixels, beta, yn + grp * g.kg * pixels, pixels);
      }
      // Fused activation over this image's output, just written.
      ApplyActivationParallelWidest(attrs_.activation.As<T>(), yn,
                                    g.k * pixels);
    }
  }

  template <typename T>
  void RunNhwc(const Conv2dGeometry& g, const T* x, T* y, T* col) const {
    const T* b = bias<T>();
    const int64_t pixels = g.oh * g.ow;
    const int64_t depth = g.kh * g.kw * g.cg;  // GEMM K
    const T beta = b ? T(1) : T(0);

    if (b) {
      const int64_t rows = g.n * pixels;
#pragma omp parallel for schedule(static)
      for (int64_t p = 0; p < rows; ++p) {
        std::copy(b, b + g.k, y + p * g.k);
      }
    }

    if (attrs_.is_1x1_unit()) {
      // [N*H*W, C] x W_g^T, one GEMM per group over the whole batch. For a
      // 1x1 kernel OIHW already is [k][r][s][c].
      const T* w = weight<T>();
      for (int64_t grp = 0; grp < g.groups; ++grp) {
        Gemm<T>(false, true, g.n * pixels, g.kg, g.cg, T(1), x + grp * g.cg,
                g.c, w + grp * g.kg * g.cg, g.cg, beta, y + grp * g.kg, g.k);
      }
      ApplyActivationParallelWidest(attrs_.activation.As<T>(), y,
                                    g.n * pixels * g.k);
      return;
    }

    const T* w = reordered_.as<T>();
    for (int64_t n = 0; n < g.n; ++n) {
      const T* xn = x + n * g.h * g.w * g.c;
      T* yn = y + n * pixels * g.k;
      for (int64_t grp = 0; grp < g.groups; ++grp) {
        Im2colNhwc(g, xn + grp * g.cg, col);
        Gemm<T>(false, true, pixels, g.kg, depth, T(1), col, depth,
                w + grp * g.kg * depth, depth, beta, yn + grp * g.kg, g.k);
      }
      ApplyActivationParallelWidest(attrs_.activation.As<T>(), yn,
                                    pixels * g.k);
    }
  }

  Buffer reordered_;  // NHWC: weights as [k][r][s][c]
};

AI3_REGISTER_ALGORITHM(Conv2dAttrs, "gemm", Device::kCPU,
                       KernelAlgorithm<Conv2dAttrs, GemmKernel>);

}  // namespace
}  // namespace ai3
