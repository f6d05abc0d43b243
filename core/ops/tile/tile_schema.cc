// tile's and expand's declarations (core/op_schema.h), and their input
// gradients'.
#include "core/op_schema.h"
#include "core/ops/elementwise_schema.h"
#include "core/ops/tile/tile.h"

namespace ai3 {
namespace {

AI3_DECLARE_ATTRIBUTES_AS(
    DeclareTile,
    .Field("repeats", &A::repeats,
           "per dimension, aligned at the last (torch.tile, ONNX Tile)"));
AI3_DECLARE_ATTRIBUTES_AS(
    DeclareExpand,
    .Field("shape", &A::shape,
           "NumPy-broadcast with the input's (1 or -1: the input's size)"));

AI3_REGISTER_OP_SCHEMA(
    DeclareTile<TileAttrs>("the input repeated `repeats` times per dimension")
        .DirectOn({Device::kCPU}));
AI3_REGISTER_OP_SCHEMA(
    DeclareExpand<ExpandAttrs>("the input broadcast to `shape`")
        .DirectOn({Device::kCPU}));
AI3_REGISTER_GRADIENT_SCHEMA(DeclareTile<TileBackwardDataAttrs>(
    "tile's input gradient: dy summed over each element's copies"));
AI3_REGISTER_GRADIENT_SCHEMA(DeclareExpand<ExpandBackwardDataAttrs>(
    "expand's input gradient: dy summed over the broadcast dims"));

}  // namespace
}  // namespace ai3
