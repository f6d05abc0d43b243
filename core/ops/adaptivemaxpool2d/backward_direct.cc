// adaptivemaxpool2d_backward_data "direct": each output's gradient to the
// first maximum of its adaptive window, as PyTorch's (MaxBackwardLoops,
// core/ops/pool2d/pool2d_backward.h).
#include "core/ops/adaptivemaxpool2d/adaptivemaxpool2d.h"
#include "core/ops/pool2d/pool2d_backward.h"

namespace ai3 {
namespace {

AI3_REGISTER_ALGORITHM(AdaptiveMaxPool2dBackwardDataAttrs, "direct",
                       Device::kCPU,
                       PoolBackwardDirect<AdaptiveMaxPool2dBackwardDataAttrs,
                                          MaxBackwardLoops<AdaptiveTaps>>);

}  // namespace
}  // namespace ai3
