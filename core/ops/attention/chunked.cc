// attention "chunked" (memory-efficient attention): the queries in chunks of
// C rows; each chunk gets its full (C, S) score matrix by GEMM, an exact
// softmax over all keys per row, and a GEMM with v. Memory O(C * S): C is
// chosen so one chunk's scores take about kChunkBytes, whatever L is. For a
// causal layer a chunk's GEMMs stop at the last key its last row sees.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/math/gemm.h"
#include "core/ops/attention/attention.h"
#include "core/ops/attention/rows.h"
#include "core/registry.h"

namespace ai3 {
namespace {

// Scores per chunk: big enough for GEMMs to run at speed, small enough to
// stay within the last-level cache share of a core or two.
constexpr size_t kChunkBytes = size_t{4} << 20;

struct Chunked {
  template <typename T>
  static int64_t ChunkRows(const AttentionGeometry& g) {
    const int64_t fit = static_cast<int64_t>(
        kChunkBytes /
        (sizeof(T) * static_cast<size_t>(std::max<int64_t>(g.s, 1))));
    return std::clamp<int64_t>(fit, 1, std::max<int64_t>(g.l, 1));
  }

  template <typename T>
  static size_t WorkspaceElements(const AttentionGeometry& g) {
    return static_cast<size_t>(ChunkRows<T>(g)) * static_cast<size_t>(g.s);
  }

  template <typename T>
  static void Attend(const AttentionGeometry& g, const T* q, const T* k,
                     const T* v, const T* mask, T* out, T* scores) {
    const int64_t l = g.l, s = g.s, e = g.e, ev = g.ev;
    const int64_t chunk = ChunkRows<T>(g);
    for (int64_t n = 0; n < g.batch; ++n) {
      const T* kn = k + n * s * e;
      const T* vn = v + n * s * ev;
      for (int64_t i0 = 0; i0 < l; i0 += chunk) {
        const int64_t rows = std::min(chunk, l - i0);
        // Causal: row i sees keys <= i, so the chunk sees keys < i0 + rows.
        const int64_t cols = g.causal ? std::min(s, i0 + rows) : s;
        Gemm<T>(false, true, rows, cols, e, T(g.scale), q + (n * l + i0) * e, e,
                kn, e, T(0), scores, cols);
        attention::ScoresToProbabilities(g, mask, n, i0, rows, cols, scores);
        Gemm<T>(false, false, rows, ev, cols, T(1), scores, cols, vn, ev, T(0),
                out + (n * l + i0) * ev, ev);
      }
    }
  }
};

// Takes every attention layer: the softmax per row is exact, as naive's.
AI3_REGISTER_ALGORITHM(
    AttentionAttrs, "chunked", Device::kCPU,
    KernelAlgorithm<AttentionAttrs, AttentionKernel<Chunked>>);

}  // namespace
}  // namespace ai3
