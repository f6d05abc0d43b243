// lrn's declaration (core/op_schema.h), and its input gradient's.
#include "core/op_schema.h"
#include "core/ops/elementwise_schema.h"
#include "core/ops/lrn/lrn.h"

namespace ai3 {
namespace {

AI3_DECLARE_ATTRIBUTES(
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
        .LayoutAttr());

AI3_REGISTER_OP_SCHEMA(
    Declare<LrnAttrs>("local response normalisation across channels "
                      "(nn.LocalResponseNorm, ONNX LRN)")
        .Default(Device::kCPU, {{"direct"}}));
AI3_REGISTER_GRADIENT_SCHEMA(
    Declare<LrnBackwardDataAttrs>("lrn's input gradient"));

}  // namespace
}  // namespace ai3
