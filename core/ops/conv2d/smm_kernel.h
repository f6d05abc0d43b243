// The register-blocked rows of conv2d "smm" (smm.cc has the algorithm:
// zero packing, the weight packing, the workspace), written once for any
// vector width. smm.cc instantiates it for AVX2 (32-byte vectors),
// smm_avx512.cc, compiled with AVX-512 flags, for 64-byte ones; core/cpu.h
// picks one at run time. As in implicit_gemm_kernel.h, the code is in an
// unnamed namespace so each instruction set's translation unit keeps its own
// copy (core/ops/avx512_symbols_test.sh).
#ifndef AI3_CORE_OPS_CONV2D_SMM_KERNEL_H_
#define AI3_CORE_OPS_CONV2D_SMM_KERNEL_H_

#include <algorithm>
#include <cstdint>

#include "core/math/epilogue.h"
#include "core/math/vectors.h"
#include "core/ops/conv2d/conv2d.h"

namespace ai3 {

// Register blocks: kSmmKb output channels x 2 vectors of output pixels, each
// input load feeding kSmmKb FMAs. Where a group has a single output channel
// (depthwise convolution) there is nothing to share a load with, and a block
// of 6 would be 5/6 zero rows: those layers use blocks of 1 channel x 4
// vectors instead, the wider row giving the FMA chains independent work.
inline constexpr int64_t kSmmKb = 6;
inline constexpr int64_t kSmmVectors = 2;
inline constexpr int64_t kSmmDepthwiseVectors = 4;
// The widest block any build reads: four 64-byte vectors of float.
inline constexpr int64_t kSmmMaxPixels = kSmmDepthwiseVectors * 64 / 4;

// Output channels per register block for a layer with `kg` output channels
// per group (the weight packing follows it).
inline int64_t SmmChannelsPerBlock(int64_t kg) { return kg == 1 ? 1 : kSmmKb; }

// One image's operands, prepared by the algorithm.
template <typename T>
struct SmmProblem {
  Conv2dGeometry g;
  int64_t ph, pw;   // rows and columns of one zero-packed channel plane
  const T* pad;     // the image's zero-packed channel planes
  const T* packed;  // weights as [group][block][c][r][s][channels per block]
  const T* bias;    // or nullptr
  Activation::Bounds<T> act;
  ImageStrides ys;  // the output's strides in its layout
  T* yn;            // the image's output
};

// The AVX-512 build (smm_avx512.cc); call only when
// KernelIsa() == Isa::kAvx512.
void SmmAvx512(const SmmProblem<float>& p);
void SmmAvx512(const SmmProblem<double>& p);

namespace {

template <typename T, int64_t kVectorBytes, int64_t kKb, int64_t kVectors>
struct SmmCompute {
  using Vec = Vectors<T, kVectorBytes>;
  using V = typename Vec::V;
  static constexpr int64_t kLanes = Vec::kLanes;
  static constexpr int64_t kWidth = kVectors * kLanes;  // pixels per block
  static_assert(kWidth <= kSmmMaxPixels, "the workspace slack covers a block");

  // Every output row of every block of kKb output channels of one image is
  // an independent task.
  static void Run(const SmmProblem<T>& p) {
    const Conv2dGeometry& g = p.g;
    const int64_t blocks = (g.kg + kKb - 1) / kKb;
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t kb = 0; kb < g.groups * blocks; ++kb) {
      for (int64_t oh = 0; oh < g.oh; ++oh) {
        Row(p, kb / blocks, kb % blocks, oh);
      }
    }
  }

