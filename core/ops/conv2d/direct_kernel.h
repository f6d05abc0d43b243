// The register-blocked compute of conv2d "direct" (direct.cc has the
// algorithm and the weight packing), written once for any vector width.
// direct.cc instantiates it for AVX2 (32-byte vectors), direct_avx512.cc,
// compiled with AVX-512 flags, for 64-byte ones; core/cpu.h picks one at run
// time. As in implicit_gemm_kernel.h, everything below the entry points is in
// an unnamed namespace so each instruction set's translation unit keeps its
// own copy (core/ops/avx512_symbols_test.sh).
//
// It is still the definition of convolution, summed in registers: each
// output element is accumulated from the input values its window reads,
// with no im2col buffer, no GEMM call and no transform of the problem. What
// makes it fast is the order of the sums (the idea of MLAS's NCHWc direct
// convolution):
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
//             each; 3-wide rows slide, loading each input column once for
//             the pixels that use it (Slide3). A multiplier m > 1 (m output
//             channels per input channel) runs m such passes, output
//             channel c*m + i in pass i.
//   planar    (NCHW, one input channel per group: depthwise) the lanes are
//   depthwise output pixels of one row: a channel's pixels are contiguous
//             in NCHW, its taps are scalars. Per tap, one broadcast weight
//             and one (unaligned) vector load of the input row per vector
//             of pixels, one FMA each; up to kPlanarVectors vectors per
//             block, for each of the group's m output channels. (The
//             general form would hold one output channel in 2 vectors of
//             lanes: 1/16 or 1/32 of its FMAs useful.) A task is a whole
//             channel plane, zero-padded once into the thread's workspace:
//             with 9 FMAs per vector of output there is too little work
//             per output row to pay for a task and a strip ring each.
//   pointwise (NCHW 1x1, stride 1, no padding: Y = W X per group, a GEMM
//             over flat pixel planes) the lanes are pixels again: a
//             sub-block of kBlock/4 output channels x 3 vectors of pixels
//             in registers; per input channel, 3 vector loads of the
//             input plane (read in place) and one broadcast weight per
//             channel, 3 FMAs each. The general form would transpose the
//             input into its strip and store its outputs lane by lane into
//             planes, which cost more than the 1x1's few FMAs per input.
//
// The general form reads the input through a small strip per thread: the
// kernel's window of input rows, each row zero-padded left and right and
// laid out [column][channel] (a pixel's channels side by side), kept as a
// ring so that the next output row copies only the rows it newly needs.
// That is the input once, not an im2col matrix (no value is copied per
// tap), and it buys two things: the pixel blocks never test for padding
// (every tap of every block reads inside the padded row), and in NCHW the
// channels a step reads are adjacent instead of whole planes apart (at
// sizes like 112x112, a multiple of 1 KiB, such addresses share a few L1
// sets and evict each other before the next pixel block reuses them).
// An NHWC row with no column of padding is read in place instead
// (DirectReadsInPlace). The planar form's padded plane ends in PlanarSlack
// zeros, so that a block's last vector may run past the output row's end
// without a test (those lanes are computed and not stored). The depthwise form
// reads NHWC in place; its padding is handled per tap (a row outside the input
// is skipped, and only the edge blocks test their pixels' columns).
#ifndef AI3_CORE_OPS_CONV2D_DIRECT_KERNEL_H_
#define AI3_CORE_OPS_CONV2D_DIRECT_KERNEL_H_

#include <omp.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>

#include "core/math/epilogue.h"
#include "core/math/vectors.h"
#include "core/ops/conv2d/conv2d.h"
#include "core/ops/conv2d/conv2d_ranges.h"

