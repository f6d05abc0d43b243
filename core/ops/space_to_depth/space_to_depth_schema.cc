// space_to_depth's declaration (core/op_schema.h): depth_to_space's
// attributes.
#include "core/ops/depth_to_space/block_shuffle_declaration.h"
#include "core/ops/space_to_depth/space_to_depth.h"

namespace ai3 {
namespace {

AI3_REGISTER_OP_SCHEMA(BlockShuffleDeclaration<SpaceToDepthAttrs>(
    "b x b spatial blocks into channels (SpaceToDepth, PixelUnshuffle)"));
AI3_REGISTER_OP_SCHEMA(BlockShuffleDeclaration<SpaceToDepthBackwardDataAttrs>(
    "space_to_depth's input gradient: dy's channels back into the blocks"));

}  // namespace
}  // namespace ai3
