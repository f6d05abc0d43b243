// roll against a naive index computation over shapes, single and several
// axes (negative axes, shifts beyond the size, negative shifts, an axis
// given twice), both dtypes; then the errors.
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/layer.h"
#include "core/ops/roll/roll.h"
#include "core/testing/op_test.h"
#include "core/testing/reference.h"

namespace ai3 {
namespace {

using testing::Check;
using testing::ExpectError;

template <typename T>
void Case(const Shape& in, const std::vector<int64_t>& shifts,
          const std::vector<int64_t>& axes) {
  const DType dtype = sizeof(T) == 8 ? DType::kFloat64 : DType::kFloat32;
  auto x = testing::Cast<T>(testing::RandomVector(NumElements(in), 3));
  RollAttrs a{shifts, axes};
  Layer<RollAttrs> layer("r", a, {}, "direct");
  Tensor xt{x.data(), dtype, in};
  std::vector<T> y(x.size(), T(-1));
  layer.Forward(xt, Tensor{y.data(), dtype, layer.OutputShape(xt)});
  const int rank = static_cast<int>(in.size());
  bool ok = true;
  for (int64_t i = 0; i < NumElements(in); ++i) {
    // Output element i's coordinates; the source is each rolled coordinate
    // moved back by every shift of its axis.
    std::vector<int64_t> c(rank);
    int64_t rest = i;
    for (int d = rank - 1; d >= 0; --d) {
      c[d] = rest % in[d];
      rest /= in[d];
    }
    for (size_t k = 0; k < axes.size(); ++k) {
      const int d = static_cast<int>(axes[k] < 0 ? axes[k] + rank : axes[k]);
      // The shift reduced first: c - kMin would wrap.
      c[d] = ((c[d] - shifts[k] % in[d]) % in[d] + in[d]) % in[d];
    }
    int64_t src = 0;
    for (int d = 0; d < rank; ++d) src = src * in[d] + c[d];
    ok &= y[i] == x[src];
  }
  std::string desc = "roll " + ToString(in);
  for (size_t k = 0; k < axes.size(); ++k) {
    desc += " " + std::to_string(shifts[k]) + "@" + std::to_string(axes[k]);
  }
  Check(ok, desc);
}

}  // namespace

int Main() {
  int ran = 0;
  auto both = [&](const Shape& s, std::vector<int64_t> sh,
                  std::vector<int64_t> ax) {
    Case<float>(s, sh, ax);
    Case<double>(s, sh, ax);
    ran += 2;
  };
  both({7}, {3}, {0});
  both({7}, {-10}, {-1});
  both({3, 5}, {1}, {0});
  both({3, 5}, {2}, {1});
  both({3, 5}, {1, 2}, {0, 1});
  both({2, 8, 8, 4}, {-3, -3}, {1, 2});
  both({2, 8, 8, 4}, {3, 3}, {1, 2});
  both({2, 3, 4}, {1, 1}, {1, 1});
  both({2, 3, 4}, {0}, {2});
  both({2, 0, 4}, {1}, {1});
  both({4, 56, 56, 32}, {-3, -3}, {1, 2});
  // Shifts near the int64 limits, twice on one axis: the running sum
  // wrapped before it was reduced (found by tests/fuzz).
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  both({5, 3}, {kMax, kMax}, {0, 0});
  both({5, 3}, {kMin, kMin, kMax}, {0, -2, 1});
  std::vector<float> x(6);
  Tensor xt{x.data(), DType::kFloat32, {2, 3}};
  ExpectError(
      "lengths", ErrorKind::kInvalidArgument,
      "shifts and axes must have one length >= 1, got 2 shifts and 1 "
      "axes",
      [&] { Layer<RollAttrs>("r", RollAttrs{{1, 2}, {0}}, {}, "direct"); });
  Layer<RollAttrs> layer("r", RollAttrs{{1}, {-3}}, {}, "direct");
  ExpectError("axis", ErrorKind::kShape,
              "roll layer 'r' (direct): axis -3 is out of range",
              [&] { layer.OutputShape(xt); });
  return testing::Summary("roll", ran);
}

}  // namespace ai3
