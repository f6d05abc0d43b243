// cumsum's declaration (core/op_schema.h).
#include "core/op_schema.h"
#include "core/ops/cumsum/cumsum.h"

namespace ai3 {
namespace {

AI3_REGISTER_OP_SCHEMA(
    OpDeclaration<CumsumAttrs>(
        "the running sum along `axis` (torch.cumsum, ONNX CumSum)")
        .Field("axis", &CumsumAttrs::axis, "the axis summed along")
        .Field("exclusive", &CumsumAttrs::exclusive,
               "each output sums the elements before it, not up to it")
        .Field("reverse", &CumsumAttrs::reverse,
               "the sums run from the end of the axis")
        .DirectOn({Device::kCPU}));

}  // namespace
}  // namespace ai3
