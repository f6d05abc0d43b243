// conv2d "winograd": Winograd minimal filtering F(4x4, 3x3) (Lavin & Gray,
// "Fast Algorithms for Convolutional Neural Networks", 2015).
//
// The output is cut into 4x4 tiles; each needs a 6x6 input tile (stride 4,
// overlapping by 2). With the standard matrices
//   Bᵀ = [[4, 0,-5, 0, 1, 0],      G = [[ 1/4,     0,    0],
//         [0,-4,-4, 1, 1, 0],           [-1/6,  -1/6, -1/6],
//         [0, 4,-4,-1, 1, 0],           [-1/6,   1/6, -1/6],
//         [0,-2,-1, 2, 1, 0],           [1/24,  1/12,  1/6],
//         [0, 2,-1,-2, 1, 0],           [1/24, -1/12,  1/6],
//         [0, 4, 0,-5, 0, 1]]           [   0,     0,    1]]
//   Aᵀ = [[1, 1, 1, 1, 1, 0],
//         [0, 1,-1, 2,-2, 0],
//         [0, 1, 1, 4, 4, 0],
//         [0, 1,-1, 8,-8, 1]]
// one output tile is Y = Aᵀ [ Σ_c (G g_kc Gᵀ) ⊙ (Bᵀ d_c B) ] A. The sum over c
// at each of the 36 tile positions is a matrix product, so:
//   Prepare: U[pos][group][kg][cg] = (G g Gᵀ)[pos], once (in double, rounded).
//   Run, per chunk of tiles (all images' tiles numbered together):
//     V[pos][c][tile] = (Bᵀ d B)[pos]                      (OpenMP)
//     M[pos][k][tile] = U[pos] (kg x cg) x V[pos] (cg x tiles), per group
//                       (ai3::Gemm; a plain loop for tiny grouped matrices)
//     y = Aᵀ M A + bias, tiles clipped at the right/bottom edges (OpenMP)
// NHWC, ungrouped, with whole vectors of input and output channels (every
// 3x3 layer of the torchvision CNNs once the layout pass moves it) runs
// another way, with channels in the lanes instead of tiles: see
// RunChannelsInLanes in winograd_kernel.h, built for AVX2 and for AVX-512.
// Its product is a register-blocked kernel of ours fused with the output
// transform, so M stays in a thread's own block, and nothing is
// transposed. Measured in one process against the path below (2-core EPYC,
// float32, batch 1 / batch 8, ms inside a model): 64 ch at 56x56 0.41 /
// 3.9 against 0.58 / 6.9; 128 at 28x28 0.41 / 3.5 against 0.58 / 4.7; 256
// at 14x14 0.54 / 4.4 against 0.77 / 5.9 (oneDNN's guess: 0.98, 0.96, 0.93
// at batch 1).
//
// Both transforms take a block of tiles at once, one vector register of T
// per matrix element (tile axis = lanes), so V and M are read and written a
// whole register at a time. Gathering the input tiles and scattering the
// output tiles is done per tile, element by element, except in NHWC with
// channel counts that fill whole vectors (grouped convs, since the
// ungrouped ones run with channels in the lanes): there a pixel's channels
// are contiguous, so each pixel of L tiles is one vector of L channels, and
// L such vectors transposed in registers (Transposer) are L channels'
// vectors of tiles (and back for the output). That took resnet50's 3x3 layers
// in NHWC from 0.87-0.92 to 0.71-0.75 ms (128 channels at 28x28) and from
// 1.03-1.10 to 0.62-0.64 ms (256 at 14x14), batch 1, inside the model, on
// the 2-core EPYC (64 at 56x56: 0.82-0.89 before, 0.89-0.94 after). Padding
// (any, asymmetric included) is read as zeros while gathering; both layouts
// are indexed through ImageStridesOf.
//
// The workspace holds V and M for one chunk: 36 * (C + K) * chunk_tiles
// elements, the chunk sized to about kChunkBudgetBytes (at least
// kMinChunkTiles tiles, at most every tile of the batch, rounded up to whole
// vectors; lanes past the last tile are computed and dropped). The
// channels-in-lanes path's holds each thread's V and M blocks instead
// (LanesThreadElements).
//
// Accuracy: F(4x4,3x3) loses a few bits against direct convolution in
// float32 (the transforms have entries up to 8 and the 1/6, 1/24 of G are not
// exact in binary); the errors stay within the test's 1e-4 relative bound.
#include <omp.h>

