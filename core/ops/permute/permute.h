// permute: the input's dimensions reordered (torch permute/transpose/
// swapaxes, ONNX Transpose, Keras Permute): output dimension d is input
// dimension dims[d]. `dims` is a full permutation of the input's dimensions,
// batch included; negative entries count from the end. No weights.
#ifndef AI3_CORE_OPS_PERMUTE_PERMUTE_H_
#define AI3_CORE_OPS_PERMUTE_PERMUTE_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "core/ops/backward.h"
#include "core/tensor.h"

namespace ai3 {

struct PermuteAttrs {
  static constexpr char kOp[] = "permute";
  // Moves elements without reading them: any dtype (core/layer.h).
  static constexpr bool kAnyDType = true;
  DType OutputDType(const Tensor& input) const { return input.dtype; }

  std::vector<int64_t> dims;

  // Checks that `dims` is a permutation of 0..rank-1 (rank = dims.size()).
  void Validate(const std::vector<Tensor>& params) const;
  // The input's dimensions in `dims`' order; the input's rank must be
  // dims.size().
  Shape OutputShape(const Tensor& input) const;
  // dims with negative entries resolved.
  std::vector<int64_t> Normalized() const;
  // 0 when the permutation keeps the dimensions larger than 1 in their
  // order (it moves only dimensions of size 1, so every element stays
  // where it was); otherwise none (core/layer.h).
  std::optional<int64_t> ViewOffset(const Shape& input) const;
};

// permute_backward_data: dy permuted back, by the inverse permutation
// (direct.cc).
struct PermuteBackwardDataAttrs : DataGradientAttrs<PermuteAttrs> {
  static constexpr char kOp[] = "permute_backward_data";
  // Gradients are float32 or float64, as the other gradient ops'.
  static constexpr bool kAnyDType = false;
};

// A permutation of an input shape as merged output dimensions and their
// input strides: output dimensions of size 1 dropped, neighbours whose
// input strides are contiguous with each other merged (at least one
// dimension: size 1, stride 1 when every dimension is 1). What the "direct"
// kernel walks, and what ViewOffset reads (one dimension of stride 1: the
// elements stay in their order).
struct PermutePlan {
  static constexpr int kMaxRank = 16;
  int rank = 0;
  int64_t size[kMaxRank];
  int64_t stride[kMaxRank];  // in the input, per output dimension
};
// `perm`: a full permutation of in's dimensions (PermuteAttrs::Normalized);
// in.size() <= PermutePlan::kMaxRank.
PermutePlan PermutePlanOf(const Shape& in, const std::vector<int64_t>& perm);

}  // namespace ai3

#endif  // AI3_CORE_OPS_PERMUTE_PERMUTE_H_
