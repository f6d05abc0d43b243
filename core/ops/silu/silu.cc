#include "core/ops/silu/silu.h"

#include "core/errors.h"

namespace ai3 {

void SiluAttrs::Validate(const std::vector<Tensor>& params) const {
  if (!params.empty()) {
    Fail(ErrorKind::kInvalidArgument,
         "silu takes no parameter tensors, got ", params.size());
  }
}

Shape SiluAttrs::OutputShape(const Tensor& input) const {
  for (int64_t d : input.shape) {
    if (d < 0) {
      Fail(ErrorKind::kShape, "input has a negative dimension: ",
           ToString(input.shape));
    }
  }
  return input.shape;
}

}  // namespace ai3
