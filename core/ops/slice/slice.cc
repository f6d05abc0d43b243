#include "core/ops/slice/slice.h"

#include "core/errors.h"
#include "core/ops/checks.h"

namespace ai3 {

void SliceAttrs::Validate(const std::vector<Tensor>& params) const {
  CheckNoParams(kOp, params);
  if (step == 0) Fail(ErrorKind::kInvalidArgument, "slice step cannot be 0");
}

SliceAttrs::Range SliceAttrs::RangeOf(const Shape& shape) const {
  const int64_t rank = static_cast<int64_t>(shape.size());
  const int64_t a = DimOfAxis(axis, shape);
  Range r{DimsProduct(shape, 0, a), shape[a], DimsProduct(shape, a + 1, rank),
          0, 0};
  // Python's slice.indices(len), written to avoid overflow at the INT64
  // sentinels.
  const int64_t n = r.len;
  auto clamp = [&](int64_t v, int64_t lo, int64_t hi) {
    if (v < 0) v = v < -n ? lo : v + n;
    return v < lo ? lo : (v > hi ? hi : v);
  };
  // The count is ceil(distance / |step|), written as (distance - 1) / |step|
  // + 1 so that no sum can wrap, with |step| unsigned: -INT64_MIN is not an
  // int64_t.
  const uint64_t magnitude =
      step > 0 ? static_cast<uint64_t>(step) : 0 - static_cast<uint64_t>(step);
  if (step > 0) {
    const int64_t b = clamp(start, 0, n), e = clamp(stop, 0, n);
    r.first = b;
    r.count = e > b ? static_cast<int64_t>(static_cast<uint64_t>(e - b - 1) /
                                           magnitude) +
                          1
                    : 0;
  } else {
    const int64_t b = clamp(start, -1, n - 1), e = clamp(stop, -1, n - 1);
    r.first = b;
    r.count = b > e ? static_cast<int64_t>(static_cast<uint64_t>(b - e - 1) /
                                           magnitude) +
                          1
                    : 0;
  }
  return r;
}

std::optional<int64_t> SliceAttrs::ViewOffset(const Shape& input) const {
  const Range r = RangeOf(input);
  if (r.count == 0) return std::nullopt;
  if (r.count == r.len && step == 1) return 0;  // the whole input
  // Rows of `inner` elements, consecutive along the axis, in one block.
  if (r.outer == 1 && (step == 1 || r.count == 1)) return r.first * r.inner;
  return std::nullopt;
}

Shape SliceAttrs::OutputShape(const Tensor& input) const {
  CheckShape(input.shape, "input");
  const Range r = RangeOf(input.shape);
  Shape out = input.shape;
  out[DimOfAxis(axis, input.shape)] = r.count;
  return out;
}

}  // namespace ai3
