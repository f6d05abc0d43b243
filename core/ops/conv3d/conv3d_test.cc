// Every registered CPU conv3d algorithm against the definition (conv3d.h,
// summed in double) over a grid of kernel, stride, padding (asymmetric
// included), dilation, groups, bias and input sizes, with and without a
// fused ReLU, NCDHW and NDHWC, float32 and float64; then the errors bad
// attributes, weights and inputs must raise. An algorithm that refuses a
// case must say why through the registry.
#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/buffer.h"
#include "core/errors.h"
#include "core/layer.h"
#include "core/ops/conv3d/conv3d.h"
#include "core/testing/op_test.h"
#include "core/testing/reference.h"

namespace ai3 {
namespace {

using testing::Check;
using testing::ExpectError;
using Triple = std::array<int64_t, 3>;

struct Case {
  int64_t n, c, k;
  Triple size, kernel, stride;
  std::vector<int64_t> padding;  // front, back, top, bottom, left, right
  Triple dilation;
  int64_t groups;
  bool bias, relu;
};

Triple OutputSize(const Case& p) {
  Triple out;
  for (int d = 0; d < 3; ++d) {
    out[d] = (p.size[d] + p.padding[2 * d] + p.padding[2 * d + 1] -
              p.dilation[d] * (p.kernel[d] - 1) - 1) /
                 p.stride[d] +
             1;
  }
  return out;
}

// y (NCDHW, double) by the definition.
std::vector<double> Reference(const Case& p, const std::vector<double>& x,
                              const std::vector<double>& w,
                              const std::vector<double>& b) {
  const Triple o = OutputSize(p);
  const Triple& s = p.size;
  const int64_t cg = p.c / p.groups, kg = p.k / p.groups;
  std::vector<double> y;
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t k = 0; k < p.k; ++k)
      for (int64_t z = 0; z < o[0]; ++z)
        for (int64_t i = 0; i < o[1]; ++i)
          for (int64_t j = 0; j < o[2]; ++j) {
            double sum = p.bias ? b[k] : 0.0;
            for (int64_t c = 0; c < cg; ++c)
              for (int64_t q = 0; q < p.kernel[0]; ++q)
                for (int64_t r = 0; r < p.kernel[1]; ++r)
                  for (int64_t t = 0; t < p.kernel[2]; ++t) {
                    const int64_t iz =
                        z * p.stride[0] - p.padding[0] + q * p.dilation[0];
                    const int64_t ii =
                        i * p.stride[1] - p.padding[2] + r * p.dilation[1];
                    const int64_t ij =
                        j * p.stride[2] - p.padding[4] + t * p.dilation[2];
                    if (iz < 0 || iz >= s[0] || ii < 0 || ii >= s[1] ||
                        ij < 0 || ij >= s[2]) {
                      continue;
                    }
                    const int64_t ci = k / kg * cg + c;
                    sum +=
                        x[(((n * p.c + ci) * s[0] + iz) * s[1] + ii) * s[2] +
                          ij] *
                        w[(((k * cg + c) * p.kernel[0] + q) * p.kernel[1] + r) *
                              p.kernel[2] +
                          t];
                  }
            y.push_back(p.relu ? std::max(sum, 0.0) : sum);
          }
  return y;
}

Conv3dAttrs AttrsOf(const Case& p, DType dtype, Layout layout) {
  Conv3dAttrs a;
  a.in_channels = p.c;
  a.out_channels = p.k;
  a.kernel = p.kernel;
  a.stride = {p.stride.begin(), p.stride.end()};
  a.padding = p.padding;
  a.dilation = {p.dilation.begin(), p.dilation.end()};
  a.groups = p.groups;
  a.has_bias = p.bias;
  a.dtype = dtype;
  a.layout = layout;
  if (p.relu) a.activation = Activation::Clamp(0, INFINITY);
  return a;
}

Shape VolumeShape(int64_t n, int64_t c, const Triple& s, Layout layout) {
  return layout == Layout::kNHWC ? Shape{n, s[0], s[1], s[2], c}
                                 : Shape{n, c, s[0], s[1], s[2]};
}

template <typename T>
void RunCase(T, const Case& p, Layout layout, const std::string& algorithm) {
  const DType dtype = testing::DTypeOf<T>();
  const Conv3dAttrs a = AttrsOf(p, dtype, layout);
  for (auto& [name, reason] :
       Registry<Conv3dAttrs>::Get().Applicability(Device::kCPU, a)) {
    if (name == algorithm && !reason.empty()) return;  // refused, with a reason
  }
  const int64_t volume = p.size[0] * p.size[1] * p.size[2];
  const Triple o = OutputSize(p);
  const int64_t taps = p.kernel[0] * p.kernel[1] * p.kernel[2];
  auto xd = testing::RandomVector(p.n * p.c * volume, 1);
  const auto w =
      testing::Cast<T>(testing::RandomVector(p.k * (p.c / p.groups) * taps, 2));
  const auto b = testing::Cast<T>(testing::RandomVector(p.k, 3));
  auto want = Reference(p, xd, {w.begin(), w.end()}, {b.begin(), b.end()});
  if (layout == Layout::kNHWC) {  // (N, C, S) -> (N, S, C)
    xd = testing::ToNhwc(xd, p.n, p.c, volume, 1);
    want = testing::ToNhwc(want, p.n, p.k, o[0] * o[1] * o[2], 1);
  }
  const auto x = testing::Cast<T>(xd);
  std::vector<Tensor> params = {
      Tensor{const_cast<T*>(w.data()),
             dtype,
             {p.k, p.c / p.groups, p.kernel[0], p.kernel[1], p.kernel[2]}}};
  if (p.bias) params.push_back(Tensor{const_cast<T*>(b.data()), dtype, {p.k}});
  Layer<Conv3dAttrs> layer("conv", a, params, algorithm);
  const Tensor xt{const_cast<T*>(x.data()), dtype,
                  VolumeShape(p.n, p.c, p.size, layout)};
  const Shape out_shape = VolumeShape(p.n, p.k, o, layout);
  const std::string desc =
      algorithm + " " + Name(dtype) + " " + Name(layout) + " " +
      ToString(xt.shape) + " -> " + ToString(out_shape) + " kernel " +
      std::to_string(p.kernel[0]) + "x" + std::to_string(p.kernel[1]) + "x" +
      std::to_string(p.kernel[2]) + " s" + std::to_string(p.stride[0]) +
      std::to_string(p.stride[1]) + std::to_string(p.stride[2]) + " g" +
      std::to_string(p.groups);
  Check(layer.OutputShape(xt) == out_shape, desc + ": output shape");
  Buffer y(want.size() * sizeof(T));
  std::fill(y.as<T>(), y.as<T>() + want.size(), T(-42));
  layer.Forward(xt, Tensor{y.data(), dtype, out_shape});
  layer.Forward(xt, Tensor{y.data(), dtype, out_shape});  // reused workspace
  const std::vector<T> got(y.as<T>(), y.as<T>() + want.size());
  const double tol = sizeof(T) == 4 ? 1e-4 : 1e-10;
  Check(testing::MaxRelativeError(got, want) < tol, desc);
}

void ErrorCases() {
  std::vector<float> w(4 * 2 * 27), x(2 * 4 * 4 * 4);
  const Tensor weight{w.data(), DType::kFloat32, {4, 2, 3, 3, 3}};
  Conv3dAttrs a;
  a.in_channels = 2;
  a.out_channels = 4;
  a.kernel = {3, 3, 3};
  Conv3dAttrs bad = a;
  bad.stride = {1, 1};
  ExpectError("stride size", ErrorKind::kInvalidArgument,
              "stride must have 3 values, got 2",
              [&] { Layer<Conv3dAttrs>("c", bad, {weight}, "direct"); });
  bad = a;
  bad.padding = {0, 0, -1, 0, 0, 0};
  ExpectError("negative padding", ErrorKind::kInvalidArgument,
              "padding values must be in [0, 2^31 - 1], got -1",
              [&] { Layer<Conv3dAttrs>("c", bad, {weight}, "direct"); });
  bad = a;
  bad.dilation = {1, 0, 1};
  ExpectError("zero dilation", ErrorKind::kInvalidArgument,
              "dilation values must be in [1, 2^31 - 1], got 0",
              [&] { Layer<Conv3dAttrs>("c", bad, {weight}, "direct"); });
  bad = a;
  bad.kernel = {3, 3, 2};
  ExpectError("weight shape", ErrorKind::kShape,
              "(out_channels, in_channels / groups, kernel_d, kernel_h, "
              "kernel_w)",
              [&] { Layer<Conv3dAttrs>("c", bad, {weight}, "gemm"); });
  bad = a;
  bad.groups = 3;
  ExpectError("groups", ErrorKind::kInvalidArgument,
              "groups=3 must divide in_channels=2 and out_channels=4",
              [&] { Layer<Conv3dAttrs>("c", bad, {weight}, "direct"); });
  Layer<Conv3dAttrs> layer("c", a, {weight}, "gemm");
  ExpectError("rank", ErrorKind::kShape, "expected a rank-5 NCDHW input", [&] {
    layer.OutputShape(Tensor{x.data(), DType::kFloat32, {2, 2, 4, 16}});
  });
  ExpectError(
      "channels", ErrorKind::kShape, "has 4 channels, the layer expects 2",
      [&] {
        layer.OutputShape(Tensor{x.data(), DType::kFloat32, {1, 4, 2, 4, 4}});
      });
  ExpectError(
      "too small", ErrorKind::kShape,
      "padded to 2 in depth is smaller than the dilated kernel's 3", [&] {
        layer.OutputShape(Tensor{x.data(), DType::kFloat32, {2, 2, 2, 4, 4}});
      });
  ExpectError("dtype", ErrorKind::kDType, "float64", [&] {
    layer.OutputShape(Tensor{x.data(), DType::kFloat64, {1, 2, 4, 4, 4}});
  });
  ExpectError("unknown algorithm", ErrorKind::kUnknownAlgorithm,
              "unknown conv3d algorithm 'winograd'",
              [&] { Layer<Conv3dAttrs>("c", a, {weight}, "winograd"); });
}

}  // namespace