#include <algorithm>
#include <string>
#include <utility>

#include "core/buffer.h"
#include "core/cpu.h"
#include "core/math/gemm.h"
#include "core/ops/conv2d/conv2d.h"
#include "core/ops/conv2d/winograd_kernel.h"

namespace ai3 {
namespace {

// V and M of one chunk. Each chunk reads all of U (36 * C * K values, 36 MB
// at C = K = 512), so fewer, larger chunks save that traffic until V and M
// outgrow the 32 MB L3. Measured on the 2-core EPYC (ms, best of 2 runs of
// 10, budgets 8/16/32/64 MB): 10x256x28x28 27.6/27.2/21.9/21.4, 10x512x14x14
// 30.8/28.1/21.2/23.9; 10x64x56x56, 10x128x28x28 and 10x256x14x14 within
// the noise of each other; 128 MB was slower again.
constexpr size_t kChunkBudgetBytes = size_t{32} << 20;
constexpr int64_t kMinChunkTiles = 64;

constexpr double kG[6][3] = {
    {1.0 / 4, 0, 0},
    {-1.0 / 6, -1.0 / 6, -1.0 / 6},
    {-1.0 / 6, 1.0 / 6, -1.0 / 6},
    {1.0 / 24, 1.0 / 12, 1.0 / 6},
    {1.0 / 24, -1.0 / 12, 1.0 / 6},
    {0, 0, 1},
};

// r[i][j] becomes r[j][i]: L vectors of L lanes transposed in registers, in
// log2(L) stages; stage H swaps bit H of the row with bit H of the lane
// (two-vector shuffles with constant masks). The NHWC paths use it to turn
// a pixel's channels (contiguous there) into a channel's tiles (the lanes
// of V and M) and back.
template <typename T>
struct Transposer {
  using V = typename Lanes<T>::V;
  static constexpr int64_t kN = Lanes<T>::kN;

  // Lane j of the new row i (bit H of i clear) and of row i + H.
  template <int64_t H, size_t... J>
  __attribute__((always_inline)) static V Low(V a, V b,
                                              std::index_sequence<J...>) {
    return __builtin_shufflevector(a, b, ((J & H) ? kN + J - H : J)...);
  }
  template <int64_t H, size_t... J>
  __attribute__((always_inline)) static V High(V a, V b,
                                               std::index_sequence<J...>) {
    return __builtin_shufflevector(a, b, ((J & H) ? kN + J : J + H)...);
  }

