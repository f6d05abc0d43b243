// mean's declaration (core/op_schema.h).
#include "core/op_schema.h"
#include "core/ops/mean/mean.h"

namespace ai3 {
namespace {

AI3_REGISTER_OP_SCHEMA(
    OpDeclaration<MeanAttrs>("the mean over axes")
        .Field("axes", &MeanAttrs::axes,
               "memory-order axes (negative from the end); empty: all")
        .Field("keepdim", &MeanAttrs::keepdim, "keep them as size 1")
        .Default(Device::kCPU, {{"direct"}}));

}  // namespace
}  // namespace ai3
