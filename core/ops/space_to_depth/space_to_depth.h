// space_to_depth: b x b spatial blocks moved into the channels, the
// inverse of depth_to_space (its index map, core/ops/depth_to_space, read
// the other way): (N, C, H*b, W*b) -> (N, C*b*b, H, W) (ONNX SpaceToDepth,
// mode DCR; torch nn.PixelUnshuffle, mode CRD).
#ifndef AI3_CORE_OPS_SPACE_TO_DEPTH_SPACE_TO_DEPTH_H_
#define AI3_CORE_OPS_SPACE_TO_DEPTH_SPACE_TO_DEPTH_H_

#include "core/ops/depth_to_space/depth_to_space.h"

namespace ai3 {

struct SpaceToDepthAttrs : BlockShuffleAttrs {
  static constexpr char kOp[] = "space_to_depth";
  // Rank 4, H and W divisible by blocksize.
  Shape OutputShape(const Tensor& input) const;
};

// space_to_depth_backward_data: dy's channels moved back into the blocks
// (the same shuffle, depth to space), direct.cc.
struct SpaceToDepthBackwardDataAttrs : DataGradientAttrs<SpaceToDepthAttrs> {
  static constexpr char kOp[] = "space_to_depth_backward_data";
};

}  // namespace ai3

#endif  // AI3_CORE_OPS_SPACE_TO_DEPTH_SPACE_TO_DEPTH_H_
