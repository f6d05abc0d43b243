// trilu's declaration (core/op_schema.h).
#include "core/op_schema.h"
#include "core/ops/trilu/trilu.h"

namespace ai3 {
namespace {

AI3_REGISTER_OP_SCHEMA(
    OpDeclaration<TriluAttrs>(
        "the upper or lower triangle of the last two dims, the rest zero "
        "(torch.triu / tril, ONNX Trilu)")
        .Field("upper", &TriluAttrs::upper,
               "keep j - i >= k (upper) or j - i <= k (lower)")
        .Field("k", &TriluAttrs::k,
               "the diagonal: 0 the main one, > 0 above, < 0 below")
        .DirectOn({Device::kCPU}));

}  // namespace
}  // namespace ai3
