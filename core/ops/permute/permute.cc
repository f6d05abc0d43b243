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
  if (input.size() != dims.size() ||
      input.size() > static_cast<size_t>(PermutePlan::kMaxRank)) {
    return std::nullopt;
  }
  const PermutePlan p = PermutePlanOf(input, Normalized());
  if (p.rank == 1 && p.stride[0] == 1) return 0;
  return std::nullopt;
}

PermutePlan PermutePlanOf(const Shape& in, const std::vector<int64_t>& perm) {
  const int r = static_cast<int>(in.size());
  int64_t in_stride[PermutePlan::kMaxRank];
  int64_t s = 1;
  for (int d = r - 1; d >= 0; --d) {
    in_stride[d] = s;
    s *= in[d];
  }
  PermutePlan p;
  for (int d = 0; d < r; ++d) {
    const int64_t n = in[perm[d]];
    const int64_t st = in_stride[perm[d]];
    if (n == 1) continue;
    if (p.rank > 0 && p.stride[p.rank - 1] == st * n) {
      p.size[p.rank - 1] *= n;  // contiguous with the previous dimension
      p.stride[p.rank - 1] = st;
      continue;
    }
    p.size[p.rank] = n;
    p.stride[p.rank] = st;
    ++p.rank;
  }
  if (p.rank == 0) {
    p.size[0] = 1;
    p.stride[0] = 1;
    p.rank = 1;
  }
  return p;
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
