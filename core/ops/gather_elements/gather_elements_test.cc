// gather_elements against a naive coordinate computation over shapes, axes
// (negative too), indices smaller than the data on other axes, negative
// indices, for float32, float64, int64 and bool data, as two inputs and
// with the data constant; then the errors (an index out of range raises
// and writes nothing; rank, size and dtype mismatches are refused).
#include <cstdint>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/layer.h"
#include "core/ops/gather_elements/gather_elements.h"
#include "core/testing/op_test.h"
#include "core/testing/reference.h"

namespace ai3 {
namespace {

using testing::Check;
using testing::ExpectError;
using testing::Store;

// Coordinates of flat element j of `shape`.
std::vector<int64_t> Coords(int64_t j, const Shape& shape) {
  std::vector<int64_t> c(shape.size());
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    c[d] = j % shape[d];
    j /= shape[d];
  }
  return c;
}

template <typename T>
void Case(const Shape& in, int64_t axis, const Shape& ishape, bool constant) {
  const DType dtype = testing::DTypeOf<T>();
  std::vector<Store<T>> x(NumElements(in));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<T>((i * 7 + 3) % 13);
  const int64_t rank = static_cast<int64_t>(in.size());
  const int64_t ax = axis < 0 ? axis + rank : axis;
  std::vector<int64_t> index(NumElements(ishape));
  for (size_t j = 0; j < index.size(); ++j) {
    // Every index in [-size, size), negative ones included.
    index[j] = static_cast<int64_t>((j * 5 + 1) % (2 * in[ax])) - in[ax];
  }
  Tensor xt{x.data(), dtype, in};
  Tensor it{index.data(), DType::kInt64, ishape};
  GatherElementsAttrs a;
  a.axis = axis;
  std::vector<Tensor> params, inputs;
  if (constant) {
    a.has_other = true;
    a.other_shape = in;
    a.other_dtype = dtype;
    params = {xt};
    inputs = {it};
  } else {
    inputs = {xt, it};
  }
  MultiLayer<GatherElementsAttrs> layer("g", a, params, "direct");
  const Shape out = layer.OutputShape(inputs);
  bool ok = out == ishape && layer.OutputDType(inputs) == dtype;
  std::vector<Store<T>> y(NumElements(out), T(0));
  layer.Forward(inputs, Tensor{y.data(), dtype, out});
  for (int64_t j = 0; ok && j < NumElements(ishape); ++j) {
    std::vector<int64_t> c = Coords(j, ishape);
    c[ax] = index[j] < 0 ? index[j] + in[ax] : index[j];
    int64_t src = 0;
    for (int64_t d = 0; d < rank; ++d) src = src * in[d] + c[d];
    ok &= y[j] == x[src];
  }
  Check(ok, std::string("gather_elements ") + Name(dtype) + " " + ToString(in) +
                " axis " + std::to_string(axis) + " by " + ToString(ishape) +
                (constant ? " (constant data)" : ""));
}

template <typename T>
int All() {
  int ran = 0;
  for (bool constant : {false, true}) {
    Case<T>({7}, 0, {7}, constant);
    Case<T>({7}, 0, {3}, constant);
    Case<T>({3, 5}, 0, {3, 5}, constant);
    Case<T>({3, 5}, 1, {2, 4}, constant);
    Case<T>({3, 5}, -1, {3, 9}, constant);  // longer than the data on the axis
    Case<T>({2, 3, 4}, 1, {2, 2, 4}, constant);
    Case<T>({2, 3, 4}, -3, {1, 3, 2}, constant);
    Case<T>({2, 0, 4}, 0, {1, 0, 4}, constant);
    Case<T>({64, 600}, 1, {64, 600}, constant);  // split over threads
    ran += 9;
  }
  return ran;
}

}  // namespace

int Main() {
  int ran = All<float>() + All<double>() + All<int64_t>() + All<bool>();
  std::vector<float> x(6, 1.0f);
  Tensor xt{x.data(), DType::kFloat32, {2, 3}};
  GatherElementsAttrs a;
  a.axis = 1;
  MultiLayer<GatherElementsAttrs> layer("g", a, {}, "direct");
  std::vector<int64_t> far = {0, 1, 3, 0};
  Tensor it{far.data(), DType::kInt64, {2, 2}};
  std::vector<float> y(4, -1.0f);
  ExpectError("range", ErrorKind::kInvalidArgument,
              "index 3 (at 2 of the indices) is out of range for axis 1", [&] {
                layer.Forward({xt, it},
                              Tensor{y.data(), DType::kFloat32, {2, 2}});
              });
  Check(y == std::vector<float>(4, -1.0f),
        "an index out of range writes nothing");
  std::vector<int64_t> flat = {0, 1};
  Tensor rank1{flat.data(), DType::kInt64, {2}};
  ExpectError("rank", ErrorKind::kShape, "must have the rank of the data",
              [&] { layer.OutputShape({xt, rank1}); });
  std::vector<int64_t> tall(6);
  Tensor big{tall.data(), DType::kInt64, {3, 2}};
  ExpectError("size", ErrorKind::kShape,
              "are larger than the data (2, 3) on axis 0",
              [&] { layer.OutputShape({xt, big}); });
  std::vector<float> fidx(4);
  Tensor ft{fidx.data(), DType::kFloat32, {2, 2}};
  ExpectError("dtype", ErrorKind::kDType, "gather_elements takes int64 indices",
              [&] { layer.OutputShape({xt, ft}); });
  return testing::Summary("gather_elements", ran);
}

}  // namespace ai3