  template <int64_t H = 1>
  __attribute__((always_inline)) static void Run(V* r) {
    if constexpr (H < kN) {
      constexpr auto lanes = std::make_index_sequence<kN>();
#pragma GCC unroll 16
      for (int64_t i = 0; i < kN; ++i) {
        if (i & H) continue;
        const V a = r[i], b = r[i + H];
        r[i] = Low<H>(a, b, lanes);
        r[i + H] = High<H>(a, b, lanes);
      }
      Run<H * 2>(r);
    }
  }
};

int64_t RoundUp(int64_t v, int64_t multiple) {
  return (v + multiple - 1) / multiple * multiple;
}

// The tiles of g, cut into equal chunks of at most about `budget` bytes
// (per_tile bytes a tile), at least min_tiles each, rounded up to a
// multiple of `multiple`. Equal chunks: every chunk reads all of U once, so
// a small last chunk would pay that for few tiles (and multiply thin
// matrices).
Tiling ChunkedTiling(const Conv2dGeometry& g, int64_t per_tile, size_t budget,
                     int64_t min_tiles, int64_t multiple) {
  Tiling t = TilesOf(g);
  if (t.total == 0) {
    t.chunk = 0;
    return t;
  }
  const int64_t budget_tiles =
      static_cast<int64_t>(budget) / std::max<int64_t>(per_tile, 1);
  const int64_t most = std::min(t.total, std::max(min_tiles, budget_tiles));
  const int64_t chunks = (t.total + most - 1) / most;
  t.chunk = RoundUp((t.total + chunks - 1) / chunks, multiple);
  return t;
}

// V and M of a chunk, tiles in whole vectors of lanes.
Tiling TilingOf(const Conv2dGeometry& g, size_t elem_size) {
  const int64_t elem = static_cast<int64_t>(elem_size);
  return ChunkedTiling(g, kPos * (g.c + g.k) * elem, kChunkBudgetBytes,
                       kMinChunkTiles, 32 / elem);
}

class WinogradKernel : public Conv2dKernelBase<WinogradKernel> {
 public:
  WinogradKernel(const Conv2dAttrs& attrs, const std::vector<Tensor>& params)
      : Conv2dKernelBase(attrs, params) {
    // NHWC with whole vectors of input and output channels, ungrouped: a
    // pixel's channels are one vector, so the transforms and the product
    // run with channels in the lanes (winograd_kernel.h) and nothing is
    // transposed. In AVX-512 vectors where the CPU has them and the
    // channels fill them, else in AVX2's.
    const int64_t elem = static_cast<int64_t>(SizeOf(attrs.dtype));
    channels_in_lanes_ = WinogradChannelsInLanes(attrs, 32 / elem);
    lanes_bytes_ = channels_in_lanes_ && KernelIsa() == Isa::kAvx512 &&
                           WinogradChannelsInLanes(attrs, 64 / elem)
                       ? 64
                       : 32;
    DispatchFloat(attrs.dtype, [&](auto zero) {
      using T = decltype(zero);
      TransformWeights<T>(lanes_bytes_ == 64 ? kColWidth<T, 64>
                                             : kColWidth<T, 32>);
    });
  }

  // V and M of one chunk, the tile axis padded to whole lanes.
  size_t WorkspaceBytes(const Shape& input_shape) const override {
    const Conv2dGeometry g = GeometryOf(attrs_, input_shape);
    const size_t elem = SizeOf(attrs_.dtype);
    if (channels_in_lanes_) {  // a task's V and M per thread
      const int64_t per_thread = DispatchFloat(attrs_.dtype, [&](auto zero) {
        using T = decltype(zero);
        return lanes_bytes_ == 64 ? LanesThreadElements<T, 64>(g.c)
                                  : LanesThreadElements<T, 32>(g.c);
      });
      return static_cast<size_t>(omp_get_max_threads()) *
             static_cast<size_t>(per_thread) * elem;
    }
    const Tiling t = TilingOf(g, elem);
    return static_cast<size_t>(kPos * (g.c + g.k) * t.chunk) * elem;
  }

