// The register-blocked compute of conv2d "direct" (direct.cc has the
// algorithm and the weight packing), written once for any vector width.
// direct.cc instantiates it for AVX2 (32-byte vectors), direct_avx512.cc,
// compiled with AVX-512 flags, for 64-byte ones; core/cpu.h picks one at run
// time. As in implicit_gemm_kernel.h, everything below the entry points is in
// an unnamed namespace so each instruction set's translation unit keeps its
// own copy (core/ops/avx512_symbols_test.sh).
//
// It is still the definition of convolution, summed in registers: each
// output element is accumulated from the input it reads, in place, with no
// im2col buffer, no GEMM call and no transform. What makes it fast is the
// order of the sums (the idea of MLAS's NCHWc direct convolution):
//
//   general   a block of kBlock = 2 vectors of output channels (the lanes)
//             x kPixels output pixels of one output row, in registers. Per
//             kernel tap (r, s) and input channel c, the kBlock weights
//             w[k0.., c, r, s] are two vector loads (packed in that order
//             once in Prepare), each input value x[c, ih, iw_j] one
//             broadcast, feeding 2 FMAs per pixel: 2 loads + kPixels
//             broadcasts per 2*kPixels FMAs, as in a GEMM micro-kernel.
//   depthwise (NHWC, one input channel per group) the lanes are input
//             channels instead: per tap, one weight vector and one input
//             vector per pixel (channels are contiguous in NHWC), one FMA
//             each. A multiplier m > 1 (m output channels per input
//             channel) runs m such passes, output channel c*m + i in pass i.
//
// Both read the input through its layout's strides, so one code serves NCHW
// and NHWC. The padding is handled per (row, tap): a tap whose row is
// outside the input is skipped, a tap whose kPixels columns are all inside
// takes the plain loop, and only the blocks at the left and right edges
// take the loop where each pixel has its own pointer (the out-of-range ones
// point at zeros and do not advance).
#ifndef AI3_CORE_OPS_CONV2D_DIRECT_KERNEL_H_
#define AI3_CORE_OPS_CONV2D_DIRECT_KERNEL_H_

#include <algorithm>
#include <cstdint>

#include "core/math/epilogue.h"
#include "core/math/vectors.h"
#include "core/ops/conv2d/conv2d.h"

namespace ai3 {

// Vectors of output channels per register block, and the block's output
// channels for a vector width: the weight packing in direct.cc follows it.
inline constexpr int64_t kDirectVectors = 2;
inline constexpr int64_t DirectBlockChannels(int64_t vector_bytes,
                                             int64_t element_bytes) {
  return kDirectVectors * vector_bytes / element_bytes;
}

// One call's operands, prepared by the algorithm.
template <typename T>
struct DirectProblem {
  Conv2dGeometry g;
  ImageStrides xs, ys;  // input and output strides in their layout
  const T* x;
  T* y;
  // General: [group][block of kBlock out channels][r][s][c][kBlock].
  // Depthwise: [multiplier i][block of kBlock in channels][r][s][kBlock],
  // lane l of block b holding w[(b*kBlock + l)*m + i, 0, r, s].
  // Zero past the last channel.
  const T* packed;
  // The bias in the same lane order as the weights (zero past the end), or
  // nullptr.
  const T* bias;
  bool depthwise;  // the NHWC depthwise form (see direct.cc)
  Activation::Bounds<T> act;
};

// The AVX-512 build (direct_avx512.cc); call only when
// KernelIsa() == Isa::kAvx512.
void DirectAvx512(const DirectProblem<float>& p);
void DirectAvx512(const DirectProblem<double>& p);

namespace {

template <typename T, int64_t kVectorBytes, int64_t kPixels>
struct DirectCompute {
  using Vec = Vectors<T, kVectorBytes>;
  using V = typename Vec::V;
  static constexpr int64_t kLanes = Vec::kLanes;
  static constexpr int64_t kBlock = kDirectVectors * kLanes;
  static_assert(kBlock == DirectBlockChannels(kVectorBytes, sizeof(T)),
                "the packing's block is the kernel's");

