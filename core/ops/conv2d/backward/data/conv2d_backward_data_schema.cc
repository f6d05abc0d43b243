// conv2d_backward_data's declaration (core/op_schema.h): conv2d's attributes
// and weights (conv2d_declaration.h) and its "default" list.
#include "core/op_schema.h"
#include "core/ops/conv2d/backward/data/conv2d_backward_data.h"
#include "core/ops/conv2d/conv2d_declaration.h"

namespace ai3 {
namespace {

using A = Conv2dBackwardDataAttrs;

// "transposed" where its transposed convolution is an ordinary stride-1
// conv2d on grad_output itself (the forward's stride 1) producing at least
// 16 channels per group: conv2d's own "default" then runs it with the
// forward's tuned choice (winograd for wide NCHW layers, oneDNN elsewhere).
// Elsewhere "gemm": a strided layer's transposed convolution spends most of
// its products on the inserted zeros (3/4 of them at stride 2), and a thin
// one (a first layer's 3 channels) is poorly served by the forward
// algorithms. Measured at batch 10 (bench in the issue-16 report): for
// 3x224x224 -> 64, gemm 0.37-0.42x torch's time, transposed 0.50-0.62x; for
// 64 -> 64 and wider, transposed (winograd under it) ahead of gemm.
bool StrideOneWide(const A& a) {
  return a.stride_h == 1 && a.stride_w == 1 && a.in_channels_per_group() >= 16;
}

AI3_REGISTER_OP_SCHEMA(
    Conv2dDeclaration<A>("gradient of conv2d w.r.t. x; inputs [grad_output, "
                         "x, y], output shaped like x")
        .Default(Device::kCPU,
                 {{"transposed",
                   "stride 1, at least 16 input channels per group",
                   &StrideOneWide},
                  {"gemm"},
                  {"transposed"},
                  {"direct"}}));

}  // namespace
}  // namespace ai3
