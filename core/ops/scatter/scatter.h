// scatter_elements and scatter_nd: the data with some of its elements (or
// slices) replaced by, or combined with, the updates, at int64 indices
// (ONNX ScatterElements and ScatterND, torch.scatter / scatter_add /
// scatter_reduce and index assignment). The output has the data's shape
// and dtype.
//   3 inputs:            data, indices, updates
//   2 inputs + "indices": the indices are the constant weight `indices` (an
//                         export's fixed positions), the inputs data and
//                         updates
// scatter_elements(axis): indices and updates of one shape, the data's
// rank, no larger than the data on the other axes; updates[j] goes to
// the data's coordinate j with its `axis` coordinate replaced by indices[j].
// scatter_nd: indices of shape (..., k), 1 <= k <= the data's rank; each
// index tuple addresses the data's slice data[i0, ..., ik-1], which
// updates[...] (shape indices.shape[:-1] + data.shape[k:]) goes to.
// `reduction`: "none" (replace), or the update combined with what is there
// by "add", "mul", "max" or "min" (not on bool data). Updates apply in
// order, so with "none" a repeated index keeps the last. Negative indices
// count from the end of their axis; one outside [-size, size) is refused
// (kInvalidArgument) when the layer runs, before anything is written.
#ifndef AI3_CORE_OPS_SCATTER_SCATTER_H_
#define AI3_CORE_OPS_SCATTER_SCATTER_H_

#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace ai3 {

enum class ScatterReduction { kNone, kAdd, kMul, kMax, kMin };

// What scatter_elements and scatter_nd share: the reduction, and indices
// that are either the layer's second input or the constant `indices`.
struct ScatteringAttrs {
  static constexpr bool kAnyDType = true;

  ScatterReduction reduction = ScatterReduction::kNone;
  // True: the indices are the constant params[0], the inputs data, updates.
  bool has_other = false;
  Shape other_shape;
  DType other_dtype = DType::kInt64;

  int MinInputs() const { return has_other ? 2 : 3; }
  int MaxInputs() const { return has_other ? 2 : 3; }
  DType OutputDType(const std::vector<Tensor>& inputs) const {
    return inputs[0].dtype;
  }
  const Shape& IndicesShape(const std::vector<Tensor>& inputs) const {
    return has_other ? other_shape : inputs[1].shape;
  }

 protected:
  void ValidateIndices(const char* op, const std::vector<Tensor>& params) const;
  // The checks both ops make of their operands: the indices int64, the
  // updates of the data's dtype, a reduction the dtype takes.
  void CheckOperands(const char* op, const std::vector<Tensor>& inputs) const;
};

struct ScatterElementsAttrs : ScatteringAttrs {
  static constexpr char kOp[] = "scatter_elements";
  int64_t axis = 0;

  void Validate(const std::vector<Tensor>& params) const {
    ValidateIndices(kOp, params);
  }
  Shape OutputShape(const std::vector<Tensor>& inputs) const;
};

struct ScatterNdAttrs : ScatteringAttrs {
  static constexpr char kOp[] = "scatter_nd";

  void Validate(const std::vector<Tensor>& params) const {
    ValidateIndices(kOp, params);
  }
  Shape OutputShape(const std::vector<Tensor>& inputs) const;
};

}  // namespace ai3

#endif  // AI3_CORE_OPS_SCATTER_SCATTER_H_
