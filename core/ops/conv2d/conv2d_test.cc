// Every registered CPU conv2d algorithm against a naive reference over a grid
// of parameters, in float32 and float64 and both layouts. An algorithm that
// refuses a case must say why through the registry; one that accepts it must
// match.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "core/buffer.h"
#include "core/errors.h"
#include "core/layer.h"
#include "core/ops/conv2d/conv2d.h"
#include "core/testing/reference.h"

namespace ai3 {
namespace {

using testing::Check;
using testing::ToNhwc;

struct Case {
  int64_t n, c, h, w, k, kh, kw, sh, sw, pt, pb, pl, pr, dh, dw, groups;
  bool bias;
};

// Naive NCHW convolution in double: the definition, written independently.
std::vector<double> Reference(const Case& p, const std::vector<double>& x,
                              const std::vector<double>& w,
                              const std::vector<double>& b, int64_t oh,
                              int64_t ow) {
  std::vector<double> y(p.n * p.k * oh * ow);
  int64_t cg = p.c / p.groups, kg = p.k / p.groups;
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t k = 0; k < p.k; ++k)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          double acc = p.bias ? b[k] : 0;
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t r = 0; r < p.kh; ++r)
              for (int64_t s = 0; s < p.kw; ++s) {
                int64_t ih = i * p.sh - p.pt + r * p.dh;
                int64_t iw = j * p.sw - p.pl + s * p.dw;
                if (ih < 0 || ih >= p.h || iw < 0 || iw >= p.w) continue;
                int64_t ci = (k / kg) * cg + c;
                acc += w[((k * cg + c) * p.kh + r) * p.kw + s] *
                       x[((n * p.c + ci) * p.h + ih) * p.w + iw];
              }
          y[((n * p.k + k) * oh + i) * ow + j] = acc;
        }
  return y;
}

// The fused activations every algorithm must apply in its epilogue: none,
// ReLU, a two-sided clamp (ReLU6-like, with bounds the outputs cross),
// SiLU, sigmoid, HardSwish followed by a clamp, and GELU in both forms.
Activation HardSwishClamped() {
  Activation a = Activation::Clamp(-0.2, 0.5);
  a.fn = ActivationFn::kHardSwish;
  return a;
}
const Activation kActivations[] = {
    Activation{},
    Activation::Clamp(0.0, std::numeric_limits<double>::infinity()),
    Activation::Clamp(-0.3, 0.4),
};
const Activation kFnActivations[] = {
    Activation::Function(ActivationFn::kSilu),
    Activation::Function(ActivationFn::kSigmoid),
    HardSwishClamped(),
    Activation::Function(ActivationFn::kGelu),
    Activation::Function(ActivationFn::kGeluTanh),
};

