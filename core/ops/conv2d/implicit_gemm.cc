// conv2d "implicit gemm": the convolution as the GEMM
//   Y_g[M = kg, N = OH*OW] = W_g[M, K = cg*kh*kw] x col[K, N]
// computed with blocked GEMM loops, without ever materialising col (the
// im2col matrix). Per image, group and block of up to kMaxPixels output
// pixels, and per block of kDepthBlock rows of K, the needed input values
// are gathered into a small panel (kDepthBlock x pixels, cache resident, one
// per thread in the workspace); a register-blocked micro-kernel then
// accumulates kMr output channels x kNr pixels at a time from it into the
// output. The weights are packed once in Prepare into kMr-row slivers laid
// out K-major, so the micro-kernel streams both operands contiguously.
//
// Work is spread over OpenMP threads by (image, group, pixel block); the
// workspace holds omp_get_max_threads() panels.
//
// Both layouts: the gather reads the input through its layout's strides and
// the micro-kernel writes the output through the output's, so NHWC only costs
// strided gathers and scattered stores.
#include <omp.h>

#include <algorithm>
#include <memory>

#include "core/buffer.h"
#include "core/math/dispatch.h"
#include "core/ops/conv2d/conv2d.h"

namespace ai3 {
namespace {

constexpr int64_t kMr = 6;            // output channels per micro-tile
constexpr int64_t kDepthBlock = 128;  // rows of K gathered per panel
constexpr int64_t kMaxPixels = 128;   // output pixels per block (panel width)
constexpr int64_t kVectorBytes = 32;  // one AVX2 register
constexpr int64_t kVectorsPerRow = 2;

// The micro-tile's pixel width: two AVX2 vectors of T.
template <typename T>
constexpr int64_t Nr() {
  return kVectorsPerRow * kVectorBytes / static_cast<int64_t>(sizeof(T));
}

template <typename T>
struct VectorOf {
  typedef T type __attribute__((vector_size(kVectorBytes)));
};

inline int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Output indices [lo, hi) whose input index o*stride + offset is in [0, size).
inline void ValidRange(int64_t offset, int64_t stride, int64_t size,
                       int64_t count, int64_t* lo, int64_t* hi) {
  *lo = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  *hi = size - 1 - offset < 0 ? 0 : (size - 1 - offset) / stride + 1;
  *lo = std::min(*lo, count);
  *hi = std::min(*hi, count);
  if (*hi < *lo) *hi = *lo;
}

class ImplicitGemmKernel : public Conv2dKernelBase<ImplicitGemmKernel> {
 public:
  ImplicitGemmKernel(const Conv2dAttrs& attrs,
                     const std::vector<Tensor>& params)
      : Conv2dKernelBase(attrs, params) {
    // packed[grp][m-sliver][kidx][i] = W[grp*kg + sliver*kMr + i][kidx],
    // zero for rows past kg.
    DispatchFloat(attrs.dtype, [&](auto zero) {
      using T = decltype(zero);
      const int64_t groups = attrs.groups, kg = attrs.out_channels_per_group();
      const int64_t depth = attrs.in_channels_per_group() * attrs.kernel_h *
                            attrs.kernel_w;
      const int64_t slivers = CeilDiv(kg, kMr);
      packed_ = Buffer(static_cast<size_t>(groups * slivers * depth * kMr) *
                       sizeof(T));
      const T* src = weight<T>();
      T* dst = packed_.as<T>();
      for (int64_t grp = 0; grp < groups; ++grp)
        for (int64_t sl = 0; sl < slivers; ++sl)
          for (int64_t kidx = 0; kidx < depth; ++kidx)
            for (int64_t i = 0; i < kMr; ++i) {
              const int64_t m = sl * kMr + i;
              dst[((grp * slivers + sl) * depth + kidx) * kMr + i] =
                  m < kg ? src[(grp * kg + m) * depth + kidx] : T(0);
            }
      return 0;
    });
  }

  size_t WorkspaceBytes(const Shape&) const override {
    return static_cast<size_t>(omp_get_max_threads()) * PanelElements() *
           SizeOf(attrs_.dtype);
  }

