// adaptiveavgpool2d_backward_data "direct": dy / window size spread over
// each adaptive window (pool2d_backward.h).
#include "core/ops/pool2d/pool2d.h"
#include "core/ops/pool2d/pool2d_backward.h"

namespace ai3 {
namespace {

AI3_REGISTER_ALGORITHM(AdaptiveAvgPool2dBackwardDataAttrs, "direct",
                       Device::kCPU,
                       PoolBackwardDirect<AdaptiveAvgPool2dBackwardDataAttrs,
                                          AvgBackwardLoops<AdaptiveTaps>>);

}  // namespace
}  // namespace ai3
