// gather against a naive index computation over data shapes, axes
// (negative too), index shapes (scalar, 1-D, 2-D, empty) and negative
// indices, for float32, float64, int64 and bool data, both the two-input
// form and the constant table (embedding); then the errors (an index out
// of range raises and writes nothing, float indices are refused), and a
// Model reading int64 token ids and float features at once.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "core/errors.h"
#include "core/graph.h"
#include "core/layer.h"
#include "core/ops/gather/gather.h"
#include "core/ops/relu/relu.h"
#include "core/testing/op_test.h"
#include "core/testing/reference.h"

namespace ai3 {
namespace {

using testing::Check;
using testing::ExpectError;
using testing::Store;

template <typename T>
std::vector<Store<T>> Values(int64_t n) {
  std::vector<Store<T>> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<T>((i * 7 + 3) % 11);
  return v;
}

// Gathers data of shape `in` along `axis` by `index` (shape `ishape`), as
// two inputs and (axis 0 only in frontends, any here) as a constant table.
template <typename T>
void Case(const Shape& in, int64_t axis, const Shape& ishape,
          const std::vector<int64_t>& index, bool table) {
  const DType dtype = testing::DTypeOf<T>();
  std::vector<Store<T>> x = Values<T>(NumElements(in));
  Tensor xt{x.data(), dtype, in};
  Tensor it{const_cast<int64_t*>(index.data()), DType::kInt64, ishape};
  GatherAttrs a;
  a.axis = axis;
  std::vector<Tensor> params, inputs;
  if (table) {
    a.has_other = true;
    a.other_shape = in;
    a.other_dtype = dtype;
    params = {xt};
    inputs = {it};
  } else {
    inputs = {xt, it};
  }
  MultiLayer<GatherAttrs> layer("g", a, params, "direct");
  const Shape out = layer.OutputShape(inputs);
  Check(layer.OutputDType(inputs) == dtype, "gather keeps the data's dtype");
  std::vector<Store<T>> y(NumElements(out), T(0));
  layer.Forward(inputs, Tensor{y.data(), dtype, out});
  const int64_t rank = static_cast<int64_t>(in.size());
  const int64_t ax = axis < 0 ? axis + rank : axis;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < ax; ++d) outer *= in[d];
  for (int64_t d = ax + 1; d < rank; ++d) inner *= in[d];
  const int64_t count = NumElements(ishape), size = in[ax];
  bool ok = static_cast<int64_t>(y.size()) == outer * count * inner;
  for (int64_t o = 0; ok && o < outer; ++o) {
    for (int64_t j = 0; j < count; ++j) {
      const int64_t i = index[j] < 0 ? index[j] + size : index[j];
      for (int64_t k = 0; k < inner; ++k) {
        ok &= y[(o * count + j) * inner + k] == x[(o * size + i) * inner + k];
      }
    }
  }
  Check(ok, std::string("gather ") + Name(dtype) + " " + ToString(in) +
                " axis " + std::to_string(axis) + " by " + ToString(ishape) +
                (table ? " (table)" : ""));
}

template <typename T>
int Grid() {
  int ran = 0;
  for (bool table : {false, true}) {
    Case<T>({5}, 0, {3}, {4, 0, -1}, table);
    Case<T>({5}, 0, {}, {-5}, table);
    Case<T>({6, 4}, 0, {2, 3}, {0, 5, -2, 1, 1, 3}, table);
    Case<T>({6, 4}, 1, {2}, {3, -4}, table);
    Case<T>({6, 4}, -1, {0}, {}, table);
    Case<T>({2, 3, 4}, 1, {4}, {2, 2, -3, 0}, table);
    Case<T>({2, 3, 4}, -2, {2, 2}, {0, 1, 2, -1}, table);
    Case<T>({2, 3, 4}, 2, {}, {3}, table);
    // An embedding: a (vocab, hidden) table gathered by (batch, seq) ids,
    // large enough to split over threads.
    std::vector<int64_t> ids(4 * 128);
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = (i * 37) % 500;
    Case<T>({500, 64}, 0, {4, 128}, ids, table);
    ran += 9;
  }
  return ran;
}

void Errors() {
  std::vector<float> x(12);
  std::vector<int64_t> bad = {0, 3};
  Tensor xt{x.data(), DType::kFloat32, {3, 4}};
  Tensor it{bad.data(), DType::kInt64, {2}};
  MultiLayer<GatherAttrs> layer("emb", GatherAttrs{}, {}, "direct");
  std::vector<float> y(8, 7.0f);
  ExpectError("index out of range", ErrorKind::kInvalidArgument,
              "gather layer 'emb' (direct): index 3 (at 1 of the indices) is "
              "out of range for axis 0 of size 3",
              [&] {
                layer.Forward({xt, it},
                              Tensor{y.data(), DType::kFloat32, {2, 4}});
              });
  bool untouched = true;
  for (float v : y) untouched &= v == 7.0f;
  Check(untouched, "an index out of range writes nothing");
  bad = {-4};
  ExpectError("negative index out of range", ErrorKind::kInvalidArgument,
              "index -4", [&] {
                layer.Forward({xt, Tensor{bad.data(), DType::kInt64, {1}}},
                              Tensor{y.data(), DType::kFloat32, {1, 4}});
              });
  std::vector<float> fidx = {0, 1};
  ExpectError(
      "float indices", ErrorKind::kDType,
      "gather layer 'emb' (direct): the indices are float32; gather "
      "takes int64 indices",
      [&] {
        layer.OutputShape({xt, Tensor{fidx.data(), DType::kFloat32, {2}}});
      });
  GatherAttrs axis2;
  axis2.axis = 2;
  MultiLayer<GatherAttrs> bad_axis("g2", axis2, {}, "direct");
  ExpectError("axis", ErrorKind::kShape, "axis 2 is out of range",
              [&] { bad_axis.OutputShape({xt, it}); });
}

// int64 token ids and a float input in one Model: ids -> embedding (float)
// -> add the features -> relu; a relu straight on the ids is refused
// naming the layer.
void ModelOfMixedInputs() {
  std::vector<float> table = Values<float>(10 * 4);
  Tensor tt{table.data(), DType::kFloat32, {10, 4}};
  GatherAttrs emb;
  emb.has_other = true;
  emb.other_shape = {10, 4};
  auto gather = std::make_shared<MultiLayer<GatherAttrs>>(
      "wte", emb, std::vector<Tensor>{tt}, "direct");
  auto relu = std::make_shared<Layer<ReluAttrs>>(
      "act", ReluAttrs{}, std::vector<Tensor>{}, "direct");
  Model m;
  m.SetInputCount(2);
  const int g = m.AddLayer(gather, Model::InputId(0));
  const int s = m.AddAdd({g, Model::InputId(1)}, "sum");
  m.AddLayer(relu, s);
  std::vector<int64_t> ids = {3, -1, 0};
  std::vector<float> feats(12, -2.0f), y(12);
  const std::vector<Tensor> inputs = {
      Tensor{ids.data(), DType::kInt64, {3}},
      Tensor{feats.data(), DType::kFloat32, {3, 4}}};
  const std::vector<Shape> shapes = m.Prepare(inputs);
  Check(shapes[0] == Shape{3, 4}, "mixed model: output shape");
  Check(m.OutputDTypes()[0] == DType::kFloat32, "mixed model: output dtype");
  m.Forward(inputs, {Tensor{y.data(), DType::kFloat32, {3, 4}}});
  bool ok = true;
  for (int j = 0; j < 3; ++j) {
    const int64_t row = ids[j] < 0 ? ids[j] + 10 : ids[j];
    for (int k = 0; k < 4; ++k) {
      const float want = std::max(table[row * 4 + k] - 2.0f, 0.0f);
      ok &= y[j * 4 + k] == want;
    }
  }
  Check(ok, "mixed model: embedding + features, relu");
  Model r;
  r.AddLayer(relu, Model::kInput);
  ExpectError("relu of int64", ErrorKind::kDType,
              "relu layer 'act' (direct): input is int64; relu takes float32 "
              "or float64",
              [&] { r.OutputShapes({{3}}, {DType::kInt64}); });
}

}  // namespace

int Main() {
  int ran = Grid<float>() + Grid<double>() + Grid<int64_t>();
  ran += Grid<bool>();
  Errors();
  ModelOfMixedInputs();
  return testing::Summary("gather", ran);
}

}  // namespace ai3