  template <typename T>
  void RunTyped(const Conv2dGeometry& g, const T* x, T* y,
                void* workspace) const {
    if (channels_in_lanes_) {
      WinogradLanesProblem<T> p;
      // omp_get_max_threads() as in WorkspaceBytes, called just before Run
      // in the same context.
      SetOperands(p, g, x, y, u_.as<const T>(), bias<T>(),
                  omp_get_max_threads());
      p.workspace = workspace;
      if (lanes_bytes_ == 64) {
        WinogradLanesAvx512(p);
      } else {
        RunChannelsInLanes<T, 32>(p);
      }
      return;
    }
    constexpr int64_t L = Lanes<T>::kN;
    const Tiling tiling = TilingOf(g, sizeof(T));
    const ImageStrides xs = ImageStridesOf({g.n, g.c, g.h, g.w}, g.layout);
    const ImageStrides ys = ImageStridesOf({g.n, g.k, g.oh, g.ow}, g.layout);
    const T* u = u_.as<const T>();
    const T* b = bias<T>();
    T* v = static_cast<T*>(workspace);
    T* m = v + kPos * g.c * tiling.chunk;
    const bool use_gemm = g.groups == 1 || g.cg * g.kg >= 64;
    const auto act = attrs_.activation.As<T>();

    for (int64_t t0 = 0; t0 < tiling.total; t0 += tiling.chunk) {
      const int64_t nt = std::min(tiling.chunk, tiling.total - t0);
      const int64_t ntp = RoundUp(nt, L);  // V's and M's row length
      const int64_t blocks = ntp / L;

      // V[pos][c][t] = Bᵀ d B, L tiles at a time. Lanes past the last tile
      // transform zeros, so every row of V is fully written. In NHWC a
      // pixel's channels are contiguous: L channels of L tiles are loaded a
      // pixel at a time and transposed, instead of gathered lane by lane.
      const Chunk chunk{t0, nt, ntp};
      if (g.layout == Layout::kNHWC && g.c % L == 0) {
#pragma omp parallel for collapse(2) schedule(static)
        for (int64_t c = 0; c < g.c; c += L) {
          for (int64_t blk = 0; blk < blocks; ++blk) {
            InputNhwc(g, tiling, chunk, xs, x, c, blk * L, v);
          }
        }
      } else {
#pragma omp parallel for collapse(2) schedule(static)
        for (int64_t c = 0; c < g.c; ++c) {
          for (int64_t blk = 0; blk < blocks; ++blk) {
            InputChannel(g, tiling, chunk, xs, x, c, blk * L, v);
          }
        }
      }

      // M[pos][k][t] = U[pos][group] x V[pos][group].
      if (use_gemm) {
        // One product after another, each threaded by BLIS. Side by side
        // (an OpenMP loop over the products, each Gemm then on its own
        // thread) measured 6-20% faster at batch 1 (1x512x7x7: 2.7 vs 3.3
        // ms; level at batch 10), but allocates: BLIS 0.9 opens a nested
        // one-thread OpenMP region in every call, and libgomp mallocs a team
        // for each (//core:model_alloc_test: 288 allocations a forward, the
        // AI3_ALLOC_TRACE stacks ending in GOMP_parallel under bli_gemm_ex).
        // A register-blocked product of our own over U packed once (12
        // output channels x 32 tiles at AVX-512, one parallel loop over
        // every position's blocks) was allocation free and up to 16% faster
        // with few tiles (1x256x14x14: 0.48 against 0.57 ms), but 35-40%
        // slower with many at 64 channels (1x64x56x56 0.94 against 0.70,
        // 10x64x112x112 43 against 31 ms) on the 2-core EPYC, so BLIS stays.
        for (int64_t p = 0; p < kPos; ++p) {
          for (int64_t grp = 0; grp < g.groups; ++grp) {
            Gemm<T>(false, false, g.kg, nt, g.cg, T(1),
                    u + (p * g.groups + grp) * g.kg * g.cg, g.cg,
                    v + (p * g.c + grp * g.cg) * ntp, ntp, T(0),
                    m + (p * g.k + grp * g.kg) * ntp, ntp);
          }
        }
      } else {
        // Tiny per-group matrices (depthwise and the like): one GEMM call
        // per (position, group) would cost more than the arithmetic.
#pragma omp parallel for collapse(2) schedule(static)
        for (int64_t p = 0; p < kPos; ++p) {
          for (int64_t k = 0; k < g.k; ++k) {
            const int64_t grp = k / g.kg;
            const T* uk = u + ((p * g.groups + grp) * g.kg + k % g.kg) * g.cg;
            const T* vg = v + (p * g.c + grp * g.cg) * ntp;
            T* mk = m + (p * g.k + k) * ntp;
            for (int64_t t = 0; t < nt; ++t) mk[t] = T(0);
            for (int64_t c = 0; c < g.cg; ++c) {
              const T w = uk[c];
              const T* vc = vg + c * ntp;
              for (int64_t t = 0; t < nt; ++t) mk[t] += w * vc[t];
            }
          }
        }
      }

      // y = Aᵀ M A + bias, L tiles at a time, clipped to the output. Lanes
      // past nt read M's padding (never written by the GEMM) and are dropped.
      // In NHWC L channels are transposed back to pixels and
      // stored a pixel at a time.
      if (g.layout == Layout::kNHWC && g.k % L == 0) {
#pragma omp parallel for collapse(2) schedule(static)
        for (int64_t k = 0; k < g.k; k += L) {
          for (int64_t blk = 0; blk < blocks; ++blk) {
            OutputNhwc(g, tiling, chunk, ys, m, b, act, k, blk * L, y);
          }
        }
      } else {
#pragma omp parallel for collapse(2) schedule(static)
        for (int64_t k = 0; k < g.k; ++k) {
          for (int64_t blk = 0; blk < blocks; ++blk) {
            OutputChannel(g, tiling, chunk, ys, m, b, act, k, blk * L, y);
          }
        }
      }
    }
  }

