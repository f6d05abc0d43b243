// lrn's declaration (core/op_schema.h).
#include "core/op_schema.h"
#include "core/ops/lrn/lrn.h"

namespace ai3 {
namespace {

using A = LrnAttrs;

AI3_REGISTER_OP_SCHEMA(
    OpDeclaration<A>("local response normalisation across channels "
                     "(nn.LocalResponseNorm, ONNX LRN)")
        .Field("size", &A::size, "channels in the window")
        .Required()
        .Field("alpha", &A::alpha, "scale of the window's mean square")
        .Field("beta", &A::beta, "exponent")
        .Field("bias", &A::bias, "added before the power (torch's k)")
        .Attr(
            [] {
              AttrDecl d{"before", AttrType::kInt};
              d.nullable = true;
              d.doc =
                  "channels of the window before c; None: (size - 1) "
                  "// 2 (ONNX; torch's is size // 2)";
              return d;
            }(),
            [](A& a, const AttrValue& v) {
              // size is set first (declaration order).
              a.before = internal::IsNone(v) ? (a.size - 1) / 2
                                             : internal::As<int64_t>(v);
            })
        .LayoutAttr()
        .Default(Device::kCPU, {{"direct"}}));

}  // namespace
}  // namespace ai3
