// conv2d's declaration (core/op_schema.h): attributes, weights, "default".
#include "core/op_schema.h"
#include "core/ops/conv2d/conv2d.h"
#include "core/ops/conv2d/conv2d_declaration.h"

namespace ai3 {
namespace {

using A = Conv2dAttrs;

// winograd F(4x4, 3x3) in NCHW pays for its transforms only where the 36
// position products are big enough: at least 64 channels in and out per
// group. (DenseNet's 3x3 convs, 128 -> 32, ran 1.7x slower in winograd than
// in oneDNN's own choice; ResNet's 64 -> 64 ran 1.2x faster.)
bool WideEnoughForWinograd(const A& a) {
  return a.layout == Layout::kNCHW && a.in_channels_per_group() >= 64 &&
         a.out_channels_per_group() >= 64;
}

// In NHWC, ungrouped, with whole vectors of channels, winograd runs with
// channels in the lanes (winograd.cc) and beat oneDNN's convolution on
// every 3x3 layer of the torchvision CNNs tried but the widest: in one
// process, 2-core EPYC, batch 1, winograd / guess: 64 -> 64 at 56x56 0.39,
// 128 -> 128 at 28 0.36, 256 -> 256 at 14 0.48, 128 -> 32 at 56/28/14/7
// 0.46/0.50/0.73/0.76, 96 -> 96 at 35 0.38, 16 -> 64 at 55 0.58, 160 -> 320
// at 7 0.56, batch 8 0.46-0.49; but 512 -> 512 at 7x7 1.76, where U (36
// C K values, 38 MB) is read from memory for 4 tiles. Hence at most 256 x
// 256 channels (9.4 MB of U). Multiples of 8 fill float32's vectors (and
// float64's).
bool ChannelsInLanesWinograd(const A& a) {
  return WinogradChannelsInLanes(a, 8) &&
         a.in_channels * a.out_channels <= 256 * 256;
}

// smm for NCHW depthwise layers (one input and one output channel per
// group): its 1-channel register block runs them at about ONNX Runtime's
// speed, where the GEMM-shaped algorithms (and oneDNN's conv on NCHW) take
// several times longer (mobilenet_v2's 32x112x112: smm 0.30 ms, ORT 0.36,
// guess NCHW 2.0 to 2.7). On NHWC, oneDNN's conv is faster still (0.12).
bool NchwDepthwise(const A& a) {
  return a.layout == Layout::kNCHW && a.groups > 1 &&
         a.in_channels_per_group() == 1 && a.out_channels_per_group() == 1;
}

// direct before smm for the narrower NCHW depthwise 3x3 layers, where its
// planar form (a zero-padded channel plane per task, a row's pixels in the
// lanes) is faster on wide planes and slower on small ones. "default" sees
// the attributes, not the plane, so the channel count stands in for it: in
// mobilenet-style networks the planes shrink as the channels grow.
// Interleaved A/B of direct / smm, batch 1, min of 40 calls, 2 threads, on
// the AVX-512 Xeon, AVX-512 kernels and (AI3_ISA=avx2) AVX2 ones:
//   3x3 32@112 0.86 / 0.90, 96@112 s2 0.78 / 0.79, 144@56 0.96 / 0.92,
//   144@56 s2 0.69 / 0.74, 192@28 0.99 / 0.93, 192@28 s2 0.74 / 0.77;
//   3x3 384@14 1.68 / 1.51, 576@14 1.61 / 1.40, 576@14 s2 1.33 / 0.87,
//   960@7 2.02 / 1.70; 5x5 (efficientnet_b0) 1.11-1.53 except 672@14 s2
//   on AVX2 (0.84): smm keeps those.
bool NarrowNchwDepthwise3x3(const A& a) {
  return NchwDepthwise(a) && a.kernel_h == 3 && a.kernel_w == 3 &&
         a.in_channels <= 192;
}

// implicit gemm for NCHW first layers (one group of at most 4 input
// channels, e.g. RGB): K = c*kh*kw is short, so the others' per-channel
// work (smm's planes, direct's transposed stores, oneDNN's reorders)
// dominates, while implicit gemm's gathered panel is small and its output
// tiles are stored as NCHW rows (3x224x224 -> 64, batch 1: 0.69x ONNX
// Runtime's time, guess 0.97x).
bool NchwFirstLayer(const A& a) {
  return a.layout == Layout::kNCHW && a.groups == 1 && a.in_channels <= 4;
}

AI3_REGISTER_OP_SCHEMA(
    Conv2dDeclaration<A>("2-D convolution; weight (out, in / groups, kh, kw)")
        .Default(Device::kCPU,
                 {{"direct", "NCHW depthwise 3x3, at most 192 channels",
                   &NarrowNchwDepthwise3x3},
                  {"smm", "NCHW depthwise", &NchwDepthwise},
                  {"implicit gemm", "NCHW, one group of at most 4 channels",
                   &NchwFirstLayer},
                  {"winograd",
                   "NCHW, at least 64 channels in and out per group",
                   &WideEnoughForWinograd},
                  {"winograd",
                   "NHWC, ungrouped, channels in multiples of 8, at most "
                   "256 x 256 of them",
                   &ChannelsInLanesWinograd},
                  {"guess"},
                  {"gemm"},
                  {"implicit gemm"},
                  {"kn2row"},
                  {"smm"},
                  {"winograd"},
                  {"direct"}})
        .Default(Device::kCUDA, {{"guess"},
                                 {"implicit precomp gemm"},
                                 {"implicit gemm"},
                                 {"gemm"},
                                 {"smm"},
                                 {"direct"},
                                 {"fft"},
                                 {"winograd"}}));

}  // namespace
}  // namespace ai3
