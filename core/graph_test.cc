// ai3::Model against hand computations: a residual block (1x1 convolutions,
// a ReLU object used twice, a skip connection), a concat block over the
// model input and two branches, buffer reuse across calls and shapes,
// pruning of nodes the output does not need, and the errors a malformed
// graph or input must raise, naming the node; an NHWC concat -> batchnorm2d
// (-> ReLU) folded into one pass; reshapes, contiguous slices and
// size-1 permutes read as views of their input's buffer.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "core/cpu.h"
#include "core/errors.h"
#include "core/graph.h"
#include "core/layer.h"
#include "core/ops/batchnorm2d/batchnorm2d.h"
#include "core/ops/binary/binary.h"
#include "core/ops/conv2d/conv2d.h"
#include "core/ops/permute/permute.h"
#include "core/ops/relu/relu.h"
#include "core/ops/reshape/reshape.h"
#include "core/ops/slice/slice.h"
#include "core/testing/reference.h"

namespace ai3 {
namespace {

using testing::Check;
using testing::DTypeOf;
using testing::ExpectError;

// A 1x1 convolution (a matrix per pixel), which the test can compute by hand.
template <typename T>
struct Conv1x1 {
  int64_t in, out;
  std::vector<T> weight, bias;
  std::shared_ptr<Layer<Conv2dAttrs>> layer;

  Conv1x1(const std::string& name, int64_t in_channels, int64_t out_channels,
          uint32_t seed)
      : in(in_channels), out(out_channels) {
    weight = testing::Cast<T>(testing::RandomVector(out * in, seed));
    bias = testing::Cast<T>(testing::RandomVector(out, seed + 1));
    Conv2dAttrs a;
    a.in_channels = in;
    a.out_channels = out;
    a.has_bias = true;
    a.dtype = DTypeOf<T>();
    layer = std::make_shared<Layer<Conv2dAttrs>>(
        name, a,
        std::vector<Tensor>{Tensor{weight.data(), a.dtype, {out, in, 1, 1}},
                            Tensor{bias.data(), a.dtype, {out}}},
        "direct");
  }

