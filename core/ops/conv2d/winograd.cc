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
// RunChannelsInLanes. Its product is a register-blocked kernel of ours fused
// with the output transform, so M never reaches memory, and nothing is
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
// vectors; lanes past the last tile are computed and dropped).
//
// Accuracy: F(4x4,3x3) loses a few bits against direct convolution in
// float32 (the transforms have entries up to 8 and the 1/6, 1/24 of G are not
// exact in binary); the errors stay within the test's 1e-4 relative bound.
#include <omp.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "core/buffer.h"
#include "core/math/gemm.h"
#include "core/math/vectors.h"
#include "core/ops/conv2d/conv2d.h"

namespace ai3 {
namespace {

constexpr int64_t kTile = 6;  // input tile side (m + r - 1)
constexpr int64_t kOut = 4;   // output tile side (m)
constexpr int64_t kPos = 36;  // positions per transformed tile
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

// L tiles go through the transforms at once, as one AVX2 register of T (8
// floats, 4 doubles) per matrix element: V and M keep the tile axis
// innermost, so each element of L tiles is one contiguous vector there. GCC
// and Clang vector extensions make that whole-register arithmetic whatever
// the optimiser decides about loops, from one template for both dtypes.
template <typename T>
struct Lanes {
  typedef T V __attribute__((vector_size(32)));
  static constexpr int64_t kN = 32 / sizeof(T);
  // memcpy: unaligned and alias-safe; one vmovups/vmovupd.
  static V Load(const T* p) {
    V v;
    std::memcpy(&v, p, sizeof(V));
    return v;
  }
  static void Store(T* p, const V& v) { std::memcpy(p, &v, sizeof(V)); }
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

// o[i * os] = (Bᵀ d)[i] for the 6-vector d[i * s] (lanes: separate tiles).
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

// The channels-in-lanes product's register block: kRows tiles x
// kColVecs vectors of output channels, 12 accumulators beside the 2
// weight vectors and a broadcast tile value in AVX2's 16 registers.
constexpr int64_t kRows = 6;
constexpr int64_t kColVecs = 2;
// Output channels per block of that product (and of U's channels-in-lanes
// order).
template <typename T>
constexpr int64_t kColWidth = kColVecs * Lanes<T>::kN;
// The tiles of one task of the channels-in-lanes path, kRows at a time:
// each block of U it reads serves all of them. Measured against 12, 18, 36
// and 48 on the 2-core EPYC (64 to 256 channels, batch 1 and 8): 18 and up
// within a few percent of each other, 6 and 12 up to 25% slower at 256
// channels.
constexpr int64_t kTaskTiles = 4 * kRows;
static_assert(kTaskTiles % kRows == 0, "a task is whole register blocks");

// c[i][0 .. NV*L) = sum over q < depth of a[i * lda + q] * b[q * ldb ..],
// for the R rows (tiles) of a and NV vectors of b's row (output channels).
template <typename T, int R, int NV>
void TileProduct(const T* a, int64_t lda, const T* b, int64_t ldb,
                 int64_t depth, T* c, int64_t ldc) {
  using Vec = Vectors<T, 32>;
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
template <typename T, size_t... I>
constexpr std::array<TileProductFn<T>, kRows * kColVecs> TileProducts(
    std::index_sequence<I...>) {
  return {&TileProduct<T, static_cast<int>(I / kColVecs) + 1,
                       static_cast<int>(I % kColVecs) + 1>...};
}
template <typename T>
TileProductFn<T> TileProductFor(int64_t r, int64_t nv) {
  static constexpr auto kTable =
      TileProducts<T>(std::make_index_sequence<kRows * kColVecs>());
  return kTable[(r - 1) * kColVecs + (nv - 1)];
}

int64_t RoundUp(int64_t v, int64_t multiple) {
  return (v + multiple - 1) / multiple * multiple;
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

class WinogradKernel : public Conv2dKernelBase<WinogradKernel> {
 public:
  WinogradKernel(const Conv2dAttrs& attrs, const std::vector<Tensor>& params)
      : Conv2dKernelBase(attrs, params) {
    // NHWC with whole vectors of input and output channels, ungrouped: a
    // pixel's channels are one vector, so the transforms and the product
    // run with channels in the lanes (RunChannelsInLanes) and nothing is
    // transposed.
    channels_in_lanes_ = WinogradChannelsInLanes(
        attrs, 32 / static_cast<int64_t>(SizeOf(attrs.dtype)));
    if (attrs.dtype == DType::kFloat64) {
      TransformWeights<double>();
    } else {
      TransformWeights<float>();
    }
  }

  // V and M of one chunk, the tile axis padded to whole lanes.
  size_t WorkspaceBytes(const Shape& input_shape) const override {
    const Conv2dGeometry g = GeometryOf(attrs_, input_shape);
    const size_t elem = SizeOf(attrs_.dtype);
    if (channels_in_lanes_) {  // a task's V per thread
      return static_cast<size_t>(omp_get_max_threads()) * kTaskTiles * kPos *
             static_cast<size_t>(g.c) * elem;
    }
    const Tiling t = TilingOf(g, elem);
    return static_cast<size_t>(kPos * (g.c + g.k) * t.chunk) * elem;
  }

  template <typename T>
  void RunTyped(const Conv2dGeometry& g, const T* x, T* y,
                void* workspace) const {
    if (channels_in_lanes_) {
      RunChannelsInLanes(g, x, y, static_cast<T*>(workspace));
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

  // Xᵀ d X of the 6x6 vectors d ([i][j]): X = B (kN = 6, the input
  // transform) or A (kN = 4, the output's), the columns, then the rows;
  // element (i, j) of the result goes to emit(i, j, vector).
  template <int64_t kN, typename T, typename V, typename Emit>
  static void Transform2d(const V* d, Emit emit) {
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

  // NHWC, channels in the lanes, per chunk of tiles:
  //   V[tile][pos][c] = Bᵀ d B, a vector of channels at a time (OpenMP
  //     over tiles);
  //   per task (a block of kTaskTiles tiles x kColVecs vectors of output
  //     channels; OpenMP over tasks): the 36 positions' products
  //     M[pos][tile][k] = V[tile][pos][:] U[pos][:][k] in registers
  //     (TileProduct) into a block on the stack, then y = Aᵀ M A + bias,
  //     activated, a vector of channels per output pixel.
  // M never leaves the task, and the tasks of a thread share a block of U
  // (its static schedule walks tiles fastest).
  template <typename T>
  void RunChannelsInLanes(const Conv2dGeometry& g, const T* x, T* y,
                          T* v) const {
    constexpr int64_t kWidth = kColWidth<T>;
    const Tiling tiling = TilesOf(g);
    const ImageStrides xs = ImageStridesOf({g.n, g.c, g.h, g.w}, g.layout);
    const ImageStrides ys = ImageStridesOf({g.n, g.k, g.oh, g.ow}, g.layout);
    const T* u = u_.as<const T>();
    const T* b = bias<T>();
    const auto act = attrs_.activation.As<T>();
    const int64_t col_blocks = (g.k + kWidth - 1) / kWidth;
    // threads must match WorkspaceBytes, called just before Run in the same
    // context.
    const int threads = omp_get_max_threads();
    const LanesTasks tasks =
        LanesTasksOf(tiling.total, g.k, col_blocks, threads);
#pragma omp parallel num_threads(threads)
    {
      // This thread's V block: its task's tiles, transformed once for all
      // the output channels it computes.
      T* vt = v + omp_get_thread_num() * kTaskTiles * kPos * g.c;
      int64_t transformed = -1;  // the tile block vt holds
#pragma omp for schedule(static)
      for (int64_t task = 0; task < tasks.blocks * tasks.groups; ++task) {
        const int64_t tb =
            tasks.groups_first ? task % tasks.blocks : task / tasks.groups;
        const int64_t group =
            tasks.groups_first ? task / tasks.blocks : task % tasks.groups;
        const int64_t first = tb * tasks.tiles_per_block;
        const int64_t nt =
            std::min(tasks.tiles_per_block, tiling.total - first);
        if (nt <= 0) continue;
        if (transformed != tb) {
          for (int64_t t = 0; t < nt; ++t) {
            InputTileLanes(g, tiling, xs, x, first + t, vt + t * kPos * g.c);
          }
          transformed = tb;
        }
        const int64_t per_group = tasks.blocks_per_group;
        const int64_t cb_end = std::min(col_blocks, (group + 1) * per_group);
        for (int64_t cb = group * per_group; cb < cb_end; ++cb) {
          ProductOutputLanes(g, tiling, ys, u, b, act, vt, first, nt, 0,
                             cb * kWidth, y);
        }
      }
    }
  }

  // V[t][pos][:] of tile `tile` (numbered across the batch; vt: its row of
  // V), a vector of channels at a time.
  template <typename T>
  static void InputTileLanes(const Conv2dGeometry& g, const Tiling& tiling,
                             const ImageStrides& xs, const T* x, int64_t tile,
                             T* vt) {
    using V = typename Lanes<T>::V;
    constexpr int64_t L = Lanes<T>::kN;
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
          d[i * kTile + j] =
              i >= i0 && i < i1 && j >= j0 && j < j1
                  ? Lanes<T>::Load(x + origin + i * xs.h + j * xs.w + c)
                  : V{};
        }
      }
      Transform2d<kTile, T>(d, [&](int64_t i, int64_t j, V r) {
        Lanes<T>::Store(vt + (i * kTile + j) * g.c + c, r);
      });
    }
  }

  // Tiles first .. first + kTaskTiles of the chunk (from tile t0, nt
  // tiles) x output channels k0 .. k0 + kColWidth<T>: the products of the 36
  // positions, then the output transform of each tile and vector.
  template <typename T>
  void ProductOutputLanes(const Conv2dGeometry& g, const Tiling& tiling,
                          const ImageStrides& ys, const T* u, const T* b,
                          const Activation::Bounds<T>& act, const T* v,
                          int64_t t0, int64_t nt, int64_t first, int64_t k0,
                          T* y) const {
    using V = typename Lanes<T>::V;
    constexpr int64_t L = Lanes<T>::kN;
    constexpr int64_t kWidth = kColWidth<T>;
    const int64_t tiles = std::min(kTaskTiles, nt - first);
    const int64_t nv = std::min<int64_t>(kColVecs, (g.k - k0) / L);
    const int64_t col_blocks = (g.k + kWidth - 1) / kWidth;
    // M[pos][tile][k] of the task.
    alignas(64) T m[kPos * kTaskTiles * kWidth];
    for (int64_t p = 0; p < kPos; ++p) {
      for (int64_t r = 0; r < tiles; r += kRows) {
        const int64_t rows = std::min(kRows, tiles - r);
        TileProductFor<T>(rows, nv)(
            v + ((first + r) * kPos + p) * g.c, kPos * g.c,
            u + (p * col_blocks + k0 / kWidth) * g.c * kWidth, kWidth, g.c,
            m + (p * kTaskTiles + r) * kWidth, kWidth);
      }
    }
    for (int64_t r = 0; r < tiles; ++r) {
      const TileOrigin o = OriginOf(tiling, t0 + first + r);
      const int64_t rows = std::min(kOut, g.oh - o.oh0);
      const int64_t cols = std::min(kOut, g.ow - o.ow0);
      for (int64_t j = 0; j < nv; ++j) {
        const int64_t k = k0 + j * L;
        V mv[kPos];
        for (int64_t p = 0; p < kPos; ++p) {
          mv[p] = Lanes<T>::Load(m + (p * kTaskTiles + r) * kWidth + j * L);
        }
        const V bias_k = b ? Lanes<T>::Load(b + k) : V{};
        alignas(32) T out[kOut * kOut * L];  // [i][j][channel]
        Transform2d<kOut, T>(mv, [&](int64_t i, int64_t jj, V o) {
          Lanes<T>::Store(out + (i * kOut + jj) * L, o + bias_k);
        });
        ApplyActivation(act, out, kOut * kOut * L);
        for (int64_t i = 0; i < rows; ++i) {
          T* row = y + o.n * ys.n + (o.oh0 + i) * ys.h + o.ow0 * ys.w + k;
          for (int64_t jj = 0; jj < cols; ++jj) {
            std::memcpy(row + jj * ys.w, out + (i * kOut + jj) * L,
                        L * sizeof(T));
          }
        }
      }
    }
  }

  // U[pos][group][kg][cg] = (G g Gᵀ)[pos], computed in double.
  template <typename T>
  void TransformWeights() {
    const int64_t k_total = attrs_.out_channels;
    const int64_t cg = attrs_.in_channels_per_group();
    const int64_t kg = attrs_.out_channels_per_group();
    const int64_t groups = attrs_.groups;
    // The channels-in-lanes product reads U a block of kColVecs vectors of
    // output channels at a time: each block's rows are stored together
    // (U[pos][block][c][kColWidth<T>], zeros past the last channel), so the
    // product streams it front to back.
    constexpr int64_t width = kColWidth<T>;
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
