// flatten_backward_data "direct": dx holds dy's bytes (the two differ only
// in shape), copied by the forward's copy (core/ops/copy.h).
#include "core/ops/copy.h"
#include "core/ops/flatten/flatten.h"
#include "core/registry.h"

namespace ai3 {
namespace {

AI3_REGISTER_ALGORITHM(
    FlattenBackwardDataAttrs, "direct", Device::kCPU,
    KernelAlgorithm<FlattenBackwardDataAttrs, GradOutputCopyKernel>);

}  // namespace
}  // namespace ai3
