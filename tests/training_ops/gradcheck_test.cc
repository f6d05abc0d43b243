// Every gradient op of the core against its own forward, in C++ and
// without a framework: for each case, the directional derivative the
// gradient states, <dx, v> (or <d weight, v>), must equal the central
// difference <dy, (F(x + eps v) - F(x - eps v)) / 2 eps> of F's "direct"
// forward layer, in float64, for random dy and v. Layers are built from
// the ops' declarations (core/op_schema.h), as the bindings build them, so
// a gradient is checked with exactly its forward's attributes and weights.
// (The Python test tests/training_ops/ops_backward_test.py checks the same
// ops against torch.autograd.grad, float32 included.)
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/op_schema.h"
#include "core/tensor.h"
#include "core/testing/op_test.h"
#include "core/testing/reference.h"

namespace ai3 {
namespace {

struct Case {
  std::string op;
  AttrMap attrs;
  std::vector<std::pair<std::string, Shape>> weights;  // by name
  Shape x;
  std::vector<std::string> targets;
};

using Ints = std::vector<int64_t>;

std::vector<Case> Cases() {
  const Shape img{2, 3, 7, 6}, img_nhwc{2, 7, 6, 3}, flat{3, 11};
  const AttrMap nhwc{{"layout", std::string("NHWC")}};
  std::vector<Case> cases;
  for (const char* op : {"relu", "sigmoid", "tanh", "silu", "hardswish"}) {
    cases.push_back({op, {}, {}, flat, {"data"}});
  }
  cases.push_back({"leaky_relu", {{"alpha", 0.3}}, {}, flat, {"data"}});
  cases.push_back({"gelu", {}, {}, flat, {"data"}});
  cases.push_back(
      {"gelu", {{"approximate", std::string("tanh")}}, {}, flat, {"data"}});
  cases.push_back({"hardsigmoid", {{"alpha", 0.2}}, {}, flat, {"data"}});
  cases.push_back({"clamp", {{"min", -0.5}, {"max", 1.0}}, {}, flat, {"data"}});
  for (const AttrMap& layout : {AttrMap{}, nhwc}) {
    const Shape& x = layout.empty() ? img : img_nhwc;
    AttrMap max = layout, avg = layout, adaptive = layout, pad = layout;
    max.insert({{"kernel", Ints{3, 2}},
                {"stride", Ints{2, 1}},
                {"padding", Ints{1, 1, 0, 1}},
                {"dilation", Ints{1, 2}},
                {"ceil_mode", true}});
    avg.insert({{"kernel", Ints{3, 3}},
                {"stride", Ints{2, 2}},
                {"padding", Ints{1, 1, 1, 1}},
                {"ceil_mode", true},
                {"count_include_pad", false}});
    adaptive.insert({"output_size", Ints{3, 4}});
    pad.insert({{"padding", Ints{1, 0, 2, 1}}, {"value", 0.5}});
    cases.push_back({"maxpool2d", max, {}, x, {"data"}});
    cases.push_back({"avgpool2d", avg, {}, x, {"data"}});
    cases.push_back({"adaptiveavgpool2d", adaptive, {}, x, {"data"}});
    cases.push_back({"adaptivemaxpool2d", adaptive, {}, x, {"data"}});
    cases.push_back({"pad2d", pad, {}, x, {"data"}});
    AttrMap bn = layout;
    bn.insert({"eps", 1e-3});
    cases.push_back({"batchnorm2d",
                     bn,
                     {{"weight", {3}},
                      {"bias", {3}},
                      {"running_mean", {3}},
                      {"running_var", {3}}},
                     x,
                     {"data", "weight", "bias"}});
  }
  cases.push_back({"softmax", {{"axis", int64_t{1}}}, {}, {2, 5, 3}, {"data"}});
  cases.push_back({"log_softmax", {}, {}, {4, 6}, {"data"}});
  cases.push_back({"layernorm",
                   {{"axes", int64_t{2}}},
                   {{"weight", {3, 4}}, {"bias", {3, 4}}},
                   {2, 3, 4},
                   {"data", "weight", "bias"}});
  cases.push_back({"flatten", {}, {}, {2, 3, 4}, {"data"}});
  return cases;
}

struct Array {
  std::vector<double> v;
  Shape shape;
  Tensor tensor() {
    return Tensor{v.data(), DType::kFloat64, shape, {}, Layout::kNCHW};
  }
};

Array Random(const Shape& shape, uint32_t seed) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return {testing::RandomVector(n, seed), shape};
}

double Dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// The case's weights in the op's declared order (running_var positive).
WeightSlots Weights(const OpSchema& schema, const Case& c,
                    std::vector<Array>& storage) {
  WeightSlots slots(schema.weights().size());
  storage.reserve(c.weights.size());
  for (const auto& [name, shape] : c.weights) {
    Array& a = storage.emplace_back(Random(shape, 7 + storage.size()));
    if (name == "running_var") {
      for (double& v : a.v) v = std::fabs(v) + 0.5;
    }
    slots[schema.WeightIndex(name)] = a.tensor();
  }
  return slots;
}

// <dy, F(x)> for the forward layer made from these weights.
double Project(const OpSchema& f, const Case& c, const WeightSlots& w, Array& x,
               Array& dy) {
  auto layer = f.MakeLayer("f", c.attrs, w, "direct", Device::kCPU);
  Array y{std::vector<double>(dy.v.size()), dy.shape};
  layer->Forward(x.tensor(), y.tensor());
  return Dot(dy.v, y.v);
}

void CheckCase(const Case& c) {
  const OpSchema& f = GetOpSchema(c.op);
  std::vector<Array> storage;
  WeightSlots w = Weights(f, c, storage);
  Array x = Random(c.x, 1);
  auto forward = f.MakeLayer("f", c.attrs, w, "direct", Device::kCPU);
  Array y = Random(forward->OutputShape(x.tensor()), 0);
  forward->Forward(x.tensor(), y.tensor());
  Array dy = Random(y.shape, 2);
  for (const std::string& target : c.targets) {
    const std::string op = c.op + "_backward_" + target;
    auto gradient =
        GetOpSchema(op).MakeLayer("g", c.attrs, w, "direct", Device::kCPU);
    std::vector<Tensor> inputs{dy.tensor(), x.tensor(), y.tensor()};
    // What the gradient is taken with respect to: x, or the weight's storage.
    Array* point = &x;
    if (target != "data") {
      const int k = f.WeightIndex(target);
      for (Array& a : storage) {
        if (a.v.data() == w[k]->data) point = &a;
      }
    }
    Array dx{std::vector<double>(point->v.size()), point->shape};
    gradient->Forward(inputs, dx.tensor());
    const Array v = Random(point->shape, 3);
    const double eps = 1e-6;
    const std::vector<double> at = point->v;
    double sides[2];
    for (int s = 0; s < 2; ++s) {
      for (size_t i = 0; i < at.size(); ++i) {
        point->v[i] = at[i] + (s ? -eps : eps) * v.v[i];
      }
      sides[s] = Project(f, c, w, x, dy);
    }
    point->v = at;
    const double numeric = (sides[0] - sides[1]) / (2 * eps);
    const double analytic = Dot(dx.v, v.v);
    const double err =
        std::fabs(numeric - analytic) / (1 + std::fabs(analytic));
    char what[256];
    std::snprintf(what, sizeof what,
                  "%s (case on %s): <grad, v> %.10g, "
                  "central difference %.10g",
                  op.c_str(), ToString(c.x).c_str(), analytic, numeric);
    testing::Check(err < 1e-6, what);
  }
}

}  // namespace
}  // namespace ai3

int main() {
  int ran = 0;
  for (const ai3::Case& c : ai3::Cases()) {
    ai3::CheckCase(c);
    ran += static_cast<int>(c.targets.size());
  }
  return ai3::testing::Summary("gradients against central differences", ran);
}
