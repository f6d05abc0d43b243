// clamp "direct" on CUDA: clamp.h's formula per element (bounds rounded to
// the input's dtype; NaN passes through, as torch.clamp).
#include "core/cuda/elementwise.h"
#include "core/ops/clamp/clamp.h"

namespace ai3 {
namespace {

AI3_REGISTER_ALGORITHM(ClampAttrs, "direct", Device::kCUDA,
                       cuda::ElementwiseAlgorithm<ClampAttrs, ClampFn>);

}  // namespace
}  // namespace ai3
