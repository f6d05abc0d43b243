// where against cond ? x : y element by element over broadcast shape
// triples (equal, scalar branches, a (B, 1, 1, S) mask over (B, H, L, S)
// scores, rank differences, empty), for float32, float64, int64 and bool
// branches, with three inputs and with a constant x (masked_fill) or y;
// then the errors (a non-bool condition, branches of two dtypes, shapes
// that do not broadcast).
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "core/errors.h"
#include "core/layer.h"
#include "core/ops/where/where.h"
#include "core/testing/op_test.h"
#include "core/testing/reference.h"

namespace ai3 {
namespace {

using testing::Check;
using testing::ExpectError;
using testing::Store;

// constant: 0 none, 1 x is the constant, 2 y is.
template <typename T>
void Case(const Shape& sc, const Shape& sx, const Shape& sy, int constant) {
  const DType dtype = testing::DTypeOf<T>();
  std::vector<char> c(NumElements(sc));
  for (size_t i = 0; i < c.size(); ++i) c[i] = (i * 5 + 1) % 3 == 0;
  std::vector<Store<T>> x(NumElements(sx)), y(NumElements(sy));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<T>(i % 7 + 1);
  for (size_t i = 0; i < y.size(); ++i) y[i] = static_cast<T>(-(i % 4));
  Tensor ct{c.data(), DType::kBool, sc};
  Tensor xt{x.data(), dtype, sx}, yt{y.data(), dtype, sy};
  WhereAttrs a;
  std::vector<Tensor> params, inputs = {ct};
  if (constant == 0) {
    inputs.push_back(xt);
    inputs.push_back(yt);
  } else {
    a.has_other = true;
    a.other_is_x = constant == 1;
    const Tensor& k = constant == 1 ? xt : yt;
    a.other_shape = k.shape;
    a.other_dtype = dtype;
    params = {k};
    inputs.push_back(constant == 1 ? yt : xt);
  }
  MultiLayer<WhereAttrs> layer("w", a, params, "direct");
  const Shape out = layer.OutputShape(inputs);
  Check(layer.OutputDType(inputs) == dtype, "where keeps the branches' dtype");
  std::vector<Store<T>> z(NumElements(out));
  layer.Forward(inputs, Tensor{z.data(), dtype, out});
  bool ok = true;
  for (int64_t i = 0; i < NumElements(out); ++i) {
    const T want = c[testing::BroadcastSourceIndex(i, out, sc)]
                       ? x[testing::BroadcastSourceIndex(i, out, sx)]
                       : y[testing::BroadcastSourceIndex(i, out, sy)];
    ok &= z[i] == want;
  }
  Check(ok, std::string("where ") + Name(dtype) + " " + ToString(sc) + " " +
                ToString(sx) + " " + ToString(sy) + " constant " +
                std::to_string(constant));
}

template <typename T>
int Grid() {
  int ran = 0;
  const std::vector<std::vector<Shape>> shapes = {
      {{6}, {6}, {6}},
      {{6}, {}, {6}},
      {{2, 3}, {2, 3}, {}},
      {{}, {4}, {4}},
      {{2, 1, 1, 9}, {2, 4, 9, 9}, {}},
      {{1, 1, 9, 9}, {}, {2, 4, 9, 9}},
      {{3, 1}, {1, 5}, {5}},
      {{2, 0}, {2, 1}, {1}},
      {{8, 1, 64, 64}, {8, 12, 64, 64}, {1}}};
  for (const auto& s : shapes) {
    for (int constant : {0, 1, 2}) {
      Case<T>(s[0], s[1], s[2], constant);
      ++ran;
    }
  }
  return ran;
}

}  // namespace

int Main() {
  int ran = Grid<float>() + Grid<double>() + Grid<int64_t>() + Grid<bool>();
  std::vector<float> f(4);
  std::vector<double> d(4);
  std::vector<char> c(4);
  Tensor ft{f.data(), DType::kFloat32, {4}};
  Tensor dt{d.data(), DType::kFloat64, {4}};
  Tensor ct{c.data(), DType::kBool, {4}};
  MultiLayer<WhereAttrs> layer("mask", WhereAttrs{}, {}, "direct");
  ExpectError("float condition", ErrorKind::kDType,
              "where layer 'mask' (direct): the condition (input 0) is "
              "float32; where takes a bool condition",
              [&] { layer.OutputShape({ft, ft, ft}); });
  ExpectError("mixed branches", ErrorKind::kDType,
              "input 1 is float32 but input 2 is float64",
              [&] { layer.OutputShape({ct, ft, dt}); });
  Tensor wide{f.data(), DType::kFloat32, {2, 2}};
  ExpectError("broadcast", ErrorKind::kShape, "do not broadcast", [&] {
    layer.OutputShape({Tensor{c.data(), DType::kBool, {3}}, wide, wide});
  });
  return testing::Summary("where", ran);
}

}  // namespace ai3
