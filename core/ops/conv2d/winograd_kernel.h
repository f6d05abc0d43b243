// conv2d "winograd" with channels in the lanes (see winograd.cc for the
// algorithm and its other path), written once for any vector width:
// winograd.cc instantiates it for AVX2 (32-byte vectors), winograd_avx512.cc,
// compiled with AVX-512 flags, for 64-byte ones; the kernel picks one when
// it is made (core/cpu.h), since U's order depends on the width. As in
// direct_kernel.h, everything below the entry points is in an unnamed
// namespace so each instruction set's translation unit keeps its own copy
// (core/ops/avx512_symbols_test.sh). The transforms and the tiling are
// shared with winograd.cc's chunked path from here too.
#ifndef AI3_CORE_OPS_CONV2D_WINOGRAD_KERNEL_H_
#define AI3_CORE_OPS_CONV2D_WINOGRAD_KERNEL_H_

#include <omp.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <utility>

#include "core/math/epilogue.h"
#include "core/math/vectors.h"
#include "core/ops/conv2d/conv2d.h"

namespace ai3 {

// One call of the channels-in-lanes path: `packed` is U in its order
// (U[pos][block][c][kColWidth], zeros past the last channel) and
// `workspace` WinogradLanesWorkspaceBytes of room.
template <typename T>
struct WinogradLanesProblem : Conv2dOperands<T> {
  void* workspace;
};

void WinogradLanesAvx512(const WinogradLanesProblem<float>& p);
void WinogradLanesAvx512(const WinogradLanesProblem<double>& p);

namespace {

constexpr int64_t kTile = 6;  // input tile side (m + r - 1)
constexpr int64_t kOut = 4;   // output tile side (m)
constexpr int64_t kPos = 36;  // positions per transformed tile

// One vector register of T, kBytes wide: 32 for AVX2 (8 floats, 4
// doubles), 64 for AVX-512. The transforms take one per matrix element, L
// tiles (the chunked path) or L channels (the channels-in-lanes path) at
// once. GCC and Clang vector extensions make that whole-register arithmetic
// whatever the optimiser decides about loops, from one template for both
// dtypes and widths.
template <typename T, int kBytes = 32>
struct Lanes {
  typedef T V __attribute__((vector_size(kBytes)));
  static constexpr int64_t kN = kBytes / sizeof(T);
  // memcpy: unaligned and alias-safe; one vmovups/vmovupd.
  static V Load(const T* p) {
    V v;
    std::memcpy(&v, p, sizeof(V));
    return v;
  }
  static void Store(T* p, const V& v) { std::memcpy(p, &v, sizeof(V)); }
};

// o[i * os] = (Bᵀ d)[i] for the 6-vector d[i * s] (each lane a separate tile
// or channel).
template <typename T, typename V = typename Lanes<T>::V>
inline void BtTransform(const V* d, int64_t s, V* o, int64_t os) {
  const V d0 = d[0], d1 = d[s], d2 = d[2 * s], d3 = d[3 * s], d4 = d[4 * s],
          d5 = d[5 * s];
  o[0] = T(4) * d0 - T(5) * d2 + d4;
  o[os] = -T(4) * d1 - T(4) * d2 + d3 + d4;
  o[2 * os] = T(4) * d1 - T(4) * d2 - d3 + d4;
  o[3 * os] = -T(2) * d1 - d2 + T(2) * d3 + d4;
  o[4 * os] = T(2) * d1 - d2 - T(2) * d3 + d4;
  o[5 * os] = T(4) * d1 - T(5) * d3 + d5;
}

// o[i * os] = (Aᵀ m)[i], a 6-vector to a 4-vector, strided as BtTransform.
template <typename T, typename V = typename Lanes<T>::V>
inline void AtTransform(const V* m, int64_t s, V* o, int64_t os) {
  const V m0 = m[0], m1 = m[s], m2 = m[2 * s], m3 = m[3 * s], m4 = m[4 * s],
          m5 = m[5 * s];
  o[0] = m0 + m1 + m2 + m3 + m4;
  o[os] = m1 - m2 + T(2) * (m3 - m4);
  o[2 * os] = m1 + m2 + T(4) * (m3 + m4);
  o[3 * os] = m1 - m2 + T(8) * (m3 - m4) + m5;
}

// Xᵀ d X of the 6x6 vectors d ([i][j]): X = B (kN = 6, the input
// transform) or A (kN = 4, the output's), the columns, then the rows;
// element (i, j) of the result goes to emit(i, j, vector).
template <int64_t kN, typename T, typename V, typename Emit>
void Transform2d(const V* d, Emit emit) {
  static_assert(kN == kTile || kN == kOut, "Bᵀ d B or Aᵀ d A");
  const auto apply = [](const V* in, int64_t s, V* o, int64_t os) {
    if constexpr (kN == kTile) {
      BtTransform<T>(in, s, o, os);
    } else {
      AtTransform<T>(in, s, o, os);
    }
  };
  V tmp[kN * kTile];  // Xᵀ d: [i][j]
  for (int64_t j = 0; j < kTile; ++j) apply(d + j, kTile, tmp + j, kTile);
  for (int64_t i = 0; i < kN; ++i) {
    V o[kN];
    apply(tmp + i * kTile, 1, o, 1);
    for (int64_t j = 0; j < kN; ++j) emit(i, j, o[j]);
  }
}

// The channels-in-lanes product's register block: kRows tiles x
// kColVecs<kBytes> vectors of output channels. AVX2: 12 accumulators
// beside the 2 weight vectors and a broadcast tile value in its 16
// registers. AVX-512: 24 accumulators and 4 weight vectors of its 32; on
// the 2-core Xeon (float, NHWC, ms, alternating builds) 64 channels at
// 56x56 took 0.39 at AVX2, 0.29-0.33 with 6 x 2 vectors, 0.27-0.28 with
// 6 x 4 and 0.44-0.48 with 12 x 2 (batch 1); 1.95-2.08, 1.90-2.00 and 3.7
// at batch 8, against 3.0 at AVX2.
constexpr int64_t kRows = 6;
template <int kBytes>
constexpr int64_t kColVecs = kBytes == 64 ? 4 : 2;
// Output channels per block of that product (and of U's channels-in-lanes
// order).
template <typename T, int kBytes>
constexpr int64_t kColWidth = kColVecs<kBytes> * Lanes<T, kBytes>::kN;
// The tiles of one task of the channels-in-lanes path, kRows at a time:
// each block of U it reads serves all of them. Measured against 12, 18, 36
// and 48 on the 2-core EPYC (64 to 256 channels, batch 1 and 8): 18 and up
// within a few percent of each other, 6 and 12 up to 25% slower at 256
// channels.
constexpr int64_t kTaskTiles = 4 * kRows;
static_assert(kTaskTiles % kRows == 0, "a task is whole register blocks");

// c[i][0 .. NV*L) = sum over q < depth of a[i * lda + q] * b[q * ldb ..],
// for the R rows (tiles) of a and NV vectors of b's row (output channels).
template <typename T, int kBytes, int R, int NV>
void TileProduct(const T* a, int64_t lda, const T* b, int64_t ldb,
                 int64_t depth, T* c, int64_t ldc) {
  using Vec = Vectors<T, kBytes>;
  constexpr int64_t L = Vec::kLanes;
  typename Vec::V acc[R][NV] = {};
  for (int64_t q = 0; q < depth; ++q) {
    typename Vec::V bv[NV];
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) bv[j] = Vec::Load(b + q * ldb + j * L);
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i) {
      const T ai = a[i * lda + q];
#pragma GCC unroll 4
      for (int j = 0; j < NV; ++j) acc[i][j] += ai * bv[j];  // one FMA
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) Vec::Store(c + i * ldc + j * L, acc[i][j]);
}

// TileProduct for r rows (1 .. kRows) and nv vectors (1 .. kColVecs).
template <typename T>
using TileProductFn = void (*)(const T*, int64_t, const T*, int64_t, int64_t,
                               T*, int64_t);
template <typename T, int kBytes, size_t... I>
constexpr std::array<TileProductFn<T>, kRows * kColVecs<kBytes>> TileProducts(
    std::index_sequence<I...>) {
  constexpr int64_t nv = kColVecs<kBytes>;
  return {&TileProduct<T, kBytes, static_cast<int>(I / nv) + 1,
                       static_cast<int>(I % nv) + 1>...};
}
template <typename T, int kBytes>
TileProductFn<T> TileProductFor(int64_t r, int64_t nv) {
  static constexpr auto kTable = TileProducts<T, kBytes>(
      std::make_index_sequence<kRows * kColVecs<kBytes>>());
  return kTable[(r - 1) * kColVecs<kBytes> + (nv - 1)];
}

struct Tiling {
  int64_t th, tw;  // tiles per image, down and across
  int64_t total;   // tiles in the batch
  int64_t chunk;   // tiles per chunk (a multiple of the lanes)
};

// Where tile `tile` (numbered across the whole batch) starts: its image and
// the top-left output pixel of its 4x4 block.
struct TileOrigin {
  int64_t n, oh0, ow0;
};
inline TileOrigin OriginOf(const Tiling& t, int64_t tile) {
  const int64_t per_image = t.th * t.tw;
  const int64_t rem = tile % per_image;
  return {tile / per_image, (rem / t.tw) * kOut, (rem % t.tw) * kOut};
}
// The tile after o: the lanes of a block step through tiles this way, one
// division per block instead of two per lane.
inline void Advance(const Tiling& t, TileOrigin& o) {
  o.ow0 += kOut;
  if (o.ow0 < t.tw * kOut) return;
  o.ow0 = 0;
  o.oh0 += kOut;
  if (o.oh0 < t.th * kOut) return;
  o.oh0 = 0;
  ++o.n;
}

// The tiles of g, in one chunk.
Tiling TilesOf(const Conv2dGeometry& g) {
  Tiling t;
  t.th = (g.oh + kOut - 1) / kOut;
  t.tw = (g.ow + kOut - 1) / kOut;
  t.total = g.n * t.th * t.tw;
  t.chunk = t.total;
  return t;
}

// The channels-in-lanes path (RunChannelsInLanes) keeps only V ([tile][pos][c];
// the product's results stay in a small per-task block), and only a task's:
// each task transforms its kTaskTiles tiles' input into its thread's block of V
// and runs the products and output transforms of its output channels over it at
// once, so V stays in the thread's L2 instead of a chunk of V being written by
// all threads, then read back once per block of output channels after a
// barrier. 2-core EPYC, alternating the two builds (medians): 10x64x112x112 ->
// 64, 18.9-19.3 ms chunked (and 31 ms in one run of four) against 17.1 fused;
// 8x64x56x56 3.77 against 3.35; batch 1 and the smaller maps at batch 8 within
// 4% either way.
//
// The tasks: the tiles cut into `blocks` blocks of at
// most kTaskTiles, of near-equal sizes (32 tiles: 16 + 16, not 24 + 8),
// and the output channels into `groups` groups of column blocks; a task is
// one block's products for one group. Two orders, by which operand is the
// larger:
//   tiles first (V, the tiles' inputs, is: large maps): a thread's tasks
//     are whole tile blocks, each transformed once for all its groups; one
//     group unless the tasks are too few to share among the threads within
//     1/8 of even (then each group transforms its tiles again, about a
//     thirteenth of its product's work at C = K);
//   groups first (U, the weights, is: more output channels than tiles, the
//     small maps at the end of a network): a thread's tasks are its group's
//     blocks, so each thread reads only its share of U (at 512 channels U
//     is 38 MB, more than the L3), and the tiles are transformed once per
//     group. 512@7x7, batch 8, 2-core EPYC: tiles first read U twice over,
//     6.4 ms against 5.9 chunked.
struct LanesTasks {
  int64_t blocks, tiles_per_block, groups, blocks_per_group;
  bool groups_first;
};

LanesTasks LanesTasksOf(int64_t total_tiles, int64_t out_channels,
                        int64_t col_blocks, int threads) {
  LanesTasks t;
  t.blocks = std::max<int64_t>(1, (total_tiles + kTaskTiles - 1) / kTaskTiles);
  t.tiles_per_block = (total_tiles + t.blocks - 1) / t.blocks;
  t.groups_first = out_channels > total_tiles && col_blocks >= threads;
  if (t.groups_first) {
    t.groups = threads;
  } else {
    t.groups = std::max<int64_t>(1, col_blocks);
    for (int64_t g = 1; g <= col_blocks; ++g) {
      const int64_t tasks = t.blocks * g;
      const int64_t rounds = (tasks + threads - 1) / threads;
      if (tasks >= threads && 8 * (rounds * threads - tasks) <= tasks) {
        t.groups = g;
        break;
      }
    }
  }
  t.blocks_per_group = (col_blocks + t.groups - 1) / t.groups;
  return t;
}

// The elements of one thread's share of the workspace: its task's V block
// (kTaskTiles tiles' 36 positions of c channels), then its M block
// (M[pos][tile][k] of one task's kColWidth output channels).
template <typename T, int kBytes>
constexpr int64_t LanesThreadElements(int64_t c) {
  return kTaskTiles * kPos * c + kPos * kTaskTiles * kColWidth<T, kBytes>;
}

// V[t][pos][:] of tile `tile` (numbered across the batch; vt: its row of
// V), a vector of channels at a time.
template <typename T, int kBytes>
void InputTileLanes(const Conv2dGeometry& g, const Tiling& tiling,
                    const ImageStrides& xs, const T* x, int64_t tile, T* vt) {
  using Vec = Lanes<T, kBytes>;
  using V = typename Vec::V;
  constexpr int64_t L = Vec::kN;
  const TileOrigin o = OriginOf(tiling, tile);
  const int64_t row0 = o.oh0 - g.ph, col0 = o.ow0 - g.pw;
  const int64_t i0 = std::max<int64_t>(0, -row0);
  const int64_t i1 = std::min<int64_t>(kTile, g.h - row0);
  const int64_t j0 = std::max<int64_t>(0, -col0);
  const int64_t j1 = std::min<int64_t>(kTile, g.w - col0);
  // Offsets stay integers: row0/col0 may be negative.
  const int64_t origin = o.n * xs.n + row0 * xs.h + col0 * xs.w;
  for (int64_t c = 0; c < g.c; c += L) {
    V d[kPos];  // [i][j], lanes: channels
    for (int64_t i = 0; i < kTile; ++i) {
      for (int64_t j = 0; j < kTile; ++j) {
        d[i * kTile + j] = i >= i0 && i < i1 && j >= j0 && j < j1
                               ? Vec::Load(x + origin + i * xs.h + j * xs.w + c)
                               : V{};
      }
    }
    Transform2d<kTile, T>(d, [&](int64_t i, int64_t j, V r) {
      Vec::Store(vt + (i * kTile + j) * g.c + c, r);
    });
  }
}

// The `tiles` tiles from tile `first` (their V rows in v) x output channels
// k0 .. k0 + kColWidth: the products of the 36 positions into m
// (M[pos][tile][k]), then the output transform of each tile and vector.
template <typename T, int kBytes>
void ProductOutputLanes(const WinogradLanesProblem<T>& p, const Tiling& tiling,
                        const T* v, int64_t first, int64_t tiles, int64_t k0,
                        T* m) {
  using Vec = Lanes<T, kBytes>;
  using V = typename Vec::V;
  constexpr int64_t L = Vec::kN;
  constexpr int64_t kWidth = kColWidth<T, kBytes>;
  const Conv2dGeometry& g = p.g;
  const int64_t nv = std::min<int64_t>(kColVecs<kBytes>, (g.k - k0) / L);
  const int64_t col_blocks = (g.k + kWidth - 1) / kWidth;
  for (int64_t pos = 0; pos < kPos; ++pos) {
    for (int64_t r = 0; r < tiles; r += kRows) {
      const int64_t rows = std::min(kRows, tiles - r);
      TileProductFor<T, kBytes>(rows, nv)(
          v + (r * kPos + pos) * g.c, kPos * g.c,
          p.packed + (pos * col_blocks + k0 / kWidth) * g.c * kWidth, kWidth,
          g.c, m + (pos * kTaskTiles + r) * kWidth, kWidth);
    }
  }
  for (int64_t r = 0; r < tiles; ++r) {
    const TileOrigin o = OriginOf(tiling, first + r);
    const int64_t rows = std::min(kOut, g.oh - o.oh0);
    const int64_t cols = std::min(kOut, g.ow - o.ow0);
    for (int64_t j = 0; j < nv; ++j) {
      const int64_t k = k0 + j * L;
      V mv[kPos];
      for (int64_t pos = 0; pos < kPos; ++pos) {
        mv[pos] = Vec::Load(m + (pos * kTaskTiles + r) * kWidth + j * L);
      }
      const V bias_k = p.bias ? Vec::Load(p.bias + k) : V{};
      alignas(64) T out[kOut * kOut * L];  // [i][j][channel]
      Transform2d<kOut, T>(mv, [&](int64_t i, int64_t jj, V y) {
        Vec::Store(out + (i * kOut + jj) * L, y + bias_k);
      });
      ApplyActivation(p.act, out, kOut * kOut * L);
      for (int64_t i = 0; i < rows; ++i) {
        T* row = p.y + o.n * p.ys.n + (o.oh0 + i) * p.ys.h + o.ow0 * p.ys.w + k;
        for (int64_t jj = 0; jj < cols; ++jj) {
          std::memcpy(row + jj * p.ys.w, out + (i * kOut + jj) * L,
                      L * sizeof(T));
        }
      }
    }
  }
}

// NHWC, channels in the lanes:
//   per block of kTaskTiles tiles, V[tile][pos][c] = Bᵀ d B, a vector of
//     channels at a time, into the thread's V block;
//   per task (a tile block x a group of column blocks of kColWidth output
//     channels; OpenMP over tasks): the 36 positions' products
//     M[pos][tile][k] = V[tile][pos][:] U[pos][:][k] in registers
//     (TileProduct) into the thread's M block, then y = Aᵀ M A + bias,
//     activated, a vector of channels per output pixel.
// M never leaves the thread's caches, and the tasks of a thread share a
// block of U (see LanesTasksOf for the two orders).
template <typename T, int kBytes>
void RunChannelsInLanes(const WinogradLanesProblem<T>& p) {
  constexpr int64_t kWidth = kColWidth<T, kBytes>;
  const Conv2dGeometry& g = p.g;
  const Tiling tiling = TilesOf(g);
  const int64_t col_blocks = (g.k + kWidth - 1) / kWidth;
  // p.threads is what the workspace was sized for.
  const LanesTasks tasks =
      LanesTasksOf(tiling.total, g.k, col_blocks, p.threads);
#pragma omp parallel num_threads(p.threads)
  {
    T* vt = static_cast<T*>(p.workspace) +
            omp_get_thread_num() * LanesThreadElements<T, kBytes>(g.c);
    T* mt = vt + kTaskTiles * kPos * g.c;
    int64_t transformed = -1;  // the tile block vt holds
#pragma omp for schedule(static)
    for (int64_t task = 0; task < tasks.blocks * tasks.groups; ++task) {
      const int64_t tb =
          tasks.groups_first ? task % tasks.blocks : task / tasks.groups;
      const int64_t group =
          tasks.groups_first ? task / tasks.blocks : task % tasks.groups;
      const int64_t first = tb * tasks.tiles_per_block;
      const int64_t nt = std::min(tasks.tiles_per_block, tiling.total - first);
      if (nt <= 0) continue;
      if (transformed != tb) {
        for (int64_t t = 0; t < nt; ++t) {
          InputTileLanes<T, kBytes>(g, tiling, p.xs, p.x, first + t,
                                    vt + t * kPos * g.c);
        }
        transformed = tb;
      }
      const int64_t per_group = tasks.blocks_per_group;
      const int64_t cb_end = std::min(col_blocks, (group + 1) * per_group);
      for (int64_t cb = group * per_group; cb < cb_end; ++cb) {
        ProductOutputLanes<T, kBytes>(p, tiling, vt, first, nt, cb * kWidth,
                                      mt);
      }
    }
  }
}

}  // namespace
}  // namespace ai3

#endif  // AI3_CORE_OPS_CONV2D_WINOGRAD_KERNEL_H_
