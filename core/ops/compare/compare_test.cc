// The comparisons and logical ops against the C++ operators over
// broadcast shape pairs (equal, scalar, row and column broadcasts, rank
// differences, empty), for float32, float64, int64 and bool operands, both
// two inputs and a constant operand; NaN compares false; logical_not; then
// the errors (mixed dtypes, shapes that do not broadcast).
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "core/errors.h"
#include "core/layer.h"
#include "core/ops/compare/compare.h"
#include "core/testing/op_test.h"
#include "core/testing/reference.h"

namespace ai3 {
namespace {

using testing::Check;
using testing::ExpectError;
using testing::Store;

template <typename T>
std::vector<Store<T>> Values(int64_t n, int seed) {
  std::vector<Store<T>> v(n);
  for (int64_t i = 0; i < n; ++i) {
    v[i] = static_cast<T>((i * (3 + seed) + seed) % 5 - 2);
  }
  if constexpr (std::is_floating_point_v<T>) {
    if (n > 2) v[2] = std::nan("");
  }
  return v;
}

bool Reference(CompareOp op, double a, double b) {
  switch (op) {
    case CompareOp::kEqual:
      return a == b;
    case CompareOp::kLess:
      return a < b;
    case CompareOp::kGreater:
      return a > b;
    case CompareOp::kLessEqual:
      return a <= b;
    case CompareOp::kGreaterEqual:
      return a >= b;
    case CompareOp::kAnd:
      return a != 0 && b != 0;
    case CompareOp::kOr:
      return a != 0 || b != 0;
    case CompareOp::kXor:
      return (a != 0) != (b != 0);
  }
  return false;
}

template <class Attrs, typename T>
void Case(const Shape& sa, const Shape& sb, bool constant) {
  const DType dtype = testing::DTypeOf<T>();
  std::vector<Store<T>> a = Values<T>(NumElements(sa), 1);
  std::vector<Store<T>> b = Values<T>(NumElements(sb), 2);
  Tensor at{a.data(), dtype, sa}, bt{b.data(), dtype, sb};
  Attrs attrs;
  std::vector<Tensor> params, inputs = {at};
  if (constant) {
    attrs.has_other = true;
    attrs.other_shape = sb;
    attrs.other_dtype = dtype;
    params = {bt};
  } else {
    inputs.push_back(bt);
  }
  MultiLayer<Attrs> layer("c", attrs, params, "direct");
  const Shape out = layer.OutputShape(inputs);
  Check(layer.OutputDType(inputs) == DType::kBool, "comparisons give bool");
  std::vector<char> y(NumElements(out) + 1, 2);
  layer.Forward(inputs, Tensor{y.data(), DType::kBool, out});
  bool ok = y.back() == 2;  // nothing past the end
  for (int64_t i = 0; i < NumElements(out); ++i) {
    const double va =
        static_cast<double>(a[testing::BroadcastSourceIndex(i, out, sa)]);
    const double vb =
        static_cast<double>(b[testing::BroadcastSourceIndex(i, out, sb)]);
    ok &= y[i] == static_cast<char>(Reference(Attrs::kCompareOp, va, vb));
  }
  Check(ok, std::string(Attrs::kOp) + " " + Name(dtype) + " " + ToString(sa) +
                " with " + ToString(sb) + (constant ? " (constant)" : ""));
}

template <class Attrs>
int Grid() {
  int ran = 0;
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{7}, {7}},       {{7}, {}},
      {{}, {5}},        {{3, 4}, {4}},
      {{3, 1}, {1, 4}}, {{2, 1, 3}, {4, 1}},
      {{2, 0, 3}, {3}}, {{64, 1, 1, 300}, {64, 1, 300, 1}}};
  for (const auto& [sa, sb] : shapes) {
    for (bool constant : {false, true}) {
      Case<Attrs, float>(sa, sb, constant);
      Case<Attrs, double>(sa, sb, constant);
      Case<Attrs, int64_t>(sa, sb, constant);
      Case<Attrs, bool>(sa, sb, constant);
      ran += 4;
    }
  }
  return ran;
}

int NotCases() {
  std::vector<double> x = {0.0, -0.0, 1.5, std::nan(""), -3};
  std::vector<char> y(x.size());
  Layer<LogicalNotAttrs> layer("n", LogicalNotAttrs{}, {}, "direct");
  Tensor xt{x.data(), DType::kFloat64, {5}};
  Check(layer.OutputDType(xt) == DType::kBool, "logical_not gives bool");
  layer.Forward(xt, Tensor{y.data(), DType::kBool, {5}});
  Check(y == std::vector<char>{1, 1, 0, 0, 0}, "logical_not float64");
  std::vector<int64_t> xi = {0, 5, -1};
  std::vector<char> yi(3);
  layer.Forward(Tensor{xi.data(), DType::kInt64, {3}},
                Tensor{yi.data(), DType::kBool, {3}});
  Check(yi == std::vector<char>{1, 0, 0}, "logical_not int64");
  return 2;
}

}  // namespace

int Main() {
  int ran = Grid<EqualAttrs>() + Grid<LessAttrs>() + Grid<GreaterAttrs>() +
            Grid<LessEqualAttrs>() + Grid<GreaterEqualAttrs>() +
            Grid<LogicalAndAttrs>() + Grid<LogicalOrAttrs>() +
            Grid<LogicalXorAttrs>();
  ran += NotCases();
  std::vector<float> a(6);
  std::vector<int64_t> b(6);
  Tensor at{a.data(), DType::kFloat32, {2, 3}};
  Tensor bt{b.data(), DType::kInt64, {2, 3}};
  MultiLayer<LessAttrs> layer("lt", LessAttrs{}, {}, "direct");
  ExpectError("mixed dtypes", ErrorKind::kDType,
              "less layer 'lt' (direct): input 0 is float32 but input 1 is "
              "int64; less compares operands of one dtype",
              [&] { layer.OutputShape({at, bt}); });
  Tensor ct{a.data(), DType::kFloat32, {3, 2}};
  ExpectError("broadcast", ErrorKind::kShape, "do not broadcast",
              [&] { layer.OutputShape({at, ct}); });
  return testing::Summary("compare", ran);
}

}  // namespace ai3
