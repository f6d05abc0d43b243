// attention "flash" (FlashAttention's schedule, on CPU): the queries in
// blocks of kBlockQ rows, one task per (batch entry, query block), spread
// over OpenMP threads. A task walks the keys in blocks of kBlockK:
//   scores   = scale * q_blk k_blk^T            (kBlockQ x kBlockK)
//   m_new    = max(m, row max of scores)        (running max per row)
//   p        = exp(scores - m_new)
//   l        = l * exp(m - m_new) + row sum of p (running sum)
//   acc      = acc * exp(m - m_new) + p v_blk   (rescaled accumulator)
// and writes acc / l at the end. The (L, S) score matrix never exists: each
// thread holds one block of scores, one transposed key block and its rows'
// accumulators -- O(kBlockQ * (kBlockK + Ev) + E * kBlockK) per thread,
// whatever L and S are. Both products run through one register-tiled
// micro-kernel (R rows x W columns of accumulators in vector registers, W
// one or two AVX2 vectors) the compiler vectorises; keys past a causal
// query block's last row are never visited. A row whose keys are all masked
// keeps m = -inf and l = 0 and gives zeros, as torch does.
#include <omp.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
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

// c[r, 0:width] (+)= sum_x a[r, x] * b[x, 0:width] for r < R: a tile of
// accumulators kept in registers over the whole reduction. width <= W;
// the full-width case has constant trip counts so it unrolls and vectorises.
template <typename T, int R, int W>
inline void Tile(int64_t depth, const T* __restrict a, int64_t lda,
                 const T* __restrict b, int64_t ldb, T* __restrict c,
                 int64_t ldc, int64_t width, bool accumulate, T alpha) {
  T acc[R][W] = {};
  if (width == W) {
    for (int64_t x = 0; x < depth; ++x) {
      const T* __restrict bx = b + x * ldb;
      for (int r = 0; r < R; ++r) {
        const T ar = a[r * lda + x];
#pragma omp simd
        for (int w = 0; w < W; ++w) acc[r][w] += ar * bx[w];
      }
    }
  } else {
    for (int64_t x = 0; x < depth; ++x) {
      const T* __restrict bx = b + x * ldb;
      for (int r = 0; r < R; ++r) {
        const T ar = a[r * lda + x];
        for (int64_t w = 0; w < width; ++w) acc[r][w] += ar * bx[w];
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    T* cr = c + r * ldc;
    if (accumulate) {
      for (int64_t w = 0; w < width; ++w) cr[w] += alpha * acc[r][w];
    } else {
      for (int64_t w = 0; w < width; ++w) cr[w] = alpha * acc[r][w];
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
  static int64_t Elements(const AttentionGeometry& g) {
    return Round(g.e * kBlockK) + Round(kBlockQ * kBlockK) +
           Round(kBlockQ * g.ev) + 2 * Round(kBlockQ);
  }
  Scratch(const AttentionGeometry& g, T* base)
      : kt(base),
        scores(kt + Round(g.e * kBlockK)),
        acc(scores + Round(kBlockQ * kBlockK)),
        max(acc + Round(kBlockQ * g.ev)),
        sum(max + Round(kBlockQ)) {}
  T* kt;      // the key block transposed: (E, kBlockK)
  T* scores;  // (kBlockQ, kBlockK), then the block's probabilities
  T* acc;     // (kBlockQ, Ev)
  T* max;     // running max per row
  T* sum;     // running sum per row
};

struct Flash {
  template <typename T>
  static size_t WorkspaceElements(const AttentionGeometry& g) {
    return static_cast<size_t>(omp_get_max_threads()) *
           static_cast<size_t>(Scratch<T>::Elements(g));
  }

  // One task: rows i0 .. i0 + rows - 1 of batch entry n.
  template <typename T>
  static void QueryBlock(const AttentionGeometry& g, int64_t n, int64_t i0,
                         int64_t rows, const T* q, const T* k, const T* v,
                         const T* mask, T* out, const Scratch<T>& w) {
    const int64_t e = g.e, ev = g.ev;
    const T neg_inf = -std::numeric_limits<T>::infinity();
    const vmath::ExpRange<T> range;
    std::fill(w.acc, w.acc + rows * ev, T(0));
    std::fill(w.max, w.max + rows, neg_inf);
    std::fill(w.sum, w.sum + rows, T(0));
    const T* qb = q + (n * g.l + i0) * e;
    const T* kn = k + n * g.s * e;
    const T* vn = v + n * g.s * ev;
    // Causal: the block's last row sees keys < i0 + rows; later ones are
    // skipped outright.
    const int64_t key_end = g.causal ? std::min(g.s, i0 + rows) : g.s;
    constexpr int W = kTileWidth<T>;
    for (int64_t j0 = 0; j0 < key_end; j0 += kBlockK) {
      const int64_t cols = std::min(kBlockK, key_end - j0);
      // Transpose the key block so the score tile reads it row by row;
      // columns up to a whole tile are zeroed, so the micro-kernel reads
      // defined memory (their scores are never used).
      const int64_t padded = std::min(kBlockK, (cols + W - 1) / W * W);
      for (int64_t x = 0; x < e; ++x) {
        T* row = w.kt + x * kBlockK;
        for (int64_t j = 0; j < cols; ++j) row[j] = kn[(j0 + j) * e + x];
        for (int64_t j = cols; j < padded; ++j) row[j] = T(0);
      }
      SmallGemm<T>(rows, padded, e, qb, e, w.kt, kBlockK, w.scores, kBlockK,
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

  template <typename T>
  static void Attend(const AttentionGeometry& g, const T* q, const T* k,
                     const T* v, const T* mask, T* out, T* workspace) {
    const int64_t blocks = (g.l + kBlockQ - 1) / kBlockQ;
    const int64_t tasks = g.batch * blocks;
    const int threads = omp_get_max_threads();  // as WorkspaceElements
    const int64_t per_thread = Scratch<T>::Elements(g);
    // Dynamic: causal blocks near the bottom have more keys than the top.
#pragma omp parallel for schedule(dynamic) num_threads(threads)
    for (int64_t t = 0; t < tasks; ++t) {
      const int64_t n = t / blocks;
      const int64_t i0 = (t % blocks) * kBlockQ;
      const Scratch<T> w(g, workspace + omp_get_thread_num() * per_thread);
      QueryBlock<T>(g, n, i0, std::min(kBlockQ, g.l - i0), q, k, v, mask, out,
                    w);
    }
  }
};

class FlashAlgorithm : public Algorithm<AttentionAttrs> {
 public:
  // Takes every attention layer (masks, causal, any scale).
  std::string WhyNot(const AttentionAttrs&) const override { return {}; }
  // The default: exact like naive, and memory that grows with the sequence,
  // not its square.
  int Preference(const AttentionAttrs&) const override { return 10; }
  std::unique_ptr<Kernel> Prepare(const AttentionAttrs& attrs,
                                  const std::vector<Tensor>&) const override {
    return std::make_unique<AttentionKernel<Flash>>(attrs);
  }
};

AI3_REGISTER_ALGORITHM(AttentionAttrs, "flash", Device::kCPU, FlashAlgorithm);

}  // namespace
}  // namespace ai3
