#include "core/ops/grid_sample/grid_sample.h"

#include "core/errors.h"
#include "core/registry.h"

namespace ai3 {

void GridSampleAttrs::Validate(const std::vector<Tensor>& params) const {
  if (!params.empty()) {
    Fail(ErrorKind::kInvalidArgument,
         "grid_sample takes no parameter tensors, got ", params.size());
  }
}

Shape GridSampleAttrs::OutputShape(const std::vector<Tensor>& inputs) const {
  const Tensor& x = inputs[0];
  const Tensor& grid = inputs[1];
  const size_t rank = x.shape.size();
  if (rank != 4 && rank != 5) {
    Fail(ErrorKind::kShape, "expected a rank-4 or rank-5 input, got rank ",
         rank, " ", ToString(x.shape));
  }
  // (The layer checked that both are float32 or both float64.)
  CheckShape(x.shape, "input");
  CheckShape(grid.shape, "grid");
  const int64_t dims = static_cast<int64_t>(rank) - 2;
  if (mode == Mode::kBicubic && dims != 2) {
    Fail(ErrorKind::kInvalidArgument,
         "bicubic sampling takes a rank-4 input (as torch's), got rank ", rank);
  }
  if (grid.shape.size() != rank || grid.shape[0] != x.shape[0] ||
      grid.shape[rank - 1] != dims) {
    Fail(ErrorKind::kShape, "the grid ", ToString(grid.shape),
         " must be (N, out spatial..., ", dims, ") for input ",
         ToString(x.shape));
  }
  const bool last = layout == Layout::kNHWC;
  const int64_t channels = x.shape[last ? rank - 1 : 1];
  for (size_t d = last ? 1 : 2; d < (last ? rank - 1 : rank); ++d) {
    if (x.shape[d] < 1) {
      Fail(ErrorKind::kShape, "input ", ToString(x.shape),
           " has an empty spatial dimension");
    }
  }
  Shape out = {x.shape[0]};
  if (!last) out.push_back(channels);
  out.insert(out.end(), grid.shape.begin() + 1, grid.shape.end() - 1);
  if (last) out.push_back(channels);
  CheckShape(out, "output");
  return out;
}

}  // namespace ai3
