#include "core/ops/cast/cast.h"

#include "core/ops/checks.h"

namespace ai3 {

void CastAttrs::Validate(const std::vector<Tensor>& params) const {
  CheckNoParams(kOp, params);
}

Shape CastAttrs::OutputShape(const Tensor& input) const {
  CheckShape(input.shape, "input");
  return input.shape;
}

}  // namespace ai3
