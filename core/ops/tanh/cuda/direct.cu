// tanh "direct" on CUDA: tanh(x) per element.
#include "core/cuda/elementwise.h"
#include "core/ops/tanh/tanh.h"

namespace ai3 {

AI3_CUDA_ELEMENTWISE_DIRECT(TanhAttrs, v, tanh(v));

}  // namespace ai3
