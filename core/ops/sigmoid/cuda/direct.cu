// sigmoid "direct" on CUDA: 1 / (1 + exp(-x)) per element.
#include "core/cuda/elementwise.h"
#include "core/ops/sigmoid/sigmoid.h"

namespace ai3 {

AI3_CUDA_ELEMENTWISE_DIRECT(SigmoidAttrs, v, T(1) / (T(1) + exp(-v)));

}  // namespace ai3
