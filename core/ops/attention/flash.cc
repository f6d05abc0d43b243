// attention "flash" (FlashAttention's schedule, on CPU): the queries in
// blocks of kBlockQ rows, one task per (batch entry, query block), spread
// over OpenMP threads. A task walks the keys in blocks of kBlockK:
//   scores   = scale * q_blk k_blk^T            (kBlockQ x kBlockK)
//   m_new    = max(m, row max of scores)        (running max per row)
//   p        = exp(scores - m_new)
//   l        = l * exp(m - m_new) + row sum of p (running sum)
//   acc      = acc * exp(m - m_new) + p v_blk   (rescaled accumulator)
// and writes acc / l at the end. The (L, S) score matrix never exists: each
// thread holds one block of scores and its rows' accumulators,
// O(kBlockQ * (kBlockK + Ev)), and the threads share a transposed copy of k
// (so the score tiles read rows), O(S * E): linear in the sequence, not
// quadratic. Both products run through one register-tiled micro-kernel
// (R rows x two AVX2 vectors of accumulators, held in registers through GCC
// vector types); keys past a causal
// query block's last row are never visited. A row whose keys are all masked
// keeps m = -inf and l = 0 and gives zeros, as torch does.
#include <omp.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "core/ops/attention/attention.h"
#include "core/ops/attention/rows.h"
#include "core/ops/sigmoid/exp.h"
#include "core/registry.h"