  // NCHW [n, in, hw] -> [n, out, hw], in double.
  std::vector<double> Apply(const std::vector<double>& x, int64_t n,
                            int64_t hw) const {
    std::vector<double> y(n * out * hw);
    for (int64_t b = 0; b < n; ++b)
      for (int64_t k = 0; k < out; ++k)
        for (int64_t p = 0; p < hw; ++p) {
          double sum = bias[k];
          for (int64_t c = 0; c < in; ++c) {
            sum += double(weight[k * in + c]) * x[(b * in + c) * hw + p];
          }
          y[(b * out + k) * hw + p] = sum;
        }
    return y;
  }
};

std::vector<double> Relu(std::vector<double> v) {
  for (double& x : v) x = std::max(x, 0.0);
  return v;
}

std::vector<double> Sum(std::vector<double> a, const std::vector<double>& b) {
  for (size_t i = 0; i < a.size(); ++i) a[i] += b[i];
  return a;
}

template <typename T>
double Tolerance() {
  return std::is_same_v<T, double> ? 1e-12 : 1e-5;
}

template <typename T>
void CheckClose(const std::vector<T>& got, const std::vector<double>& want,
                const std::string& what) {
  const double err = testing::MaxRelativeError(got, want);
  Check(err <= Tolerance<T>(),
        what + ": max relative error " + std::to_string(err));
}

// relu(conv2(relu(conv1(x))) + x), with one ReLU object at both places.
template <typename T>
void ResidualBlock() {
  const std::string tag = std::string("residual ") + Name(DTypeOf<T>());
  const int64_t c = 4, h = 5, w = 3;
  Conv1x1<T> conv1("block.conv1", c, c, 21), conv2("block.conv2", c, c, 23);
  auto relu = std::make_shared<Layer<ReluAttrs>>(
      "block.relu", ReluAttrs{}, std::vector<Tensor>{}, "direct");
  Model m;
  const int c1 = m.AddLayer(conv1.layer, Model::kInput);
  const int r1 = m.AddLayer(relu, c1);
  const int c2 = m.AddLayer(conv2.layer, r1);
  const int sum = m.AddAdd({c2, Model::kInput}, "block.add");
  const int out = m.AddLayer(relu, sum);
  Check(m.size() == 5 && out == 4 && m.output() == 4, tag + ": node ids");
  Model::NodeInfo info = m.Describe(sum);
  Check(info.op == "add" && info.name == "block.add" &&
            info.algorithm == "direct" &&
            info.inputs == std::vector<int>{c2, Model::kInput},
        tag + ": Describe(add)");
  info = m.Describe(c1);
  Check(info.op == "conv2d" && info.name == "block.conv1" &&
            info.algorithm == "direct",
        tag + ": Describe(conv)");

  for (int64_t n : {2, 2, 3, 2}) {  // replans for 3, and again for 2
    const Shape shape = {n, c, h, w};
    auto xd = testing::RandomVector(n * c * h * w, 31 + n);
    auto want =
        Relu(Sum(conv2.Apply(Relu(conv1.Apply(xd, n, h * w)), n, h * w), xd));
    auto x = testing::Cast<T>(xd);
    std::vector<T> y(want.size(), T(-42));
    const DType dtype = DTypeOf<T>();
    Check(m.OutputShape(shape, dtype) == shape, tag + ": OutputShape");
    Tensor xt{x.data(), dtype, shape};
    Check(m.Prepare(xt) == shape, tag + ": Prepare");
    m.Forward(xt, Tensor{y.data(), dtype, shape});
    CheckClose(y, want, tag + " batch " + std::to_string(n));
    // conv1 / relu / conv2 / add: each result is dead once the next node
    // has read it, so two buffers take turns (the output is the caller's).
    Check(m.ActivationBuffers() == 2,
          tag + ": " + std::to_string(m.ActivationBuffers()) +
              " activation buffers, expected 2");
  }
}

// The in-place residual add (graph.h, "Fusion"), with fusion on and off:
//   a = relu(conv1(x) + conv2(x))     both operands fusable, relu folded
//   b = x + conv3(a)                  the model input as the other operand
//   c = relu(b) + a                   two readers: its relu is not folded
//   out = relu(c + relu(c))           relu(c) fused, into the output
// Each gives what the unfused graph gives, whichever operand is fused.
template <typename T>
void FusedResidual() {
  const std::string tag = std::string("fused residual ") + Name(DTypeOf<T>());
  const int64_t n = 2, c = 3, h = 4, w = 5, hw = h * w;
  Conv1x1<T> conv1("c1", c, c, 61), conv2("c2", c, c, 63),
      conv3("c3", c, c, 65);
  auto relu = std::make_shared<Layer<ReluAttrs>>(
      "r", ReluAttrs{}, std::vector<Tensor>{}, "direct");
  Model m;
  const int c1 = m.AddLayer(conv1.layer, Model::kInput);
  const int c2 = m.AddLayer(conv2.layer, Model::kInput);
  const int add_a = m.AddAdd({c1, c2}, "a");
  const int a = m.AddLayer(relu, add_a);
  const int c3 = m.AddLayer(conv3.layer, a);
  const int b = m.AddAdd({Model::kInput, c3}, "b");
  const int rb = m.AddLayer(relu, b);
  const int add_c = m.AddAdd({rb, a}, "c");
  const int rc = m.AddLayer(relu, add_c);
  const int add_out = m.AddAdd({add_c, rc}, "out");
  const int out = m.AddLayer(relu, add_out);

  auto xd = testing::RandomVector(n * c * hw, 71);
  auto ad = Relu(Sum(conv1.Apply(xd, n, hw), conv2.Apply(xd, n, hw)));
  auto bd = Sum(xd, conv3.Apply(ad, n, hw));
  auto cd = Sum(Relu(bd), ad);
  auto want = Relu(Sum(cd, Relu(cd)));
  auto x = testing::Cast<T>(xd);
  const DType dtype = DTypeOf<T>();
  const Shape shape = {n, c, h, w};
  for (bool fusion : {true, false, true}) {
    m.SetFusion(fusion);
    std::vector<T> y(want.size(), T(-42));
    m.Forward(Tensor{x.data(), dtype, shape}, Tensor{y.data(), dtype, shape});
    const std::string what = tag + (fusion ? " (fused)" : " (unfused)");
    CheckClose(y, want, what);
    m.Forward(Tensor{x.data(), dtype, shape}, Tensor{y.data(), dtype, shape});
    CheckClose(y, want, what + ", second call");
    if (!fusion) {
      for (int node = 0; node < m.size(); ++node) {
        Check(m.FusedInto(node) == -1, what + ": nothing fused");
      }
      continue;
    }
    Check(m.FusedInto(add_a) == c1 && m.FusedInto(a) == add_a,
          what + ": a adds into conv1's result and applies the relu");
    Check(m.FusedInto(b) == c3 && m.FusedInto(rb) == b,
          what + ": b adds into conv3's result, with its relu");
    Check(m.FusedInto(add_c) == rb && m.FusedInto(rc) == -1,
          what + ": c adds into relu(b); c has two readers, its relu stays");
    Check(m.FusedInto(add_out) == rc && m.FusedInto(out) == add_out,
          what + ": the last add goes into relu(c), the output's relu too");
    Check(m.FusedInto(c1) == -1 && m.FusedInto(c2) == -1,
          what + ": the operands run as they are");
  }
  // The output group: the sum is the model's output and its operand writes
  // straight into the caller's buffer.
  Model tail;
  const int t1 = tail.AddLayer(conv1.layer, Model::kInput);
  const int t2 = tail.AddAdd({t1, Model::kInput}, "tail");
  std::vector<T> y(n * c * hw, T(-42));
  tail.Forward(Tensor{x.data(), dtype, shape}, Tensor{y.data(), dtype, shape});
  CheckClose(y, Sum(conv1.Apply(xd, n, hw), xd), tag + ": output group");
  Check(tail.FusedInto(t2) == t1 && tail.ActivationBuffers() == 0,
        tag + ": conv writes the output, the add adds into it, no buffers");
  // x + x: one node read twice is not written over.
  Model twice;
  const int d = twice.AddLayer(conv1.layer, Model::kInput);
  twice.AddAdd({d, d}, "twice");
  twice.Forward(Tensor{x.data(), dtype, shape}, Tensor{y.data(), dtype, shape});
  auto dd = conv1.Apply(xd, n, hw);
  CheckClose(y, Sum(dd, dd), tag + ": x + x");
}

// concat(relu(x), conv(x), x) along the channels, NCHW (axis 1) and along
// the last axis.
template <typename T>
void ConcatBlock() {
  const std::string tag = std::string("concat ") + Name(DTypeOf<T>());
  const DType dtype = DTypeOf<T>();
  const int64_t n = 2, c = 4, h = 3, w = 5, hw = h * w;
  Conv1x1<T> conv("branch.conv", c, 3, 41);
  auto relu = std::make_shared<Layer<ReluAttrs>>(
      "branch.relu", ReluAttrs{}, std::vector<Tensor>{}, "direct");
  Model m;
  const int a = m.AddLayer(relu, Model::kInput);
  const int b = m.AddLayer(conv.layer, Model::kInput);
  m.AddConcat({a, b, Model::kInput}, 1, "cat");
  const Shape shape = {n, c, h, w};
  const Shape out_shape = {n, 2 * c + 3, h, w};
  Check(m.OutputShape(shape, dtype) == out_shape, tag + ": OutputShape");
  auto xd = testing::RandomVector(n * c * hw, 43);
  auto ra = Relu(xd);
  auto rb = conv.Apply(xd, n, hw);
  std::vector<double> want;
  for (int64_t i = 0; i < n; ++i) {
    auto append = [&](const std::vector<double>& v, int64_t channels) {
      want.insert(want.end(), v.begin() + i * channels * hw,
                  v.begin() + (i + 1) * channels * hw);
    };
    append(ra, c);
    append(rb, 3);
    append(xd, c);
  }
  auto x = testing::Cast<T>(xd);
  std::vector<T> y(want.size());
  m.Forward(Tensor{x.data(), dtype, shape}, Tensor{y.data(), dtype, out_shape});
  CheckClose(y, want, tag + " axis 1");

  // Along the last axis (as NHWC channels would be), through a model whose
  // only node reads the input twice.
  Model last;
  last.AddConcat({Model::kInput, Model::kInput}, -1, "cat_last");
  const Shape last_shape = {n, c, h, 2 * w};
  std::vector<T> z(n * c * h * 2 * w);
  last.Forward(Tensor{x.data(), dtype, shape},
               Tensor{z.data(), dtype, last_shape});
  std::vector<double> want_last;
  for (int64_t row = 0; row < n * c * h; ++row) {
    for (int rep = 0; rep < 2; ++rep) {
      want_last.insert(want_last.end(), xd.begin() + row * w,
                       xd.begin() + (row + 1) * w);
    }
  }
  CheckClose(z, want_last, tag + " axis -1");

  // A big concat (threaded copies) along axis 0.
  const Shape big = {3, 64, 40, 40};
  auto bd = testing::RandomVector(NumElements(big), 47);
  auto bx = testing::Cast<T>(bd);
  Model rows;
  rows.AddConcat({Model::kInput, Model::kInput}, 0, "cat0");
  std::vector<T> by(2 * bx.size());
  rows.Forward(Tensor{bx.data(), dtype, big},
               Tensor{by.data(), dtype, {6, 64, 40, 40}});
  std::vector<double> want_rows = bd;
  want_rows.insert(want_rows.end(), bd.begin(), bd.end());
  CheckClose(by, want_rows, tag + " axis 0");

  // A big concat along the last axis (NHWC channels at batch > 1: the
  // threads share out whole rows, each copying every input of its rows).
  Model pixels;
  pixels.AddConcat({Model::kInput, Model::kInput}, -1, "cat_pixels");
  std::vector<T> py(2 * bx.size());
  pixels.Forward(Tensor{bx.data(), dtype, big},
                 Tensor{py.data(), dtype, {3, 64, 40, 80}});
  std::vector<double> want_pixels;
  for (int64_t row = 0; row < 3 * 64 * 40; ++row) {
    for (int rep = 0; rep < 2; ++rep) {
      want_pixels.insert(want_pixels.end(), bd.begin() + row * 40,
                         bd.begin() + (row + 1) * 40);
    }
  }
  CheckClose(py, want_pixels, tag + " axis -1, threaded");
}

// Zero-copy concat (graph.h): at batch 1 in NCHW a channel slice is one
// block, so the concat's inputs write into its buffer and a concat that
// extends an earlier one (DenseNet's block) takes that one's buffer as its
// start. A DenseNet-like chain
//   f0 = conv0(x); cat_k = concat(f0..f_k); f_{k+1} = conv_k(relu(cat_k))
// ending in the output concat; the model input, an input read twice and a
// concat read by an in-place add are copied. Each is checked by hand, against
// the same model with fusion off, and at batch 2 (nothing placed).
template <typename T>
void ZeroCopyConcat() {
  const std::string tag = std::string("zero-copy concat ") + Name(DTypeOf<T>());
  const DType dtype = DTypeOf<T>();
  const int64_t c = 3, growth = 2, layers = 3, h = 4, w = 5, hw = h * w;
  auto relu = std::make_shared<Layer<ReluAttrs>>(
      "relu", ReluAttrs{}, std::vector<Tensor>{}, "direct");
  std::vector<Conv1x1<T>> convs;
  convs.emplace_back("conv0", c, growth, 61);
  for (int64_t k = 0; k < layers; ++k) {
    convs.emplace_back("conv" + std::to_string(k + 1), growth * (k + 1), growth,
                       63 + 2 * static_cast<uint32_t>(k));
  }
  Model m;
  std::vector<int> features = {m.AddLayer(convs[0].layer, Model::kInput)};
  std::vector<int> cats;
  for (int64_t k = 0; k < layers; ++k) {
    cats.push_back(m.AddConcat(features, 1, "cat" + std::to_string(k)));
    const int r = m.AddLayer(relu, cats.back());
    features.push_back(m.AddLayer(convs[k + 1].layer, r));
  }
  const int out = m.AddConcat(features, 1, "block");
  const int64_t out_c = growth * (layers + 1);

  for (int64_t n : {1, 2}) {
    const std::string what = tag + " batch " + std::to_string(n);
    const Shape shape = {n, c, h, w}, out_shape = {n, out_c, h, w};
    auto xd = testing::RandomVector(n * c * hw, 67);
    // By hand, image by image (a channel concat of NCHW images appends
    // each image's planes).
    std::vector<double> want;
    for (int64_t b = 0; b < n; ++b) {
      std::vector<double> xb(xd.begin() + b * c * hw,
                             xd.begin() + (b + 1) * c * hw);
      std::vector<double> cat = convs[0].Apply(xb, 1, hw);
      for (int64_t k = 0; k < layers; ++k) {
        auto f = convs[k + 1].Apply(Relu(cat), 1, hw);
        cat.insert(cat.end(), f.begin(), f.end());
      }
      want.insert(want.end(), cat.begin(), cat.end());
    }
    auto x = testing::Cast<T>(xd);
    std::vector<T> fused(want.size()), plain(want.size());
    m.SetFusion(true);
    for (int rep = 0; rep < 2; ++rep) {  // planned, then reusing the plan
      m.Forward(Tensor{x.data(), dtype, shape},
                Tensor{fused.data(), dtype, out_shape});
    }
    CheckClose(fused, want, what);
    const bool placed = n == 1;
    for (int64_t k = 0; k < layers; ++k) {
      // f_k goes into cat_k, which goes into cat_{k+1} (the last into the
      // output); f_layers into the output.
      const int next = k + 1 < layers ? cats[k + 1] : out;
      Check(m.FusedInto(features[k]) == (placed ? cats[k] : -1) &&
                m.FusedInto(cats[k]) == (placed ? next : -1),
            what + ": f" + std::to_string(k) + " and cat" + std::to_string(k) +
                " placed");
    }
    Check(m.FusedInto(features[layers]) == (placed ? out : -1),
          what + ": the last feature written into the output");
    // Everything lives in the caller's output: only relu's buffer is left.
    if (placed) Check(m.ActivationBuffers() == 1, what + ": one buffer");
    m.SetFusion(false);
    m.Forward(Tensor{x.data(), dtype, shape},
              Tensor{plain.data(), dtype, out_shape});
    Check(fused == plain, what + ": equals the unfused run");
  }

  // Copied inputs: the model input, a node read twice, and a concat (the
  // prefix of the output) that an in-place add then overwrites:
  //   a = relu(x); p = concat(a, x, a); s = p + q (in place over p);
  //   out = concat(a, x, a, s)
  Model copies;
  const int a = copies.AddLayer(relu, Model::kInput);
  const int p = copies.AddConcat({a, Model::kInput, a}, 1, "p");
  Conv1x1<T> mix("mix", c, 3 * c, 71);
  const int q = copies.AddLayer(mix.layer, Model::kInput);
  const int sum = copies.AddAdd({p, q}, "s");
  const int last = copies.AddConcat({a, Model::kInput, a, sum}, 1, "out");
  const Shape shape = {1, c, h, w}, out_shape = {1, 6 * c, h, w};
  auto xd = testing::RandomVector(c * hw, 73);
  auto ra = Relu(xd);
  std::vector<double> pd = ra;
  pd.insert(pd.end(), xd.begin(), xd.end());
  pd.insert(pd.end(), ra.begin(), ra.end());
  std::vector<double> want = pd;
  auto sd = Sum(pd, mix.Apply(xd, 1, hw));
  want.insert(want.end(), sd.begin(), sd.end());
  auto x = testing::Cast<T>(xd);
  std::vector<T> y(want.size());
  copies.Forward(Tensor{x.data(), dtype, shape},
                 Tensor{y.data(), dtype, out_shape});
  CheckClose(y, want, tag + ": copied inputs");
  // p is overwritten in place by the add, so nothing is placed in it; the
  // add's group (p, then the sum) goes into out, a (read twice) into out.
  Check(copies.FusedInto(a) == last && copies.FusedInto(sum) == p &&
            copies.FusedInto(p) == -1,
        tag + ": a and the sum into out, the add in place over p");
  Check(last == 4, tag + ": node ids");
}

// Pointwise -> depthwise (graph.h): a 1x1 conv2d whose only reader is a
// 3x3 depthwise conv2d, both "guess" in NHWC float32, against the same
// layers with fusion off. MobileNetV2 shapes where oneDNN fuses the pair
// (batch 8 on the large maps) and where it declines (batch 1), strides 1
// and 2, an odd map, with and without biases, ReLU6 and HardSwish. Either
// way the result is the unfused one; a fused depthwise node names the
// pointwise node in FusedInto. A pointwise result that is also a model
// output is never fused.
void PointwiseDepthwiseBlock() {
  struct Case {
    int64_t n, c, e, hw, stride;
    bool pw_bias, dw_bias;
    Activation activation;
  };
  const Activation relu6 = Activation::Clamp(0, 6);
  const Activation hardswish = Activation::Function(ActivationFn::kHardSwish);
  const Activation silu = Activation::Function(ActivationFn::kSilu);
  const std::vector<Case> cases = {
      {8, 16, 96, 112, 2, true, true, relu6},
      {8, 24, 144, 56, 1, false, true, hardswish},
      // EfficientNet's SiLU: fused only where the expanded tensor outgrows
      // the last-level cache (38.5 MB and 14.5 MB here).
      {8, 16, 96, 112, 2, true, true, silu},
      {8, 24, 144, 56, 1, true, true, silu},
      {8, 24, 144, 56, 2, true, false, relu6},
      {2, 24, 40, 15, 2, true, true, relu6},
      {1, 24, 144, 56, 1, true, true, Activation{}},
  };
  int fused = 0;
  for (const Case& k : cases) {
    const std::string tag = "pointwise -> depthwise " + std::to_string(k.n) +
                            "x" + std::to_string(k.hw) + " " +
                            std::to_string(k.c) + "->" + std::to_string(k.e) +
                            " stride " + std::to_string(k.stride);
    auto make = [&](const std::string& name, Conv2dAttrs a, Shape shape,
                    std::vector<float>* weight, std::vector<float>* bias,
                    uint32_t seed) {
      a.dtype = DType::kFloat32;
      a.layout = Layout::kNHWC;
      a.activation = k.activation;
      *weight =
          testing::Cast<float>(testing::RandomVector(NumElements(shape), seed));
      *bias =
          testing::Cast<float>(testing::RandomVector(a.out_channels, seed + 1));
      std::vector<Tensor> params = {Tensor{weight->data(), a.dtype, shape}};
      if (a.has_bias) {
        params.push_back(Tensor{bias->data(), a.dtype, {a.out_channels}});
      }
      return std::make_shared<Layer<Conv2dAttrs>>(name, a, params, "guess");
    };
    Conv2dAttrs pa;
    pa.in_channels = k.c;
    pa.out_channels = k.e;
    pa.has_bias = k.pw_bias;
    Conv2dAttrs da;
    da.in_channels = da.out_channels = da.groups = k.e;
    da.kernel_h = da.kernel_w = 3;
    da.stride_h = da.stride_w = k.stride;
    da.pad_top = da.pad_bottom = da.pad_left = da.pad_right = 1;
    da.has_bias = k.dw_bias;
    std::vector<float> pw_weight, pw_bias, dw_weight, dw_bias;
    auto pointwise =
        make("expand", pa, {k.e, k.c, 1, 1}, &pw_weight, &pw_bias, 61);
    auto depthwise =
        make("depthwise", da, {k.e, 1, 3, 3}, &dw_weight, &dw_bias, 67);
    const Shape in_shape = {k.n, k.hw, k.hw, k.c};
    auto x =
        testing::Cast<float>(testing::RandomVector(NumElements(in_shape), 71));
    const Tensor input{x.data(), DType::kFloat32, in_shape, {}, Layout::kNHWC};
    Model plain, model, both;
    for (Model* m : {&plain, &model, &both}) {
      const int a = m->AddLayer(pointwise, Model::kInput);
      const int b = m->AddLayer(depthwise, a);
      if (m == &both) m->SetOutputs({b, a});
    }
    plain.SetFusion(false);
    const Shape out_shape = model.OutputShape(in_shape, DType::kFloat32);
    std::vector<float> want(NumElements(out_shape)), got(want.size());
    plain.Forward(
        input,
        Tensor{want.data(), DType::kFloat32, out_shape, {}, Layout::kNHWC});
    for (int call = 0; call < 2; ++call) {
      model.Forward(
          input,
          Tensor{got.data(), DType::kFloat32, out_shape, {}, Layout::kNHWC});
      CheckClose(got, std::vector<double>(want.begin(), want.end()),
                 tag + (call ? ", second call" : ""));
    }
    const int into = model.FusedInto(1);
    Check(into == 0 || into == -1, tag + ": FusedInto " + std::to_string(into));
    fused += into == 0;
    const double expanded_bytes = 4.0 * k.n * k.hw * k.hw * k.e;
    if (k.activation.fn == ActivationFn::kSilu &&
        expanded_bytes <= static_cast<double>(LastLevelCacheBytes())) {
      Check(into == -1, tag +
                            ": SiLU pair fused though its expanded tensor "
                            "fits the last-level cache");
    }

    const Shape mid_shape = {k.n, k.hw, k.hw, k.e};
    std::vector<float> got_b(want.size()), got_a(NumElements(mid_shape));
    both.Forward(
        {input},
        {Tensor{got_b.data(), DType::kFloat32, out_shape, {}, Layout::kNHWC},
         Tensor{got_a.data(), DType::kFloat32, mid_shape, {}, Layout::kNHWC}});
    CheckClose(got_b, std::vector<double>(want.begin(), want.end()),
               tag + ", both outputs");
    Check(both.FusedInto(1) == -1, tag + ": an output pointwise was fused");
  }
  std::printf("pointwise -> depthwise: oneDNN fused %d of %zu pairs\n", fused,
              cases.size());
}

// Gate -> conv (graph.h; core/ops/conv2d/scaled_input_conv.h): x times a
// gate of one value per image and channel, read only by a "guess" conv2d,
// against the same model with fusion off. EfficientNet's squeeze-excitation
// shapes where the maker fuses (its projecting 1x1 convs), batch 1 and 2, a
// gate of one image over two, the gate as either operand, a clamp fused into
// the conv; shapes oneDNN may or may not take (a 3x3 conv, NCHW), checked
// for the result alone; where the maker declines (more weights than a
// quarter of an image's input: 1152 -> 320 at 7x7); and where the graph
// must not fuse (the product also a model output). A fused conv node names
// the mul in FusedInto and does not run.
void GatedConvBlock() {
  using Mul = BinaryAttrs<BinaryOp::kMul>;
  enum Expect { kNo, kYes, kEither };
  struct Case {
    int64_t n, gate_n, c, k, hw, kernel;
    Layout layout;
    bool gate_first;
    Activation activation;
    Expect fused;
  };
  const Activation relu6 = Activation::Clamp(0, 6);
  const Layout nhwc = Layout::kNHWC, nchw = Layout::kNCHW;
  const std::vector<Case> cases = {
      {1, 1, 32, 16, 28, 1, nhwc, false, Activation{}, kYes},
      {2, 2, 96, 24, 14, 1, nhwc, true, Activation{}, kYes},
      {2, 1, 144, 40, 14, 1, nhwc, false, relu6, kYes},
      {1, 1, 24, 8, 28, 3, nhwc, true, relu6, kEither},
      {2, 2, 16, 8, 12, 1, nchw, false, Activation{}, kEither},
      {1, 1, 1152, 320, 7, 1, nhwc, false, Activation{}, kNo},
  };
  for (const Case& k : cases) {
    const std::string tag =
        "gate -> conv " + std::to_string(k.n) + "x" + std::to_string(k.hw) +
        " " + std::to_string(k.c) + "->" + std::to_string(k.k) + " " +
        std::to_string(k.kernel) + "x" + std::to_string(k.kernel) +
        (k.layout == nhwc ? " NHWC" : " NCHW") + ", gate of " +
        std::to_string(k.gate_n) + (k.gate_first ? ", gate first" : "");
    Conv2dAttrs a;
    a.in_channels = k.c;
    a.out_channels = k.k;
    a.kernel_h = a.kernel_w = k.kernel;
    a.pad_top = a.pad_bottom = a.pad_left = a.pad_right = k.kernel / 2;
    a.has_bias = true;
    a.dtype = DType::kFloat32;
    a.layout = k.layout;
    a.activation = k.activation;
    const Shape w_shape = {k.k, k.c, k.kernel, k.kernel};
    auto weight =
        testing::Cast<float>(testing::RandomVector(NumElements(w_shape), 81));
    auto bias = testing::Cast<float>(testing::RandomVector(k.k, 82));
    auto conv = std::make_shared<Layer<Conv2dAttrs>>(
        "project", a,
        std::vector<Tensor>{Tensor{weight.data(), a.dtype, w_shape},
                            Tensor{bias.data(), a.dtype, {k.k}}},
        "guess");
    auto mul = std::make_shared<MultiLayer<Mul>>(
        "se.mul", Mul{}, std::vector<Tensor>{}, "direct");
    const bool channels_last = k.layout == nhwc;
    const Shape x_shape = channels_last ? Shape{k.n, k.hw, k.hw, k.c}
                                        : Shape{k.n, k.c, k.hw, k.hw};
    const Shape s_shape =
        channels_last ? Shape{k.gate_n, 1, 1, k.c} : Shape{k.gate_n, k.c, 1, 1};
    auto x =
        testing::Cast<float>(testing::RandomVector(NumElements(x_shape), 83));
    auto s =
        testing::Cast<float>(testing::RandomVector(NumElements(s_shape), 84));
    const std::vector<Tensor> inputs = {
        Tensor{x.data(), DType::kFloat32, x_shape, {}, k.layout},
        Tensor{s.data(), DType::kFloat32, s_shape, {}, k.layout}};
    Model plain, model, both;
    for (Model* m : {&plain, &model, &both}) {
      m->SetInputCount(2);
      const int gated =
          k.gate_first ? m->AddLayer(mul, {Model::InputId(1), Model::kInput})
                       : m->AddLayer(mul, {Model::kInput, Model::InputId(1)});
      const int out = m->AddLayer(conv, gated);
      if (m == &both) m->SetOutputs({out, gated});
    }
    plain.SetFusion(false);
    const Shape out_shape =
        model.OutputShapes({x_shape, s_shape}, DType::kFloat32)[0];
    std::vector<float> want(NumElements(out_shape)), got(want.size());
    auto out = [&](std::vector<float>* y) {
      return Tensor{y->data(), DType::kFloat32, out_shape, {}, k.layout};
    };
    plain.Forward(inputs, {out(&want)});
    model.SetProfiling(true);
    for (int call = 0; call < 2; ++call) {
      model.Forward(inputs, {out(&got)});
      CheckClose(got, std::vector<double>(want.begin(), want.end()),
                 tag + (call ? ", second call" : ""));
    }
    const int into = model.FusedInto(1);
    Check(into == 0 || into == -1, tag + ": FusedInto " + std::to_string(into));
    std::printf("%s: %s\n", tag.c_str(), into == 0 ? "fused" : "apart");
    if (k.fused != kEither) {
      Check((into == 0) == (k.fused == kYes),
            tag + (k.fused == kYes ? ": not fused" : ": fused"));
    }
    if (into == 0) {
      Check(model.NodeSeconds(1) == 0 && model.NodeSeconds(0) > 0,
            tag + ": the fused conv node ran");
    }
    std::vector<float> got_product(NumElements(x_shape)), got_both(want.size());
    both.Forward(
        inputs,
        {out(&got_both),
         Tensor{got_product.data(), DType::kFloat32, x_shape, {}, k.layout}});
    CheckClose(got_both, std::vector<double>(want.begin(), want.end()),
               tag + ", both outputs");
    Check(both.FusedInto(1) == -1, tag + ": an output product was fused");
  }
}

// Conv -> residual add (-> relu) (graph.h, "Fusion"; core/ops/conv2d/
// residual_conv.h): "guess" convs in NHWC and NCHW, batch 1 and 8, with and
// without biases, against the same graph unfused:
//   a = relu(c2(relu(c1(x0))) + x0)    a bottleneck's tail: c2 adds into x0
//   b = relu(c3(a) + c4(a))            a downsample: c4 runs last, adds into c3
//   out = relu(c5(b) + b) + c6(b)      b is read after c5: not fused into
// where x0 = c0(x) (a node: the model input itself is the caller's buffer).
// In NHWC oneDNN runs these 1x1 convs in its JIT kernels, which take the
// sum: there the adds must be fused.
void ResidualConvBlock() {
  struct Case {
    int64_t n, c, hw;
    Layout layout;
    bool bias;
  };
  const std::vector<Case> cases = {
      {1, 32, 14, Layout::kNHWC, true},
      {8, 16, 9, Layout::kNHWC, false},
      {2, 24, 7, Layout::kNCHW, true},
  };
  for (const Case& k : cases) {
    const std::string tag = std::string("conv -> residual add ") +
                            Name(k.layout) + " " + std::to_string(k.n) + "x" +
                            std::to_string(k.c) + "x" + std::to_string(k.hw) +
                            (k.bias ? "" : " no bias");
    std::vector<std::vector<float>> weights;
    auto conv = [&](const std::string& name, uint32_t seed, bool relu,
                    const char* algorithm = "guess") {
      Conv2dAttrs a;
      a.in_channels = a.out_channels = k.c;
      a.has_bias = k.bias;
      a.dtype = DType::kFloat32;
      a.layout = k.layout;
      if (relu) {
        a.activation =
            Activation::Clamp(0, std::numeric_limits<double>::infinity());
      }
      weights.push_back(
          testing::Cast<float>(testing::RandomVector(k.c * k.c, seed)));
      std::vector<Tensor> params = {
          Tensor{weights.back().data(), a.dtype, {k.c, k.c, 1, 1}}};
      weights.push_back(
          testing::Cast<float>(testing::RandomVector(k.c, seed + 1)));
      if (k.bias) params.push_back({weights.back().data(), a.dtype, {k.c}});
      return std::make_shared<Layer<Conv2dAttrs>>(name, a, params, algorithm);
    };
    weights.reserve(16);  // the layers keep pointers into them
    auto relu = std::make_shared<Layer<ReluAttrs>>(
        "r", ReluAttrs{}, std::vector<Tensor>{}, "direct");
    auto c0 = conv("c0", 11, false), c1 = conv("c1", 13, true),
         c2 = conv("c2", 17, false), c3 = conv("c3", 19, false),
         c4 = conv("c4", 23, false), c5 = conv("c5", 29, false),
         c6 = conv("c6", 31, false);
    // c2 of another algorithm: the maker's kernel would replace it.
    auto c2_direct = conv("c2", 17, false, "direct");
    Model plain, model, other, plain_other;
    int add_a = 0, ra = 0, v4 = 0, add_b = 0, rb = 0, v5 = 0, add_c = 0;
    for (Model* m : {&plain, &model, &other, &plain_other}) {
      const bool direct = m == &other || m == &plain_other;
      const int x0 = m->AddLayer(c0, Model::kInput);
      const int v2 = m->AddLayer(direct ? c2_direct : c2, m->AddLayer(c1, x0));
      add_a = m->AddAdd({v2, x0}, "a");
      ra = m->AddLayer(relu, add_a);
      const int v3 = m->AddLayer(c3, ra);
      v4 = m->AddLayer(c4, ra);
      add_b = m->AddAdd({v3, v4}, "b");
      rb = m->AddLayer(relu, add_b);
      v5 = m->AddLayer(c5, rb);
      add_c = m->AddAdd({v5, rb}, "c");
      const int rc = m->AddLayer(relu, add_c);
      m->AddAdd({rc, m->AddLayer(c6, rb)}, "out");
    }
    plain.SetFusion(false);
    plain_other.SetFusion(false);
    const Shape shape = k.layout == Layout::kNHWC ? Shape{k.n, k.hw, k.hw, k.c}
                                                  : Shape{k.n, k.c, k.hw, k.hw};
    auto x =
        testing::Cast<float>(testing::RandomVector(NumElements(shape), 37));
    const Tensor input{x.data(), DType::kFloat32, shape, {}, k.layout};
    std::vector<float> want(x.size()), got(x.size());
    plain.Forward(input,
                  Tensor{want.data(), DType::kFloat32, shape, {}, k.layout});
    // Profiled: an add fused into its conv does not run (NodeSeconds 0);
    // one that adds into its operand's buffer does.
    model.SetProfiling(true);
    for (int call = 0; call < 2; ++call) {
      model.Forward(input,
                    Tensor{got.data(), DType::kFloat32, shape, {}, k.layout});
      CheckClose(got, std::vector<double>(want.begin(), want.end()),
                 tag + (call ? ", second call" : ""));
    }
    if (k.layout == Layout::kNHWC) {
      Check(model.FusedInto(add_a) == add_a - 1 &&
                model.NodeSeconds(add_a) == 0 && model.FusedInto(ra) == add_a,
            tag + ": c2 adds into x0 and applies the relu");
      Check(model.FusedInto(add_b) == v4 && model.NodeSeconds(add_b) == 0 &&
                model.FusedInto(rb) == add_b,
            tag + ": c4 adds into c3's result");
    }
    Check(model.FusedInto(add_c) == v5 && model.NodeSeconds(add_c) > 0,
          tag + ": b is read after c5: c adds into c5's result itself");
    model.SetProfiling(false);
    // (Against its own unfused run: direct and guess round differently.)
    plain_other.Forward(
        input, Tensor{want.data(), DType::kFloat32, shape, {}, k.layout});
    other.SetProfiling(true);
    other.Forward(input,
                  Tensor{got.data(), DType::kFloat32, shape, {}, k.layout});
    CheckClose(got, std::vector<double>(want.begin(), want.end()),
               tag + ", c2 direct");
    Check(other.NodeSeconds(add_a) > 0,
          tag + ": a direct c2 keeps its algorithm; its add runs");
  }
}

// NHWC concat -> batchnorm2d with a fused ReLU, the batchnorm folded into
// the concat's copy, and a residual add over its result (fused in place, so
// the add, the batchnorm and the concat share one buffer):
//   cat = concat(relu(x), x); y = bn_relu(cat); out = y + concat(x, x)
// with c channels in x: 5 (the map's per-element tail alone), or 37 (its
// blocks of 32 or 16 channels, then the tail) over more pixels than one
// run of its rows.
template <typename T>
void ConcatBatchNorm(int64_t c, int64_t h, int64_t w) {
  const std::string tag = std::string("concat -> batchnorm2d ") +
                          Name(DTypeOf<T>()) + " c " + std::to_string(c);
  const DType dtype = DTypeOf<T>();
  const int64_t cc = 2 * c;
  auto relu = std::make_shared<Layer<ReluAttrs>>(
      "relu", ReluAttrs{}, std::vector<Tensor>{}, "direct");
  auto wd = testing::RandomVector(cc, 81), bd = testing::RandomVector(cc, 82),
       md = testing::RandomVector(cc, 83), vd = testing::RandomVector(cc, 84);
  for (double& v : vd) v = v * v + 0.5;
  auto wt = testing::Cast<T>(wd), bt = testing::Cast<T>(bd),
       mt = testing::Cast<T>(md), vt = testing::Cast<T>(vd);
  BatchNorm2dAttrs a;
  a.channels = cc;
  a.dtype = dtype;
  a.layout = Layout::kNHWC;
  a.activation =
      Activation::Clamp(0.0, std::numeric_limits<double>::infinity());
  auto bn = std::make_shared<Layer<BatchNorm2dAttrs>>(
      "bn", a,
      std::vector<Tensor>{
          Tensor{wt.data(), dtype, {cc}}, Tensor{bt.data(), dtype, {cc}},
          Tensor{mt.data(), dtype, {cc}}, Tensor{vt.data(), dtype, {cc}}},
      "direct");
  Model m;
  const int r = m.AddLayer(relu, Model::kInput);
  const int cat = m.AddConcat({r, Model::kInput}, -1, "cat");
  const int y = m.AddLayer(bn, cat);
  const int skip = m.AddConcat({Model::kInput, Model::kInput}, 3, "skip");
  const int out = m.AddAdd({y, skip}, "out");
  for (int64_t n : {1, 2}) {
    const std::string what = tag + " batch " + std::to_string(n);
    const Shape shape = {n, h, w, c}, out_shape = {n, h, w, cc};
    auto xd = testing::RandomVector(n * h * w * c, 85);
    std::vector<double> want(n * h * w * cc);
    for (int64_t p = 0; p < n * h * w; ++p) {
      for (int64_t k = 0; k < cc; ++k) {
        const double xv = xd[p * c + k % c];
        const double in = k < c ? std::max(xv, 0.0) : xv;
        const double norm =
            (in - md[k]) / std::sqrt(vd[k] + a.eps) * wd[k] + bd[k];
        want[p * cc + k] = std::max(norm, 0.0) + xv;
      }
    }
    auto x = testing::Cast<T>(xd);
    std::vector<T> fused(want.size()), plain(want.size());
    m.SetFusion(true);
    for (int rep = 0; rep < 2; ++rep) {  // planned, then reusing the plan
      m.Forward(Tensor{x.data(), dtype, shape},
                Tensor{fused.data(), dtype, out_shape});
    }
    CheckClose(fused, want, what);
    Check(m.FusedInto(y) == cat && m.FusedInto(out) == y &&
              m.FusedInto(cat) == -1 && m.FusedInto(skip) == -1,
          what + ": the batchnorm folded into cat, the add in place over it");
    m.SetFusion(false);
    m.Forward(Tensor{x.data(), dtype, shape},
              Tensor{plain.data(), dtype, out_shape});
    CheckClose(plain, want, what + ": unfused");
    Check(m.FusedInto(y) == -1, what + ": nothing folded when off");
  }
  // A concat read by the batchnorm and by another node, or in NCHW, keeps
  // its layer.
  Model shared;
  const int cat2 = shared.AddConcat({Model::kInput, Model::kInput}, 3, "cat");
  const int y2 = shared.AddLayer(bn, cat2);
  shared.AddAdd({y2, cat2}, "out");
  const Shape shape = {1, h, w, c}, out_shape = {1, h, w, cc};
  auto x = testing::Cast<T>(testing::RandomVector(h * w * c, 86));
  std::vector<T> out2(h * w * cc);
  shared.Forward(Tensor{x.data(), dtype, shape},
                 Tensor{out2.data(), dtype, out_shape});
  Check(shared.FusedInto(y2) == -1, tag + ": a concat read twice keeps it");
}

// Long chains reuse two buffers; an add over many inputs sums them all;
// nodes the output does not need never run, even ones that would fail.
// Views: a reshape, a contiguous slice (of a view) and a permute moving a
// size-1 dimension read their input's buffer; a strided slice, a view that
// is an output, a view of a buffer a later node writes (a concat holding
// its input) and a view an add accumulates into still run. Every result
// matches with fusion on and off.
void Views() {
  auto layer = [](auto attrs, const char* name) -> std::shared_ptr<AnyLayer> {
    return std::make_shared<Layer<decltype(attrs)>>(
        name, attrs, std::vector<Tensor>{}, "direct");
  };
  auto relu = layer(ReluAttrs{}, "r");
  auto slice = [&](int64_t axis, int64_t start, int64_t stop) {
    SliceAttrs a;
    a.axis = axis;
    a.start = start;
    a.stop = stop;
    return layer(a, "slice");
  };
  const DType f32 = DType::kFloat32;
  std::vector<float> x(24);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = (i % 3 == 0 ? -1.0f : 1.0f) * static_cast<float>(i);
  }
  std::vector<float> rx(x);  // relu(x)
  for (float& v : rx) v = std::max(v, 0.0f);

