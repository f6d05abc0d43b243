#include "core/ops/mean/mean.h"

#include "core/errors.h"
#include "core/ops/checks.h"

namespace ai3 {

template <Reduction R>
void ReduceAttrs<R>::Validate(const std::vector<Tensor>& params) const {
  CheckNoParams(kOp, params);
}

template struct ReduceAttrs<Reduction::kMean>;
template struct ReduceAttrs<Reduction::kSum>;
template struct ReduceAttrs<Reduction::kProd>;
template struct ReduceAttrs<Reduction::kMax>;
template struct ReduceAttrs<Reduction::kMin>;
template struct ReduceAttrs<Reduction::kL1>;
template struct ReduceAttrs<Reduction::kL2>;
template struct ReduceAttrs<Reduction::kSumSquare>;
template struct ReduceAttrs<Reduction::kLogSumExp>;

std::vector<bool> ReduceAxes::Reduced(const Shape& shape) const {
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

Shape ReduceAxes::OutputShape(const Tensor& input) const {
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