 private:
  // The tiles of one chunk: from tile `first`, `count` tiles, V's and M's
  // rows `stride` long.
  struct Chunk {
    int64_t first, count, stride;
  };

  // Where lane l's 6x6 input tile lies: its image and top-left corner
  // (offsets from x, which may be negative) and the rows i0..i1, columns
  // j0..j1 of it inside the image; the rest is padding. Lanes past the
  // chunk's tiles are all padding.
  struct LaneTile {
    int64_t offset;
    int64_t i0, i1, j0, j1;
  };
  template <int64_t L>
  static void LaneTiles(const Conv2dGeometry& g, const Tiling& tiling,
                        const Chunk& chunk, const ImageStrides& xs, int64_t t,
                        LaneTile* lanes) {
    TileOrigin o = OriginOf(tiling, chunk.first + t);
    for (int64_t l = 0; l < L; Advance(tiling, o), ++l) {
      if (t + l >= chunk.count) {
        lanes[l] = {0, 0, 0, 0, 0};
        continue;
      }
      const int64_t row0 = o.oh0 - g.ph, col0 = o.ow0 - g.pw;
      // Offsets stay integers: row0/col0 may be negative, and a pointer
      // before the tensor would be undefined even unread.
      lanes[l] = {
          o.n * xs.n + row0 * xs.h + col0 * xs.w, std::max<int64_t>(0, -row0),
          std::min<int64_t>(kTile, g.h - row0), std::max<int64_t>(0, -col0),
          std::min<int64_t>(kTile, g.w - col0)};
    }
  }

  // V rows of channel c, tiles t.. t+L: Bᵀ d B of the 36 vectors d.
  template <typename T, typename V = typename Lanes<T>::V>
  static void StoreInputTransform(const V* d, int64_t pos_stride, T* vc) {
    Transform2d<kTile, T>(d, [&](int64_t i, int64_t j, V o) {
      Lanes<T>::Store(vc + (i * kTile + j) * pos_stride, o);
    });
  }

  // Channel c of L tiles from t, gathered lane by lane (any layout).
  template <typename T>
  static void InputChannel(const Conv2dGeometry& g, const Tiling& tiling,
                           const Chunk& chunk, const ImageStrides& xs,
                           const T* x, int64_t c, int64_t t, T* v) {
    using V = typename Lanes<T>::V;
    constexpr int64_t L = Lanes<T>::kN;
    LaneTile lanes[L];
    LaneTiles<L>(g, tiling, chunk, xs, t, lanes);
    alignas(32) T d[kPos * L];  // [i][j][lane]
    const T* xc = x + c * xs.c;
    for (int64_t l = 0; l < L; ++l) {
      const LaneTile& lt = lanes[l];
      if (lt.i0 > 0 || lt.i1 < kTile || lt.j0 > 0 || lt.j1 < kTile) {
        for (int64_t e = 0; e < kPos; ++e) d[e * L + l] = T(0);
      }
      for (int64_t i = lt.i0; i < lt.i1; ++i) {
        for (int64_t j = lt.j0; j < lt.j1; ++j) {
          d[(i * kTile + j) * L + l] = xc[lt.offset + i * xs.h + j * xs.w];
        }
      }
    }
    V dv[kPos];
    for (int64_t e = 0; e < kPos; ++e) dv[e] = Lanes<T>::Load(d + e * L);
    StoreInputTransform<T>(dv, g.c * chunk.stride, v + c * chunk.stride + t);
  }