// The activation as torch writes it (std::exp; not the kernels' own code).
double Activate(const Activation& act, double v) {
  if (!act.enabled) return v;
  switch (act.fn) {
    case ActivationFn::kSilu:
      v = v / (1 + std::exp(-v));
      break;
    case ActivationFn::kSigmoid:
      v = 1 / (1 + std::exp(-v));
      break;
    case ActivationFn::kHardSwish:
      v = v * std::min(std::max(v + 3, 0.0), 6.0) / 6;
      break;
    case ActivationFn::kGelu:
      v = 0.5 * v * std::erfc(-v / std::sqrt(2.0));
      break;
    case ActivationFn::kGeluTanh:
      v = 0.5 * v *
          (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
      break;
    case ActivationFn::kIdentity:
      break;
  }
  return std::min(std::max(v, act.min), act.max);
}

template <typename T>
int RunCase(const Case& p, Layout layout, const std::string& algorithm,
            const Activation& act) {
  Conv2dAttrs a;
  a.in_channels = p.c;
  a.out_channels = p.k;
  a.kernel_h = p.kh;
  a.kernel_w = p.kw;
  a.stride_h = p.sh;
  a.stride_w = p.sw;
  a.pad_top = p.pt;
  a.pad_bottom = p.pb;
  a.pad_left = p.pl;
  a.pad_right = p.pr;
  a.dilation_h = p.dh;
  a.dilation_w = p.dw;
  a.groups = p.groups;
  a.has_bias = p.bias;
  a.dtype = testing::DTypeOf<T>();
  a.layout = layout;
  a.activation = act;

  std::string why;
  for (auto& [name, reason] :
       Registry<Conv2dAttrs>::Get().Applicability(Device::kCPU, a)) {
    if (name == algorithm) why = reason;
  }
  if (!why.empty()) return 0;  // refused, with a reason: counted, not run

  int64_t oh = (p.h + p.pt + p.pb - p.dh * (p.kh - 1) - 1) / p.sh + 1;
  int64_t ow = (p.w + p.pl + p.pr - p.dw * (p.kw - 1) - 1) / p.sw + 1;
  auto xd = testing::RandomVector(p.n * p.c * p.h * p.w, 1);
  auto wd = testing::RandomVector(p.k * (p.c / p.groups) * p.kh * p.kw, 2);
  auto bd = testing::RandomVector(p.k, 3);
  auto want = Reference(p, xd, wd, bd, oh, ow);
  for (double& v : want) v = Activate(act, v);
  if (layout == Layout::kNHWC) {
    xd = ToNhwc(xd, p.n, p.c, p.h, p.w);
    want = ToNhwc(want, p.n, p.k, oh, ow);
  }
  auto x = testing::Cast<T>(xd);
  auto w = testing::Cast<T>(wd);
  auto b = testing::Cast<T>(bd);
  // 64-byte aligned, as a Model's buffers are (direct's streamed stores
  // need whole aligned vectors).
  Buffer y_buffer(want.size() * sizeof(T));
  std::vector<T> y(want.size());

  Tensor wt{w.data(), a.dtype, {p.k, p.c / p.groups, p.kh, p.kw}};
  Tensor bt{b.data(), a.dtype, {p.k}};
  std::vector<Tensor> params = {wt};
  if (p.bias) params.push_back(bt);
  Layer<Conv2dAttrs> layer("test", a, params, algorithm);
  Tensor xt{
      x.data(), a.dtype, ImageShape({p.n, p.c, p.h, p.w}, layout), {}, layout};
  Tensor yt{y_buffer.data(),
            a.dtype,
            ImageShape({p.n, p.k, oh, ow}, layout),
            {},
            layout};
  layer.Forward(xt, yt);
  // A second call reuses the workspace and must give the same answer.
  layer.Forward(xt, yt);
  std::copy(y_buffer.as<T>(), y_buffer.as<T>() + y.size(), y.begin());

  double err = testing::MaxRelativeError(y, want);
  double tol = std::is_same_v<T, double> ? 1e-10 : 1e-4;
  char desc[256];
  std::snprintf(
      desc, sizeof desc,
      "%s %s %s n%ld c%ld %ldx%ld k%ld kernel %ldx%ld stride %ld,%ld "
      "pad %ld,%ld,%ld,%ld dil %ld,%ld groups %ld bias %d act %s [%g, %g]: "
      "err %.3g",
      algorithm.c_str(), Name(a.dtype), Name(layout), p.n, p.c, p.h, p.w, p.k,
      p.kh, p.kw, p.sh, p.sw, p.pt, p.pb, p.pl, p.pr, p.dh, p.dw, p.groups,
      p.bias, ActivationFnName(act.fn), act.enabled ? act.min : -INFINITY,
      act.enabled ? act.max : INFINITY, err);
  Check(err <= tol, desc);
  return 1;
}

// Sizes the kernels' int64 index arithmetic cannot take are refused by the
// attributes, naming the layer (found by tests/fuzz: smm's padded copy and
// slack wrapped, and wrote out of bounds, for stride 2^62 and padding 2^61).
void BoundCases() {
  std::vector<float> w(2 * 3 * 3 * 3);
  Conv2dAttrs a;
  a.in_channels = 3;
  a.out_channels = 2;
  a.kernel_h = a.kernel_w = 3;
  const std::vector<Tensor> params = {
      Tensor{w.data(), DType::kFloat32, {2, 3, 3, 3}}};
  for (int64_t big : {int64_t{1} << 31, int64_t{1} << 62,
                      std::numeric_limits<int64_t>::max()}) {
    for (int which = 0; which < 3; ++which) {
      Conv2dAttrs b = a;
      (which == 0 ? b.stride_h : which == 1 ? b.dilation_w : b.pad_right) = big;
      testing::ExpectError("size " + std::to_string(big),
                           ErrorKind::kInvalidArgument, "conv2d layer 'c': ",
                           [&] { Layer<Conv2dAttrs>("c", b, params, "smm"); });
    }
  }
  Conv2dAttrs padded = a;
  padded.stride_h = padded.stride_w = kMaxConv2dSize;
  padded.pad_top = padded.pad_bottom = int64_t{1} << 30;
  padded.pad_left = padded.pad_right = int64_t{1} << 30;
  Layer<Conv2dAttrs> layer("c", padded, params, "direct");
  std::vector<float> x(3 * 4 * 4);
  testing::ExpectError(
      "padded input", ErrorKind::kShape, "the padded input (3, ", [&] {
        layer.OutputShape(Tensor{x.data(), DType::kFloat32, {1, 3, 4, 4}});
      });
}

}  // namespace

