#include "core/ops/mean/mean.h"

#include "core/errors.h"
#include "core/ops/checks.h"

namespace ai3 {

void MeanAttrs::Validate(const std::vector<Tensor>& params) const {
  CheckNoParams(kOp, params);
}

std::vector<bool> MeanAttrs::Reduced(const Shape& shape) const {
  std::vector<bool> reduced(shape.size(), axes.empty());
  for (int64_t axis : axes) {
    const int64_t a = DimOfAxis(axis, shape);
    if (reduced[a]) {
      Fail(ErrorKind::kShape, "axis ", axis, " (dimension ", a,
           ") is given twice");
    }
    reduced[a] = true;
  }
  return reduced;
}

Shape MeanAttrs::OutputShape(const Tensor& input) const {
  CheckShape(input.shape, "input");
  const std::vector<bool> reduced = Reduced(input.shape);
  Shape out;
  for (size_t i = 0; i < reduced.size(); ++i) {
    if (!reduced[i]) {
      out.push_back(input.shape[i]);
    } else if (keepdim) {
      out.push_back(1);
    }
  }
  return out;
}

}  // namespace ai3
