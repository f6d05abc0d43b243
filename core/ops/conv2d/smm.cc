// conv2d "smm": Scalar-Matrix-Multiplication convolution with zero packing
// (the seed paper's algorithm).
//
// Per image, the input is first copied into a zero-padded buffer in the
// workspace ("zero packing"), so the inner loops need no bounds checks. Then
// every output channel plane is accumulated as a sum of scalar x matrix
// products:
//   Y[k] = bias[k] + sum over c, r, s of  w[k, c, r, s] * Xpad[c0 + c](r, s)
// where Xpad[c](r, s) is the (OH x OW) view of padded channel c shifted by
// (r * dh, s * dw) and sampled with the stride.
//
// The sum is taken in registers rather than in memory: for a block of 6
// output channels and 2 vectors of pixels of one output row, each shifted
// input row segment Xpad[c](r, s) is loaded once and multiplied by the 6
// scalars w[k..k+5, c, r, s] (packed side by side once in Prepare), and the
// output is written once, with the bias and the fused activation. The same
// scalar x shifted-matrix products as the plane-at-a-time form, 6 FMAs per
// load instead of one load, one FMA and one store. Blocks of (output
// channels, output row) are spread over OpenMP threads. The rows are in
// smm_kernel.h, built for AVX2 here and for AVX-512 in smm_avx512.cc (two
// 64-byte vectors of pixels per block); the CPU picks (core/cpu.h).
//
// Both layouts. The algorithm works on whole channel planes, which an NHWC
// tensor does not have; but zero packing copies the input anyway, so for
// NHWC that same copy also transposes it into padded channel planes (one
// pass over the input either way). The register block's outputs are then
// written through the output's strides: NHWC stores each pixel of a channel
// K elements apart.
#include <algorithm>
#include <cstring>
#include <memory>