  static void Run(const DirectProblem<T>& p) {
    if (p.depthwise) {
      RunDepthwise(p);
    } else {
      RunGeneral(p);
    }
  }

  // Output columns [lo, hi) whose input column ow*stride + offset is in
  // [0, size).
  static void ValidRange(int64_t offset, int64_t stride, int64_t size,
                         int64_t count, int64_t* lo, int64_t* hi) {
    *lo = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
    *hi = size - 1 - offset < 0 ? 0 : (size - 1 - offset) / stride + 1;
    *lo = std::min(*lo, count);
    *hi = std::min(*hi, count);
    if (*hi < *lo) *hi = *lo;
  }

  // Zeros an out-of-range pixel reads instead of the input: a whole block
  // of lanes (the depthwise form loads vectors from it).
  static const T* Zeros() {
    alignas(64) static const T zeros[kBlock] = {};
    return zeros;
  }

  // Adds the bias, clamps, and writes acc[j][v] (output channels
  // k0 + v*kLanes + lane of pixel ow0 + j) for kn channels and np pixels.
  // `lane_stride`: output elements between consecutive lanes (1 for the
  // general form and a depthwise multiplier of 1, m otherwise). A full
  // block with contiguous lanes is stored as vectors (NHWC); otherwise
  // through a small buffer, a pixel row per channel (NCHW: each channel's
  // np pixels are contiguous in the output).
  static void Store(const V (&acc)[kPixels][kDirectVectors], const T* bias,
                    const Activation::Bounds<T>& act, T* y, int64_t ys_c,
                    int64_t ys_w, int64_t lane_stride, int64_t kn,
                    int64_t np) {
    V out[kPixels][kDirectVectors];
    for (int64_t j = 0; j < kPixels; ++j)
      for (int64_t v = 0; v < kDirectVectors; ++v) {
        V o = acc[j][v];
        if (bias) o += Vec::Load(bias + v * kLanes);
        if (act.enabled) {
          const V lo = V{} + act.lo, hi = V{} + act.hi;
          o = o < lo ? lo : o;
          o = o > hi ? hi : o;
        }
        out[j][v] = o;
      }
    const int64_t ch = ys_c * lane_stride;  // between consecutive lanes
    if (ch == 1 && kn == kBlock) {
      for (int64_t j = 0; j < np; ++j)
        for (int64_t v = 0; v < kDirectVectors; ++v) {
          Vec::Store(y + j * ys_w + v * kLanes, out[j][v]);
        }
      return;
    }
    for (int64_t i = 0; i < kn; ++i) {
      T* yi = y + i * ch;
      for (int64_t j = 0; j < np; ++j) {
        yi[j * ys_w] = out[j][i / kLanes][i % kLanes];
      }
    }
  }

  // ---- general form -------------------------------------------------------

  // Every (image, group, channel block, output row) is a task; each runs
  // the row's pixel blocks.
  static void RunGeneral(const DirectProblem<T>& p) {
    const Conv2dGeometry& g = p.g;
    const int64_t blocks = (g.kg + kBlock - 1) / kBlock;
    const int64_t tasks = g.n * g.groups * blocks * g.oh;
#pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < tasks; ++t) {
      const int64_t oh = t % g.oh;
      const int64_t b = (t / g.oh) % blocks;
      const int64_t grp = (t / (g.oh * blocks)) % g.groups;
      const int64_t n = t / (g.oh * blocks * g.groups);
      for (int64_t ow0 = 0; ow0 < g.ow; ow0 += kPixels) {
        GeneralBlock(p, n, grp, b, oh, ow0);
      }
    }
  }

