// The declaration of topk (core/op_schema.h).
#include "core/op_schema.h"
#include "core/ops/topk/topk.h"

namespace ai3 {
namespace {

AI3_DECLARE_ATTRIBUTES(
        .Field("k", &A::k, "how many indices, 0 to the axis' size")
        .Field("axis", &A::axis, "the axis searched along (memory order)")
        .Field("largest", &A::largest,
               "the largest first (else the smallest first)"));

AI3_REGISTER_OP_SCHEMA(
    Declare<TopkAttrs>(
        "the int64 indices of the k largest (smallest) elements along "
        "`axis`, best first, ties by index; NaN is largest")
        .DirectOn({Device::kCPU}));

}  // namespace
}  // namespace ai3