namespace ai3 {

// Vectors of output channels per register block, and the block's output
// channels for a vector width: the weight packing in direct.cc follows it.
inline constexpr int64_t kDirectVectors = 2;
inline constexpr int64_t DirectBlockChannels(int64_t vector_bytes,
                                             int64_t element_bytes) {
  return kDirectVectors * vector_bytes / element_bytes;
}

// Which form of the kernel a layer takes (see the top of this file).
// `unit_1x1`: a 1x1 kernel at stride 1 without padding
// (Conv2dAttrs::is_1x1_unit).
// `unpadded_1x1`: a 1x1 kernel without padding, at any stride.
enum class DirectForm {
  kGeneral,
  kDepthwise,
  kPlanarDepthwise,
  kPointwise,
  kPointwiseNhwc
};
inline DirectForm DirectFormOf(Layout layout, int64_t groups,
                               int64_t in_channels_per_group, bool unit_1x1,
                               bool unpadded_1x1) {
  if (groups > 1 && in_channels_per_group == 1) {
    return layout == Layout::kNHWC ? DirectForm::kDepthwise
                                   : DirectForm::kPlanarDepthwise;
  }
  if (layout == Layout::kNCHW && unit_1x1) return DirectForm::kPointwise;
  if (layout == Layout::kNHWC && unpadded_1x1) {
    return DirectForm::kPointwiseNhwc;
  }
  return DirectForm::kGeneral;
}
inline DirectForm DirectFormOf(const Conv2dGeometry& g) {
  // Without padding a 1x1's output has (h - 1)/sh + 1 rows; more means
  // bottom padding (Conv2dGeometry keeps only the top and left sides).
  const bool unpadded_1x1 = g.kh == 1 && g.kw == 1 && g.ph == 0 && g.pw == 0 &&
                            g.oh == (g.h - 1) / g.sh + 1 &&
                            g.ow == (g.w - 1) / g.sw + 1;
  const bool unit_1x1 = unpadded_1x1 && g.sh == 1 && g.sw == 1;
  return DirectFormOf(g.layout, g.groups, g.cg, unit_1x1, unpadded_1x1);
}

// The planar form's widest block, in vectors of pixels.
inline constexpr int64_t kPlanarVectors = 4;
// The planar form's zero-padded channel plane: `rows` rows of `width`
// columns (what the output's windows span), then `slack` zeros: a block's
// last vector starts before its row's last output pixel and reads at most
// its lanes (the widest: 16 floats) x the stride, plus one for a stride-2
// load's odd tail, past that pixel's window (into the next row, or past
// the last one into the slack).
struct PlanarPlane {
  int64_t rows, width, slack, elements;
};
inline PlanarPlane PlanarPlaneOf(const Conv2dGeometry& g) {
  PlanarPlane pl;
  pl.rows = (g.oh - 1) * g.sh + (g.kh - 1) * g.dh + 1;
  pl.width = (g.ow - 1) * g.sw + (g.kw - 1) * g.dw + 1;
  pl.slack = 16 * g.sw + 1;
  // Whole cache lines, so each thread's plane starts on its own.
  pl.elements = (pl.rows * pl.width + pl.slack + 15) / 16 * 16;
  return pl;
}

// One call's operands, prepared by the algorithm. `packed` is
//   general and pointwise: [group][block of kBlock out channels][r][s][c]
//   [kBlock];
//   depthwise: [multiplier i][block of kBlock in channels][r][s][kBlock],
//   lane l of block b holding w[(b*kBlock + l)*m + i, 0, r, s];
//   planar depthwise: the weights as given, [k][0][r][s];
// zero past the last channel. `bias` is in the same lane order as the
// weights (zero past the end), or nullptr.
template <typename T>
struct DirectProblem : Conv2dOperands<T> {
  DirectForm form;
  // Whether the general form writes its output around the caches (an
  // output bigger than the last-level cache; set in direct.cc).
  bool stream_output = false;
  // The workspace: the general form's `threads` strips (DirectStrip), then
  // their rows' tags; the planar form's `threads` planes (PlanarPlane).
  void* workspace;
};

// The general form's strip of one thread: `rows` padded input rows of
// `width` columns of cg channels, a ring indexed by input row % rows.
struct DirectStrip {
  int64_t rows, width, elements;
};
inline DirectStrip DirectStripOf(const Conv2dGeometry& g) {
  DirectStrip st;
  st.rows = (g.kh - 1) * g.dh + 1;  // the span of one window's rows
  st.width = (g.ow - 1) * g.sw + (g.kw - 1) * g.dw + 1;
  // Rounded up to whole cache lines: each thread's strip starts on its own
  // line, and the int64 tags after the last strip are aligned.
  st.elements = (st.rows * st.width * g.cg + 15) / 16 * 16;
  return st;
}
// Whether the general form reads its rows from the input itself: an NHWC
// row of one group is already [column][channel], and with no column of
// padding to add (no left padding, every window inside the row: 1x1
// pointwise convolutions, unpadded ones) the strip would be a plain copy.
inline bool DirectReadsInPlace(const Conv2dGeometry& g) {
  return g.layout == Layout::kNHWC && g.groups == 1 && g.pw == 0 &&
         DirectStripOf(g).width <= g.w;
}
// Bytes of DirectProblem::workspace for `threads` threads.
inline size_t DirectWorkspaceBytes(const Conv2dGeometry& g, int threads,
                                   size_t element_bytes) {
  switch (DirectFormOf(g)) {
    case DirectForm::kDepthwise:
    case DirectForm::kPointwise:
    case DirectForm::kPointwiseNhwc:
      return 0;
    case DirectForm::kPlanarDepthwise:
      return static_cast<size_t>(threads) *
             static_cast<size_t>(PlanarPlaneOf(g).elements) * element_bytes;
    case DirectForm::kGeneral:
      break;
  }
  if (DirectReadsInPlace(g)) return 0;
  const DirectStrip st = DirectStripOf(g);
  return static_cast<size_t>(threads) *
         (static_cast<size_t>(st.elements) * element_bytes +
          static_cast<size_t>(st.rows) * sizeof(int64_t));
}

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
    switch (p.form) {
      case DirectForm::kDepthwise:
        RunDepthwise(p);
        break;
      case DirectForm::kPlanarDepthwise:
        RunPlanar(p);
        break;
      case DirectForm::kPointwise:
        RunPointwise(p);
        break;
      case DirectForm::kPointwiseNhwc:
        RunPointwiseNhwc(p);
        break;
      case DirectForm::kGeneral:
        RunGeneral(p);
        break;
    }
  }

  // Adds the bias, clamps, and writes acc[j][v] (output channels
  // k0 + v*kLanes + lane of pixel ow0 + j, v < KV) for kn channels and NP
  // pixels.
  // `lane_stride`: output elements between consecutive lanes (1 for the
  // general form and a depthwise multiplier of 1, m otherwise). A full
  // block with contiguous lanes is stored as vectors (NHWC); otherwise
  // through a small buffer, a pixel row per channel (NCHW: each channel's
  // np pixels are contiguous in the output). `stream`: with streamed
  // stores where the vectors are aligned (Vec::StreamStore). Always
  // inlined: called out of line, it took the accumulators through the
  // stack, and every block stored and reloaded them (the seed's RGB stem,
  // (10, 3, 224, 224) -> 64 in NHWC: 18.2 ms before, 16.7 after).
  template <int64_t NP, int64_t KV>
  [[gnu::always_inline]] static void Store(const V (&acc)[NP][KV],
                                           const T* bias,
                                           const Activation::Bounds<T>& act,
                                           T* y, int64_t ys_c, int64_t ys_w,
                                           int64_t lane_stride, int64_t kn,
                                           bool stream = false) {
    // A clamp per vector; a function (SiLU, ...) in one vectorised pass
    // over the whole block (a GCC vector aliases its element type).
    const bool clamp = act.enabled && act.fn == ActivationFn::kIdentity;
    const int64_t ch = ys_c * lane_stride;  // between consecutive lanes
    if (ch == 1 && kn == KV * kLanes && (clamp || !act.enabled)) {
      // Straight from the registers: through `out` the compiler spilled
      // every accumulator and reloaded it, a cost the 1x1's short sums
      // (16 to 64 input channels) felt. Streamed where asked and every
      // vector lands on a vector boundary.
      const bool streamed =
          stream && Vec::Aligned(y) && (ys_w * sizeof(T)) % sizeof(V) == 0;
      for (int64_t j = 0; j < NP; ++j)
        for (int64_t v = 0; v < KV; ++v) {
          V o = acc[j][v];
          if (bias) o += Vec::Load(bias + v * kLanes);
          if (clamp) o = ActivateVector(act, o);
          if (streamed) {
            Vec::StreamStore(y + j * ys_w + v * kLanes, o);
          } else {
            Vec::Store(y + j * ys_w + v * kLanes, o);
          }
        }
      return;
    }
    StoreThroughBuffer(acc, bias, act, y, ys_w, ch, kn);
  }

  // Store's other cases: a function activation, a partial block of
  // channels, or lanes that are not adjacent in the output (NCHW). Out of
  // line, so that only the NHWC fast path is inlined into every block: the
  // NCHW RGB stem at batch 1 ran 1.72-1.74 ms with all of Store inlined,
  // 1.61-1.68 with this split (alternating builds).
  template <int64_t NP, int64_t KV>
  [[gnu::noinline]] static void StoreThroughBuffer(
      const V (&acc)[NP][KV], const T* bias, const Activation::Bounds<T>& act,
      T* y, int64_t ys_w, int64_t ch, int64_t kn) {
    constexpr int64_t np = NP;
    const bool clamp = act.enabled && act.fn == ActivationFn::kIdentity;
    V out[NP][KV];
    for (int64_t j = 0; j < NP; ++j)
      for (int64_t v = 0; v < KV; ++v) {
        V o = acc[j][v];
        if (bias) o += Vec::Load(bias + v * kLanes);
        if (clamp) o = ActivateVector(act, o);
        out[j][v] = o;
      }
    if (act.enabled && !clamp) {
      ApplyActivation(act, reinterpret_cast<T*>(&out[0][0]), NP * KV * kLanes);
    }
    if (ch == 1 && kn == KV * kLanes) {
      for (int64_t j = 0; j < np; ++j)
        for (int64_t v = 0; v < KV; ++v) {
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

  // Splits a row of `ow` pixels into the fewest blocks of at most kPixels,
  // of near-equal widths (a 14-pixel row with kPixels = 12: 7 + 7, not
  // 12 + 2), and calls body(first pixel, width) for each. Every width has
  // its own kernel (a constant count, so the accumulators stay in
  // registers and no lane of work is wasted).
  template <int64_t kMax = kPixels, typename Fn>
  static void ForEachPixelBlock(int64_t ow, Fn&& body) {
    const int64_t count = (ow + kMax - 1) / kMax;
    const int64_t base = ow / count, wider = ow % count;
    int64_t ow0 = 0;
    for (int64_t i = 0; i < count; ++i) {
      const int64_t np = base + (i < wider ? 1 : 0);
      body(ow0, np);
      ow0 += np;
    }
  }

  struct Rows;
  using GeneralFn = void (*)(const DirectProblem<T>&, const Rows&, int64_t,
                             int64_t, int64_t, int64_t, int64_t);
  using BlockFn = void (*)(const DirectProblem<T>&, int64_t, int64_t, int64_t,
                           int64_t, int64_t);
  template <int64_t KV, size_t... I>
  static constexpr std::array<GeneralFn, sizeof...(I)> GeneralTable(
      std::index_sequence<I...>) {
    return {&GeneralBlock<static_cast<int64_t>(I) + 1, KV>...};
  }
  template <size_t... I>
  static constexpr std::array<BlockFn, sizeof...(I)> DepthwiseTable(
      std::index_sequence<I...>) {
    return {&DepthwiseBlock<static_cast<int64_t>(I) + 1>...};
  }
  using PointwiseFn = void (*)(const DirectProblem<T>&, int64_t, int64_t,
                               int64_t, int64_t, int64_t, int64_t);
  template <size_t... I>
  static constexpr std::array<PointwiseFn, sizeof...(I)> PointwiseTable(
      std::index_sequence<I...>) {
    return {&PointwiseBlock<static_cast<int64_t>(I) + 1>...};
  }
  using PointwiseNhwcFn = void (*)(const DirectProblem<T>&, const T*,
                                   const int64_t*, int64_t, int64_t, int64_t);
  template <int64_t KV, size_t... I>
  static constexpr std::array<PointwiseNhwcFn, sizeof...(I)> PointwiseNhwcTable(
      std::index_sequence<I...>) {
    return {&PointwiseNhwcBlock<static_cast<int64_t>(I) + 1, KV>...};
  }
  using PlanarFn = void (*)(const DirectProblem<T>&, const T*, int64_t, int64_t,
                            int64_t, int64_t, int64_t);
  template <int64_t SW, size_t... I>
  static constexpr std::array<PlanarFn, sizeof...(I)> PlanarTable(
      std::index_sequence<I...>) {
    return {&PlanarBlock<static_cast<int64_t>(I) + 1, SW>...};
  }

  // ---- general form -------------------------------------------------------

  // One task's window of input rows in its thread's strip: row r (input
  // row ih0 + r*dh) at ring + ((ih0 + r*dh) % ring rows) * row_elems, for
  // r in [r_lo, r_hi) (the others are padding). Read in place
  // (DirectReadsInPlace), `ring` is the image's input and ring_rows 0: row
  // ih at ring + ih * row_elems.
  struct Rows {
    const T* ring;
    int64_t ih0, ring_rows, row_elems, r_lo, r_hi;
    const T* Row(int64_t r, int64_t dh) const {
      const int64_t ih = ih0 + r * dh;
      return ring + (ring_rows ? ih % ring_rows : ih) * row_elems;
    }
  };

  // Every (image, group, output row, channel block) is a task; each runs
  // the row's pixel blocks.
  static void RunGeneral(const DirectProblem<T>& p) {
    const Conv2dGeometry& g = p.g;
    ForEachStripTask(
        p, (g.kg + kBlock - 1) / kBlock,
        [&](const Rows& rows, int64_t n, int64_t grp, int64_t b, int64_t oh) {
          // A last block of at most one vector of channels
          // (16 output channels of an AVX-512 float block of
          // 32) skips the second, all-zero vector.
          const int64_t kv = g.kg - b * kBlock <= kLanes ? 1 : kDirectVectors;
          ForEachPixelBlock(g.ow, [&](int64_t ow0, int64_t np) {
            kGeneralBlocks[kv - 1][np - 1](p, rows, n, grp, b, oh, ow0);
          });
        });
  }

  // Calls body(rows, n, grp, b, oh) for every (image n, group grp, output
  // row oh, block b < blocks), spread over the threads, with `rows` the
  // task's input rows in the thread's strip. Consecutive tasks of a thread
  // (schedule static) are the blocks of one output row, then the next
  // row's: they share the strip's rows, and the next row copies in only
  // those new to it. Where that order would stream weights that do not
  // stay in cache once per output row (DirectBlocksOuter), the loops swap:
  // a block's rows follow each other, its weights stay in the L2 cache
  // over them, and the strip is refilled once per block instead.
  template <typename Body>
  static void ForEachStripTask(const DirectProblem<T>& p, int64_t blocks,
                               Body&& body) {
    const Conv2dGeometry& g = p.g;
    const ImageStrides& xs = p.xs;
    const int64_t tasks = g.n * g.groups * g.oh * blocks;
    const DirectStrip st = DirectStripOf(g);
    const int64_t row_elems = st.width * g.cg;
    const bool in_place = DirectReadsInPlace(g);
    const bool blocks_outer = BlocksOuter(g, blocks, st);
    // No workspace when read in place.
    T* strips = static_cast<T*>(p.workspace);
#pragma omp parallel num_threads(p.threads)
    {
      const int thread = omp_get_thread_num();
      T* ring = nullptr;
      // tag[slot]: the (image, group, input row) in that slot, or -1.
      int64_t* tag = nullptr;
      if (!in_place) {
        ring = strips + thread * st.elements;
        tag = reinterpret_cast<int64_t*>(strips + p.threads * st.elements) +
              thread * st.rows;
        std::fill(tag, tag + st.rows, int64_t{-1});
      }
      // nowait: the thread's streamed stores are fenced first, then the
      // region's end waits for every thread.
#pragma omp for schedule(static) nowait
      for (int64_t t = 0; t < tasks; ++t) {
        const int64_t b = blocks_outer ? (t / g.oh) % blocks : t % blocks;
        const int64_t oh = blocks_outer ? t % g.oh : (t / blocks) % g.oh;
        const int64_t image = t / (blocks * g.oh);  // n * groups + grp
        const int64_t grp = image % g.groups;
        const int64_t n = image / g.groups;
        Rows rows;
        rows.ih0 = oh * g.sh - g.ph;
        ValidRange(rows.ih0, g.dh, g.h, g.kh, &rows.r_lo, &rows.r_hi);
        const T* xg = p.x + n * xs.n + grp * g.cg * xs.c;
        if (in_place) {
          rows.ring = xg;
          rows.ring_rows = 0;
          rows.row_elems = xs.h;
          body(rows, n, grp, b, oh);
          continue;
        }
        rows.ring = ring;
        rows.ring_rows = st.rows;
        rows.row_elems = row_elems;
        for (int64_t r = rows.r_lo; r < rows.r_hi; ++r) {
          const int64_t ih = rows.ih0 + r * g.dh;
          const int64_t slot = ih % st.rows;
          const int64_t want = image * g.h + ih;
          if (tag[slot] != want) {
            PackRow(g, xs, xg + ih * xs.h, st.width, ring + slot * row_elems);
            tag[slot] = want;
          }
        }
        body(rows, n, grp, b, oh);
      }
      if (p.stream_output) _mm_sfence();
    }
  }

  // Whether the general form's tasks run a channel block's output rows in
  // a row (see ForEachStripTask): when one group's packed weights are more
  // than kWeightCacheBytes, row by row they come from L3 or memory once
  // per output row, oh times in all, while block by block the group's
  // strip rows (the input, once per block) are re-read instead; the order
  // that reads fewer bytes wins. (resnet18's 3x3 convs at 512@7x7: 9.4 MB
  // of weights x 7 rows against 16 blocks x 166 KB of input rows.)
  static bool BlocksOuter(const Conv2dGeometry& g, int64_t blocks,
                          const DirectStrip& st) {
    const int64_t weight_bytes =
        blocks * g.kh * g.kw * g.cg * kBlock * static_cast<int64_t>(sizeof(T));
    const int64_t input_bytes = ((g.oh - 1) * g.sh + (g.kh - 1) * g.dh + 1) *
                                st.width * g.cg *
                                static_cast<int64_t>(sizeof(T));
    return weight_bytes > kWeightCacheBytes &&
           weight_bytes * g.oh > blocks * input_bytes;
  }
  // Under half of a Zen 3 core's 512 KiB L2: the strip and output share it.
  static constexpr int64_t kWeightCacheBytes = 256 << 10;

  // dst[j][c] = x[c, ih, j - pw] of one input row (src: its group's first
  // channel), zero where j - pw is outside the row, for j < width.
  static void PackRow(const Conv2dGeometry& g, const ImageStrides& xs,
                      const T* src, int64_t width, T* dst) {
    const int64_t cg = g.cg;
    const int64_t lo = std::min(g.pw, width);
    const int64_t hi = std::min(g.pw + g.w, width);
    std::fill(dst, dst + lo * cg, T(0));
    std::fill(dst + std::max(lo, hi) * cg, dst + width * cg, T(0));
    if (xs.c == 1) {  // NHWC: each pixel's channels are contiguous already
      for (int64_t j = lo; j < hi; ++j) {
        std::copy(src + (j - g.pw) * xs.w, src + (j - g.pw) * xs.w + cg,
                  dst + j * cg);
      }
      return;
    }
    for (int64_t c = 0; c < cg; ++c) {  // NCHW: a transpose of cg rows
      const T* sc = src + c * xs.c - g.pw * xs.w;
      for (int64_t j = lo; j < hi; ++j) dst[j * cg + c] = sc[j * xs.w];
    }
  }

  // acc[j][v] += sum over c < depth of x[off[j] + c] * w[c*kBlock + v*kLanes
  // + lane]: one tap's channels (the general form) or a 1x1's whole sum
  // (the NHWC pointwise form). Per channel, KV weight vectors and NP
  // broadcasts feed NP*KV FMAs, the shape of a GEMM micro-kernel.
  template <int64_t NP, int64_t KV>
  static void AccumulateChannels(const T* x, const int64_t (&off)[NP],
                                 const T* w, int64_t depth, V (&acc)[NP][KV]) {
    for (int64_t c = 0; c < depth; ++c, ++x, w += kBlock) {
      V wv[KV];
      for (int64_t v = 0; v < KV; ++v) wv[v] = Vec::Load(w + v * kLanes);
      for (int64_t j = 0; j < NP; ++j) {
        const T xj = x[off[j]];
        for (int64_t v = 0; v < KV; ++v) acc[j][v] += xj * wv[v];
      }
    }
  }

  // acc[j][v] = sum over r, s, c of w[k0 + v*kLanes + lane, c, r, s] *
  //             x[n, c0 + c, oh*sh - ph + r*dh, (ow0 + j)*sw - pw + s*dw]
  // for the block's channels k0.. and pixels ow0.., then Store.
  // NP: the block's pixels (ForEachPixelBlock); KV: its vectors of output
  // channels, kDirectVectors or, for a last block of at most kLanes
  // channels, 1 (the packing's second vector, all zeros, is not read). The
  // strip's rows are padded, so every tap reads inside them: no test per
  // pixel.
  template <int64_t NP, int64_t KV>
  static void GeneralBlock(const DirectProblem<T>& p, const Rows& rows,
                           int64_t n, int64_t grp, int64_t b, int64_t oh,
                           int64_t ow0) {
    const Conv2dGeometry& g = p.g;
    const int64_t blocks = (g.kg + kBlock - 1) / kBlock;
    const int64_t cg = g.cg;
    const T* wb = p.packed + (grp * blocks + b) * g.kh * g.kw * cg * kBlock;
    // Pixel j's offset from pixel 0's in a strip row, in elements.
    int64_t off[NP];
    for (int64_t j = 0; j < NP; ++j) off[j] = j * g.sw * cg;

    V acc[NP][KV];
    for (int64_t j = 0; j < NP; ++j)
      for (int64_t v = 0; v < KV; ++v) acc[j][v] = V{};

    for (int64_t r = rows.r_lo; r < rows.r_hi; ++r) {
      const T* xrow = rows.Row(r, g.dh) + ow0 * g.sw * cg;
      const T* w = wb + r * g.kw * cg * kBlock;
      if (g.dw == 1) {
        // Undilated, a row's taps (s, c) are kw * cg consecutive values of
        // the strip row and of the packed weights: one sum of that depth
        // instead of kw of depth cg (an RGB first layer's 3).
        AccumulateChannels(xrow, off, w, g.kw * cg, acc);
        continue;
      }
      for (int64_t s = 0; s < g.kw; ++s, w += cg * kBlock) {
        AccumulateChannels(xrow + s * g.dw * cg, off, w, cg, acc);
      }
    }
    const int64_t k0 = grp * g.kg + b * kBlock;
    Store(acc, p.bias ? p.bias + (grp * blocks + b) * kBlock : nullptr, p.act,
          p.y + n * p.ys.n + k0 * p.ys.c + oh * p.ys.h + ow0 * p.ys.w, p.ys.c,
          p.ys.w, 1, std::min(kBlock, g.kg - b * kBlock), p.stream_output);
  }

  // ---- planar depthwise form (NCHW) ---------------------------------------

  // Every (image, group) is a task: its input channel zero-padded into the
  // thread's plane, then every output row's pixels in blocks of up to
  // kPlanarVectors vectors, each block for the group's output channels in
  // turn (they read the same rows).
  static void RunPlanar(const DirectProblem<T>& p) {
    const Conv2dGeometry& g = p.g;
    const PlanarPlane pl = PlanarPlaneOf(g);
    const int64_t vectors = (g.ow + kLanes - 1) / kLanes;
    // Stride 1 and 2 have kernels of their own (one load, a load pair and
    // a shuffle); others gather.
    const auto& blocks = kPlanarBlocks[g.sw == 1 ? 0 : g.sw == 2 ? 1 : 2];
    T* planes = static_cast<T*>(p.workspace);
#pragma omp parallel num_threads(p.threads)
    {
      T* plane = planes + omp_get_thread_num() * pl.elements;
#pragma omp for schedule(static)
      for (int64_t t = 0; t < g.n * g.groups; ++t) {
        const int64_t n = t / g.groups, grp = t % g.groups;
        PackPlane(g, p.x + n * p.xs.n + grp * p.xs.c, pl, plane);
        for (int64_t oh = 0; oh < g.oh; ++oh) {
          const T* rows = plane + oh * g.sh * pl.width;
          ForEachPixelBlock<kPlanarVectors>(
              vectors, [&](int64_t v0, int64_t nv) {
                for (int64_t k = grp * g.kg; k < (grp + 1) * g.kg; ++k) {
                  blocks[nv - 1](p, rows, pl.width, n, k, oh, v0 * kLanes);
                }
              });
        }
      }
    }
  }

  // plane[i][j] = x[ih = i - ph][iw = j - pw] of one channel (src: its
  // first element), zero outside the input, for the plane's rows and
  // columns; then the slack's zeros.
  static void PackPlane(const Conv2dGeometry& g, const T* src,
                        const PlanarPlane& pl, T* plane) {
    const int64_t lo = std::min(g.pw, pl.width);
    const int64_t hi = std::max(lo, std::min(g.pw + g.w, pl.width));
    for (int64_t i = 0; i < pl.rows; ++i) {
      T* dst = plane + i * pl.width;
      const int64_t ih = i - g.ph;
      if (ih < 0 || ih >= g.h) {
        std::fill(dst, dst + pl.width, T(0));
        continue;
      }
      std::fill(dst, dst + lo, T(0));
      if (hi > lo) {  // columns [lo, hi) are input columns lo - pw..
        const T* row = src + ih * g.w;  // NCHW: a row is contiguous
        std::copy(row + (lo - g.pw), row + (hi - g.pw), dst + lo);
      }
      std::fill(dst + hi, dst + pl.width, T(0));
    }
    T* slack = plane + pl.rows * pl.width;
    std::fill(slack, slack + pl.slack, T(0));
  }

  // acc[v] lane l = sum over r, s of w[k, 0, r, s] *
  //   plane[oh*sh + r*dh][(ow0 + v*kLanes + l)*sw + s*dw]
  // (rows: the plane's row oh*sh, of `width` columns), then bias and
  // activation, stored for the pixels < ow. SW: the stride, or 0 for any.
  template <int64_t NV, int64_t SW>
  static void PlanarBlock(const DirectProblem<T>& p, const T* rows,
                          int64_t width, int64_t n, int64_t k, int64_t oh,
                          int64_t ow0) {
    const Conv2dGeometry& g = p.g;
    const int64_t sw = SW ? SW : g.sw;
    const T* w = p.packed + k * g.kh * g.kw;
    V acc[NV];
    for (int64_t v = 0; v < NV; ++v) acc[v] = V{};
    for (int64_t r = 0; r < g.kh; ++r) {
      const T* xrow = rows + r * g.dh * width + ow0 * sw;
      for (int64_t s = 0; s < g.kw; ++s) {
        const T ws = w[r * g.kw + s];
        const T* src = xrow + s * g.dw;
        for (int64_t v = 0; v < NV; ++v) {
          acc[v] += ws * LoadStrided<SW>(src + v * kLanes * sw, sw);
        }
      }
    }
    StorePixels(acc, p.bias ? p.bias[k] : T(0), p.act,
                std::min(NV * kLanes, g.ow - ow0),
                p.y + n * p.ys.n + k * p.ys.c + oh * p.ys.h + ow0);  // ys.w 1
  }

  // x[0], x[sw], ..., x[(kLanes - 1)*sw]: one load at stride 1, two and a
  // shuffle at 2, gathered through memory otherwise (SW = 0).
  template <int64_t SW>
  static V LoadStrided(const T* x, int64_t sw) {
    if (SW == 1) return Vec::Load(x);
    if (SW == 2) return Vec::LoadStride2(x);
    alignas(kVectorBytes) T gathered[kLanes];
    for (int64_t l = 0; l < kLanes; ++l) gathered[l] = x[l * sw];
    return Vec::Load(gathered);
  }

  // ---- pointwise form (NCHW 1x1) -----------------------------------------

  // Output channels of a pointwise sub-block, and its most vectors of
  // pixels.
  static constexpr int64_t kPointRows = kBlock / 4;
  static constexpr int64_t kPointVectors = 3;

  // Every (image, group, run of up to kPointVectors vectors of pixels,
  // block of kBlock output channels) is a task; the blocks of one run are
  // consecutive, so a thread reuses the run's input (cg x its pixels) from
  // its cache. A plane's vectors are split into runs of near-equal widths
  // (as ForEachPixelBlock: 4 vectors are 2 + 2, not 3 + 1).
  static void RunPointwise(const DirectProblem<T>& p) {
    const Conv2dGeometry& g = p.g;
    const int64_t plane = g.h * g.w;
    const int64_t blocks = (g.kg + kBlock - 1) / kBlock;
    const int64_t vectors = (plane + kLanes - 1) / kLanes;
    const int64_t runs = (vectors + kPointVectors - 1) / kPointVectors;
    const int64_t base = vectors / runs, wider = vectors % runs;
#pragma omp parallel for schedule(static) num_threads(p.threads)
    for (int64_t t = 0; t < g.n * g.groups * runs * blocks; ++t) {
      const int64_t b = t % blocks;
      const int64_t run = (t / blocks) % runs;
      const int64_t image = t / (blocks * runs);  // n * groups + grp
      const int64_t nv = base + (run < wider ? 1 : 0);
      const int64_t p0 = (run * base + std::min(run, wider)) * kLanes;
      const int64_t kn = std::min(kBlock, g.kg - b * kBlock);
      for (int64_t i0 = 0; i0 < kn; i0 += kPointRows) {
        kPointwiseBlocks[nv - 1](p, image / g.groups, image % g.groups, b, i0,
                                 std::min(kPointRows, kn - i0), p0);
      }
    }
  }

  // acc[i][v] lane l = sum over c of w[k0 + i, c] * x[n, c0 + c, p0 + v*kLanes
  // + l] for the sub-block's rows k0 + i (k0: channel i0 of block b of group
  // grp; rows < rn stored) and NV vectors of flat pixels from p0, then
  // bias and activation, stored for the pixels inside the plane. Whole
  // vectors are loaded, those past the plane's end reading the next planes
  // (lanes not stored), except where they would pass the end of the
  // tensor: the last channels (more than one where planes are smaller
  // than a block) are loaded lane by lane.
  template <int64_t NV>
  static void PointwiseBlock(const DirectProblem<T>& p, int64_t n, int64_t grp,
                             int64_t b, int64_t i0, int64_t rn, int64_t p0) {
    const Conv2dGeometry& g = p.g;
    const int64_t plane = g.h * g.w;
    const int64_t blocks = (g.kg + kBlock - 1) / kBlock;
    const int64_t count = std::min(NV * kLanes, plane - p0);
    // packed[grp][b][c][kBlock] (the general form's packing of a 1x1).
    const T* w = p.packed + (grp * blocks + b) * g.cg * kBlock + i0;
    const T* x = p.x + (n * g.c + grp * g.cg) * plane + p0;
    // Channels c < whole: x + c*plane + NV*kLanes <= the tensor's end.
    const int64_t left = p.x + g.n * g.c * plane - x - NV * kLanes;
    const int64_t whole = left < 0 ? 0 : std::min(g.cg, left / plane + 1);
    V acc[kPointRows][NV];
    for (int64_t i = 0; i < kPointRows; ++i)
      for (int64_t v = 0; v < NV; ++v) acc[i][v] = V{};
    for (int64_t c = 0; c < g.cg; ++c, x += plane, w += kBlock) {
      V in[NV];
      if (c < whole) {
        for (int64_t v = 0; v < NV; ++v) in[v] = Vec::Load(x + v * kLanes);
      } else {
        for (int64_t v = 0; v < NV; ++v) {
          in[v] = V{};
          for (int64_t l = 0; l < kLanes && v * kLanes + l < count; ++l) {
            in[v][l] = x[v * kLanes + l];
          }
        }
      }
      for (int64_t i = 0; i < kPointRows; ++i) {
        const T wi = w[i];
        for (int64_t v = 0; v < NV; ++v) acc[i][v] += wi * in[v];
      }
    }
    const int64_t k0 = grp * g.kg + b * kBlock + i0;
    for (int64_t i = 0; i < rn; ++i) {
      StorePixels(acc[i],
                  p.bias ? p.bias[(grp * blocks + b) * kBlock + i0 + i] : T(0),
                  p.act, count, p.y + n * p.ys.n + (k0 + i) * p.ys.c + p0);
    }
  }

  // ---- NHWC pointwise form (1x1, no padding, any stride) ------------------

  // An NHWC 1x1 convolution is a GEMM whose rows are the output pixels of
  // the whole batch: pixel m's output channels are contiguous at y + m*k,
  // its input channels at x + its input pixel's offset (stride 2 only
  // changes which pixel that is, so nothing is gathered or copied). The
  // general form blocks pixels of one output row, which at 7x7 or 14x14
  // leaves its 12-pixel blocks 7 wide; here the pixels of all rows and
  // images are cut into tiles of near-equal widths up to kPixels, each
  // run against a block of kBlock output channels with the general form's
  // micro-kernel (AccumulateChannels).
  //
  // A task is (group, chunk of `span` consecutive tiles, channel block);
  // a chunk's blocks are consecutive tasks, so a thread reads the chunk's
  // input (span x kPixels pixels x cg) from its L2 cache once per block
  // and each block's weights (cg x kBlock, packed) once per chunk, the
  // sliver staying in L1/L2 over the chunk's tiles (GotoBLAS's order,
  // with the unpacked input as its A panel). Chunks are as large as
  // kChunkCacheBytes allows for their input and output, but small enough
  // to give each thread several tasks (the threads finish together).
  // Weights small enough for L1 stay there anyway: then a task is a chunk
  // of tiles against every block, a tile's blocks one after another
  // (completing its output lines at once, and finding its pixels' offsets
  // once for all of them: with 16 to 32 input channels that bookkeeping
  // is a fair part of a block's work).
  static void RunPointwiseNhwc(const DirectProblem<T>& p) {
    const Conv2dGeometry& g = p.g;
    const int64_t pixels = g.n * g.oh * g.ow;
    // Layer::Run skips empty outputs; kept so `tiles` never divides by 0.
    if (pixels == 0) return;
    const int64_t blocks = (g.kg + kBlock - 1) / kBlock;
    const int64_t tiles = (pixels + kPixels - 1) / kPixels;
    const int64_t base = pixels / tiles, wider = pixels % tiles;
    const bool tile_major =
        blocks * g.cg * kBlock * static_cast<int64_t>(sizeof(T)) <=
        kSmallWeightBytes;
    // Tasks of one block each (`task_blocks` of them per chunk) or of all.
    const int64_t task_blocks = tile_major ? 1 : blocks;
    // A tile's input and one block's output (counting all of its output
    // would keep a 1280-channel layer's chunks at one tile, re-reading
    // its weights once per tile).
    const int64_t tile_bytes =
        kPixels * (g.cg + kBlock) * static_cast<int64_t>(sizeof(T));
    const int64_t balanced =
        tiles * g.groups * task_blocks / (kTasksPerThread * p.threads);
    const int64_t span = std::max<int64_t>(
        1, std::min({tile_major ? tiles : kChunkCacheBytes / tile_bytes,
                     balanced, tiles}));
    const int64_t chunks = (tiles + span - 1) / span;
    const ImageStrides& xs = p.xs;
    const bool unit_stride = g.sh == 1 && g.sw == 1;
#pragma omp parallel for schedule(static) num_threads(p.threads)
    for (int64_t t = 0; t < g.groups * chunks * task_blocks; ++t) {
      const int64_t chunk = (t / task_blocks) % chunks;
      const int64_t grp = t / (task_blocks * chunks);
      const int64_t b_lo = tile_major ? 0 : t % task_blocks;
      const int64_t b_hi = tile_major ? blocks : b_lo + 1;
      const T* x = p.x + grp * g.cg * xs.c;
      // Chunks of near-equal tile counts: cut at multiples of span, the
      // last one could hold a fraction of the others' work, and with few
      // chunks (two at 14x14) one thread would do most of it.
      const int64_t i_lo = chunk * tiles / chunks;
      const int64_t i_hi = (chunk + 1) * tiles / chunks;
      // The (image, row, column) of the next tile's first pixel: divided
      // out once per task, then stepped. At stride 1 output pixel m reads
      // input pixel m, at m*xs.w, with no stepping at all.
      int64_t m = i_lo * base + std::min(i_lo, wider);
      int64_t n = m / (g.oh * g.ow), oh = m / g.ow % g.oh, ow = m % g.ow;
      for (int64_t i = i_lo; i < i_hi; ++i) {
        const int64_t np = base + (i < wider ? 1 : 0);
        int64_t off[kPixels];
        for (int64_t j = 0; j < np; ++j) {
          if (unit_stride) {
            off[j] = (m + j) * xs.w;
            continue;
          }
          off[j] = n * xs.n + oh * g.sh * xs.h + ow * g.sw * xs.w;
          if (++ow == g.ow) {
            ow = 0;
            if (++oh == g.oh) oh = 0, ++n;
          }
        }
        for (int64_t b = b_lo; b < b_hi; ++b) {
          const int64_t kv = g.kg - b * kBlock <= kLanes ? 1 : kDirectVectors;
          kPointwiseNhwcBlocks[kv - 1][np - 1](p, x, off, grp, b, m);
        }
        m += np;
      }
    }
  }
  // A quarter of a Zen 3 core's 512 KiB L2 for a chunk's input and
  // output: the weight sliver (up to 147 KiB at 1152 channels) shares it.
  static constexpr int64_t kChunkCacheBytes = 128 << 10;
  static constexpr int64_t kTasksPerThread = 8;
  static constexpr int64_t kSmallWeightBytes = 32 << 10;  // Zen 3's L1

  // The NP output pixels m0.. (flat over images and rows, their inputs at
  // x + offsets[j], x at group grp's first channel) against block b of
  // grp's output channels: acc[j][v] = sum over c of w[k0 + v*kLanes +
  // lane, c] * x[offsets[j] + c], then Store (bias, activation) into
  // y + (m0 + j)*k + k0.
  template <int64_t NP, int64_t KV>
  static void PointwiseNhwcBlock(const DirectProblem<T>& p, const T* x,
                                 const int64_t* offsets, int64_t grp, int64_t b,
                                 int64_t m0) {
    const Conv2dGeometry& g = p.g;
    const int64_t blocks = (g.kg + kBlock - 1) / kBlock;
    int64_t off[NP];  // a constant count: kept in registers
    for (int64_t j = 0; j < NP; ++j) off[j] = offsets[j];
    V acc[NP][KV];
    for (int64_t j = 0; j < NP; ++j)
      for (int64_t v = 0; v < KV; ++v) acc[j][v] = V{};
    AccumulateChannels(x, off, p.packed + (grp * blocks + b) * g.cg * kBlock,
                       g.cg, acc);
    const int64_t k0 = grp * g.kg + b * kBlock;
    Store(acc, p.bias ? p.bias + (grp * blocks + b) * kBlock : nullptr, p.act,
          p.y + m0 * p.ys.w + k0 * p.ys.c, p.ys.c, p.ys.w, 1,
          std::min(kBlock, g.kg - b * kBlock));
  }

  // The planar and pointwise forms' epilogue: y[j] = act(acc lane j +
  // bias) for the first `count` lanes of NV vectors (one output channel's
  // contiguous pixels), through a buffer so a partial vector is not stored
  // past them.
  template <int64_t NV>
  static void StorePixels(const V (&acc)[NV], T bias,
                          const Activation::Bounds<T>& act, int64_t count,
                          T* y) {
    alignas(kVectorBytes) T out[NV * kLanes];
    const bool clamp = act.enabled && act.fn == ActivationFn::kIdentity;
    for (int64_t v = 0; v < NV; ++v) {
      V o = acc[v] + bias;
      if (clamp) o = ActivateVector(act, o);
      Vec::Store(out + v * kLanes, o);
    }
    if (act.enabled && !clamp) ApplyActivation(act, out, count);
    std::copy(out, out + count, y);
  }

  // ---- depthwise form (NHWC) ----------------------------------------------

  // Every (image, output row, multiplier pass) is a task, cut into chunks
  // of channel blocks where there are too few rows to share among the
  // threads. A task sweeps its row a pixel block at a time, every channel
  // block of the chunk in turn: the block's input (3 rows of 10 pixels, all
  // their channels: 15 KiB at 128 channels) stays in L1 while the channel
  // blocks read it, and the reads run along whole pixels. Channel blocks
  // outermost re-read the 3 input rows (86 KiB at 56x128) from L2 for each
  // block: 8x56x56x144, 3x3, AVX-512, 2 threads, 4.47/4.76/4.43 ms then,
  // 4.22/4.25/4.07 now (alternating builds, on a slow stretch of the
  // shared machine; in-cache sizes are unchanged).
  static void RunDepthwise(const DirectProblem<T>& p) {
    const Conv2dGeometry& g = p.g;
    const int64_t m = g.kg;  // output channels per input channel
    const int64_t blocks = (g.c + kBlock - 1) / kBlock;
    const int64_t rows = g.n * g.oh * m;
    const int64_t wanted = 8 * static_cast<int64_t>(omp_get_max_threads());
    const int64_t chunks =
        std::min(blocks, std::max<int64_t>(1, (wanted + rows - 1) / rows));
    const int64_t per_chunk = (blocks + chunks - 1) / chunks;
#pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < rows * chunks; ++t) {
      const int64_t b0 = (t % chunks) * per_chunk;
      const int64_t b1 = std::min(blocks, b0 + per_chunk);
      const int64_t row = t / chunks;
      const int64_t i = row % m;
      const int64_t oh = (row / m) % g.oh;
      const int64_t n = row / (m * g.oh);
      ForEachPixelBlock<kDepthwisePixels>(g.ow, [&](int64_t ow0, int64_t np) {
        for (int64_t b = b0; b < b1; ++b) {
          kDepthwiseBlocks[np - 1](p, n, i, b, oh, ow0);
        }
      });
    }
  }

  // acc[j][v] = sum over r, s of w[(c0 + lane)*m + i, 0, r, s] *
  //             x[n, c0 + lane, oh*sh - ph + r*dh, (ow0 + j)*sw - pw + s*dw]
  // for the block's input channels c0 + lane (lane = v*kLanes + l), then
  // Store into output channels (c0 + lane)*m + i.
  template <int64_t NP>
  static void DepthwiseBlock(const DirectProblem<T>& p, int64_t n, int64_t i,
                             int64_t b, int64_t oh, int64_t ow0) {
    const Conv2dGeometry& g = p.g;
    const ImageStrides& xs = p.xs;
    const int64_t m = g.kg;
    const int64_t blocks = (g.c + kBlock - 1) / kBlock;
    constexpr int64_t np = NP;
    const int64_t c0 = b * kBlock;
    const int64_t kn = std::min(kBlock, g.c - c0);
    const T* wb = p.packed + (i * blocks + b) * g.kh * g.kw * kBlock;
    const T* xn = p.x + n * xs.n + c0;  // xs.c == 1
    const T* x_end = p.x + g.n * xs.n;
    const int64_t pix = g.sw * xs.w;

    V acc[NP][kDirectVectors];
#pragma GCC unroll 16
    for (int64_t j = 0; j < NP; ++j)
      for (int64_t v = 0; v < kDirectVectors; ++v) acc[j][v] = V{};

    // 3-wide kernels, undilated, stride 1 or 2 (nearly every depthwise
    // layer): the block slides along the row instead, loading each input
    // column once for the up to 3 pixels that use it; the columns in the
    // padding are zeros. (Edge blocks went through the per-tap path below
    // before, 2 of a 56-pixel row's 7 blocks. 3x3 over 128 channels,
    // AVX-512, 2 threads, ms: 1x28x28 0.037 -> 0.027, 1x56x56 0.136 ->
    // 0.100, with the pixel loops' unrolling forced, which kept acc out of
    // the stack.)
    const bool slide = g.kw == 3 && g.dw == 1 && (g.sw == 1 || g.sw == 2);
    const int64_t iw_first = ow0 * g.sw - g.pw;  // tap 0 of pixel 0
    const int64_t columns = (NP - 1) * g.sw + 3;
    const int64_t col_lo = std::max<int64_t>(0, -iw_first);
    const int64_t col_hi = std::min(columns, g.w - iw_first);
    for (int64_t r = 0; r < g.kh; ++r) {
      const int64_t ih = oh * g.sh - g.ph + r * g.dh;
      if (ih < 0 || ih >= g.h) continue;
      const T* xrow = xn + ih * xs.h;
      if (slide && (kn == kBlock ||
                    xrow + (iw_first + col_hi - 1) * xs.w + kBlock <= x_end)) {
        const T* w = wb + r * 3 * kBlock;
        if (g.sw == 1) {
          Slide3<NP, 1>(xrow, iw_first, col_lo, col_hi, xs.w, w, acc);
        } else {
          Slide3<NP, 2>(xrow, iw_first, col_lo, col_hi, xs.w, w, acc);
        }
        continue;
      }
      for (int64_t s = 0; s < g.kw; ++s) {
        const T* w = wb + (r * g.kw + s) * kBlock;
        V wv[kDirectVectors];
        for (int64_t v = 0; v < kDirectVectors; ++v) {
          wv[v] = Vec::Load(w + v * kLanes);
        }
        const int64_t iw0 = ow0 * g.sw + s * g.dw - g.pw;
        // A partial block of channels (kn < kBlock) may load whole vectors
        // too: the lanes past kn read the next pixel's channels, multiply
        // zero weights and are never stored; only a load past the end of
        // the input tensor has to be avoided.
        if (iw0 >= 0 && iw0 + (NP - 1) * g.sw < g.w &&
            (kn == kBlock ||
             xrow + (iw0 + (NP - 1) * g.sw) * xs.w + kBlock <= x_end)) {
          const T* xc = xrow + iw0 * xs.w;
#pragma GCC unroll 16
          for (int64_t j = 0; j < NP; ++j)
            for (int64_t v = 0; v < kDirectVectors; ++v) {
              acc[j][v] += Vec::Load(xc + j * pix + v * kLanes) * wv[v];
            }
          continue;
        }
        // An edge block, or a partial block at the end of the tensor: the
        // pixels in the padding are skipped, and where a whole vector would
        // pass the tensor's end only the kn channels are read.
        int64_t lo, hi;
        ValidRange(iw0, g.sw, g.w, np, &lo, &hi);
        // Over all NP pixels (a constant count, so acc stays in registers),
        // skipping the pixels outside [lo, hi).
#pragma GCC unroll 16
        for (int64_t j = 0; j < NP; ++j) {
          if (j < lo || j >= hi) continue;
          const T* xj = xrow + (iw0 + j * g.sw) * xs.w;
          for (int64_t v = 0; v < kDirectVectors; ++v) {
            V in;
            if (kn == kBlock || xj + kBlock <= x_end) {
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
          p.y + n * p.ys.n + (c0 * m + i) * p.ys.c + oh * p.ys.h + ow0 * p.ys.w,
          p.ys.c, p.ys.w, m, kn);
  }

  // One row of a 3-wide kernel for NP pixels at stride SW: input column q
  // (column iw0 + q of the row at xrow, columns xw apart, q < SW*(NP-1) + 3)
  // is loaded once and added, times tap s's weights, into pixel (q - s)/SW
  // for each s that lands on one; columns outside [lo, hi) are the row's
  // padding, zeros. The loops have constant counts, so the pixel indices
  // are constants and acc stays in registers.
  template <int64_t NP, int64_t SW>
  static void Slide3(const T* xrow, int64_t iw0, int64_t lo, int64_t hi,
                     int64_t xw, const T* w, V (&acc)[NP][kDirectVectors]) {
    V wv[3][kDirectVectors];
    for (int64_t s = 0; s < 3; ++s)
      for (int64_t v = 0; v < kDirectVectors; ++v) {
        wv[s][v] = Vec::Load(w + s * kBlock + v * kLanes);
      }
    constexpr int64_t kColumns = SW * (NP - 1) + 3;
#pragma GCC unroll 32
    for (int64_t q = 0; q < kColumns; ++q) {
      V in[kDirectVectors];
      const bool inside = q >= lo && q < hi;
      for (int64_t v = 0; v < kDirectVectors; ++v) {
        in[v] = inside ? Vec::Load(xrow + (iw0 + q) * xw + v * kLanes) : V{};
      }
#pragma GCC unroll 3
      for (int64_t s = 0; s < 3; ++s) {
        const int64_t d = q - s;
        if (d < 0 || d % SW != 0 || d / SW >= NP) continue;
        for (int64_t v = 0; v < kDirectVectors; ++v) {
          acc[d / SW][v] += in[v] * wv[s][v];
        }
      }
    }
  }

  // The depthwise form's widest block: fewer pixels than the general
  // form's, so that Slide3's 3 taps of weights fit in registers beside the
  // accumulators (AVX-512: 8 x 2 + 6 + 2 of 32; AVX2: 4 x 2 + 6 + 2 of 16).
  static constexpr int64_t kDepthwisePixels = kPixels * 2 / 3;

  // The kernels of each block width, 1..kPixels.
  // The general form's kernels, [vectors of channels - 1][pixels - 1].
  static_assert(kDirectVectors == 2, "kGeneralBlocks lists both widths");
  static constexpr std::array<std::array<GeneralFn, kPixels>, kDirectVectors>
      kGeneralBlocks = {GeneralTable<1>(std::make_index_sequence<kPixels>{}),
                        GeneralTable<2>(std::make_index_sequence<kPixels>{})};
  static constexpr std::array<BlockFn, kPixels> kDepthwiseBlocks =
      DepthwiseTable(std::make_index_sequence<kPixels>{});
  static constexpr std::array<PointwiseFn, kPointVectors> kPointwiseBlocks =
      PointwiseTable(std::make_index_sequence<kPointVectors>{});
  // The NHWC pointwise form's, [vectors of channels - 1][pixels - 1].
  static constexpr std::array<std::array<PointwiseNhwcFn, kPixels>,
                              kDirectVectors>
      kPointwiseNhwcBlocks = {
          PointwiseNhwcTable<1>(std::make_index_sequence<kPixels>{}),
          PointwiseNhwcTable<2>(std::make_index_sequence<kPixels>{})};
  // The planar form's kernels, [stride 1, 2, other][vectors - 1].
  static constexpr std::array<std::array<PlanarFn, kPlanarVectors>, 3>
      kPlanarBlocks = {
          PlanarTable<1>(std::make_index_sequence<kPlanarVectors>{}),
          PlanarTable<2>(std::make_index_sequence<kPlanarVectors>{}),
          PlanarTable<0>(std::make_index_sequence<kPlanarVectors>{})};
};

}  // namespace
}  // namespace ai3

#endif  // AI3_CORE_OPS_CONV2D_DIRECT_KERNEL_H_
