// reshape "direct": a copy of the elements (core/ops/copy.h).
#include "core/ops/copy.h"
#include "core/ops/reshape/reshape.h"
#include "core/registry.h"

namespace ai3 {
namespace {

AI3_REGISTER_ALGORITHM(ReshapeAttrs, "direct", Device::kCPU,
                       KernelAlgorithm<ReshapeAttrs, CopyKernel>);

}  // namespace
}  // namespace ai3
