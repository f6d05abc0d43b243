// permute against a naive index computation over every permutation of
// ranks 0 to 4 (several shapes, size-1 dims, sizes past one tile, negative
// dims), float32 and float64; errors for non-permutations and rank
// mismatches.
#include <algorithm>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/layer.h"
#include "core/ops/permute/permute.h"
#include "core/testing/op_test.h"
#include "core/testing/reference.h"

namespace ai3 {
namespace {

using testing::Check;
using testing::ExpectError;

template <typename T>
void Case(const Shape& in, std::vector<int64_t> perm, bool negative) {
  const DType dtype = sizeof(T) == 8 ? DType::kFloat64 : DType::kFloat32;
  const int r = static_cast<int>(in.size());
  auto x = testing::Cast<T>(testing::RandomVector(NumElements(in), 2));
  PermuteAttrs a;
  a.dims = perm;
  if (negative) {
    for (int64_t& d : a.dims) d -= r;
  }
  Layer<PermuteAttrs> layer("p", a, {}, "direct");
  Tensor xt{x.data(), dtype, in};
  Shape out = layer.OutputShape(xt);
  std::vector<T> y(x.size(), T(-7));
  layer.Forward(xt, Tensor{y.data(), dtype, out});
  std::vector<int64_t> in_stride(r, 1);
  for (int d = r - 2; d >= 0; --d) in_stride[d] = in_stride[d + 1] * in[d + 1];
  bool ok = true;
  for (int64_t i = 0; i < static_cast<int64_t>(y.size()); ++i) {
    int64_t rest = i, src = 0;
    for (int d = r - 1; d >= 0; --d) {
      src += (rest % out[d]) * in_stride[perm[d]];
      rest /= out[d];
    }
    ok &= y[i] == x[src];
  }
  std::string desc = "permute " + ToString(in) + " by";
  for (int64_t d : a.dims) desc += " " + std::to_string(d);
  Check(ok, desc);
}

}  // namespace

int Main() {
  const std::vector<Shape> shapes = {
      {},           {5},           {3, 4},    {1, 40, 70}, {2, 3, 4},
      {2, 3, 1, 5}, {2, 64, 7, 9}, {0, 3, 2}, {1, 1, 1},   {3, 1, 33, 65},
  };
  int ran = 0;
  for (const Shape& s : shapes) {
    std::vector<int64_t> perm(s.size());
    std::iota(perm.begin(), perm.end(), 0);
    do {
      for (int neg = 0; neg < 2; ++neg) {
        Case<float>(s, perm, neg);
        Case<double>(s, perm, neg);
        ran += 2;
      }
    } while (std::next_permutation(perm.begin(), perm.end()));
  }
  std::vector<float> x(6);
  Tensor xt{x.data(), DType::kFloat32, {2, 3}};
  PermuteAttrs a;
  a.dims = {0, 0};
  ExpectError("repeat", ErrorKind::kInvalidArgument,
              "dims [0, 0] is not a permutation of the 2 dimensions",
              [&] { Layer<PermuteAttrs>("p", a, {}, "direct"); });
  a.dims = {0, 2};
  ExpectError("range", ErrorKind::kInvalidArgument, "is not a permutation",
              [&] { Layer<PermuteAttrs>("p", a, {}, "direct"); });
  a.dims = {2, 0, 1};
  Layer<PermuteAttrs> layer("p", a, {}, "direct");
  ExpectError("rank", ErrorKind::kShape,
              "permute layer 'p' (direct): dims [2, 0, 1] permute 3 "
              "dimensions but the input (2, 3) has rank 2",
              [&] { layer.OutputShape(xt); });
  return testing::Summary("permute", ran);
}

}  // namespace ai3
