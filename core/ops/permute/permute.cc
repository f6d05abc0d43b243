#include "core/ops/permute/permute.h"

#include <string>

#include "core/errors.h"
#include "core/ops/checks.h"

namespace ai3 {

namespace {
std::string ListString(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    s += (i ? ", " : "") + std::to_string(v[i]);
  }
  return s + "]";
}
}  // namespace

std::vector<int64_t> PermuteAttrs::Normalized() const {
  const int64_t rank = static_cast<int64_t>(dims.size());
  std::vector<int64_t> out(dims);
  for (int64_t& d : out) {
    if (d < 0) d += rank;
  }
  return out;
}

void PermuteAttrs::Validate(const std::vector<Tensor>& params) const {
  CheckNoParams(kOp, params);
  const int64_t rank = static_cast<int64_t>(dims.size());
  std::vector<bool> seen(dims.size(), false);
  for (int64_t d : Normalized()) {
    if (d < 0 || d >= rank || seen[d]) {
      Fail(ErrorKind::kInvalidArgument, "dims ", ListString(dims),
           " is not a permutation of the ", rank, " dimensions");
    }
    seen[d] = true;
  }
}

std::optional<int64_t> PermuteAttrs::ViewOffset(const Shape& input) const {
  if (input.size() != dims.size()) return std::nullopt;
  int64_t previous = -1;
  for (int64_t d : Normalized()) {
    if (input[d] == 1) continue;
    if (d < previous) return std::nullopt;
    previous = d;
  }
  return 0;
}

Shape PermuteAttrs::OutputShape(const Tensor& input) const {
  if (input.rank() != static_cast<int64_t>(dims.size())) {
    Fail(ErrorKind::kShape, "dims ", ListString(dims), " permute ", dims.size(),
         " dimensions but the input ", ToString(input.shape), " has rank ",
         input.rank());
  }
  CheckShape(input.shape, "input");
  Shape out;
  for (int64_t d : Normalized()) out.push_back(input.shape[d]);
  return out;
}

}  // namespace ai3