namespace ai3 {
namespace {

constexpr int64_t kBlockQ = 64;
constexpr int64_t kBlockK = 64;
constexpr int kTileRows = 4;

// Accumulator tile width: 16 floats or 8 doubles, two AVX2 registers per
// row, so a 4-row tile holds 8 of the 16 registers.
template <typename T>
constexpr int kTileWidth = 64 / sizeof(T);

// One AVX2 register of T (GCC/Clang vector extension: the compiler keeps
// such values in registers and emits vfmadd for a * b + c).
template <typename T>
struct Avx2 {
  typedef T Vec __attribute__((vector_size(32)));
  static constexpr int kLanes = 32 / sizeof(T);
  static Vec Load(const T* p) {
    Vec v;
    std::memcpy(&v, p, sizeof(Vec));  // an unaligned load
    return v;
  }
  static void Store(T* p, Vec v) { std::memcpy(p, &v, sizeof(Vec)); }
};

// c[r, 0:width] (+)= alpha * sum_x a[r, x] * b[x, 0:width] for r < R: a
// tile of R x W accumulators held in registers over the whole reduction
// (W = two vectors). width <= W; a narrower tile (the last columns) takes
// the scalar path.
template <typename T, int R, int W>
inline void Tile(int64_t depth, const T* __restrict a, int64_t lda,
                 const T* __restrict b, int64_t ldb, T* __restrict c,
                 int64_t ldc, int64_t width, bool accumulate, T alpha) {
  using V = typename Avx2<T>::Vec;
  constexpr int kLanes = Avx2<T>::kLanes;
  static_assert(W == 2 * kLanes, "a tile row is two vectors");
  if (width == W) {
    V acc[R][2] = {};
    for (int64_t x = 0; x < depth; ++x) {
      const V b0 = Avx2<T>::Load(b + x * ldb);
      const V b1 = Avx2<T>::Load(b + x * ldb + kLanes);
      for (int r = 0; r < R; ++r) {
        const T ar = a[r * lda + x];
        acc[r][0] += ar * b0;
        acc[r][1] += ar * b1;
      }
    }
    for (int r = 0; r < R; ++r) {
      T* cr = c + r * ldc;
      for (int h = 0; h < 2; ++h) {
        V out = alpha * acc[r][h];
        if (accumulate) out += Avx2<T>::Load(cr + h * kLanes);
        Avx2<T>::Store(cr + h * kLanes, out);
      }
    }
    return;
  }
  T acc[R][W] = {};
  for (int64_t x = 0; x < depth; ++x) {
    const T* __restrict bx = b + x * ldb;
    for (int r = 0; r < R; ++r) {
      const T ar = a[r * lda + x];
      for (int64_t w = 0; w < width; ++w) acc[r][w] += ar * bx[w];
    }
  }
  for (int r = 0; r < R; ++r) {
    T* cr = c + r * ldc;
    for (int64_t w = 0; w < width; ++w) {
      cr[w] = (accumulate ? cr[w] : T(0)) + alpha * acc[r][w];
    }
  }
}

// c[rows, cols] (+)= alpha * a[rows, depth] b[depth, cols], tile by tile.
template <typename T>
void SmallGemm(int64_t rows, int64_t cols, int64_t depth, const T* a,
               int64_t lda, const T* b, int64_t ldb, T* c, int64_t ldc,
               bool accumulate, T alpha) {
  constexpr int W = kTileWidth<T>;
  for (int64_t j = 0; j < cols; j += W) {
    const int64_t width = std::min<int64_t>(W, cols - j);
    int64_t r = 0;
    for (; r + kTileRows <= rows; r += kTileRows) {
      Tile<T, kTileRows, W>(depth, a + r * lda, lda, b + j, ldb,
                            c + r * ldc + j, ldc, width, accumulate, alpha);
    }
    const T* ar = a + r * lda;
    T* cr = c + r * ldc + j;
    switch (rows - r) {  // the last rows, fewer than a tile
      case 3:
        Tile<T, 3, W>(depth, ar, lda, b + j, ldb, cr, ldc, width, accumulate,
                      alpha);
        break;
      case 2:
        Tile<T, 2, W>(depth, ar, lda, b + j, ldb, cr, ldc, width, accumulate,
                      alpha);
        break;
      case 1:
        Tile<T, 1, W>(depth, ar, lda, b + j, ldb, cr, ldc, width, accumulate,
                      alpha);
        break;
      default:
        break;
    }
  }
}

// One thread's scratch, carved from its share of the workspace.
template <typename T>
struct Scratch {
  static int64_t Round(int64_t elements) { return (elements + 15) / 16 * 16; }
  // The transposed keys' row length: S up to a whole tile, so the score
  // micro-kernel's last tile reads zeros, not past the row.
  static int64_t KeyStride(const AttentionGeometry& g) {
    return (g.s + kTileWidth<T> - 1) / kTileWidth<T> * kTileWidth<T>;
  }
  // One batch entry's transposed keys (shared by every thread).
  static int64_t KeyElements(const AttentionGeometry& g) {
    return Round(g.e * KeyStride(g));
  }
  // One thread's blocks.
  static int64_t Elements(const AttentionGeometry& g) {
    return Round(kBlockQ * kBlockK) + Round(kBlockQ * g.ev) +
           2 * Round(kBlockQ);
  }
  Scratch(const AttentionGeometry& g, T* base)
      : scores(base),
        acc(scores + Round(kBlockQ * kBlockK)),
        max(acc + Round(kBlockQ * g.ev)),
        sum(max + Round(kBlockQ)) {}
  T* scores;  // (kBlockQ, kBlockK), then the block's probabilities
  T* acc;     // (kBlockQ, Ev)
  T* max;     // running max per row
  T* sum;     // running sum per row
};

struct Flash {
  template <typename T>
  static size_t WorkspaceElements(const AttentionGeometry& g) {
    return static_cast<size_t>(g.batch * Scratch<T>::KeyElements(g)) +
           static_cast<size_t>(omp_get_max_threads()) *
               static_cast<size_t>(Scratch<T>::Elements(g));
  }