  // acc[j][v] = sum over r, s, c of w[k0 + v*kLanes + lane, c, r, s] *
  //             x[n, c0 + c, oh*sh - ph + r*dh, (ow0 + j)*sw - pw + s*dw]
  // for the block's channels k0.. and pixels ow0.., then Store.
  static void GeneralBlock(const DirectProblem<T>& p, int64_t n, int64_t grp,
                           int64_t b, int64_t oh, int64_t ow0) {
    const Conv2dGeometry& g = p.g;
    const ImageStrides& xs = p.xs;
    const int64_t blocks = (g.kg + kBlock - 1) / kBlock;
    const int64_t np = std::min(kPixels, g.ow - ow0);
    const int64_t cg = g.cg;
    const int64_t cs = xs.c;
    const T* wb = p.packed + (grp * blocks + b) * g.kh * g.kw * cg * kBlock;
    const T* xg = p.x + n * xs.n + grp * cg * xs.c;
    // Pixel j's column offset from pixel 0's, in elements.
    int64_t off[kPixels];
    for (int64_t j = 0; j < kPixels; ++j) off[j] = j * g.sw * xs.w;

    V acc[kPixels][kDirectVectors];
    for (int64_t j = 0; j < kPixels; ++j)
      for (int64_t v = 0; v < kDirectVectors; ++v) acc[j][v] = V{};

    for (int64_t r = 0; r < g.kh; ++r) {
      const int64_t ih = oh * g.sh - g.ph + r * g.dh;
      if (ih < 0 || ih >= g.h) continue;  // the whole row reads padding
      const T* xrow = xg + ih * xs.h;
      for (int64_t s = 0; s < g.kw; ++s) {
        const T* w = wb + (r * g.kw + s) * cg * kBlock;
        const int64_t shift = s * g.dw - g.pw;
        const int64_t iw0 = ow0 * g.sw + shift;
        if (np == kPixels && iw0 >= 0 &&
            iw0 + (kPixels - 1) * g.sw < g.w) {
          // Every pixel inside: one pointer, fixed offsets.
          const T* xc = xrow + iw0 * xs.w;
          for (int64_t c = 0; c < cg; ++c, xc += cs, w += kBlock) {
            V wv[kDirectVectors];
            for (int64_t v = 0; v < kDirectVectors; ++v) {
              wv[v] = Vec::Load(w + v * kLanes);
            }
            for (int64_t j = 0; j < kPixels; ++j) {
              const T xj = xc[off[j]];
              for (int64_t v = 0; v < kDirectVectors; ++v) {
                acc[j][v] += xj * wv[v];
              }
            }
          }
        } else {
          // An edge block: pixel j reads its own pointer, or zeros that do
          // not advance when its column is padding or past the row's end.
          int64_t lo, hi;
          ValidRange(iw0, g.sw, g.w, np, &lo, &hi);
          if (lo == hi) continue;
          const T* xp[kPixels];
          int64_t step[kPixels];
          for (int64_t j = 0; j < kPixels; ++j) {
            const bool in = j >= lo && j < hi;
            xp[j] = in ? xrow + (iw0 + j * g.sw) * xs.w : Zeros();
            step[j] = in ? cs : 0;
          }
          for (int64_t c = 0; c < cg; ++c, w += kBlock) {
            V wv[kDirectVectors];
            for (int64_t v = 0; v < kDirectVectors; ++v) {
              wv[v] = Vec::Load(w + v * kLanes);
            }
            for (int64_t j = 0; j < kPixels; ++j) {
              const T xj = *xp[j];
              xp[j] += step[j];
              for (int64_t v = 0; v < kDirectVectors; ++v) {
                acc[j][v] += xj * wv[v];
              }
            }
          }
        }
      }
    }
    const int64_t k0 = grp * g.kg + b * kBlock;
    Store(acc, p.bias ? p.bias + (grp * blocks + b) * kBlock : nullptr, p.act,
          p.y + n * p.ys.n + k0 * p.ys.c + oh * p.ys.h + ow0 * p.ys.w,
          p.ys.c, p.ys.w, 1, std::min(kBlock, g.kg - b * kBlock), np);
  }

  // ---- depthwise form (NHWC) ----------------------------------------------

  // Every (image, multiplier pass, channel block, output row) is a task.
  static void RunDepthwise(const DirectProblem<T>& p) {
    const Conv2dGeometry& g = p.g;
    const int64_t m = g.kg;  // output channels per input channel
    const int64_t blocks = (g.c + kBlock - 1) / kBlock;
    const int64_t tasks = g.n * m * blocks * g.oh;
#pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < tasks; ++t) {
      const int64_t oh = t % g.oh;
      const int64_t b = (t / g.oh) % blocks;
      const int64_t i = (t / (g.oh * blocks)) % m;
      const int64_t n = t / (g.oh * blocks * m);
      for (int64_t ow0 = 0; ow0 < g.ow; ow0 += kPixels) {
        DepthwiseBlock(p, n, i, b, oh, ow0);
      }
    }
  }

