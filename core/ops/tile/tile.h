// tile and expand: copies of the input repeated along its dimensions.
//   tile:   `repeats` per dimension (torch.tile, ONNX Tile, np.tile): the
//           output is input.shape[i] * repeats[i]; fewer repeats than
//           dimensions repeat the trailing ones, more treat the input as
//           having leading size-1 dims (torch and NumPy's rule).
//   expand: the input broadcast to `shape` (ONNX Expand: NumPy broadcasting
//           both ways, so a 1 in `shape` keeps the input's size; torch
//           x.expand, where -1 keeps the input's size too).
// Both read output coordinate c of each dimension from input coordinate
// c mod (the input's size there): one kernel (direct.cc). No weights; any
// rank up to kMaxBroadcastRank; float32 or float64 from the input.
#ifndef AI3_CORE_OPS_TILE_TILE_H_
#define AI3_CORE_OPS_TILE_TILE_H_

#include <cstdint>
#include <vector>

#include "core/ops/backward.h"
#include "core/tensor.h"

namespace ai3 {

struct TileAttrs {
  static constexpr char kOp[] = "tile";
  // Moves elements without reading them: any dtype (core/layer.h).
  static constexpr bool kAnyDType = true;
  DType OutputDType(const Tensor& input) const { return input.dtype; }
  std::vector<int64_t> repeats;

  void Validate(const std::vector<Tensor>& params) const;
  Shape OutputShape(const Tensor& input) const;
};

struct ExpandAttrs {
  static constexpr char kOp[] = "expand";
  // Moves elements without reading them: any dtype (core/layer.h).
  static constexpr bool kAnyDType = true;
  DType OutputDType(const Tensor& input) const { return input.dtype; }
  std::vector<int64_t> shape;

  void Validate(const std::vector<Tensor>& params) const;
  Shape OutputShape(const Tensor& input) const;
};

// tile_backward_data / expand_backward_data: x's shape, each element the
// sum of dy over the positions it was copied to (backward_direct.cc).
struct TileBackwardDataAttrs : DataGradientAttrs<TileAttrs> {
  static constexpr char kOp[] = "tile_backward_data";
  // Gradients are float32 or float64, as the other gradient ops'.
  static constexpr bool kAnyDType = false;
};
struct ExpandBackwardDataAttrs : DataGradientAttrs<ExpandAttrs> {
  static constexpr char kOp[] = "expand_backward_data";
  static constexpr bool kAnyDType = false;
};

// The input's shape with leading 1s up to the output's rank.
Shape AlignedInputShape(const Shape& input, size_t rank);

}  // namespace ai3

#endif  // AI3_CORE_OPS_TILE_TILE_H_
