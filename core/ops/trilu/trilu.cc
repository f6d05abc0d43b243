#include "core/ops/trilu/trilu.h"

#include "core/errors.h"
#include "core/ops/checks.h"

namespace ai3 {

void TriluAttrs::Validate(const std::vector<Tensor>& params) const {
  CheckNoParams(kOp, params);
}

Shape TriluAttrs::OutputShape(const Tensor& input) const {
  CheckShape(input.shape, "input");
  if (input.shape.size() < 2) {
    Fail(ErrorKind::kShape,
         "trilu needs an input of rank >= 2 (matrices), got ",
         ToString(input.shape));
  }
  return input.shape;
}

}  // namespace ai3
