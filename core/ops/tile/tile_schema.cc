// tile's and expand's declarations (core/op_schema.h).
#include "core/op_schema.h"
#include "core/ops/tile/tile.h"

namespace ai3 {
namespace {

AI3_REGISTER_OP_SCHEMA(
    OpDeclaration<TileAttrs>("the input repeated `repeats` times per dimension")
        .Field("repeats", &TileAttrs::repeats,
               "per dimension, aligned at the last (torch.tile, ONNX Tile)")
        .DirectOn({Device::kCPU}));
AI3_REGISTER_OP_SCHEMA(
    OpDeclaration<ExpandAttrs>("the input broadcast to `shape`")
        .Field("shape", &ExpandAttrs::shape,
               "NumPy-broadcast with the input's (1 or -1: the input's size)")
        .DirectOn({Device::kCPU}));

}  // namespace
}  // namespace ai3
