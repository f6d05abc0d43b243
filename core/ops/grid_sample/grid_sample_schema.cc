// grid_sample's declaration (core/op_schema.h).
#include "core/op_schema.h"
#include "core/ops/grid_sample/grid_sample.h"

namespace ai3 {
namespace {

using A = GridSampleAttrs;

AI3_REGISTER_OP_SCHEMA(
    OpDeclaration<A>(
        "samples x at the grid's points (torch F.grid_sample, ONNX "
        "GridSample); inputs x and grid")
        .OneOf("mode", &A::mode, {"bilinear", "nearest", "bicubic"},
               "how a point reads its neighbours")
        .OneOf("padding_mode", &A::padding, {"zeros", "border", "reflection"},
               "what a point outside the input reads")
        .Field("align_corners", &A::align_corners,
               "grid -1 and 1 are the corner pixels' centres (else their "
               "outer edges)")
        .LayoutAttr()
        .Default(Device::kCPU, {{"direct"}}));

}  // namespace
}  // namespace ai3
