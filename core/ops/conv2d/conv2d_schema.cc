// conv2d's declaration (core/op_schema.h): attributes, weights, "default".
#include "core/op_schema.h"
#include "core/ops/conv2d/conv2d.h"
#include "core/ops/conv2d/conv2d_declaration.h"

namespace ai3 {
namespace {

using A = Conv2dAttrs;

// winograd F(4x4, 3x3) pays for its transforms only where the 36 position
// products are big enough: at least 64 channels in and out per group.
// (DenseNet's 3x3 convs, 128 -> 32, ran 1.7x slower in winograd than in
// oneDNN's own choice; ResNet's 64 -> 64 ran 1.2x faster.) And only in NCHW:
// on NHWC, oneDNN's convolution is faster (a 64 -> 64 3x3 conv at 56x56:
// winograd 1.39 ms, guess 0.51 ms; winograd on NCHW 0.78 ms), which is what
// lets the layout pass (ai3.layouts) move a network's convs to NHWC.
bool WideEnoughForWinograd(const A& a) {
  return a.layout == Layout::kNCHW && a.in_channels_per_group() >= 64 &&
         a.out_channels_per_group() >= 64;
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
