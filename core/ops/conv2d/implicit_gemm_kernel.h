// The compute of conv2d "implicit gemm" (implicit_gemm.cc has the
// algorithm: what it is, the weight packing, the workspace), written once
// for any vector width. implicit_gemm.cc instantiates it for AVX2 (32-byte
// vectors), implicit_gemm_avx512.cc, compiled with AVX-512 flags, for
// 64-byte ones; core/cpu.h picks one at run time.
//
// Everything below the entry points is in an unnamed namespace on purpose:
// each translation unit (each instruction set) gets its own copy, so the
// linker can never hand the AVX2 build a function compiled for AVX-512
// (core/ops/avx512_symbols_test.sh checks that the AVX-512 object defines
// nothing else).
#ifndef AI3_CORE_OPS_CONV2D_IMPLICIT_GEMM_KERNEL_H_
#define AI3_CORE_OPS_CONV2D_IMPLICIT_GEMM_KERNEL_H_

#include <omp.h>

#include <algorithm>
#include <cstdint>

#include "core/math/epilogue.h"
#include "core/math/vectors.h"
#include "core/ops/conv2d/conv2d.h"
#include "core/ops/conv2d/conv2d_ranges.h"

namespace ai3 {

inline constexpr int64_t kImplicitGemmMr = 6;  // output channels per micro-tile
inline constexpr int64_t kImplicitGemmDepthBlock = 128;  // K rows per panel
inline constexpr int64_t kImplicitGemmMaxPixels = 128;   // panel width

// One call's operands, prepared by the algorithm; `packed` is the weights
// as [group][kMr-row sliver][K][kMr].
template <typename T>
struct ImplicitGemmProblem : Conv2dOperands<T> {
  T* workspace;  // threads panels of kDepthBlock x kMaxPixels
};

// The AVX-512 build (implicit_gemm_avx512.cc); call only when
// KernelIsa() == Isa::kAvx512.
void ImplicitGemmAvx512(const ImplicitGemmProblem<float>& p);
void ImplicitGemmAvx512(const ImplicitGemmProblem<double>& p);

namespace {

inline int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

template <typename T, int64_t kVectorBytes>
struct ImplicitGemmCompute {
  static constexpr int64_t kMr = kImplicitGemmMr;
  static constexpr int64_t kDepthBlock = kImplicitGemmDepthBlock;
  static constexpr int64_t kMaxPixels = kImplicitGemmMaxPixels;
  static constexpr int64_t kVectorsPerRow = 2;
  using Vec = Vectors<T, kVectorBytes>;
  using V = typename Vec::V;
  static constexpr int64_t kLanes = Vec::kLanes;
  // The micro-tile's pixel width: kVectorsPerRow vectors of T.
  static constexpr int64_t kNr = kVectorsPerRow * kLanes;
  static_assert(kMaxPixels % kNr == 0, "panel width: whole micro-tiles");

  static void Run(const ImplicitGemmProblem<T>& p) {
    const Conv2dGeometry& g = p.g;
    const ImageStrides& xs = p.xs;
    const ImageStrides& ys = p.ys;
    const int64_t pixels = g.oh * g.ow;
    const int64_t depth = g.cg * g.kh * g.kw;
    const int64_t slivers = CeilDiv(g.kg, kMr);

    // Pixel block width: kMaxPixels, narrower (down to one micro-tile) when
    // that would leave threads without a block.
    const int64_t images = g.n * g.groups;
    const int64_t wanted = CeilDiv(p.threads, images);  // blocks per image
    const int64_t width = std::clamp(
        CeilDiv(CeilDiv(pixels, wanted), kNr) * kNr, kNr, kMaxPixels);
    const int64_t blocks = CeilDiv(pixels, width);
    const int64_t tasks = images * blocks;
    // The fused activation applies when the last block of K is added.
    const Activation::Bounds<T> no_act{false, T(0), T(0)};

#pragma omp parallel num_threads(p.threads)
    {
      T* panel = p.workspace + static_cast<int64_t>(omp_get_thread_num()) *
                                   kDepthBlock * kMaxPixels;
#pragma omp for schedule(static)
      for (int64_t task = 0; task < tasks; ++task) {
        const int64_t blk = task % blocks;
        const int64_t grp = (task / blocks) % g.groups;
        const int64_t n = task / (blocks * g.groups);
        const int64_t p0 = blk * width;
        const int64_t count = std::min(width, pixels - p0);
        const T* xg = p.x + n * xs.n + grp * g.cg * xs.c;
        for (int64_t d0 = 0; d0 < depth; d0 += kDepthBlock) {
          const int64_t rows = std::min(kDepthBlock, depth - d0);
          Gather(g, xs, xg, d0, rows, p0, count, width, panel);
          for (int64_t sl = 0; sl < slivers; ++sl) {
            const int64_t m0 = sl * kMr;
            const int64_t mr = std::min(kMr, g.kg - m0);
            const T* w = p.packed + ((grp * slivers + sl) * depth + d0) * kMr;
            const int64_t k0 = grp * g.kg + m0;
            for (int64_t j0 = 0; j0 < count; j0 += kNr) {
              MicroKernel(w, panel + j0, width, rows, mr,
                          std::min(kNr, count - j0),
                          p.y + n * ys.n + k0 * ys.c + (p0 + j0) * ys.w, ys.c,
                          ys.w, d0 == 0, p.bias ? p.bias + k0 : nullptr,
                          d0 + rows == depth ? p.act : no_act);
            }
          }
        }
      }
    }
  }

