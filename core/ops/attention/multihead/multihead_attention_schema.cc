// multihead_attention's declaration (core/op_schema.h).
#include "core/op_schema.h"
#include "core/ops/attention/multihead/multihead_attention.h"

namespace ai3 {
namespace {

using A = MultiheadAttentionAttrs;

// The weights in the order the kernel takes them: both projections, then
// both biases (nn.MultiheadAttention's layout).
AI3_REGISTER_OP_SCHEMA(
    OpDeclaration<A>("nn.MultiheadAttention at inference: inputs x[, mask] "
                     "or q, k, v[, mask]")
        .Field("num_heads", &A::num_heads, "embed_dim splits into these")
        .Required()
        .Field("batch_first", &A::batch_first,
               "inputs (B, L, D), not (L, B, D)")
        .Field("causal", &A::causal, "hide key j from query i when j > i")
        .Field("self_attention", &A::self_attention,
               "one input x (q = k = v), or three")
        .Field("has_mask", &A::has_mask,
               "a last input: an additive mask of the inputs' dtype")
        .Field("in_projection", &A::in_projection,
               "the linear algorithm of the q, k, v projections")
        .Field("out_projection", &A::out_projection,
               "the linear algorithm of the output projection")
        .Weight("in_proj_weight", "(3 D, D)")
        .Weight("out_proj_weight", "(D, D)")
        .OptionalWeight("in_proj_bias", "(3 D,), with out_proj_bias")
        .OptionalWeight("out_proj_bias", "(D,), with in_proj_bias")
        .FromWeights([](A& a, const AttrMap&, const WeightSlots& w) {
          if (w[2].has_value() != w[3].has_value()) {
            Fail(ErrorKind::kInvalidArgument,
                 "in_proj_bias and out_proj_bias must be given together");
          }
          a.embed_dim = w[1]->shape.empty() ? 0 : w[1]->shape[0];
          a.has_bias = w[2].has_value();
          a.dtype = w[0]->dtype;
        })
        // The attention algorithm the heads run, as attention's list.
        .Default(Device::kCPU, {{"flash"}, {"chunked"}, {"naive"}}));

}  // namespace
}  // namespace ai3
