// depth_to_space: channels moved into b x b spatial blocks (ONNX
// DepthToSpace, torch nn.PixelShuffle / F.pixel_shuffle, TF
// depth_to_space): (N, C*b*b, H, W) -> (N, C, H*b, W*b) with
//   y[n, c, h*b + i, w*b + j] = x[n, k, h, w],
//   k = (i*b + j)*C + c  (mode DCR: ONNX's default, TF's)
//   k = c*b*b + i*b + j  (mode CRD: ONNX's other, torch's PixelShuffle).
// space_to_depth (core/ops/space_to_depth) is its inverse, the same index
// map read the other way. Either layout (NHWC: the channels last).
#ifndef AI3_CORE_OPS_DEPTH_TO_SPACE_DEPTH_TO_SPACE_H_
#define AI3_CORE_OPS_DEPTH_TO_SPACE_DEPTH_TO_SPACE_H_

#include <cstdint>
#include <vector>

#include "core/layer.h"
#include "core/ops/backward.h"
#include "core/tensor.h"

namespace ai3 {

// What depth_to_space and space_to_depth share: the block size, the
// channel order within a block, the layout; Validate.
struct BlockShuffleAttrs {
  int64_t blocksize = 1;
  bool crd = false;  // mode CRD (else DCR)
  Layout layout = Layout::kNCHW;

  // No parameter tensors; blocksize >= 1.
  void Validate(const std::vector<Tensor>& params) const;
};

struct DepthToSpaceAttrs : BlockShuffleAttrs {
  static constexpr char kOp[] = "depth_to_space";
  // Rank 4, C divisible by blocksize^2.
  Shape OutputShape(const Tensor& input) const;
};

// depth_to_space_backward_data: dy's blocks moved back into the channels
// (the same shuffle, space to depth), direct.cc.
struct DepthToSpaceBackwardDataAttrs : DataGradientAttrs<DepthToSpaceAttrs> {
  static constexpr char kOp[] = "depth_to_space_backward_data";
};

// The two sides of the map: the depth side (N, C*b*b, H, W) and the space
// side (N, C, H*b, W*b), in elements; `to_space` copies depth to space
// (depth_to_space), else space to depth.
struct BlockShuffle {
  ImageDims space;  // (N, C, H*b, W*b)
  int64_t b;
  bool crd;
  Layout layout;
};

// The copy, one task per space-side row (split over OpenMP threads when
// large enough).
void RunBlockShuffle(const BlockShuffle& s, bool to_space, DType dtype,
                     const void* from, void* to);

// The input gradient of depth_to_space (kToSpace false: dy, the space side,
// shuffled to the depth side) or of space_to_depth (kToSpace true: dy, the
// depth side, to x's space side): the forward's copy the other way.
template <class Attrs, bool kToSpace>
class BlockShuffleDataKernel : public MultiInputKernel {
 public:
  explicit BlockShuffleDataKernel(const Attrs& attrs) : attrs_(attrs) {}

  void RunInputs(const std::vector<Tensor>& inputs, const Tensor& output,
                 void*) override {
    const Tensor& dy = inputs[kGradOutput];
    const Tensor& space = kToSpace ? output : dy;
    const BlockShuffle s{ImageDimsOf(space.shape, attrs_.layout),
                         attrs_.blocksize, attrs_.crd, attrs_.layout};
    RunBlockShuffle(s, kToSpace, dy.dtype, dy.data, output.data);
  }

 private:
  Attrs attrs_;
};

}  // namespace ai3

#endif  // AI3_CORE_OPS_DEPTH_TO_SPACE_DEPTH_TO_SPACE_H_
