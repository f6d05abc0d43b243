// The kernel base of an op with two operands whose second is either the
// layer's second input or its constant (attrs.has_other: params[0], which
// outlives the kernel): the CPU "direct" of add/sub/mul/div and of matmul.
#ifndef AI3_CORE_OPS_BINARY_OPERANDS_H_
#define AI3_CORE_OPS_BINARY_OPERANDS_H_

#include <vector>

#include "core/layer.h"
#include "core/tensor.h"

namespace ai3 {

template <class Attrs>
class OperandsKernel : public MultiInputKernel {
 public:
  OperandsKernel(const Attrs& attrs, const std::vector<Tensor>& params)
      : attrs_(attrs) {
    if (attrs.has_other) other_ = params[0];
  }

 protected:
  // The second operand of a call on `inputs`.
  const Tensor& Other(const std::vector<Tensor>& inputs) const {
    return attrs_.has_other ? other_ : inputs[1];
  }

  Attrs attrs_;

 private:
  Tensor other_;  // the constant operand, if any
};

}  // namespace ai3

#endif  // AI3_CORE_OPS_BINARY_OPERANDS_H_
