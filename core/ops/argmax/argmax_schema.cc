// The declarations of argmax and argmin (core/op_schema.h), one attribute
// set for both.
#include "core/op_schema.h"
#include "core/ops/argmax/argmax.h"

namespace ai3 {
namespace {

AI3_DECLARE_ATTRIBUTES(
        .Field("axis", &A::axis, "the axis searched along (memory order)")
        .Field("keepdim", &A::keepdim, "keep that axis as size 1")
        .Field("select_last_index", &A::select_last_index,
               "ties give the last index, not the first"));

AI3_REGISTER_OP_SCHEMA(
    Declare<ArgmaxAttrs>(
        "the int64 index of the largest element along `axis`; NaN is "
        "largest")
        .DirectOn({Device::kCPU}));
AI3_REGISTER_OP_SCHEMA(
    Declare<ArgminAttrs>(
        "the int64 index of the smallest element along `axis`; NaN is "
        "smallest")
        .DirectOn({Device::kCPU}));

}  // namespace
}  // namespace ai3
