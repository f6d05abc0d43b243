// reshape "direct": a copy of the elements (core/ops/copy.h); its input
// gradient's, a copy of dy's.
#include "core/ops/copy.h"
#include "core/ops/reshape/reshape.h"
#include "core/registry.h"

namespace ai3 {
namespace {

AI3_REGISTER_ALGORITHM(ReshapeAttrs, "direct", Device::kCPU,
                       KernelAlgorithm<ReshapeAttrs, CopyKernel>);
AI3_REGISTER_ALGORITHM(
    ReshapeBackwardDataAttrs, "direct", Device::kCPU,
    KernelAlgorithm<ReshapeBackwardDataAttrs, GradOutputCopyKernel>);

}  // namespace
}  // namespace ai3