  // One task: rows i0 .. i0 + rows - 1 of batch entry n.
  template <typename T>
  static void QueryBlock(const AttentionGeometry& g, int64_t n, int64_t i0,
                         int64_t rows, const T* q, const T* v, const T* mask,
                         T* out, const T* kt, const Scratch<T>& w) {
    const int64_t e = g.e, ev = g.ev;
    const T neg_inf = -std::numeric_limits<T>::infinity();
    const vmath::ExpRange<T> range;
    std::fill(w.acc, w.acc + rows * ev, T(0));
    std::fill(w.max, w.max + rows, neg_inf);
    std::fill(w.sum, w.sum + rows, T(0));
    const T* qb = q + (n * g.l + i0) * e;
    const T* vn = v + n * g.s * ev;
    // Causal: the block's last row sees keys < i0 + rows; later ones are
    // skipped outright.
    const int64_t key_end = g.causal ? std::min(g.s, i0 + rows) : g.s;
    constexpr int W = kTileWidth<T>;
    const int64_t ldk = Scratch<T>::KeyStride(g);
    for (int64_t j0 = 0; j0 < key_end; j0 += kBlockK) {
      const int64_t cols = std::min(kBlockK, key_end - j0);
      // Whole tiles of columns: the padding scores are never used.
      const int64_t padded = std::min(kBlockK, (cols + W - 1) / W * W);
      SmallGemm<T>(rows, padded, e, qb, e, kt + j0, ldk, w.scores, kBlockK,
                   /*accumulate=*/false, T(g.scale));
      for (int64_t r = 0; r < rows; ++r) {
        T* s = w.scores + r * kBlockK;
        attention::MaskScores(g, mask, n, i0 + r, j0, cols, s);
        const T new_max = std::max(w.max[r], attention::RowMax(s, cols));
        if (new_max == neg_inf) {  // every key so far is masked
          std::fill(s, s + cols, T(0));
          continue;
        }
        // exp(-inf) = 0: a row's first visible block resets acc and sum.
        const T correction = vmath::Exp(w.max[r] - new_max, range);
        const T block_sum = attention::ExpRow(s, cols, new_max, range);
        w.sum[r] = w.sum[r] * correction + block_sum;
        w.max[r] = new_max;
        if (correction != T(1)) {
          T* a = w.acc + r * ev;
#pragma omp simd
          for (int64_t c = 0; c < ev; ++c) a[c] *= correction;
        }
      }
      SmallGemm<T>(rows, ev, cols, w.scores, kBlockK, vn + j0 * ev, ev, w.acc,
                   ev, /*accumulate=*/true, T(1));
    }
    for (int64_t r = 0; r < rows; ++r) {
      // l = 0: every key masked -> zeros. (NaN inputs keep NaN.)
      const T inv = w.sum[r] == T(0) ? T(0) : T(1) / w.sum[r];
      const T* a = w.acc + r * ev;
      T* o = out + (n * g.l + i0 + r) * ev;
#pragma omp simd
      for (int64_t c = 0; c < ev; ++c) o[c] = a[c] * inv;
    }
  }

  // kt[x, j] = k[j, x] for batch entry n's keys, zero-padded to the stride.
  template <typename T>
  static void TransposeKeys(const AttentionGeometry& g, const T* kn, T* kt) {
    const int64_t ldk = Scratch<T>::KeyStride(g);
    for (int64_t j = 0; j < g.s; ++j) {
      const T* row = kn + j * g.e;
      for (int64_t x = 0; x < g.e; ++x) kt[x * ldk + j] = row[x];
    }
    for (int64_t x = 0; x < g.e; ++x) {
      std::fill(kt + x * ldk + g.s, kt + (x + 1) * ldk, T(0));
    }
  }

  template <typename T>
  static void Attend(const AttentionGeometry& g, const T* q, const T* k,
                     const T* v, const T* mask, T* out, T* workspace) {
    const int64_t blocks = (g.l + kBlockQ - 1) / kBlockQ;
    const int64_t tasks = g.batch * blocks;
    const int threads = omp_get_max_threads();  // as WorkspaceElements
    const int64_t per_thread = Scratch<T>::Elements(g);
    const int64_t per_entry = Scratch<T>::KeyElements(g);
    // The keys transposed once (a copy the size of k), not once per query
    // block; the blocks' scratch follows, per thread.
    T* kt = workspace;
    T* blocks_base = workspace + g.batch * per_entry;
#pragma omp parallel num_threads(threads)
    {
#pragma omp for schedule(static)
      for (int64_t n = 0; n < g.batch; ++n) {
        TransposeKeys<T>(g, k + n * g.s * g.e, kt + n * per_entry);
      }
      const Scratch<T> w(g, blocks_base + omp_get_thread_num() * per_thread);
      // Dynamic: causal blocks near the bottom have more keys than the top.
#pragma omp for schedule(dynamic)
      for (int64_t t = 0; t < tasks; ++t) {
        const int64_t n = t / blocks;
        const int64_t i0 = (t % blocks) * kBlockQ;
        QueryBlock<T>(g, n, i0, std::min(kBlockQ, g.l - i0), q, v, mask, out,
                      kt + n * per_entry, w);
      }
    }
  }
};

// Takes every attention layer (masks, causal, any scale).
AI3_REGISTER_ALGORITHM(AttentionAttrs, "flash", Device::kCPU,
                       KernelAlgorithm<AttentionAttrs, AttentionKernel<Flash>>);

}  // namespace
}  // namespace ai3
