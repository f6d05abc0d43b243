// What the cc_tests of conv2d's three gradient ops share: a grid of conv2d
// parameters, naive double references of the three gradients (the
// definitions, written independently of the kernels), and a driver that
// runs one gradient op's algorithm on a case in either layout and dtype and
// compares it, plus the bad inputs every gradient op must refuse.
#ifndef AI3_CORE_OPS_CONV2D_BACKWARD_CONV2D_BACKWARD_TESTING_H_
#define AI3_CORE_OPS_CONV2D_BACKWARD_CONV2D_BACKWARD_TESTING_H_

#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "core/errors.h"
#include "core/layer.h"
#include "core/op_schema.h"
#include "core/ops/conv2d/backward/conv2d_backward.h"
#include "core/testing/op_test.h"
#include "core/testing/reference.h"

namespace ai3::testing {

struct ConvGradCase {
  int64_t n, c, h, w, k, kh, kw, sh, sw, pt, pb, pl, pr, dh, dw, groups;
  bool bias;
  int64_t oh() const { return (h + pt + pb - dh * (kh - 1) - 1) / sh + 1; }
  int64_t ow() const { return (w + pl + pr - dw * (kw - 1) - 1) / sw + 1; }
};

inline std::vector<ConvGradCase> ConvGradCases() {
  return {
      // n  c   h   w   k kh kw sh sw pt pb pl pr dh dw  g  bias
      {1, 3, 8, 8, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, true},
      {2, 5, 9, 7, 6, 3, 3, 1, 1, 0, 0, 0, 0, 1, 1, 1, false},
      {3, 8, 6, 5, 8, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, true},  // 1x1: a GEMM
      {1, 6, 12, 12, 4, 5, 5, 2, 2, 2, 2, 2, 2, 1, 1, 1, true},
      // Stride 3 leaves input rows no output reads (their gradient is 0).
      {2, 3, 11, 10, 2, 3, 2, 3, 3, 0, 0, 1, 0, 1, 1, 1, false},
      {2, 4, 9, 9, 4, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 1, true},    // dilated
      {1, 8, 10, 10, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 4, true},  // groups
      {2, 8, 7, 7, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 8, false},   // depthwise
      {1, 6, 9, 8, 12, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 6, true},   // multiplier 2
      {1, 3, 8, 9, 5, 2, 2, 1, 1, 0, 1, 0, 1, 1, 1, 1, true},    // asymmetric
      // Padding wider than the dilated kernel reaches (negative padding of
      // the transposed convolution), stride and dilation together.
      {1, 4, 7, 6, 3, 2, 3, 2, 1, 3, 2, 0, 4, 2, 1, 1, true},
      {2, 4, 1, 1, 5, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, true},  // 1x1 pixels
      {1, 3, 5, 5, 2, 3, 1, 1, 2, 1, 1, 0, 0, 1, 1, 1, true},
      {1, 16, 12, 11, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2, true},
      {1, 12, 9, 17, 24, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1, 1,
       false},                                                 // strided 1x1
      {0, 3, 5, 5, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, true},  // empty batch
  };
}

// The three gradients of y = clamp(conv(x, W) + b) (NCHW, double), for
// grad_output dy: dz = dy where the clamp let z through, then the
// definitions of dx, dW and db.
struct ConvGradients {
  std::vector<double> y, dx, dw, db;
};

inline ConvGradients ReferenceConvGradients(const ConvGradCase& p,
                                            const std::vector<double>& x,
                                            const std::vector<double>& w,
                                            const std::vector<double>& b,
                                            const std::vector<double>& dy,
                                            const Activation& act) {
  const int64_t oh = p.oh(), ow = p.ow();
  const int64_t cg = p.c / p.groups, kg = p.k / p.groups;
  ConvGradients g{std::vector<double>(p.n * p.k * oh * ow),
                  std::vector<double>(p.n * p.c * p.h * p.w),
                  std::vector<double>(p.k * cg * p.kh * p.kw),
                  std::vector<double>(p.k)};
  // Calls f(y index, x index, w index) for every product of the conv.
  auto each = [&](auto f) {
    for (int64_t n = 0; n < p.n; ++n)
      for (int64_t k = 0; k < p.k; ++k)
        for (int64_t i = 0; i < oh; ++i)
          for (int64_t j = 0; j < ow; ++j)
            for (int64_t c = 0; c < cg; ++c)
              for (int64_t r = 0; r < p.kh; ++r)
                for (int64_t s = 0; s < p.kw; ++s) {
                  const int64_t ih = i * p.sh - p.pt + r * p.dh;
                  const int64_t iw = j * p.sw - p.pl + s * p.dw;
                  if (ih < 0 || ih >= p.h || iw < 0 || iw >= p.w) continue;
                  const int64_t ci = (k / kg) * cg + c;
                  f(((n * p.k + k) * oh + i) * ow + j,
                    ((n * p.c + ci) * p.h + ih) * p.w + iw,
                    ((k * cg + c) * p.kh + r) * p.kw + s);
                }
  };
  std::vector<double> z(g.y.size());
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t k = 0; k < p.k; ++k)
      for (int64_t q = 0; q < oh * ow; ++q)
        z[(n * p.k + k) * oh * ow + q] = p.bias ? b[k] : 0;
  each([&](int64_t yi, int64_t xi, int64_t wi) { z[yi] += w[wi] * x[xi]; });
  std::vector<double> dz(z.size());
  const auto bounds = act.As<double>();
  for (size_t i = 0; i < z.size(); ++i) {
    g.y[i] = bounds(z[i]);
    dz[i] = !act.enabled || (g.y[i] > act.min && g.y[i] < act.max) ? dy[i] : 0;
  }
  each([&](int64_t yi, int64_t xi, int64_t wi) {
    g.dx[xi] += dz[yi] * w[wi];
    g.dw[wi] += dz[yi] * x[xi];
  });
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t k = 0; k < p.k; ++k)
      for (int64_t q = 0; q < oh * ow; ++q)
        g.db[k] += dz[(n * p.k + k) * oh * ow + q];
  return g;
}