  // Channels c .. c+L of L tiles from t, NHWC: per position, each lane's
  // pixel gives a vector of L channels; transposed, a vector per channel.
  template <typename T>
  static void InputNhwc(const Conv2dGeometry& g, const Tiling& tiling,
                        const Chunk& chunk, const ImageStrides& xs, const T* x,
                        int64_t c, int64_t t, T* v) {
    using V = typename Lanes<T>::V;
    constexpr int64_t L = Lanes<T>::kN;
    LaneTile lanes[L];
    LaneTiles<L>(g, tiling, chunk, xs, t, lanes);
    V d[L][kPos];  // [channel][i][j], lanes: tiles
    for (int64_t i = 0; i < kTile; ++i) {
      for (int64_t j = 0; j < kTile; ++j) {
        V r[L];  // [lane], lanes: channels
        for (int64_t l = 0; l < L; ++l) {
          const LaneTile& lt = lanes[l];
          const bool inside =
              i >= lt.i0 && i < lt.i1 && j >= lt.j0 && j < lt.j1;
          r[l] = inside
                     ? Lanes<T>::Load(x + lt.offset + i * xs.h + j * xs.w + c)
                     : V{};
        }
        Transposer<T>::Run(r);
        for (int64_t q = 0; q < L; ++q) d[q][i * kTile + j] = r[q];
      }
    }
    for (int64_t q = 0; q < L; ++q) {
      StoreInputTransform<T>(d[q], g.c * chunk.stride,
                             v + (c + q) * chunk.stride + t);
    }
  }

  // out[i][j][lane] = (Aᵀ M A)[i][j] + bias, activated, for output channel
  // k's M rows (mk: tiles t.., ps from one position to the next).
  template <typename T>
  static void OutputTransform(const T* mk, int64_t ps, T bias_k,
                              const Activation::Bounds<T>& act, T* out) {
    using V = typename Lanes<T>::V;
    constexpr int64_t L = Lanes<T>::kN;
    V mv[kPos];  // [i][j]
    for (int64_t p = 0; p < kPos; ++p) mv[p] = Lanes<T>::Load(mk + p * ps);
    Transform2d<kOut, T>(mv, [&](int64_t i, int64_t j, V o) {
      Lanes<T>::Store(out + (i * kOut + j) * L, o + bias_k);
    });
    ApplyActivation(act, out, kOut * kOut * L);  // vectorised
  }

  // Output channel k of L tiles from t, scattered lane by lane (any layout).
  template <typename T>
  static void OutputChannel(const Conv2dGeometry& g, const Tiling& tiling,
                            const Chunk& chunk, const ImageStrides& ys,
                            const T* m, const T* b,
                            const Activation::Bounds<T>& act, int64_t k,
                            int64_t t, T* y) {
    constexpr int64_t L = Lanes<T>::kN;
    alignas(32) T out[kOut * kOut * L];  // [i][j][lane]
    OutputTransform<T>(m + k * chunk.stride + t, g.k * chunk.stride,
                       b ? b[k] : T(0), act, out);
    const int64_t lanes = std::min(L, chunk.count - t);
    TileOrigin o = OriginOf(tiling, chunk.first + t);
    for (int64_t l = 0; l < lanes; Advance(tiling, o), ++l) {
      const int64_t rows = std::min(kOut, g.oh - o.oh0);
      const int64_t cols = std::min(kOut, g.ow - o.ow0);
      T* yk = y + o.n * ys.n + k * ys.c;
      for (int64_t i = 0; i < rows; ++i) {
        T* row = yk + (o.oh0 + i) * ys.h + o.ow0 * ys.w;
        for (int64_t j = 0; j < cols; ++j) {
          row[j * ys.w] = out[(i * kOut + j) * L + l];
        }
      }
    }
  }

