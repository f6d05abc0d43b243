// The declarations of scatter_elements and scatter_nd (core/op_schema.h),
// one attribute set between them.
#include "core/op_schema.h"
#include "core/ops/scatter/scatter.h"

namespace ai3 {
namespace {

AI3_DECLARE_ATTRIBUTES(
        .OneOf("reduction", &A::reduction, {"none", "add", "mul", "max", "min"},
               "replace what is there, or combine the update with it")
        .ConstantOperand("indices",
                         "the int64 indices (a constant); 2 inputs (the data, "
                         "the updates) then"));

AI3_REGISTER_OP_SCHEMA(
    Declare<ScatterElementsAttrs>(
        "the data with updates[j] at coordinate j, its `axis` coordinate "
        "replaced by indices[j] (ONNX ScatterElements, torch.scatter)")
        .Field("axis", &ScatterElementsAttrs::axis, "the axis indexed")
        .Default(Device::kCPU, {{"direct"}}));
AI3_REGISTER_OP_SCHEMA(
    Declare<ScatterNdAttrs>(
        "the data with the slice at each index tuple (the indices' last dim) "
        "replaced by, or combined with, the updates (ONNX ScatterND)")
        .Default(Device::kCPU, {{"direct"}}));

}  // namespace
}  // namespace ai3
