// relu "direct" on CUDA: relu.h's formula per element (NaN passes through,
// as in PyTorch).
#include "core/cuda/elementwise.h"
#include "core/ops/relu/relu.h"

namespace ai3 {
namespace {

AI3_REGISTER_ALGORITHM(ReluAttrs, "direct", Device::kCUDA,
                       cuda::ElementwiseAlgorithm<ReluAttrs, ReluFn>);

}  // namespace
}  // namespace ai3