int Main() {
  const std::vector<int64_t> none = {0, 0, 0, 0, 0, 0},
                             one = {1, 1, 1, 1, 1, 1};
  // n, c, k, size, kernel, stride, padding, dilation, groups, bias, relu
  const std::vector<Case> cases = {
      {1,
       1,
       1,
       {1, 1, 1},
       {1, 1, 1},
       {1, 1, 1},
       none,
       {1, 1, 1},
       1,
       false,
       false},
      {2,
       3,
       4,
       {4, 5, 6},
       {3, 3, 3},
       {1, 1, 1},
       one,
       {1, 1, 1},
       1,
       true,
       false},
      // r3d's stem: (3, 7, 7), stride (1, 2, 2), padding (1, 3, 3)
      {1,
       3,
       8,
       {4, 12, 12},
       {3, 7, 7},
       {1, 2, 2},
       {1, 1, 3, 3, 3, 3},
       {1, 1, 1},
       1,
       false,
       true},
      // r(2+1)d's factorised kernels
      {2,
       4,
       6,
       {3, 6, 6},
       {1, 3, 3},
       {1, 1, 1},
       {0, 0, 1, 1, 1, 1},
       {1, 1, 1},
       1,
       true,
       true},
      {1,
       6,
       4,
       {5, 4, 4},
       {3, 1, 1},
       {2, 1, 1},
       {1, 1, 0, 0, 0, 0},
       {1, 1, 1},
       1,
       true,
       false},
      // 1x1x1 (a projection shortcut, stride 2 and not)
      {2,
       8,
       5,
       {3, 4, 5},
       {1, 1, 1},
       {1, 1, 1},
       none,
       {1, 1, 1},
       1,
       true,
       false},
      {1,
       8,
       4,
       {4, 6, 6},
       {1, 1, 1},
       {2, 2, 2},
       none,
       {1, 1, 1},
       1,
       false,
       false},
      // asymmetric padding ("same" with even kernels), dilation, groups
      {1,
       4,
       4,
       {5, 6, 7},
       {2, 2, 2},
       {1, 1, 1},
       {0, 1, 1, 0, 0, 1},
       {1, 1, 1},
       2,
       true,
       false},
      {1,
       2,
       4,
       {6, 6, 6},
       {3, 3, 3},
       {1, 2, 1},
       {2, 2, 2, 2, 1, 1},
       {2, 2, 1},
       1,
       false,
       true},
      {2,
       6,
       6,
       {3, 5, 5},
       {3, 3, 3},
       {1, 1, 1},
       one,
       {1, 1, 1},
       6,
       true,
       false},  // depthwise
      // more frames than one chunk of gemm's columns holds
      {1,
       16,
       8,
       {40, 20, 20},
       {3, 3, 3},
       {1, 1, 1},
       one,
       {1, 1, 1},
       1,
       true,
       false},
  };
  const int ran =
      testing::RunEachLayout(testing::CpuAlgorithms<Conv3dAttrs>(), cases,
                             [](auto... args) { RunCase(args...); });
  ErrorCases();
  return testing::Summary("conv3d", ran);
}

}  // namespace ai3
