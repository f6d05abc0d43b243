// depth_to_space's declaration (core/op_schema.h).
#include "core/ops/depth_to_space/block_shuffle_declaration.h"

namespace ai3 {
namespace {

AI3_REGISTER_OP_SCHEMA(BlockShuffleDeclaration<DepthToSpaceAttrs>(
    "channels into b x b spatial blocks (DepthToSpace, PixelShuffle)"));
AI3_REGISTER_OP_SCHEMA(BlockShuffleDeclaration<DepthToSpaceBackwardDataAttrs>(
    "depth_to_space's input gradient: dy's blocks back into the channels"));

}  // namespace
}  // namespace ai3