  Model m;
  const int a = m.AddLayer(relu, Model::kInput);                        // 2x3x4
  const int rows = m.AddLayer(layer(ReshapeAttrs{{6, 4}}, "rows"), a);  // 6x4
  const int mid = m.AddLayer(slice(0, 2, 5), rows);                     // 3x4
  const int strided = m.AddLayer(slice(2, 1, 3), a);                    // 2x3x2
  const int line = m.AddLayer(layer(ReshapeAttrs{{1, 24}}, "line"), a);
  const int column = m.AddLayer(layer(PermuteAttrs{{1, 0}}, "column"), line);
  const int flat = m.AddLayer(layer(ReshapeAttrs{{24}}, "flat"), a);
  const int o_mid = m.AddLayer(relu, mid);
  const int o_strided = m.AddLayer(relu, strided);
  const int o_column = m.AddLayer(relu, column);
  m.SetOutputs({o_mid, o_strided, o_column, flat});
  for (bool fusion : {true, false, true}) {
    m.SetFusion(fusion);
    std::vector<float> y_mid(12), y_strided(12), y_column(24), y_flat(24);
    m.Forward(std::vector<Tensor>{Tensor{x.data(), f32, {2, 3, 4}}},
              std::vector<Tensor>{Tensor{y_mid.data(), f32, {3, 4}},
                                  Tensor{y_strided.data(), f32, {2, 3, 2}},
                                  Tensor{y_column.data(), f32, {24, 1}},
                                  Tensor{y_flat.data(), f32, {24}}});
    const std::string what = fusion ? "views (fused)" : "views (unfused)";
    Check(y_mid == std::vector<float>(rx.begin() + 8, rx.begin() + 20),
          what + ": the slice of the reshape");
    std::vector<float> want_strided;
    for (int64_t row = 0; row < 6; ++row) {
      want_strided.push_back(rx[row * 4 + 1]);
      want_strided.push_back(rx[row * 4 + 2]);
    }
    Check(y_strided == want_strided, what + ": the strided slice");
    Check(y_column == rx && y_flat == rx, what + ": the permute, the output");
    Check(m.FusedInto(rows) == (fusion ? a : -1) &&
              m.FusedInto(mid) == (fusion ? rows : -1) &&
              m.FusedInto(line) == (fusion ? a : -1) &&
              m.FusedInto(column) == (fusion ? line : -1),
          what + ": reshape, slice and permute are views");
    Check(m.FusedInto(strided) == -1 && m.FusedInto(flat) == -1,
          what + ": the strided slice and the output view run");
  }

