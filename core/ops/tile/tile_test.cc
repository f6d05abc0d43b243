// tile and expand against a naive index mapping in double over a grid of
// shapes (repeats of 0, 1 and more, fewer and more repeats than
// dimensions, expand of size-1 and missing dims, -1 entries, rank 0, empty
// tensors, a large output that threads), both dtypes; then the errors.
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/layer.h"
#include "core/ops/tile/tile.h"
#include "core/testing/op_test.h"
#include "core/testing/reference.h"

namespace ai3 {
namespace {

using testing::Check;
using testing::ExpectError;

template <class Attrs, typename T>
void Case(const Attrs& attrs, const Shape& in, const Shape& want_shape,
          const std::string& label) {
  const DType dtype = testing::DTypeOf<T>();
  auto x = testing::Cast<T>(testing::RandomVector(NumElements(in), 5));
  Layer<Attrs> layer("t", attrs, {}, "direct");
  Tensor xt{x.data(), dtype, in};
  const Shape out = layer.OutputShape(xt);
  const std::string desc = std::string(Attrs::kOp) + " " + Name(dtype) + " " +
                           ToString(in) + " " + label;
  Check(out == want_shape, desc + ": shape " + ToString(out));
  if (out != want_shape) return;
  std::vector<T> y(NumElements(out), T(-42));
  layer.Forward(xt, Tensor{y.data(), dtype, out});
  const Shape a = AlignedInputShape(in, out.size());
  for (int64_t i = 0; i < NumElements(out); ++i) {
    int64_t rest = i, src = 0, stride = 1;
    for (int d = static_cast<int>(out.size()) - 1; d >= 0; --d) {
      src += (rest % out[d]) % a[d] * stride;
      rest /= out[d];
      stride *= a[d];
    }
    if (y[i] != x[src]) {
      Check(false, desc + ": element " + std::to_string(i));
      return;
    }
  }
}

template <class Attrs>
void Both(const Attrs& attrs, const Shape& in, const Shape& want,
          const std::string& label, int* ran) {
  Case<Attrs, float>(attrs, in, want, label);
  Case<Attrs, double>(attrs, in, want, label);
  *ran += 2;
}

}  // namespace

int Main() {
  int ran = 0;
  struct TileCase {
    Shape in;
    std::vector<int64_t> repeats;
    Shape out;
  };
  for (const TileCase& c : std::vector<TileCase>{
           {{2, 3}, {1, 1}, {2, 3}},
           {{2, 3}, {2, 3}, {4, 9}},
           {{2, 3}, {3}, {2, 9}},
           {{2, 3}, {2, 1, 2}, {2, 2, 6}},
           {{2, 3}, {0, 2}, {0, 6}},
           {{}, {3}, {3}},
           {{}, {}, {}},
           {{1, 3, 1, 4}, {2, 1, 5, 3}, {2, 3, 5, 12}},
           {{2, 0, 3}, {2, 2, 2}, {4, 0, 6}},
           {{4, 1}, {1, 9000}, {4, 9000}},
       }) {
    TileAttrs a;
    a.repeats = c.repeats;
    Both(a, c.in, c.out, "repeats " + ToString(c.repeats), &ran);
  }
  struct ExpandCase {
    Shape in;
    std::vector<int64_t> shape;
    Shape out;
  };
  for (const ExpandCase& c : std::vector<ExpandCase>{
           {{3, 1}, {3, 4}, {3, 4}},
           {{3, 1}, {2, 3, 4}, {2, 3, 4}},
           {{3}, {2, 1}, {2, 3}},
           {{2, 3}, {1}, {2, 3}},
           {{1, 3, 1}, {-1, -1, 5}, {1, 3, 5}},
           {{}, {2, 2}, {2, 2}},
           {{1, 4}, {0, 4}, {0, 4}},
           {{1, 64, 1, 1}, {8, 64, 14, 14}, {8, 64, 14, 14}},
       }) {
    ExpandAttrs a;
    a.shape = c.shape;
    Both(a, c.in, c.out, "shape " + ToString(c.shape), &ran);
  }
  std::vector<float> x(6);
  Tensor xt{x.data(), DType::kFloat32, {2, 3}};
  TileAttrs neg;
  neg.repeats = {1, -2};
  ExpectError("negative repeats", ErrorKind::kInvalidArgument,
              "tile layer 'l': repeats must be >= 0, got (1, -2)",
              [&] { Layer<TileAttrs>("l", neg, {}, "direct"); });
  ExpandAttrs bad;
  bad.shape = {4, 3, 2};
  Layer<ExpandAttrs> expand("e", bad, {}, "direct");
  ExpectError("not broadcastable", ErrorKind::kShape,
              "expand layer 'e' (direct): input (2, 3) and shape (4, 3, 2) do "
              "not broadcast",
              [&] { expand.OutputShape(xt); });
  ExpandAttrs missing;
  missing.shape = {-1, -1, -1};
  Layer<ExpandAttrs> minus("e", missing, {}, "direct");
  ExpectError("-1 outside", ErrorKind::kShape,
              "has -1 at a dimension the input (2, 3) does not have",
              [&] { minus.OutputShape(xt); });
  return testing::Summary("tile", ran);
}

}  // namespace ai3
