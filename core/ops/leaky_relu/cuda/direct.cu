// leaky_relu "direct" on CUDA: leaky_relu.h's formula per element.
#include "core/cuda/elementwise.h"
#include "core/ops/leaky_relu/leaky_relu.h"

namespace ai3 {
namespace {

AI3_REGISTER_ALGORITHM(LeakyReluAttrs, "direct", Device::kCUDA,
                       cuda::ElementwiseAlgorithm<LeakyReluAttrs, LeakyReluFn>);

}  // namespace
}  // namespace ai3