  // One output row `oh` of kKb output channels (block `b` of group `grp`):
  //   Y[k](oh, :) = bias[k] + sum over c, r, s of w[k,c,r,s] * Xpad[c](r,s)(oh,
  //   :)
  // the same scalar x shifted-matrix products as the definition, summed in
  // registers: per (c, r, s) the shifted input row segment is loaded once
  // (kVectors vectors of pixels) and multiplied by the kKb scalars of that tap,
  // so each load feeds kKb FMAs instead of one, and the output is written
  // once, with the bias and the fused activation, instead of read and
  // written per tap.
  static void Row(const SmmProblem<T>& p, int64_t grp, int64_t b, int64_t oh) {
    const Conv2dGeometry& g = p.g;
    constexpr int64_t lanes = kLanes;
    constexpr int64_t width = kWidth;
    const int64_t blocks = (g.kg + kKb - 1) / kKb;
    const int64_t taps = g.cg * g.kh * g.kw;
    const int64_t plane = p.ph * p.pw;
    const int64_t k0 = grp * g.kg + b * kKb;
    const int64_t kn = std::min(kKb, g.kg - b * kKb);
    const T* wb = p.packed + (grp * blocks + b) * taps * kKb;
    const T* xg = p.pad + grp * g.cg * plane + oh * g.sh * p.pw;
    const T* bias_k = p.bias;
    const auto& act = p.act;
    for (int64_t ow0 = 0; ow0 < g.ow; ow0 += width) {
      V acc[kKb][kVectors];
      for (int64_t i = 0; i < kKb; ++i)
        for (int64_t v = 0; v < kVectors; ++v) acc[i][v] = V{};
      const T* w = wb;
      for (int64_t c = 0; c < g.cg; ++c) {
        for (int64_t r = 0; r < g.kh; ++r) {
          const T* row = xg + c * plane + r * g.dh * p.pw + ow0 * g.sw;
          for (int64_t s = 0; s < g.kw; ++s, w += kKb) {
            const T* src = row + s * g.dw;
            V in[kVectors];
            if (g.sw == 1) {
              for (int64_t v = 0; v < kVectors; ++v) {
                in[v] = Vec::Load(src + v * lanes);
              }
            } else if (g.sw == 2) {
              for (int64_t v = 0; v < kVectors; ++v) {
                in[v] = Vec::LoadStride2(src + 2 * v * lanes);
              }
            } else {
              // Other strides: each vector gathered into memory and loaded
              // whole (assigning lanes of a not yet written vector left it
              // "maybe uninitialized" to GCC).
              alignas(kVectorBytes) T gathered[kWidth];
              for (int64_t j = 0; j < kWidth; ++j) {
                gathered[j] = src[j * g.sw];
              }
              for (int64_t v = 0; v < kVectors; ++v) {
                in[v] = Vec::Load(gathered + v * lanes);
              }
            }
            for (int64_t i = 0; i < kKb; ++i) {
              const T wi = w[i];
              for (int64_t v = 0; v < kVectors; ++v) acc[i][v] += wi * in[v];
            }
          }
        }
      }
      const int64_t count = std::min(width, g.ow - ow0);
      const ImageStrides& ys = p.ys;
      for (int64_t i = 0; i < kn; ++i) {
        T* dst = p.yn + (k0 + i) * ys.c + oh * ys.h + ow0 * ys.w;
        const T init = bias_k ? bias_k[k0 + i] : T(0);
        // Bias and activation as vectors; whole vectors stored as such, only
        // the lanes past the row's end (its last block) dropped one by one.
        for (int64_t v = 0; v < kVectors && v * lanes < count; ++v) {
          V out = acc[i][v] + init;
          if (act.enabled) out = ActivateVector(act, out);
          // NHWC: the pixels of a channel are K apart, one store each.
          const int64_t j0 = v * lanes;
          if (j0 + lanes <= count && ys.w == 1) {
            Vec::Store(dst + j0, out);
          } else {
            const int64_t end = std::min(count, j0 + lanes);
            for (int64_t j = j0; j < end; ++j) dst[j * ys.w] = out[j - j0];
          }
        }
      }
    }
  }
};

// One output channel per group at stride 1 (depthwise 3x3 and the like),
// with each channel plane taken as one flat row. Output pixel (oh, ow) is
// computed at flat position f = oh*pw + ow of the padded width pw, where
// its input for tap (r, s) is the padded plane's element f + r*dh*pw +
// s*dw: a shift of the flat plane, the same for every pixel. So a block of
// kSmmDepthwiseVectors vectors covers consecutive flat positions across
// output rows, and only the pw - OW columns per row that lie in the padding
// are computed and dropped. On small planes (7x7 with pw = 9: 61 flat
// positions, one block) that replaces a task per output row whose vectors
// were mostly past the row's end (7 of 16 lanes used).
//
// With stride kStride in both directions the same holds at kStride*f (the
// input of (oh, ow) is kStride*(oh*pw + ow) + r*dh*pw + s*dw), loaded with
// Vec::LoadStride2 for 2; the flat row of pw positions then holds only
// about pw/2 outputs, so stride 2 takes this form only when the output row
// is narrower than one vector anyway.
template <typename T, int64_t kVectorBytes, int64_t kStride>
struct SmmFlatCompute {
  using Vec = Vectors<T, kVectorBytes>;
  using V = typename Vec::V;
  static constexpr int64_t kLanes = Vec::kLanes;
  static constexpr int64_t kVectors = kSmmDepthwiseVectors;
  static constexpr int64_t kWidth = kVectors * kLanes;
  // A block reads up to kStride*kWidth elements past the last flat
  // position; the workspace's slack after the last plane (kSmmMaxPixels
  // times the stride) covers it.
  static_assert(kWidth <= kSmmMaxPixels, "the workspace slack covers a block");
  static_assert(kStride == 1 || kStride == 2, "Load or LoadStride2");

