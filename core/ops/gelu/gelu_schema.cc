// gelu's declaration (core/op_schema.h).
#include "core/op_schema.h"
#include "core/ops/gelu/gelu.h"

namespace ai3 {
namespace {

using A = GeluAttrs;

AI3_REGISTER_OP_SCHEMA(
    OpDeclaration<A>("x * Phi(x) elementwise, exact or tanh")
        .Attr([] {
                AttrDecl d{"approximate", AttrType::kString,
                           std::string("none")};
                d.choices = {"none", "tanh"};
                d.doc = "'tanh' for the tanh approximation";
                return d;
              }(),
              [](A& a, const AttrValue& v) {
                a.approximate = internal::As<std::string>(v) == "tanh"
                                    ? A::Approximate::kTanh
                                    : A::Approximate::kNone;
              })
        .Default(Device::kCPU, {{"direct"}}));

}  // namespace
}  // namespace ai3