  // A concat at batch 1 holds relu(x)'s result in its buffer and writes its
  // other slice after the reshape: the reshape copies. A reshape that an add
  // accumulates into in place copies too (its buffer is written).
  Model later;
  const int first = later.AddLayer(relu, Model::kInput);  // 1x24
  const int held = later.AddLayer(layer(ReshapeAttrs{{24}}, "held"), first);
  const int second =
      later.AddLayer(layer(ReshapeAttrs{{1, 24}}, "again"), Model::kInput);
  const int cat = later.AddConcat({first, second}, 1, "cat");
  const int sum_in = later.AddLayer(layer(ReshapeAttrs{{48}}, "sum_in"), cat);
  const int sliced = later.AddLayer(slice(0, 0, 24), sum_in);
  const int sum = later.AddAdd({sliced, held}, "sum");
  later.SetOutputs({sum, cat});
  std::vector<float> y_sum(24), y_cat(48);
  later.Forward(std::vector<Tensor>{Tensor{x.data(), f32, {1, 24}}},
                std::vector<Tensor>{Tensor{y_sum.data(), f32, {24}},
                                    Tensor{y_cat.data(), f32, {1, 48}}});
  std::vector<float> want_cat(rx);
  want_cat.insert(want_cat.end(), x.begin(), x.end());
  std::vector<float> want_sum(rx);
  for (float& v : want_sum) v *= 2;
  Check(y_cat == want_cat && y_sum == want_sum, "views beside writes");
  Check(later.FusedInto(first) == cat && later.FusedInto(held) == -1,
        "a view of a concat's input copies");
  Check(later.FusedInto(sum_in) == cat && later.FusedInto(sum) == sliced &&
            later.FusedInto(sliced) == -1,
        "a view an add accumulates into copies");
}

void ReuseAndPruning() {
  auto relu = std::make_shared<Layer<ReluAttrs>>(
      "r", ReluAttrs{}, std::vector<Tensor>{}, "direct");
  Model chain;
  int prev = Model::kInput;
  for (int i = 0; i < 10; ++i) prev = chain.AddLayer(relu, prev);
  chain.AddAdd({prev, 3, 5, Model::kInput}, "many");
  std::vector<float> x = {-1, 2, -3, 4};
  std::vector<float> y(4);
  chain.Forward(Tensor{x.data(), DType::kFloat32, {4}},
                Tensor{y.data(), DType::kFloat32, {4}});
  Check(y == std::vector<float>{-1, 8, -3, 16}, "4-input add");
  // Nodes 3 and 5 stay alive until the add, so more than two buffers, but
  // far fewer than ten.
  Check(chain.ActivationBuffers() <= 4,
        "chain: " + std::to_string(chain.ActivationBuffers()) + " buffers");
  Check(chain.ActivationBytes() <= 4 * 4 * sizeof(float) + 4 * 64,
        "chain: activation bytes");

  // A dead branch: conv2d expecting 3 channels on a 4-element vector would
  // fail, but nothing the output needs reads it.
  Conv1x1<float> conv("dead.conv", 3, 3, 51);
  Model pruned;
  const int live = pruned.AddLayer(relu, Model::kInput);
  pruned.AddLayer(conv.layer, live);
  pruned.SetOutput(live);
  Check(pruned.OutputShape({4}, DType::kFloat32) == Shape{4}, "pruned shape");
  pruned.Forward(Tensor{x.data(), DType::kFloat32, {4}},
                 Tensor{y.data(), DType::kFloat32, {4}});
  Check(y == std::vector<float>{0, 2, 0, 4}, "pruned run");
  Check(pruned.ActivationBuffers() == 0, "pruned: output only, no buffers");
}

void ErrorCases() {
  auto relu = std::make_shared<Layer<ReluAttrs>>(
      "r", ReluAttrs{}, std::vector<Tensor>{}, "direct");
  Conv1x1<float> conv("layer1.0.conv1", 3, 2, 61);
  Model m;
  ExpectError("empty model", ErrorKind::kInvalidArgument,
              "the model has no nodes",
              [&] { m.OutputShape({1}, DType::kFloat32); });
  ExpectError("bad layer input", ErrorKind::kInvalidArgument,
              "relu layer 'r': input 7 is not a node of this model (it has 0 "
              "nodes; -1 is the model input)",
              [&] { m.AddLayer(relu, 7); });
  ExpectError("bad layer input -2", ErrorKind::kInvalidArgument,
              "input -2 is not a node", [&] { m.AddLayer(relu, -2); });
  ExpectError("null layer", ErrorKind::kInvalidArgument, "layer is null",
              [&] { m.AddLayer(nullptr, Model::kInput); });
  const int c = m.AddLayer(conv.layer, Model::kInput);  // 3 -> 2 channels
  ExpectError("one-input add", ErrorKind::kInvalidArgument,
              "add node 'a': needs at least 2 inputs, got 1",
              [&] { m.AddAdd({c}, "a"); });
  ExpectError("bad add input", ErrorKind::kInvalidArgument,
              "add node 'a': input 1 is not a node",
              [&] { m.AddAdd({c, 1}, "a"); });
  ExpectError("empty concat", ErrorKind::kInvalidArgument,
              "concat node 'k': needs at least 1 input",
              [&] { m.AddConcat({}, 1, "k"); });
  ExpectError("bad output", ErrorKind::kInvalidArgument,
              "SetOutput: 3 is not a node", [&] { m.SetOutput(3); });
  Check(m.size() == 1, "failed adds add no node");

  const int add = m.AddAdd({c, Model::kInput}, "layer1.0.add");
  ExpectError("add shapes", ErrorKind::kShape,
              "add node 'layer1.0.add': input 1 (the model input) has shape "
              "(1, 3, 4, 4) but input 0 (node 0 'layer1.0.conv1') has shape "
              "(1, 2, 4, 4)",
              [&] { m.OutputShape({1, 3, 4, 4}, DType::kFloat32); });
  ExpectError("wrong channels", ErrorKind::kShape,
              "conv2d layer 'layer1.0.conv1' (direct): input (1, 5, 4, 4) "
              "(NCHW) has 5 channels, the layer expects 3",
              [&] { m.OutputShape({1, 5, 4, 4}, DType::kFloat32); });
  ExpectError("wrong dtype", ErrorKind::kDType,
              "conv2d layer 'layer1.0.conv1' (direct): input is float64",
              [&] { m.OutputShape({1, 3, 4, 4}, DType::kFloat64); });

  m.SetOutput(c);  // the add is pruned now, so its mismatch is no error
  Check(m.OutputShape({1, 3, 4, 4}, DType::kFloat32) == Shape{1, 2, 4, 4},
        "SetOutput prunes the add");
  // Nodes added later do not move an output set explicitly.
  m.AddConcat({c, Model::kInput}, 1, "cat");
  Check(m.output() == c &&
            m.OutputShape({1, 3, 4, 4}, DType::kFloat32) == Shape{1, 2, 4, 4},
        "SetOutput sticks");
  m.SetOutput(m.size() - 1);
  Check(m.OutputShape({1, 3, 4, 4}, DType::kFloat32) == Shape{1, 5, 4, 4},
        "concat output");
  (void)add;

  Model k;
  const int kc = k.AddLayer(conv.layer, Model::kInput);
  k.AddConcat({kc, Model::kInput}, 2, "cat2");
  ExpectError("concat shapes", ErrorKind::kShape,
              "concat node 'cat2': input 1 (the model input) has shape "
              "(1, 3, 4, 4) but input 0 (node 0 'layer1.0.conv1') has shape "
              "(1, 2, 4, 4); concat along axis 2 needs every other "
              "dimension to match",
              [&] { k.OutputShape({1, 3, 4, 4}, DType::kFloat32); });
  Model bad_axis;
  bad_axis.AddConcat({Model::kInput}, -5, "cat3");
  ExpectError("concat axis", ErrorKind::kShape,
              "concat node 'cat3': axis -5 is out of range for inputs of "
              "rank 4",
              [&] { bad_axis.OutputShape({1, 3, 4, 4}, DType::kFloat32); });

  Model r;
  r.AddLayer(relu, Model::kInput);
  std::vector<float> x(8), y(8);
  ExpectError("output shape", ErrorKind::kShape,
              "model output buffer is float32 (4,), expected float32 (8,)",
              [&] {
                r.Forward(Tensor{x.data(), DType::kFloat32, {8}},
                          Tensor{y.data(), DType::kFloat32, {4}});
              });
  ExpectError("overlap", ErrorKind::kInvalidArgument,
              "model output overlaps the model input", [&] {
                r.Forward(Tensor{x.data(), DType::kFloat32, {8}},
                          Tensor{x.data(), DType::kFloat32, {8}});
              });
  ExpectError("non-contiguous", ErrorKind::kInvalidArgument,
              "model input is not contiguous", [&] {
                r.Forward(Tensor{x.data(), DType::kFloat32, {2, 2}, {4, 2}},
                          Tensor{y.data(), DType::kFloat32, {2, 2}});
              });
  ExpectError("negative dim", ErrorKind::kShape,
              "model input has a negative dimension",
              [&] { r.OutputShape({-1, 2}, DType::kFloat32); });
}

}  // namespace

int Main() {
  ResidualBlock<float>();
  ResidualBlock<double>();
  FusedResidual<float>();
  FusedResidual<double>();
  ConcatBlock<float>();
  ConcatBlock<double>();
  ZeroCopyConcat<float>();
  ZeroCopyConcat<double>();
  for (int64_t c : {5, 37}) {
    const int64_t h = c == 5 ? 3 : 9, w = c == 5 ? 4 : 8;
    ConcatBatchNorm<float>(c, h, w);
    ConcatBatchNorm<double>(c, h, w);
  }
  PointwiseDepthwiseBlock();
  GatedConvBlock();
  ResidualConvBlock();
  Views();
  ReuseAndPruning();
  ErrorCases();
  return testing::Summary("graph");
}

}  // namespace ai3
