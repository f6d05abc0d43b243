// conv2d "smm": Scalar-Matrix-Multiplication convolution with zero packing
// (the seed paper's algorithm).
//
// Per image, the input is first copied into a zero-padded buffer in the
// workspace ("zero packing"), so the inner loops need no bounds checks. Then
// every output channel plane is accumulated as a sum of scalar x matrix
// products:
//   Y[k] = bias[k] + sum over c, r, s of  w[k, c, r, s] * Xpad[c0 + c](r, s)
// where Xpad[c](r, s) is the (OH x OW) view of padded channel c shifted by
// (r * dh, s * dw) and sampled with the stride. The innermost loop runs along
// an output row and is contiguous (vectorisable) when the stride is 1.
// Output channels are independent, so they are spread over OpenMP threads.
//
// NCHW only: the algorithm works on whole channel planes, and an NHWC tensor
// has no contiguous channel planes to scale and add.
#include <algorithm>
#include <cstring>
#include <memory>

#include "core/ops/conv2d/conv2d.h"

namespace ai3 {
namespace {

// Padded plane size one image needs. Only rows/columns an output actually
// reads are kept: the bottom/right padding beyond the last window is dropped.
struct PaddedDims {
  int64_t ph, pw;  // rows and columns of one padded channel plane
};

PaddedDims PaddedOf(const Conv2dGeometry& g) {
  // The last window starts at (oh-1)*sh and spans dh*(kh-1)+1 rows.
  const int64_t rows = (g.oh - 1) * g.sh + g.dh * (g.kh - 1) + 1;
  const int64_t cols = (g.ow - 1) * g.sw + g.dw * (g.kw - 1) + 1;
  return {rows, cols};
}

class SmmKernel : public Conv2dKernelBase<SmmKernel> {
 public:
  using Conv2dKernelBase::Conv2dKernelBase;

  size_t WorkspaceBytes(const Shape& input_shape) const override {
    const Conv2dGeometry g = GeometryOf(attrs_, input_shape);
    const PaddedDims p = PaddedOf(g);
    return static_cast<size_t>(g.c * p.ph * p.pw) * SizeOf(attrs_.dtype);
  }

  template <typename T>
  void RunTyped(const Conv2dGeometry& g, const T* x, T* y,
                void* workspace) const {
    const T* w = weight<T>();
    const T* b = bias<T>();
    const PaddedDims p = PaddedOf(g);
    const int64_t plane = p.ph * p.pw;
    const int64_t out_plane = g.oh * g.ow;
    const int64_t taps = g.kh * g.kw;
    T* pad = static_cast<T*>(workspace);
    const auto act = attrs_.activation.As<T>();

    for (int64_t n = 0; n < g.n; ++n) {
      const T* xn = x + n * g.c * g.h * g.w;
      T* yn = y + n * g.k * out_plane;

      // Zero packing: every input channel of this image into its padded
      // plane. Rows/columns of the input outside the kept window (possible
      // when bottom/right padding or the stride leaves them unread) are
      // simply not copied.
#pragma omp parallel for schedule(static)
      for (int64_t c = 0; c < g.c; ++c) {
        T* dst = pad + c * plane;
        const T* src = xn + c * g.h * g.w;
        for (int64_t i = 0; i < p.ph; ++i) {
          T* drow = dst + i * p.pw;
          const int64_t ih = i - g.ph;
          if (ih < 0 || ih >= g.h) {
            std::fill(drow, drow + p.pw, T(0));
            continue;
          }
          // Columns [g.pw, g.pw + g.w) hold input, clipped to the plane.
          const int64_t lo = std::min(g.pw, p.pw);
          const int64_t hi = std::min(g.pw + g.w, p.pw);
          std::fill(drow, drow + lo, T(0));
          if (hi > lo) {
            std::memcpy(drow + lo, src + ih * g.w + (lo - g.pw),
                        static_cast<size_t>(hi - lo) * sizeof(T));
          }
          std::fill(drow + std::max(hi, lo), drow + p.pw, T(0));
        }
      }

      // Scalar x matrix accumulation, one output channel per iteration.
#pragma omp parallel for schedule(static)
      for (int64_t k = 0; k < g.k; ++k) {
        T* __restrict yk = yn + k * out_plane;
        std::fill(yk, yk + out_plane, b ? b[k] : T(0));
        const int64_t c0 = (k / g.kg) * g.cg;
        const T* wk = w + k * g.cg * taps;
        for (int64_t c = 0; c < g.cg; ++c) {
          const T* xc = pad + (c0 + c) * plane;
          for (int64_t r = 0; r < g.kh; ++r) {
            for (int64_t s = 0; s < g.kw; ++s) {
              const T scalar = wk[c * taps + r * g.kw + s];
              const T* view = xc + r * g.dh * p.pw + s * g.dw;
              for (int64_t oh = 0; oh < g.oh; ++oh) {
                const T* __restrict src = view + oh * g.sh * p.pw;
                T* __restrict dst = yk + oh * g.ow;
                if (g.sw == 1) {
                  for (int64_t ow = 0; ow < g.ow; ++ow) {
                    dst[ow] += scalar * src[ow];
                  }
                } else {
                  const int64_t sw = g.sw;
                  for (int64_t ow = 0; ow < g.ow; ++ow) {
                    dst[ow] += scalar * src[ow * sw];
                  }
                }
              }
            }
          }
        }
        ApplyActivation(act, yk, out_plane);  // the plane is still in cache
      }
    }
  }
};

class Smm : public Algorithm<Conv2dAttrs> {
 public:
  std::string WhyNot(const Conv2dAttrs& attrs) const override {
    if (attrs.layout != Layout::kNCHW) {
      return "smm scales and adds whole channel planes; an NHWC input has no "
             "contiguous channel planes (use NCHW)";
    }
    return {};
  }
  int Preference(const Conv2dAttrs&) const override { return 5; }
  std::unique_ptr<Kernel> Prepare(
      const Conv2dAttrs& attrs,
      const std::vector<Tensor>& params) const override {
    return std::make_unique<SmmKernel>(attrs, params);
  }
};

AI3_REGISTER_ALGORITHM(Conv2dAttrs, "smm", Device::kCPU, Smm);

}  // namespace
}  // namespace ai3