  template <typename T>
  void RunTyped(const Conv2dGeometry& g, const T* x, T* y,
                void* workspace) const {
    constexpr int64_t nr = Nr<T>();
    const int64_t pixels = g.oh * g.ow;
    const int64_t depth = g.cg * g.kh * g.kw;
    const int64_t slivers = CeilDiv(g.kg, kMr);
    // Must match WorkspaceBytes, called just before Run in the same context.
    const int threads = omp_get_max_threads();

    // Pixel block width: kMaxPixels, narrower (down to one micro-tile) when
    // that would leave threads without a block.
    const int64_t images = g.n * g.groups;
    const int64_t wanted = CeilDiv(threads, images);  // blocks per image
    const int64_t width = std::clamp(CeilDiv(CeilDiv(pixels, wanted), nr) * nr,
                                     nr, kMaxPixels);
    const int64_t blocks = CeilDiv(pixels, width);
    const int64_t tasks = images * blocks;

    const ImageStrides xs = ImageStridesOf({g.n, g.c, g.h, g.w}, g.layout);
    const ImageStrides ys = ImageStridesOf({g.n, g.k, g.oh, g.ow}, g.layout);
    const T* b = bias<T>();
    const T* packed = packed_.as<T>();
    // The fused activation applies when the last block of K is added.
    const auto act = attrs_.activation.As<T>();
    const Activation::Bounds<T> no_act{false, T(0), T(0)};

#pragma omp parallel num_threads(threads)
    {
      T* panel = static_cast<T*>(workspace) +
                 static_cast<int64_t>(omp_get_thread_num()) * PanelElements();
#pragma omp for schedule(static)
      for (int64_t task = 0; task < tasks; ++task) {
        const int64_t blk = task % blocks;
        const int64_t grp = (task / blocks) % g.groups;
        const int64_t n = task / (blocks * g.groups);
        const int64_t p0 = blk * width;
        const int64_t count = std::min(width, pixels - p0);
        const T* xg = x + n * xs.n + grp * g.cg * xs.c;
        for (int64_t d0 = 0; d0 < depth; d0 += kDepthBlock) {
          const int64_t rows = std::min(kDepthBlock, depth - d0);
          Gather(g, xs, xg, d0, rows, p0, count, width, panel);
          for (int64_t sl = 0; sl < slivers; ++sl) {
            const int64_t m0 = sl * kMr;
            const int64_t mr = std::min(kMr, g.kg - m0);
            const T* w = packed + ((grp * slivers + sl) * depth + d0) * kMr;
            const int64_t k0 = grp * g.kg + m0;
            for (int64_t j0 = 0; j0 < count; j0 += nr) {
              MicroKernel<T>(w, panel + j0, width, rows, mr,
                             std::min(nr, count - j0),
                             y + n * ys.n + k0 * ys.c + (p0 + j0) * ys.w,
                             ys.c, ys.w, d0 == 0, b ? b + k0 : nullptr,
                             d0 + rows == depth ? act : no_act);
            }
          }
        }
      }
    }
  }

 private:
  static int64_t PanelElements() { return kDepthBlock * kMaxPixels; }

  // panel[kk][j] = x[c][ih][iw] for K row d0 + kk = (c, r, s) and output pixel
  // p0 + j, or 0 where the window reads padding. Columns [count, round up to
  // a micro-tile) are zeroed so the micro-kernel may read whole tiles.
  template <typename T>
  static void Gather(const Conv2dGeometry& g, const ImageStrides& xs,
                     const T* xg, int64_t d0, int64_t rows, int64_t p0,
                     int64_t count, int64_t stride, T* panel) {
    constexpr int64_t nr = Nr<T>();
    const int64_t padded = CeilDiv(count, nr) * nr;
    for (int64_t kk = 0; kk < rows; ++kk) {
      const int64_t kidx = d0 + kk;
      const int64_t s = kidx % g.kw;
      const int64_t r = (kidx / g.kw) % g.kh;
      const int64_t c = kidx / (g.kw * g.kh);
      const T* xc = xg + c * xs.c;
      const int64_t shift = s * g.dw - g.pw;  // iw = ow*sw + shift
      int64_t lo, hi;
      ValidRange(shift, g.sw, g.w, g.ow, &lo, &hi);
      T* row = panel + kk * stride;
      int64_t oh = p0 / g.ow, ow = p0 % g.ow;
      for (int64_t j = 0; j < count; ++oh, ow = 0) {
        // This output row's pixels ow' in [ow, end) go to row[j + ow' - ow].
        const int64_t seg = std::min(g.ow - ow, count - j);
        const int64_t end = ow + seg;
        T* d = row + j;
        const int64_t ih = oh * g.sh - g.ph + r * g.dh;
        if (ih < 0 || ih >= g.h) {
          std::fill(d, d + seg, T(0));
        } else {
          const int64_t a = std::clamp(lo, ow, end);
          const int64_t z = std::clamp(hi, a, end);
          const T* src = xc + ih * xs.h;
          std::fill(d, d + (a - ow), T(0));
          if (g.sw == 1 && xs.w == 1) {
            for (int64_t t = a; t < z; ++t) d[t - ow] = src[t + shift];
          } else {
            for (int64_t t = a; t < z; ++t) {
              d[t - ow] = src[(t * g.sw + shift) * xs.w];
            }
          }
          std::fill(d + (z - ow), d + seg, T(0));
        }
        j += seg;
      }
      std::fill(row + count, row + padded, T(0));
    }
  }