// A layer of the gradient op `Attrs` for the case, built as the bindings
// build it: from conv2d's attributes by name, through the op's declaration
// (core/op_schema.h), so the test covers that the declaration takes them.
template <class Attrs>
std::shared_ptr<AnyLayer> ConvGradLayer(const ConvGradCase& p, Layout layout,
                                        const Activation& act,
                                        const WeightSlots& weights,
                                        const std::string& algorithm,
                                        const std::string& name) {
  AttrMap attrs = {{"stride", std::vector<int64_t>{p.sh, p.sw}},
                   {"padding", std::vector<int64_t>{p.pt, p.pb, p.pl, p.pr}},
                   {"dilation", std::vector<int64_t>{p.dh, p.dw}},
                   {"groups", p.groups},
                   {"layout", std::string(Name(layout))}};
  if (act.enabled) attrs["activation"] = std::vector<double>{act.min, act.max};
  return GetOpSchema(Attrs::kOp)
      .MakeLayer(name, attrs, weights, algorithm, Device::kCPU);
}

// The fused activations a gradient must see through: none, ReLU, and a
// two-sided clamp the outputs cross.
inline const std::vector<Activation>& GradActivations() {
  static const std::vector<Activation> kActs = {
      Activation{},
      Activation::Clamp(0.0, std::numeric_limits<double>::infinity()),
      Activation::Clamp(-0.3, 0.4)};
  return kActs;
}

