// gather's declaration (core/op_schema.h).
#include "core/op_schema.h"
#include "core/ops/gather/gather.h"

namespace ai3 {
namespace {

AI3_REGISTER_OP_SCHEMA(
    OpDeclaration<GatherAttrs>(
        "data gathered along `axis` by int64 indices (ONNX Gather, "
        "torch.index_select); with `other`, an embedding table gathered by "
        "the one input")
        .Field("axis", &GatherAttrs::axis, "the axis indexed")
        .ConstantOperand("other",
                         "the data (an embedding table); 1 input "
                         "(the indices) then")
        .Default(Device::kCPU, {{"direct"}}));

}  // namespace
}  // namespace ai3
