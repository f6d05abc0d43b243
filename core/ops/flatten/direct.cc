// flatten "direct": flattening a contiguous tensor changes only its shape, so
// the output (a separate buffer) is a copy of the input's bytes
// (core/ops/copy.h).
#include "core/ops/copy.h"
#include "core/ops/flatten/flatten.h"
#include "core/registry.h"

namespace ai3 {
namespace {

AI3_REGISTER_ALGORITHM(FlattenAttrs, "direct", Device::kCPU,
                       KernelAlgorithm<FlattenAttrs, CopyKernel>);

}  // namespace
}  // namespace ai3
