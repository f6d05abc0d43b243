// gather_elements' declaration (core/op_schema.h).
#include "core/op_schema.h"
#include "core/ops/gather_elements/gather_elements.h"

namespace ai3 {
namespace {

AI3_REGISTER_OP_SCHEMA(
    OpDeclaration<GatherElementsAttrs>(
        "the data gathered element by element along `axis` by int64 "
        "indices of its rank (ONNX GatherElements, torch.gather)")
        .Field("axis", &GatherElementsAttrs::axis, "the axis indexed")
        .ConstantOperand("other",
                         "the data (a constant); 1 input (the indices) then")
        .Default(Device::kCPU, {{"direct"}}));

}  // namespace
}  // namespace ai3
