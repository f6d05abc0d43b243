// cast's declaration (core/op_schema.h).
#include <string>

#include "core/op_schema.h"
#include "core/ops/cast/cast.h"

namespace ai3 {
namespace {

AI3_REGISTER_OP_SCHEMA(
    OpDeclaration<CastAttrs>(
        "x converted to dtype `to` (ONNX Cast: float to int64 truncates "
        "toward zero)")
        .Attr(
            [] {
              AttrDecl d{"to", AttrType::kString, std::string("float32")};
              d.choices = {"float32", "float64", "int64", "bool"};
              d.doc = "the output's dtype";
              return d;
            }(),
            [](CastAttrs& a, const AttrValue& v) {
              const std::string to = internal::As<std::string>(v);
              for (DType t : {DType::kFloat32, DType::kFloat64, DType::kInt64,
                              DType::kBool}) {
                if (to == Name(t)) a.to = t;
              }
            })
        .Default(Device::kCPU, {{"direct"}}));

}  // namespace
}  // namespace ai3
