// flatten "direct": flattening a contiguous tensor changes only its shape, so
// the output (a separate buffer) is a copy of the input's bytes
// (core/ops/copy.h).
#include "core/ops/copy.h"
#include "core/ops/flatten/flatten.h"
#include "core/registry.h"

namespace ai3 {
namespace {

using Direct = KernelAlgorithm<FlattenAttrs, CopyKernel>;
AI3_REGISTER_ALGORITHM(FlattenAttrs, "direct", Device::kCPU, Direct);

}  // namespace
}  // namespace ai3
