// attention "naive": the textbook formula, one batch entry at a time.
// Materialises the full (L, S) score matrix, scale * q k^T, with a GEMM
// (ai3::Gemm, BLIS), turns each row into
// probabilities (mask, causal, softmax), and multiplies by v with a second
// GEMM. Memory: L * S elements of workspace, reused across batch entries --
// 256 MiB at L = S = 8192 in float32, which is what flash avoids.
#include <cstddef>
#include <memory>
#include <vector>

#include "core/math/gemm.h"
#include "core/ops/attention/attention.h"
#include "core/ops/attention/rows.h"
#include "core/registry.h"

namespace ai3 {
namespace {

struct Naive {
  template <typename T>
  static size_t WorkspaceElements(const AttentionGeometry& g) {
    return static_cast<size_t>(g.l) * static_cast<size_t>(g.s);
  }

  template <typename T>
  static void Attend(const AttentionGeometry& g, const T* q, const T* k,
                     const T* v, const T* mask, T* out, T* scores) {
    const int64_t l = g.l, s = g.s, e = g.e, ev = g.ev;
    for (int64_t n = 0; n < g.batch; ++n) {
      Gemm<T>(/*trans_a=*/false, /*trans_b=*/true, l, s, e, T(g.scale),
              q + n * l * e, e, k + n * s * e, e, T(0), scores, s);
      attention::ScoresToProbabilities(g, mask, n, 0, l, s, scores);
      Gemm<T>(false, false, l, ev, s, T(1), scores, s, v + n * s * ev, ev, T(0),
              out + n * l * ev, ev);
    }
  }
};

// Takes every attention layer (masks, causal, any scale); memory is its
// only limit, and that depends on the input, not the layer.
AI3_REGISTER_ALGORITHM(AttentionAttrs, "naive", Device::kCPU,
                       KernelAlgorithm<AttentionAttrs, AttentionKernel<Naive>>);

}  // namespace
}  // namespace ai3
