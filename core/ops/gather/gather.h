// gather: ONNX Gather / torch.index_select with a tensor of indices, and
// nn.Embedding (a gather of its weight on axis 0):
//   2 inputs:          y = data gathered by indices along `axis`
//   1 input + "other": the data is the constant weight `other` (an embedding
//                      table) and the one input is the indices
// The output's shape is data.shape[:axis] + indices.shape +
// data.shape[axis+1:]. The data may be of any dtype (the output has it);
// the indices are int64, negative ones counting from the end of the axis.
// An index outside [-size, size) is refused (kInvalidArgument) when the
// layer runs: nothing is read out of bounds.
#ifndef AI3_CORE_OPS_GATHER_GATHER_H_
#define AI3_CORE_OPS_GATHER_GATHER_H_

#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace ai3 {

struct GatherAttrs {
  static constexpr char kOp[] = "gather";
  static constexpr bool kAnyDType = true;

  int64_t axis = 0;
  // True: the data is the constant params[0] (an embedding table) and the
  // layer's one input the indices.
  bool has_other = false;
  Shape other_shape;
  DType other_dtype = DType::kFloat32;

  int MinInputs() const { return has_other ? 1 : 2; }
  int MaxInputs() const { return has_other ? 1 : 2; }

  void Validate(const std::vector<Tensor>& params) const;
  // Checks the indices' dtype and the axis; `data` is the data's shape.
  Shape OutputShapeOf(const Shape& data, const Tensor& indices) const;
  Shape OutputShape(const std::vector<Tensor>& inputs) const;
  DType OutputDType(const std::vector<Tensor>& inputs) const;
};

// Throws kInvalidArgument naming the first of the `count` indices outside
// [-size, size), the range of axis `axis` of `data`: gather and
// gather_elements check every index before they read anything.
void CheckIndicesInRange(const int64_t* indices, int64_t count, int64_t axis,
                         int64_t size, const Shape& data);

}  // namespace ai3

#endif  // AI3_CORE_OPS_GATHER_GATHER_H_