  static void Run(const SmmProblem<T>& p) {
    const Conv2dGeometry& g = p.g;
    const int64_t flat = (g.oh - 1) * p.pw + g.ow;  // past the last pixel
    const int64_t chunks = (flat + kWidth - 1) / kWidth;
#pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < g.groups * chunks; ++t) {
      Block(p, t / chunks, (t % chunks) * kWidth, flat);
    }
  }

  // Output channel k (= its group, one output channel each), flat
  // positions [f0, f0 + kWidth).
  static void Block(const SmmProblem<T>& p, int64_t k, int64_t f0,
                    int64_t flat) {
    const Conv2dGeometry& g = p.g;
    const int64_t plane = p.ph * p.pw;
    // Packed with one row per sliver: W[k][c][r][s] in order.
    const T* w = p.packed + k * g.cg * g.kh * g.kw;
    V acc[kVectors];
    for (int64_t v = 0; v < kVectors; ++v) acc[v] = V{};
    for (int64_t c = 0; c < g.cg; ++c) {
      for (int64_t r = 0; r < g.kh; ++r) {
        const T* row =
            p.pad + (k * g.cg + c) * plane + r * g.dh * p.pw + kStride * f0;
        for (int64_t s = 0; s < g.kw; ++s, ++w) {
          const T* src = row + s * g.dw;
          const T wi = *w;
          for (int64_t v = 0; v < kVectors; ++v) {
            acc[v] +=
                wi * (kStride == 1 ? Vec::Load(src + v * kLanes)
                                   : Vec::LoadStride2(src + 2 * v * kLanes));
          }
        }
      }
    }
    alignas(64) T out[kWidth];
    const T init = p.bias ? p.bias[k] : T(0);
    for (int64_t v = 0; v < kVectors; ++v) {
      V o = acc[v] + init;
      if (p.act.enabled) o = ActivateVector(p.act, o);
      Vec::Store(out + v * kLanes, o);
    }
    // The block's pixels, row segment by row segment; the columns past OW
    // (the padding) are dropped.
    const ImageStrides& ys = p.ys;
    const int64_t end = std::min(f0 + kWidth, flat);
    int64_t oh = f0 / p.pw;    // one division per block, not per row
    int64_t row0 = oh * p.pw;  // flat position of (oh, 0)
    for (int64_t f = f0; f < end; ++oh, row0 += p.pw, f = row0) {
      const int64_t row_end = std::min(end, row0 + g.ow);
      T* dst = p.yn + k * ys.c + oh * ys.h + (f - row0) * ys.w;
      const T* src = out + (f - f0);
      for (int64_t i = 0; i < row_end - f; ++i) dst[i * ys.w] = src[i];
    }
  }
};

// One image with the register block SmmChannelsPerBlock chose: a layer with
// one output channel per group at stride 1 as flat planes (SmmFlatCompute);
// at other strides, a row narrower than kSmmDepthwiseVectors vectors (7x7
// and 14x14 planes) takes just the vectors it fills (the rest of a 4-vector
// block would be lanes computed and dropped).
template <typename T, int64_t kVectorBytes>
void RunSmm(const SmmProblem<T>& p) {
  const Conv2dGeometry& g = p.g;
  constexpr int64_t lanes = kVectorBytes / static_cast<int64_t>(sizeof(T));
  const int64_t vectors = (g.ow + lanes - 1) / lanes;
  if (SmmChannelsPerBlock(g.kg) == 1 && g.sh == 1 && g.sw == 1) {
    SmmFlatCompute<T, kVectorBytes, 1>::Run(p);
  } else if (SmmChannelsPerBlock(g.kg) == 1 && g.sh == 2 && g.sw == 2 &&
             vectors <= 1) {
    SmmFlatCompute<T, kVectorBytes, 2>::Run(p);
  } else if (SmmChannelsPerBlock(g.kg) == 1) {
    if (vectors <= 1) {
      SmmCompute<T, kVectorBytes, 1, 1>::Run(p);
    } else if (vectors == 2) {
      SmmCompute<T, kVectorBytes, 1, 2>::Run(p);
    } else {
      SmmCompute<T, kVectorBytes, 1, kSmmDepthwiseVectors>::Run(p);
    }
  } else {
    SmmCompute<T, kVectorBytes, kSmmKb, kSmmVectors>::Run(p);
  }
}

}  // namespace
}  // namespace ai3

#endif  // AI3_CORE_OPS_CONV2D_SMM_KERNEL_H_
