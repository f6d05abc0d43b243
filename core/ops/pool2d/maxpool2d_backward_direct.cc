// maxpool2d_backward_data "direct": the first maximum of each window (MaxBackwardLoops), pool2d_backward.h.
#include "core/ops/pool2d/pool2d.h"
#include "core/ops/pool2d/pool2d_backward.h"

namespace ai3 {
namespace {

AI3_REGISTER_ALGORITHM(MaxPool2dBackwardDataAttrs, "direct", Device::kCPU,
                       PoolBackwardDirect<MaxPool2dBackwardDataAttrs,
                                          MaxBackwardLoops<SlidingTaps>>);

}  // namespace
}  // namespace ai3
