// grid_sample: each output position samples the input at the point a grid
// gives (torch F.grid_sample, ONNX GridSample: spatial transformers, the
// flow warps of optical-flow and deformable models).
//   2-D: x (N, C, H, W) in the layer's layout, grid (N, Ho, Wo, 2) of
//        (x, y) points -> y (N, C, Ho, Wo) in x's layout;
//   3-D: x (N, C, D, H, W), grid (N, Do, Ho, Wo, 3) of (x, y, z) points.
// The grid is the frameworks' own, channels last whatever the layout, in
// [-1, 1] from the first pixel to the last: their centres with
// align_corners, their outer edges without. A point maps to the input
// coordinate ((g + 1) / 2) (size - 1) (align_corners) or
// ((g + 1) size - 1) / 2, then as PyTorch's grid_sampler does:
//   padding zeros:      taps outside the input read 0;
//   padding border:     the coordinate is clipped into [0, size - 1];
//   padding reflection: reflected about the borders (the pixel centres
//                       with align_corners, the edges without), then
//                       clipped;
//   bilinear: the 2 (2-D) or 8 (3-D) neighbours, linearly weighted;
//   nearest:  the neighbour at nearbyint(coordinate) (halves to even);
//   bicubic (2-D): the 4 x 4 neighbours of the unpadded coordinate, by
//             Keys' kernel with A = -0.75, each tap's index padded.
// A non-finite point reads 0 (no index is made of it). float32 / float64;
// x and the grid share the dtype.
#ifndef AI3_CORE_OPS_GRID_SAMPLE_GRID_SAMPLE_H_
#define AI3_CORE_OPS_GRID_SAMPLE_GRID_SAMPLE_H_

#include <vector>

#include "core/tensor.h"

namespace ai3 {

struct GridSampleAttrs {
  static constexpr char kOp[] = "grid_sample";

  enum class Mode { kBilinear, kNearest, kBicubic };
  enum class Padding { kZeros, kBorder, kReflection };

  Mode mode = Mode::kBilinear;
  Padding padding = Padding::kZeros;
  bool align_corners = false;
  Layout layout = Layout::kNCHW;

  int MinInputs() const { return 2; }
  int MaxInputs() const { return 2; }

  void Validate(const std::vector<Tensor>& params) const;
  Shape OutputShape(const std::vector<Tensor>& inputs) const;
};

}  // namespace ai3

#endif  // AI3_CORE_OPS_GRID_SAMPLE_GRID_SAMPLE_H_
