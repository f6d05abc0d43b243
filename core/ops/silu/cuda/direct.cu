// silu "direct" on CUDA: x / (1 + exp(-x)) per element (x * sigmoid(x)).
#include "core/cuda/elementwise.h"
#include "core/ops/silu/silu.h"

namespace ai3 {

AI3_CUDA_ELEMENTWISE_DIRECT(SiluAttrs, v, v / (T(1) + exp(-v)));

}  // namespace ai3
