// What every parameter-free elementwise op (relu, sigmoid, silu, tanh) has in
// common: no weights, any input shape (rank 0 included), the output shaped
// like the input, the dtype (float32 or float64) taken from the input.
#ifndef AI3_CORE_OPS_ELEMENTWISE_H_
#define AI3_CORE_OPS_ELEMENTWISE_H_

#include <cstdint>
#include <vector>

#include "core/errors.h"
#include "core/tensor.h"

namespace ai3 {

// An op's attributes derive from this with itself as `Derived` and define
// `static constexpr char kOp[]`.
template <class Derived>
struct ElementwiseAttrs {
  void Validate(const std::vector<Tensor>& params) const {
    if (!params.empty()) {
      Fail(ErrorKind::kInvalidArgument, Derived::kOp,
           " takes no parameter tensors, got ", params.size());
    }
  }

  Shape OutputShape(const Tensor& input) const {
    for (int64_t d : input.shape) {
      if (d < 0) {
        Fail(ErrorKind::kShape, "input has a negative dimension: ",
             ToString(input.shape));
      }
    }
    return input.shape;
  }
};

}  // namespace ai3

#endif  // AI3_CORE_OPS_ELEMENTWISE_H_