int Main() {
  BoundCases();
  const std::vector<Case> cases = {
      // n  c   h   w   k kh kw sh sw pt pb pl pr dh dw  g  bias
      {1, 3, 8, 8, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, true},
      {2, 5, 9, 7, 6, 3, 3, 1, 1, 0, 0, 0, 0, 1, 1, 1, false},
      {1, 4, 13, 11, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, true},
      {3, 8, 10, 10, 8, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, true},
      {1, 6, 12, 12, 4, 5, 5, 2, 2, 2, 2, 2, 2, 1, 1, 1, true},
      {1, 3, 17, 15, 2, 7, 7, 2, 2, 3, 3, 3, 3, 1, 1, 1, false},
      {2, 4, 9, 9, 4, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 1, true},
      {1, 8, 10, 10, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 4, true},
      {1, 8, 7, 7, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 8, false},
      {1, 3, 8, 9, 5, 2, 2, 1, 1, 0, 1, 0, 1, 1, 1, 1, true},
      {1, 2, 6, 6, 3, 3, 3, 1, 1, 0, 2, 1, 0, 1, 1, 1, true},
      {2, 4, 1, 1, 5, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, true},
      {1, 3, 5, 5, 2, 3, 1, 1, 2, 1, 1, 0, 0, 1, 1, 1, true},
      {1, 16, 20, 20, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2, true},
      // Winograd in NHWC: whole vectors of input channels (read a pixel at
      // a time and transposed) with output channels that fill no float
      // vector (written per channel in float32, transposed in float64).
      {2, 16, 9, 11, 12, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, true},
      // Winograd with channels in the lanes (NHWC, whole vectors of input
      // and output channels): 27 tiles across three images, so a task of
      // 24 and a last one of 3 (a partial register block), 24 output
      // channels (in float32 a block of two vectors and one of one),
      // asymmetric padding.
      {3, 16, 10, 11, 24, 3, 3, 1, 1, 2, 0, 1, 1, 1, 1, 1, true},
      // ... and 200 tiles: more tasks than threads twice over, so each task
      // runs all 3 blocks of output channels over its tiles' V, the last
      // task a partial one (8 tiles).
      {2, 16, 40, 40, 48, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, true},
      // ... and more output channels (72: 4 blocks and a partial one) than
      // tiles (8): the threads split the output channels (groups first).
      {2, 16, 7, 7, 72, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, true},
      // The same two orders with AVX-512's lanes (channels in whole 16-float
      // vectors; 24 and 72 above run AVX2's there): 144 output channels are
      // two 64-channel blocks and a partial one (one vector), split by the
      // threads over 8 tiles; then 64 tiles in 3 tasks over 80 channels.
      {2, 32, 7, 7, 144, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, true},
      {1, 32, 30, 30, 80, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, true},
      // Dilation with stride and asymmetric padding; cg*kh*kw = 216 spans
      // more than one depth block of a blocked GEMM.
      {1, 24, 11, 13, 10, 3, 3, 2, 2, 2, 1, 2, 0, 2, 2, 1, true},
      // One input channel per group, two outputs each, and a 5x5 kernel
      // larger than the 4x3 input (only the padding makes it fit).
      {2, 3, 4, 3, 6, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 3, false},
      // Register-blocked kernels (direct, smm, implicit gemm): more output
      // channels than one block and a partial last block (40 = 32 + 8,
      // 16 + 16 + 8), rows wide enough for interior pixel blocks beside the
      // edge ones, stride 2 on them.
      {2, 5, 9, 31, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, true},
      {1, 7, 12, 29, 40, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, false},
      // Depthwise (one input channel per group) past one vector of
      // channels, a partial block, stride 1 and 2, and 7x7 (ConvNeXt).
      {2, 40, 9, 30, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 40, true},
      {1, 40, 13, 27, 40, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 40, false},
      {1, 24, 12, 19, 24, 7, 7, 1, 1, 3, 3, 3, 3, 1, 1, 24, true},
      // Depthwise with a multiplier of 2, dilated, asymmetric padding.
      {1, 20, 10, 26, 40, 3, 3, 1, 1, 2, 1, 2, 0, 2, 2, 20, true},
      // Pointwise 1x1 over wide rows, and a strided 1x1 (no longer a GEMM).
      {2, 36, 7, 33, 20, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, true},
      {1, 12, 9, 17, 24, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1, 1, false},
      // NCHW depthwise (direct's planar form, pixels in the lanes): rows
      // of several blocks of vectors and a partial last vector, a
      // multiplier of 2; stride 3 (gathered loads) with asymmetric
      // padding; stride 2 dilated rows.
      {1, 6, 5, 70, 12, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 6, true},
      {2, 5, 11, 50, 5, 3, 3, 3, 3, 1, 0, 1, 2, 1, 1, 5, false},
      {1, 4, 9, 40, 4, 5, 3, 2, 2, 2, 2, 1, 1, 2, 1, 4, true},
      // No column of padding (direct reads NHWC rows in place): unpadded
      // and strided, and padded top and bottom only with a dilated width.
      {2, 8, 9, 12, 20, 3, 3, 2, 2, 0, 0, 0, 0, 1, 1, 1, true},
      {1, 6, 7, 9, 10, 3, 3, 1, 1, 1, 1, 0, 0, 1, 2, 1, false},
      // Packed weights of a group past direct's 256 KiB budget, so its
      // tasks run a channel block's rows in a row (BlocksOuter): two
      // images, and two groups at stride 2.
      {2, 160, 5, 6, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, true},
      {1, 320, 4, 5, 80, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 2, false},
      // NCHW pointwise (direct's pixels-in-lanes GEMM): grouped, planes
      // that end in a partial vector, output channels past a block and its
      // sub-blocks.
      {2, 12, 5, 9, 18, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 3, true},
      {1, 10, 7, 7, 72, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, false},
      // NHWC pointwise (direct's flat-pixel GEMM, any stride): pixel tiles
      // that cross rows and images (3 images of 5x3), a last channel
      // block of at most one vector (45 = 32 + 13; AVX2 16 + 16 + 13) and
      // of two (50), odd channel counts; strides 2 and (2, 1) on odd
      // sizes; weights past its small-weight bound, so tiles run in
      // chunks (two images of 10x20); a 1x1 with bottom and right
      // padding (the general form: its padded outputs hold the bias only).
      {3, 7, 5, 3, 45, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, true},
      {1, 33, 9, 11, 50, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1, 1, false},
      {2, 9, 7, 10, 13, 1, 1, 2, 1, 0, 0, 0, 0, 1, 1, 1, true},
      {2, 160, 10, 20, 50, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, true},
      {2, 30, 6, 8, 26, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 2, false},
      {1, 8, 7, 7, 20, 1, 1, 2, 2, 0, 1, 0, 1, 1, 1, 1, true},
  };
  int ran = 0, refused = 0;
  for (const std::string& algorithm :
       Registry<Conv2dAttrs>::Get().Names(Device::kCPU)) {
    for (size_t i = 0; i < cases.size(); ++i) {
      // Each case with one of the clamps and one of the functions, in
      // turn: each meets every algorithm on several shapes without
      // multiplying the grid.
      const Case& p = cases[i];
      for (const Activation& act :
           {kActivations[i % std::size(kActivations)],
            kFnActivations[i % std::size(kFnActivations)]})
        for (Layout layout : {Layout::kNCHW, Layout::kNHWC}) {
          int r = RunCase<float>(p, layout, algorithm, act) +
                  RunCase<double>(p, layout, algorithm, act);
          ran += r;
          refused += 2 - r;
        }
    }
  }
  // An output (48 MiB) bigger than the last-level cache (32 MiB on the
  // EPYCs): direct writes it with streamed stores (direct.cc), NHWC in
  // whole vectors.
  const Case streamed = {3, 3, 256, 256, 64, 3, 3, 1,   1,
                         1, 1, 1,   1,   1,  1, 1, true};
  ran += RunCase<float>(streamed, Layout::kNHWC, "direct", kActivations[1]);
  std::printf("%d cases ran, %d refused by the registry, %d failed\n", ran,
              refused, testing::Failures());
  return testing::Failures() != 0;
}

}  // namespace ai3