// One case of the gradient op `Attrs` (kTarget's) with `algorithm`; 0 if
// the registry refused it (with a reason), else 1.
template <class Attrs, typename T>
int RunConvGradCase(const ConvGradCase& p, Layout layout,
                    const std::string& algorithm, const Activation& act) {
  const DType dtype =
      std::is_same_v<T, double> ? DType::kFloat64 : DType::kFloat32;
  const int64_t oh = p.oh(), ow = p.ow();
  auto xd = RandomVector(p.n * p.c * p.h * p.w, 1);
  auto wd = RandomVector(p.k * (p.c / p.groups) * p.kh * p.kw, 2);
  auto bd = RandomVector(p.k, 3);
  auto dyd = RandomVector(p.n * p.k * oh * ow, 4);
  ConvGradients ref = ReferenceConvGradients(p, xd, wd, bd, dyd, act);
  std::vector<double> want =
      std::is_same_v<Attrs, Conv2dBackwardDataAttrs>     ? ref.dx
      : std::is_same_v<Attrs, Conv2dBackwardWeightAttrs> ? ref.dw
                                                         : ref.db;
  if (layout == Layout::kNHWC) {
    xd = ToNhwc(xd, p.n, p.c, p.h, p.w);
    dyd = ToNhwc(dyd, p.n, p.k, oh, ow);
    ref.y = ToNhwc(ref.y, p.n, p.k, oh, ow);
    if (std::is_same_v<Attrs, Conv2dBackwardDataAttrs>) {
      want = ToNhwc(want, p.n, p.c, p.h, p.w);
    }
  }
  auto x = Cast<T>(xd), w = Cast<T>(wd), b = Cast<T>(bd), dy = Cast<T>(dyd),
       y = Cast<T>(ref.y);
  WeightSlots weights = {
      Tensor{w.data(), dtype, {p.k, p.c / p.groups, p.kh, p.kw}}, std::nullopt};
  if (p.bias) weights[1] = Tensor{b.data(), dtype, {p.k}};
  std::shared_ptr<AnyLayer> made;
  try {
    made = ConvGradLayer<Attrs>(p, layout, act, weights, algorithm, "test");
  } catch (const Error& e) {
    // Refused, with the reason: counted, not run.
    Check(e.kind() == ErrorKind::kAlgorithmNotApplicable &&
              std::string(e.what()).find("cannot take this layer: ") !=
                  std::string::npos,
          std::string(Attrs::kOp) + " " + algorithm + ": " + e.what());
    return 0;
  }
  AnyLayer& layer = *made;
  const Shape x_shape = ImageShape({p.n, p.c, p.h, p.w}, layout);
  const Shape y_shape = ImageShape({p.n, p.k, oh, ow}, layout);
  const std::vector<Tensor> inputs = {
      Tensor{dy.data(), dtype, y_shape, {}, layout},
      Tensor{x.data(), dtype, x_shape, {}, layout},
      Tensor{y.data(), dtype, y_shape, {}, layout}};
  const Shape out_shape = layer.OutputShape(inputs);
  // NaN where a kernel fails to write an element.
  std::vector<T> out(NumElements(out_shape),
                     std::numeric_limits<T>::quiet_NaN());
  Tensor out_t{out.data(), dtype, out_shape, {}, layout};
  layer.Forward(inputs, out_t);
  layer.Forward(inputs, out_t);  // again, reusing the workspace
  const double err = MaxRelativeError(out, want);
  const double tol = std::is_same_v<T, double> ? 1e-10 : 2e-4;
  char desc[320];
  std::snprintf(desc, sizeof desc,
                "%s %s %s %s n%ld c%ld %ldx%ld k%ld kernel %ldx%ld stride "
                "%ld,%ld pad %ld,%ld,%ld,%ld dil %ld,%ld groups %ld bias %d "
                "act %d: err %.3g",
                Attrs::kOp, algorithm.c_str(), Name(dtype), Name(layout), p.n,
                p.c, p.h, p.w, p.k, p.kh, p.kw, p.sh, p.sw, p.pt, p.pb, p.pl,
                p.pr, p.dh, p.dw, p.groups, p.bias, act.enabled, err);
  Check(err <= tol, desc);
  return 1;
}