  // acc[i][j] = sum over kk < rows of w[kk*kMr + i] * panel[kk*stride + j]
  // for i < kMr, j < Nr (two vector registers per row); then
  //   y[i*yc + j*yp] = act((first ? bias[i] or 0 : y[...]) + acc[i][j])
  // for the mr x nr valid part, act being the fused activation on the last
  // block of K (disabled before it). `panel` is 32-byte aligned.
  template <typename T>
  static void MicroKernel(const T* __restrict w, const T* __restrict panel,
                          int64_t stride, int64_t rows, int64_t mr, int64_t nr,
                          T* __restrict y, int64_t yc, int64_t yp, bool first,
                          const T* bias, const Activation::Bounds<T>& act) {
    using V = typename VectorOf<T>::type;
    constexpr int64_t lanes = kVectorBytes / sizeof(T);
    V acc[kMr][kVectorsPerRow];
    for (int64_t i = 0; i < kMr; ++i)
      for (int64_t v = 0; v < kVectorsPerRow; ++v) acc[i][v] = V{};
    for (int64_t kk = 0; kk < rows; ++kk) {
      V p[kVectorsPerRow];
      for (int64_t v = 0; v < kVectorsPerRow; ++v) {
        __builtin_memcpy(&p[v], panel + kk * stride + v * lanes, sizeof(V));
      }
      const T* wk = w + kk * kMr;
      for (int64_t i = 0; i < kMr; ++i) {
        const T wi = wk[i];
        for (int64_t v = 0; v < kVectorsPerRow; ++v) acc[i][v] += wi * p[v];
      }
    }
    const bool full = nr == kVectorsPerRow * lanes && yp == 1;
    for (int64_t i = 0; i < mr; ++i) {
      T* yi = y + i * yc;
      const T init = bias ? bias[i] : T(0);
      if (full) {
        for (int64_t v = 0; v < kVectorsPerRow; ++v) {
          V out;
          if (first) {
            out = acc[i][v] + init;
          } else {
            __builtin_memcpy(&out, yi + v * lanes, sizeof(V));
            out += acc[i][v];
          }
          if (act.enabled) {
            const V lo = V{} + act.lo, hi = V{} + act.hi;
            out = out < lo ? lo : out;
            out = out > hi ? hi : out;
          }
          __builtin_memcpy(yi + v * lanes, &out, sizeof(V));
        }
      } else {
        for (int64_t j = 0; j < nr; ++j) {
          const T a = acc[i][j / lanes][j % lanes];
          yi[j * yp] = act(first ? init + a : yi[j * yp] + a);
        }
      }
    }
  }

  Buffer packed_;  // weights as [group][kMr-row sliver][K][kMr]
};

class ImplicitGemm : public Algorithm<Conv2dAttrs> {
 public:
  int Preference(const Conv2dAttrs&) const override { return 10; }
  std::unique_ptr<Kernel> Prepare(
      const Conv2dAttrs& attrs,
      const std::vector<Tensor>& params) const override {
    return std::make_unique<ImplicitGemmKernel>(attrs, params);
  }
};

AI3_REGISTER_ALGORITHM(Conv2dAttrs, "implicit gemm", Device::kCPU,
                       ImplicitGemm);

}  // namespace
}  // namespace ai3
