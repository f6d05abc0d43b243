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

// What gather and gather_elements share: the axis indexed, and data that
// is either the first input or the constant weight `other` (an embedding
// table, a buffer), the indices being the layer's other input.
struct GatheringAttrs {
  static constexpr bool kAnyDType = true;

  int64_t axis = 0;
  // True: the data is the constant params[0], the layer's one input the
  // indices.
  bool has_other = false;
  Shape other_shape;
  DType other_dtype = DType::kFloat32;

  int MinInputs() const { return has_other ? 1 : 2; }
  int MaxInputs() const { return has_other ? 1 : 2; }
  // The output has the data's dtype (any).
  DType OutputDType(const std::vector<Tensor>& inputs) const {
    return has_other ? other_dtype : inputs[0].dtype;
  }
  const Shape& DataShape(const std::vector<Tensor>& inputs) const {
    return has_other ? other_shape : inputs[0].shape;
  }
  const Tensor& Indices(const std::vector<Tensor>& inputs) const {
    return inputs[has_other ? 0 : 1];
  }

 protected:
  // The constant data's checks (Validate); `what` names it in errors.
  void ValidateData(const char* op, const char* what,
                    const std::vector<Tensor>& params) const;
};

struct GatherAttrs : GatheringAttrs {
  static constexpr char kOp[] = "gather";

  void Validate(const std::vector<Tensor>& params) const {
    ValidateData(kOp, "the table", params);
  }
  // Checks the indices' dtype and the axis; `data` is the data's shape.
  Shape OutputShapeOf(const Shape& data, const Tensor& indices) const;
  Shape OutputShape(const std::vector<Tensor>& inputs) const {
    return OutputShapeOf(DataShape(inputs), Indices(inputs));
  }
};

// The flat offset in data of shape `data` of the element at coordinate j of
// an index tensor of shape `shape` (the data's rank), its `axis`
// coordinate replaced by `index` (negative: from the end): what
// gather_elements reads and scatter_elements writes. The data's strides as
// a running product from the last dim (no stride table: a forward
// allocates nothing).
inline int64_t AxisReplacedOffset(int64_t j, const Shape& shape,
                                  const Shape& data, int64_t axis,
                                  int64_t index) {
  int64_t rest = j, offset = 0, stride = 1;
  for (int d = static_cast<int>(data.size()) - 1; d >= 0; --d) {
    const int64_t c = rest % shape[d];
    rest /= shape[d];
    const int64_t at = d == axis ? (index < 0 ? index + data[d] : index) : c;
    offset += at * stride;
    stride *= data[d];
  }
  return offset;
}

// Throws kInvalidArgument naming the first of the `count` indices outside
// [-size, size), the range of axis `axis` of `data`: gather and
// gather_elements check every index before they read anything.
void CheckIndicesInRange(const int64_t* indices, int64_t count, int64_t axis,
                         int64_t size, const Shape& data);

}  // namespace ai3

#endif  // AI3_CORE_OPS_GATHER_GATHER_H_