#include "core/buffer.h"
#include "core/cpu.h"
#include "core/ops/conv2d/conv2d.h"
#include "core/ops/conv2d/smm_kernel.h"

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
  SmmKernel(const Conv2dAttrs& attrs, const std::vector<Tensor>& params)
      : Conv2dKernelBase(attrs, params) {
    // The scalars of kb output channels side by side, once (kb: the
    // register block's channels, SmmChannelsPerBlock):
    //   packed[block][c][r][s][i] = w[block*kb + i][c][r][s]
    // so one step of the accumulation reads kb scalars from one cache line.
    packed_ =
        PackWeightSlivers(SmmChannelsPerBlock(attrs.out_channels_per_group()));
  }

  size_t WorkspaceBytes(const Shape& input_shape) const override {
    const Conv2dGeometry g = GeometryOf(attrs_, input_shape);
    const PaddedDims p = PaddedOf(g);
    return static_cast<size_t>(g.c * p.ph * p.pw + SlackOf(g)) *
           SizeOf(attrs_.dtype);
  }

  template <typename T>
  void RunTyped(const Conv2dGeometry& g, const T* x, T* y,
                void* workspace) const {
    const PaddedDims p = PaddedOf(g);
    const int64_t plane = p.ph * p.pw;
    const int64_t out_plane = g.oh * g.ow;
    T* pad = static_cast<T*>(workspace);
    std::fill(pad + g.c * plane, pad + g.c * plane + SlackOf(g), T(0));

    SmmProblem<T> problem;
    problem.g = g;
    problem.ph = p.ph;
    problem.pw = p.pw;
    problem.pad = pad;
    problem.packed = packed_.as<T>();
    problem.bias = bias<T>();
    problem.act = attrs_.activation.As<T>();
    problem.ys = ImageStridesOf({g.n, g.k, g.oh, g.ow}, g.layout);
    for (int64_t n = 0; n < g.n; ++n) {
      if (g.layout == Layout::kNHWC) {
        ZeroPackNhwc(g, p, x + n * g.c * g.h * g.w, pad);
      } else {
        ZeroPack(g, p, x + n * g.c * g.h * g.w, pad);
      }
      problem.yn = y + n * g.k * out_plane;
      if (KernelIsa() == Isa::kAvx512) {
        SmmAvx512(problem);
      } else {
        RunSmm<T, /*kVectorBytes=*/32>(problem);
      }
    }
  }

 private:
  // Elements after the last padded plane: a register block loads whole
  // vectors, up to kSmmMaxPixels - 1 output columns (times the stride) past
  // the end of an output row; those lanes are discarded, but must be
  // readable. (The widest build's block, so both builds fit.)
  static int64_t SlackOf(const Conv2dGeometry& g) {
    return kSmmMaxPixels * g.sw;
  }

  // Zero packing: every input channel of one image into its padded plane.
  // Rows/columns of the input outside the kept window (possible when
  // bottom/right padding or the stride leaves them unread) are not copied.
  template <typename T>
  static void ZeroPack(const Conv2dGeometry& g, const PaddedDims& p,
                       const T* xn, T* pad) {
    const int64_t plane = p.ph * p.pw;
#pragma omp parallel for schedule(static)
    for (int64_t c = 0; c < g.c; ++c) {
      T* dst = pad + c * plane;
      const T* src = xn + c * g.h * g.w;
      // The whole plane zeroed at once, then the input rows copied in:
      // on small planes (960 channels of 9x9) a row-by-row fill, copy and
      // fill cost more in loop overhead than in moving data.
      std::fill(dst, dst + plane, T(0));
      // Columns [g.pw, g.pw + g.w) hold input, clipped to the plane; rows
      // [g.ph, g.ph + g.h) likewise.
      const int64_t lo = std::min(g.pw, p.pw);
      const int64_t hi = std::min(g.pw + g.w, p.pw);
      const int64_t top = std::min(g.ph, p.ph);
      const int64_t bottom = std::min(g.ph + g.h, p.ph);
      for (int64_t i = top; i < bottom; ++i) {
        const T* srow = src + (i - g.ph) * g.w - g.pw;
        T* drow = dst + i * p.pw;
        for (int64_t j = lo; j < hi; ++j) drow[j] = srow[j];
      }
    }
  }

  // The same padded planes from an NHWC image: per padded row, each input
  // pixel's C contiguous channels are spread over the C planes. Rows are
  // spread over threads (an NHWC row holds every channel).
  template <typename T>
  static void ZeroPackNhwc(const Conv2dGeometry& g, const PaddedDims& p,
                           const T* xn, T* pad) {
    const int64_t plane = p.ph * p.pw;
    const int64_t lo = std::min(g.pw, p.pw);  // first column holding input
    const int64_t hi = std::min(g.pw + g.w, p.pw);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < p.ph; ++i) {
      const int64_t ih = i - g.ph;
      const bool inside = ih >= 0 && ih < g.h;
      for (int64_t c = 0; c < g.c; ++c) {
        T* drow = pad + c * plane + i * p.pw;
        if (!inside) {
          std::fill(drow, drow + p.pw, T(0));
          continue;
        }
        std::fill(drow, drow + lo, T(0));
        std::fill(drow + std::max(hi, lo), drow + p.pw, T(0));
      }
      if (!inside) continue;
      const T* src = xn + ih * g.w * g.c;
      for (int64_t j = lo; j < hi; ++j) {
        const T* px = src + (j - g.pw) * g.c;
        T* d = pad + i * p.pw + j;
        for (int64_t c = 0; c < g.c; ++c) d[c * plane] = px[c];
      }
    }
  }

  Buffer packed_;  // weights as [group][block of kb][c][r][s][kb]
};

AI3_REGISTER_ALGORITHM(Conv2dAttrs, "smm", Device::kCPU,
                       KernelAlgorithm<Conv2dAttrs, SmmKernel>);

}  // namespace
}  // namespace ai3