// Bad inputs every conv2d gradient op refuses, naming the layer and the
// input: y not conv2d's output shape for x, grad_output not y's shape, x
// with the wrong channels, mixed dtypes, an unknown algorithm.
template <class Attrs>
void ConvGradBadInputs() {
  const ConvGradCase p{1, 2, 5, 5, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, true};
  std::vector<float> w(3 * 2 * 9), b(3), buf(1000);
  std::vector<double> buf64(1000);
  const WeightSlots weights = {Tensor{w.data(), DType::kFloat32, {3, 2, 3, 3}},
                               Tensor{b.data(), DType::kFloat32, {3}}};
  auto make = [&](const std::string& algorithm) {
    return ConvGradLayer<Attrs>(p, Layout::kNCHW, Activation{}, weights,
                                algorithm, "g");
  };
  std::shared_ptr<AnyLayer> made = make("direct");
  AnyLayer& layer = *made;
  auto t = [&](Shape s) { return Tensor{buf.data(), DType::kFloat32, s}; };
  const std::string op = std::string(Attrs::kOp) + " layer 'g'";
  ExpectError(
      op + " y shape", ErrorKind::kShape, "input 2 (y) is (1, 3, 4, 5)", [&] {
        layer.OutputShape({t({1, 3, 5, 5}), t({1, 2, 5, 5}), t({1, 3, 4, 5})});
      });
  ExpectError(
      op + " grad_output shape", ErrorKind::kShape,
      "input 0 (grad_output) is (1, 3, 5, 4)", [&] {
        layer.OutputShape({t({1, 3, 5, 4}), t({1, 2, 5, 5}), t({1, 3, 5, 5})});
      });
  ExpectError(
      op + " x channels", ErrorKind::kShape,
      op + " (direct): input 1 (x): input (1, 4, 5, 5)", [&] {
        layer.OutputShape({t({1, 3, 5, 5}), t({1, 4, 5, 5}), t({1, 3, 5, 5})});
      });
  ExpectError(op + " dtypes", ErrorKind::kDType, "input 1 is float64", [&] {
    layer.OutputShape({t({1, 3, 5, 5}),
                       Tensor{buf64.data(), DType::kFloat64, {1, 2, 5, 5}},
                       t({1, 3, 5, 5})});
  });
  ExpectError(op + " two inputs", ErrorKind::kInvalidArgument, "takes 3",
              [&] { layer.OutputShape({t({1, 3, 5, 5}), t({1, 2, 5, 5})}); });
  ExpectError(op + " unknown algorithm", ErrorKind::kUnknownAlgorithm,
              "unknown " + std::string(Attrs::kOp) + " algorithm 'nope'",
              [&] { make("nope"); });
}

// main() of a conv2d gradient op's cc_test: every registered CPU algorithm
// over the grid, both layouts and dtypes, each case with one of the
// activations in turn; then the bad inputs.
template <class Attrs>
int RunConvGradTest() {
  ConvGradBadInputs<Attrs>();
  const auto cases = ConvGradCases();
  int ran = 0, refused = 0;
  for (const std::string& algorithm : CpuAlgorithms<Attrs>()) {
    for (size_t i = 0; i < cases.size(); ++i) {
      const Activation& act = GradActivations()[i % 3];
      for (Layout layout : {Layout::kNCHW, Layout::kNHWC}) {
        const int r =
            RunConvGradCase<Attrs, float>(cases[i], layout, algorithm, act) +
            RunConvGradCase<Attrs, double>(cases[i], layout, algorithm, act);
        ran += r;
        refused += 2 - r;
      }
    }
  }
  std::printf("%d refused by the registry (with a reason)\n", refused);
  return Summary(Attrs::kOp, ran);
}

}  // namespace ai3::testing

#endif  // AI3_CORE_OPS_CONV2D_BACKWARD_CONV2D_BACKWARD_TESTING_H_
