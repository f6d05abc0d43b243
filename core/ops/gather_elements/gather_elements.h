// gather_elements: ONNX GatherElements / torch.gather, element by element:
//   y[c] = data[c with c[axis] replaced by indices[c]]
// for every coordinate c of the indices, which have the data's rank and a
// size no larger than the data's on every other axis; the output has the
// indices' shape and the data's dtype (any). The indices are int64,
// negative ones counting from the end of the axis (ONNX's rule; torch
// refuses them); one outside [-size, size) is refused (kInvalidArgument)
// when the layer runs, before anything is read.
//   2 inputs:          data, indices
//   1 input + "other": the data is the constant weight `other` and the one
//                      input the indices (RoBERTa's token types, gathered
//                      from a buffer by position)
#ifndef AI3_CORE_OPS_GATHER_ELEMENTS_GATHER_ELEMENTS_H_
#define AI3_CORE_OPS_GATHER_ELEMENTS_GATHER_ELEMENTS_H_

#include <vector>

#include "core/ops/gather/gather.h"  // GatheringAttrs
#include "core/tensor.h"

namespace ai3 {

struct GatherElementsAttrs : GatheringAttrs {
  static constexpr char kOp[] = "gather_elements";

  void Validate(const std::vector<Tensor>& params) const {
    ValidateData(kOp, "the data", params);
  }
  // Checks the indices' dtype and shape against the data's shape `data`.
  Shape OutputShapeOf(const Shape& data, const Tensor& indices) const;
  Shape OutputShape(const std::vector<Tensor>& inputs) const {
    return OutputShapeOf(DataShape(inputs), Indices(inputs));
  }
};

}  // namespace ai3

#endif  // AI3_CORE_OPS_GATHER_ELEMENTS_GATHER_ELEMENTS_H_
