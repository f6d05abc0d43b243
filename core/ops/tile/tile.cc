#include "core/ops/tile/tile.h"

#include "core/errors.h"
#include "core/ops/binary/broadcast.h"
#include "core/ops/checks.h"

namespace ai3 {

Shape AlignedInputShape(const Shape& input, size_t rank) {
  Shape s(rank - input.size(), 1);
  s.insert(s.end(), input.begin(), input.end());
  return s;
}

void TileAttrs::Validate(const std::vector<Tensor>& params) const {
  CheckNoParams(kOp, params);
  for (int64_t r : repeats) {
    if (r < 0) {
      Fail(ErrorKind::kInvalidArgument, "repeats must be >= 0, got ",
           ToString(repeats));
    }
  }
  if (repeats.size() > static_cast<size_t>(kMaxBroadcastRank)) {
    Fail(ErrorKind::kInvalidArgument, "takes up to ", kMaxBroadcastRank,
         " repeats, got ", repeats.size());
  }
}

Shape TileAttrs::OutputShape(const Tensor& input) const {
  CheckShape(input.shape, "input");
  const size_t rank = std::max(input.shape.size(), repeats.size());
  if (rank > static_cast<size_t>(kMaxBroadcastRank)) {
    Fail(ErrorKind::kShape, "takes up to ", kMaxBroadcastRank,
         " dimensions, got an input ", ToString(input.shape));
  }
  Shape out = AlignedInputShape(input.shape, rank);
  const size_t skip = rank - repeats.size();
  for (size_t i = skip; i < rank; ++i) {
    const int64_t r = repeats[i - skip];
    // Checked before multiplying: the product must not wrap.
    if (out[i] != 0 && r > kMaxElements / out[i]) {
      Fail(ErrorKind::kShape, "repeats ", ToString(repeats), " of an input ",
           ToString(input.shape), " make more than ", kMaxElements,
           " elements");
    }
    out[i] *= r;
  }
  CheckShape(out, "the tiled shape");
  return out;
}

void ExpandAttrs::Validate(const std::vector<Tensor>& params) const {
  CheckNoParams(kOp, params);
  for (int64_t d : shape) {
    if (d < -1) {
      Fail(ErrorKind::kInvalidArgument,
           "shape entries must be >= 0 (or -1: the input's), got ",
           ToString(shape));
    }
  }
}

Shape ExpandAttrs::OutputShape(const Tensor& input) const {
  CheckShape(input.shape, "input");
  Shape target = shape;
  // -1 (torch): the input's size at that position, counted from the end.
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] != -1) continue;
    const size_t from_end = target.size() - i;
    if (from_end > input.shape.size()) {
      Fail(ErrorKind::kShape, "shape ", ToString(shape),
           " has -1 at a dimension the input ", ToString(input.shape),
           " does not have");
    }
    target[i] = input.shape[input.shape.size() - from_end];
  }
  return BroadcastShapes(input.shape, target, "input", "shape");
}

}  // namespace ai3
