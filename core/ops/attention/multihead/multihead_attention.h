// multihead_attention: torch.nn.MultiheadAttention at inference
// (need_weights=False), as one layer:
//
//   q' = q Wq^T + bq,  k' = k Wk^T + bk,  v' = v Wv^T + bv    (in_proj)
//   heads: q', k', v' split into num_heads slices of D / num_heads
//   o = attention(q'_h, k'_h, v'_h, mask, causal) per head   (an attention
//       algorithm: naive, flash or chunked, core/ops/attention)
//   out = concat_h(o) Wo^T + bo                               (out_proj)
//
// Inputs: x (self-attention, q = k = v = x) or q, k, v; then an optional
// additive float mask broadcastable to (B, num_heads, L, S) (frontends fold
// torch's attn_mask and key_padding_mask into it: True/nonzero = masked out
// in torch's MHA, so those become -inf). Each input is (L, B, D), or
// (B, L, D) with batch_first, or unbatched (L, D); k and v share S.
// Weights, in torch's layout: in_proj_weight (3D, D), in_proj_bias (3D),
// out_proj_weight (D, D), out_proj_bias (D); the biases together or not at
// all. (torch's kdim/vdim != D, add_bias_kv and add_zero_attn are not
// taken; frontends keep such modules.)
//
// The projections are linear layers, run by the linear algorithm each of
// in_projection and out_projection names ("default": linear's own pick):
// frontends give them the algorithm linear's selector picks for a linear of
// their shape, "auto" included (in ViT the projections are a third of the
// model's products).
#ifndef AI3_CORE_OPS_ATTENTION_MULTIHEAD_MULTIHEAD_ATTENTION_H_
#define AI3_CORE_OPS_ATTENTION_MULTIHEAD_MULTIHEAD_ATTENTION_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/layer.h"
#include "core/ops/attention/attention.h"
#include "core/ops/linear/linear.h"
#include "core/tensor.h"

namespace ai3 {

struct MultiheadAttentionAttrs {
  static constexpr char kOp[] = "multihead_attention";

  int64_t embed_dim = 0;
  int64_t num_heads = 1;
  bool batch_first = false;
  bool causal = false;
  bool has_bias = true;
  bool self_attention = true;  // one input x, or q, k, v
  bool has_mask = false;
  DType dtype = DType::kFloat32;
  std::string in_projection = "default";   // a linear algorithm
  std::string out_projection = "default";  // a linear algorithm

  int MinInputs() const { return (self_attention ? 1 : 3) + has_mask; }
  int MaxInputs() const { return MinInputs(); }
  // params: in_proj_weight, out_proj_weight[, in_proj_bias, out_proj_bias].
  void Validate(const std::vector<Tensor>& params) const;
  Shape OutputShape(const std::vector<Tensor>& inputs) const;

  // What one call needs to know, from the inputs' shapes (validated).
  struct Dims {
    bool batched = true;
    int64_t batch = 1, l = 0, s = 0, head_dim = 0;
  };
  Dims DimsOf(const std::vector<Tensor>& inputs) const;
  // The attention layer each head runs.
  AttentionAttrs HeadAttrs() const;
  // The linear layers of the projections: q, k or v's (out_features D; all
  // three at once, 3 D, for self-attention) and the output's.
  LinearAttrs InProjectionAttrs() const;
  LinearAttrs OutProjectionAttrs() const;
};

}  // namespace ai3

#endif  // AI3_CORE_OPS_ATTENTION_MULTIHEAD_MULTIHEAD_ATTENTION_H_
