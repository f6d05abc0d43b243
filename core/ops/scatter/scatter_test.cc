// scatter_elements and scatter_nd against naive references over shapes,
// axes (negative ones), negative and repeated indices, every reduction, in
// float32, float64, int64 and (reduction none) bool, with the indices as
// an input and as the constant weight; then the errors.
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/layer.h"
#include "core/ops/scatter/scatter.h"
#include "core/testing/op_test.h"
#include "core/testing/reference.h"

namespace ai3 {
namespace {

using testing::Check;
using testing::DTypeOf;
using testing::ExpectError;

constexpr ScatterReduction kReductions[] = {
    ScatterReduction::kNone, ScatterReduction::kAdd, ScatterReduction::kMul,
    ScatterReduction::kMax, ScatterReduction::kMin};

template <typename T>
T Combine(ScatterReduction r, T a, T u) {
  switch (r) {
    case ScatterReduction::kNone:
      return u;
    case ScatterReduction::kAdd:
      return a + u;
    case ScatterReduction::kMul:
      return a * u;
    case ScatterReduction::kMax:
      return u > a ? u : a;
    case ScatterReduction::kMin:
      return u < a ? u : a;
  }
  return a;
}

template <typename T>
std::vector<T> Values(int64_t n, int seed) {
  std::vector<T> v;
  for (double x : testing::RandomVector(n, seed)) {
    v.push_back(static_cast<T>(std::round(x * 3)));
  }
  return v;
}

// Indices in [-size, size), with repeats (a few values for many slots).
std::vector<int64_t> Indices(int64_t n, int64_t size, int seed) {
  std::vector<int64_t> v;
  for (double x : testing::RandomVector(n, seed)) {
    v.push_back(static_cast<int64_t>(std::floor((x + 1) / 2 * 2 * size)) %
                    (2 * size) -
                size);
  }
  return v;
}

// The layer on (data, indices, updates): indices an input, or the
// constant `indices` weight when `constant`.
template <class Attrs, typename T>
std::vector<T> Run(Attrs a, const Shape& ds, const std::vector<T>& data,
                   const Shape& is, std::vector<int64_t> idx, const Shape& us,
                   const std::vector<T>& upd, bool constant) {
  Tensor it{idx.data(), DType::kInt64, is};
  std::vector<Tensor> params;
  if (constant) {
    a.has_other = true;
    a.other_shape = is;
    params.push_back(it);
  }
  MultiLayer<Attrs> layer("s", a, params, "direct");
  std::vector<T> d = data, u = upd;
  std::vector<Tensor> inputs{Tensor{d.data(), DTypeOf<T>(), ds}};
  if (!constant) inputs.push_back(it);
  inputs.push_back(Tensor{u.data(), DTypeOf<T>(), us});
  std::vector<T> y(data.size(), T{});
  Check(layer.OutputShape(inputs) == ds, "output shape");
  layer.Forward(inputs, Tensor{y.data(), DTypeOf<T>(), ds});
  return y;
}

template <typename T>
void ElementsCase(const Shape& ds, int64_t axis, const Shape& is,
                  ScatterReduction r, bool constant) {
  const int rank = static_cast<int>(ds.size());
  const int64_t a = axis < 0 ? axis + rank : axis;
  const auto data = Values<T>(NumElements(ds), 3);
  const auto upd = Values<T>(NumElements(is), 5);
  const auto idx = Indices(NumElements(is), ds[a], 7);
  ScatterElementsAttrs attrs;
  attrs.axis = axis;
  attrs.reduction = r;
  const auto y = Run(attrs, ds, data, is, idx, is, upd, constant);
  std::vector<T> want = data;
  for (int64_t j = 0; j < NumElements(is); ++j) {
    int64_t rest = j, offset = 0, stride = 1;
    for (int d = rank - 1; d >= 0; --d) {
      const int64_t c = rest % is[d];
      rest /= is[d];
      offset += (d == a ? (idx[j] + ds[a]) % ds[a] : c) * stride;
      stride *= ds[d];
    }
    want[offset] = Combine(r, want[offset], upd[j]);
  }
  Check(y == want, "scatter_elements " + ToString(ds) + " axis " +
                       std::to_string(axis) + " indices " + ToString(is) +
                       " reduction " + std::to_string(static_cast<int>(r)) +
                       (constant ? " constant" : "") + " " +
                       Name(DTypeOf<T>()));
}

template <typename T>
void NdCase(const Shape& ds, const Shape& is, ScatterReduction r,
            bool constant) {
  const int64_t k = is.back();
  const int64_t count = NumElements(is) / k;
  int64_t run = 1;
  for (size_t d = k; d < ds.size(); ++d) run *= ds[d];
  Shape us(is.begin(), is.end() - 1);
  us.insert(us.end(), ds.begin() + k, ds.end());
  const auto data = Values<T>(NumElements(ds), 11);
  const auto upd = Values<T>(NumElements(us), 13);
  std::vector<int64_t> idx(NumElements(is));
  for (int64_t j = 0; j < NumElements(is); ++j) {
    idx[j] = Indices(1, ds[j % k], 17 + static_cast<int>(j))[0];
  }
  ScatterNdAttrs attrs;
  attrs.reduction = r;
  const auto y = Run(attrs, ds, data, is, idx, us, upd, constant);
  std::vector<T> want = data;
  for (int64_t j = 0; j < count; ++j) {
    int64_t offset = 0;
    for (int64_t d = 0; d < k; ++d) {
      offset = offset * ds[d] + (idx[j * k + d] + ds[d]) % ds[d];
    }
    for (int64_t i = 0; i < run; ++i) {
      want[offset * run + i] =
          Combine(r, want[offset * run + i], upd[j * run + i]);
    }
  }
  Check(y == want, "scatter_nd " + ToString(ds) + " indices " + ToString(is) +
                       " reduction " + std::to_string(static_cast<int>(r)) +
                       (constant ? " constant" : "") + " " +
                       Name(DTypeOf<T>()));
}

}  // namespace

int Main() {
  int ran = 0;
  for (bool constant : {false, true}) {
    for (ScatterReduction r : kReductions) {
      auto elements = [&](const Shape& ds, int64_t axis, const Shape& is) {
        ElementsCase<float>(ds, axis, is, r, constant);
        ElementsCase<double>(ds, axis, is, r, constant);
        ElementsCase<int64_t>(ds, axis, is, r, constant);
        ran += 3;
      };
      elements({7}, 0, {5});
      elements({3, 5}, 1, {3, 5});
      elements({3, 5}, 0, {2, 4});
      elements({2, 3, 4}, -1, {2, 2, 6});
      elements({4, 6, 8}, 1, {3, 9, 8});
      auto nd = [&](const Shape& ds, const Shape& is) {
        NdCase<float>(ds, is, r, constant);
        NdCase<double>(ds, is, r, constant);
        NdCase<int64_t>(ds, is, r, constant);
        ran += 3;
      };
      nd({8}, {4, 1});
      nd({4, 5, 6}, {3, 1});
      nd({4, 5, 6}, {2, 2});
      nd({4, 5, 6}, {2, 3, 3});
      nd({4, 5, 6}, {7, 3});
    }
  }
  // bool data (chars), replaced.
  {
    std::vector<char> data{0, 1, 0, 1}, upd{1, 1}, y(4, 0);
    std::vector<int64_t> idx{0, -2};
    ScatterElementsAttrs a;
    MultiLayer<ScatterElementsAttrs> layer("s", a, {}, "direct");
    layer.Forward({Tensor{data.data(), DType::kBool, {4}},
                   Tensor{idx.data(), DType::kInt64, {2}},
                   Tensor{upd.data(), DType::kBool, {2}}},
                  Tensor{y.data(), DType::kBool, {4}});
    Check(y == std::vector<char>{1, 1, 1, 1}, "bool scatter_elements");
    ++ran;
  }
  std::vector<float> x(6), u(2);
  std::vector<int64_t> i{0, 3};
  Tensor xt{x.data(), DType::kFloat32, {2, 3}};
  Tensor it{i.data(), DType::kInt64, {1, 2}};
  Tensor ut{u.data(), DType::kFloat32, {1, 2}};
  ScatterElementsAttrs e;
  e.axis = 1;
  MultiLayer<ScatterElementsAttrs> layer("s", e, {}, "direct");
  std::vector<float> y(6);
  ExpectError("index range", ErrorKind::kInvalidArgument,
              "index 3 (at 1 of the indices) is out of range for axis 1", [&] {
                layer.Forward({xt, it, ut},
                              Tensor{y.data(), DType::kFloat32, {2, 3}});
              });
  Tensor wrong_updates{u.data(), DType::kFloat32, {2, 1}};
  ExpectError("updates shape", ErrorKind::kShape,
              "the updates (2, 1) must have the indices' shape (1, 2)",
              [&] { layer.OutputShape({xt, it, wrong_updates}); });
  std::vector<double> ud(2);
  Tensor double_updates{ud.data(), DType::kFloat64, {1, 2}};
  ExpectError("updates dtype", ErrorKind::kDType, "updates of the data's dtype",
              [&] { layer.OutputShape({xt, it, double_updates}); });
  Tensor float_indices{x.data(), DType::kFloat32, {1, 2}};
  ExpectError("indices dtype", ErrorKind::kDType, "takes int64 indices",
              [&] { layer.OutputShape({xt, float_indices, ut}); });
  ScatterNdAttrs nd;
  MultiLayer<ScatterNdAttrs> nd_layer("s", nd, {}, "direct");
  Tensor deep{i.data(), DType::kInt64, {1, 3}};
  ExpectError("nd depth", ErrorKind::kShape,
              "must end in a dim of 1 to the data's rank (2)",
              [&] { nd_layer.OutputShape({xt, deep, ut}); });
  std::vector<int64_t> far{1, 3};
  Tensor pair{far.data(), DType::kInt64, {1, 2}};
  Tensor one{u.data(), DType::kFloat32, {1}};
  ExpectError("nd range", ErrorKind::kInvalidArgument,
              "index 3 (at 1 of the indices) is out of range for axis 1", [&] {
                nd_layer.Forward({xt, pair, one},
                                 Tensor{y.data(), DType::kFloat32, {2, 3}});
              });
  return testing::Summary("scatter_elements and scatter_nd", ran);
}

}  // namespace ai3
