// attention's declaration (core/op_schema.h).
#include "core/op_schema.h"
#include "core/ops/attention/attention.h"

namespace ai3 {
namespace {

using A = AttentionAttrs;

AI3_REGISTER_OP_SCHEMA(
    OpDeclaration<A>("scaled dot-product attention: inputs q, k, v[, mask]")
        .Field("causal", &A::causal, "hide key j from query i when j > i")
        .Attr(
            [] {
              AttrDecl d{"scale", AttrType::kFloat};
              d.nullable = true;
              d.doc = "None: 1/sqrt(E)";
              return d;
            }(),
            [](A& a, const AttrValue& v) {
              a.has_scale = !internal::IsNone(v);
              if (a.has_scale) a.scale = internal::As<double>(v);
            })
        .Field("has_mask", &A::has_mask,
               "a 4th input: an additive mask of q's dtype")
        // flash: exact like naive, with memory that grows with the
        // sequence, not its square.
        .Default(Device::kCPU, {{"flash"}, {"chunked"}, {"naive"}}));

}  // namespace
}  // namespace ai3