  // panel[kk][j] = x[c][ih][iw] for K row d0 + kk = (c, r, s) and output pixel
  // p0 + j, or 0 where the window reads padding. Columns [count, round up to
  // a micro-tile) are zeroed so the micro-kernel may read whole tiles.
  static void Gather(const Conv2dGeometry& g, const ImageStrides& xs,
                     const T* xg, int64_t d0, int64_t rows, int64_t p0,
                     int64_t count, int64_t stride, T* panel) {
    const int64_t padded = CeilDiv(count, kNr) * kNr;
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
  // for i < kMr, j < kNr (kVectorsPerRow vector registers per row); then
  //   y[i*yc + j*yp] = act((first ? bias[i] or 0 : y[...]) + acc[i][j])
  // for the mr x nr valid part, act being the fused activation on the last
  // block of K (disabled before it).
  static void MicroKernel(const T* __restrict w, const T* __restrict panel,
                          int64_t stride, int64_t rows, int64_t mr, int64_t nr,
                          T* __restrict y, int64_t yc, int64_t yp, bool first,
                          const T* bias, const Activation::Bounds<T>& act) {
    V acc[kMr][kVectorsPerRow];
    for (int64_t i = 0; i < kMr; ++i)
      for (int64_t v = 0; v < kVectorsPerRow; ++v) acc[i][v] = V{};
    for (int64_t kk = 0; kk < rows; ++kk) {
      V p[kVectorsPerRow];
      for (int64_t v = 0; v < kVectorsPerRow; ++v) {
        p[v] = Vec::Load(panel + kk * stride + v * kLanes);
      }
      const T* wk = w + kk * kMr;
      for (int64_t i = 0; i < kMr; ++i) {
        const T wi = wk[i];
        for (int64_t v = 0; v < kVectorsPerRow; ++v) acc[i][v] += wi * p[v];
      }
    }
    const bool full = nr == kVectorsPerRow * kLanes && yp == 1;
    for (int64_t i = 0; i < mr; ++i) {
      T* yi = y + i * yc;
      const T init = bias ? bias[i] : T(0);
      if (full) {
        for (int64_t v = 0; v < kVectorsPerRow; ++v) {
          V out;
          if (first) {
            out = acc[i][v] + init;
          } else {
            out = Vec::Load(yi + v * kLanes);
            out += acc[i][v];
          }
          if (act.enabled) out = ActivateVector(act, out);
          Vec::Store(yi + v * kLanes, out);
        }
      } else {
        // Through a row buffer, so that the activation runs vectorised.
        T row[kVectorsPerRow * kLanes];
        for (int64_t j = 0; j < nr; ++j) {
          const T a = acc[i][j / kLanes][j % kLanes];
          row[j] = first ? init + a : yi[j * yp] + a;
        }
        ApplyActivation(act, row, nr);
        for (int64_t j = 0; j < nr; ++j) yi[j * yp] = row[j];
      }
    }
  }
};

}  // namespace
}  // namespace ai3

#endif  // AI3_CORE_OPS_CONV2D_IMPLICIT_GEMM_KERNEL_H_