  // acc[j][v] = sum over r, s of w[(c0 + lane)*m + i, 0, r, s] *
  //             x[n, c0 + lane, oh*sh - ph + r*dh, (ow0 + j)*sw - pw + s*dw]
  // for the block's input channels c0 + lane (lane = v*kLanes + l), then
  // Store into output channels (c0 + lane)*m + i.
  static void DepthwiseBlock(const DirectProblem<T>& p, int64_t n, int64_t i,
                             int64_t b, int64_t oh, int64_t ow0) {
    const Conv2dGeometry& g = p.g;
    const ImageStrides& xs = p.xs;
    const int64_t m = g.kg;
    const int64_t blocks = (g.c + kBlock - 1) / kBlock;
    const int64_t np = std::min(kPixels, g.ow - ow0);
    const int64_t c0 = b * kBlock;
    const int64_t kn = std::min(kBlock, g.c - c0);
    const T* wb = p.packed + (i * blocks + b) * g.kh * g.kw * kBlock;
    const T* xn = p.x + n * xs.n + c0;  // xs.c == 1
    const int64_t pix = g.sw * xs.w;

    V acc[kPixels][kDirectVectors];
    for (int64_t j = 0; j < kPixels; ++j)
      for (int64_t v = 0; v < kDirectVectors; ++v) acc[j][v] = V{};

    for (int64_t r = 0; r < g.kh; ++r) {
      const int64_t ih = oh * g.sh - g.ph + r * g.dh;
      if (ih < 0 || ih >= g.h) continue;
      const T* xrow = xn + ih * xs.h;
      for (int64_t s = 0; s < g.kw; ++s) {
        const T* w = wb + (r * g.kw + s) * kBlock;
        V wv[kDirectVectors];
        for (int64_t v = 0; v < kDirectVectors; ++v) {
          wv[v] = Vec::Load(w + v * kLanes);
        }
        const int64_t iw0 = ow0 * g.sw + s * g.dw - g.pw;
        if (kn == kBlock && np == kPixels && iw0 >= 0 &&
            iw0 + (kPixels - 1) * g.sw < g.w) {
          const T* xc = xrow + iw0 * xs.w;
          for (int64_t j = 0; j < kPixels; ++j)
            for (int64_t v = 0; v < kDirectVectors; ++v) {
              acc[j][v] += Vec::Load(xc + j * pix + v * kLanes) * wv[v];
            }
          continue;
        }
        // An edge block or the last, partial block of channels: the lanes
        // past the last channel and the pixels in the padding read zeros
        // (a partial block's input is copied so no load passes the
        // tensor's end).
        int64_t lo, hi;
        ValidRange(iw0, g.sw, g.w, np, &lo, &hi);
        // Over all kPixels (a constant count, so acc stays in registers),
        // skipping the pixels outside [lo, hi).
        for (int64_t j = 0; j < kPixels; ++j) {
          if (j < lo || j >= hi) continue;
          const T* xj = xrow + (iw0 + j * g.sw) * xs.w;
          for (int64_t v = 0; v < kDirectVectors; ++v) {
            V in;
            if (kn == kBlock) {
              in = Vec::Load(xj + v * kLanes);
            } else {
              in = V{};
              for (int64_t l = 0; l < kLanes && v * kLanes + l < kn; ++l) {
                in[l] = xj[v * kLanes + l];
              }
            }
            acc[j][v] += in * wv[v];
          }
        }
      }
    }
    Store(acc, p.bias ? p.bias + (i * blocks + b) * kBlock : nullptr, p.act,
          p.y + n * p.ys.n + (c0 * m + i) * p.ys.c + oh * p.ys.h +
              ow0 * p.ys.w,
          p.ys.c, p.ys.w, m, kn, np);
  }
};

}  // namespace
}  // namespace ai3

#endif  // AI3_CORE_OPS_CONV2D_DIRECT_KERNEL_H_