  // Output channels k .. k+L of L tiles from t, NHWC: per output pixel, the
  // L channels' vectors of tiles are transposed to a vector of channels
  // per tile, stored whole.
  template <typename T>
  static void OutputNhwc(const Conv2dGeometry& g, const Tiling& tiling,
                         const Chunk& chunk, const ImageStrides& ys, const T* m,
                         const T* b, const Activation::Bounds<T>& act,
                         int64_t k, int64_t t, T* y) {
    using V = typename Lanes<T>::V;
    constexpr int64_t L = Lanes<T>::kN;
    alignas(32) T out[L][kOut * kOut * L];  // [channel][i][j][lane]
    for (int64_t q = 0; q < L; ++q) {
      OutputTransform<T>(m + (k + q) * chunk.stride + t, g.k * chunk.stride,
                         b ? b[k + q] : T(0), act, out[q]);
    }
    const int64_t lanes = std::min(L, chunk.count - t);
    TileOrigin origins[L];
    TileOrigin o = OriginOf(tiling, chunk.first + t);
    for (int64_t l = 0; l < lanes; Advance(tiling, o), ++l) origins[l] = o;
    for (int64_t i = 0; i < kOut; ++i) {
      for (int64_t j = 0; j < kOut; ++j) {
        V r[L];  // [channel], lanes: tiles
        for (int64_t q = 0; q < L; ++q) {
          r[q] = Lanes<T>::Load(out[q] + (i * kOut + j) * L);
        }
        Transposer<T>::Run(r);  // [lane], lanes: channels
        for (int64_t l = 0; l < lanes; ++l) {
          const TileOrigin& ol = origins[l];
          if (ol.oh0 + i >= g.oh || ol.ow0 + j >= g.ow) continue;
          Lanes<T>::Store(
              y + ol.n * ys.n + (ol.oh0 + i) * ys.h + (ol.ow0 + j) * ys.w + k,
              r[l]);
        }
      }
    }
  }

  // U[pos][group][kg][cg] = (G g Gᵀ)[pos], computed in double; in the
  // channels-in-lanes order for blocks of `width` output channels there.
  template <typename T>
  void TransformWeights(int64_t width) {
    const int64_t k_total = attrs_.out_channels;
    const int64_t cg = attrs_.in_channels_per_group();
    const int64_t kg = attrs_.out_channels_per_group();
    const int64_t groups = attrs_.groups;
    // The channels-in-lanes product reads U a block of kColVecs vectors of
    // output channels at a time: each block's rows are stored together
    // (U[pos][block][c][width], zeros past the last channel), so the
    // product streams it front to back.
    const int64_t blocks = (k_total + width - 1) / width;
    const size_t count = static_cast<size_t>(
        channels_in_lanes_ ? kPos * blocks * width * cg : kPos * k_total * cg);
    u_ = Buffer(count * sizeof(T));
    const T* w = weight<T>();
    T* u = u_.as<T>();
    std::fill(u, u + count, T(0));
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t k = 0; k < k_total; ++k) {
      for (int64_t c = 0; c < cg; ++c) {
        const T* g3 = w + (k * cg + c) * 9;
        double gg[6][3];  // G g
        for (int a = 0; a < 6; ++a) {
          for (int s = 0; s < 3; ++s) {
            double acc = 0;
            for (int r = 0; r < 3; ++r) acc += kG[a][r] * double(g3[r * 3 + s]);
            gg[a][s] = acc;
          }
        }
        const int64_t grp = k / kg;
        for (int a = 0; a < 6; ++a) {
          for (int bcol = 0; bcol < 6; ++bcol) {
            double acc = 0;
            for (int s = 0; s < 3; ++s) acc += gg[a][s] * kG[bcol][s];
            const int64_t p = a * 6 + bcol;
            // U[pos][block][c][k % width] for the channels-in-lanes product,
            // else U[pos][group][kg][cg].
            const int64_t at =
                channels_in_lanes_
                    ? ((p * blocks + k / width) * cg + c) * width + k % width
                    : ((p * groups + grp) * kg + k % kg) * cg + c;
            u[at] = static_cast<T>(acc);
          }
        }
      }
    }
  }

  bool channels_in_lanes_ = false;
  int lanes_bytes_ = 32;  // the vector width the lanes path runs with
  Buffer u_;
};

class Winograd : public KernelAlgorithm<Conv2dAttrs, WinogradKernel> {
 public:
  std::string WhyNot(const Conv2dAttrs& a) const override {
    if (a.kernel_h != 3 || a.kernel_w != 3) {
      return "winograd F(4x4,3x3) needs a 3x3 kernel, got " +
             std::to_string(a.kernel_h) + "x" + std::to_string(a.kernel_w);
    }
    return WhyNotUnitStrideDilation(a, "winograd F(4x4,3x3)");
  }
};

AI3_REGISTER_ALGORITHM(Conv2dAttrs, "winograd", Device::kCPU, Winograd);

}  // namespace
}  // namespace ai3
