// relu "direct" through ElementwiseDirect (core/ops/elementwise.h) with the
// formula of relu.h: one pass over the elements, vectorised by the compiler
// and split over OpenMP threads from 2^15 elements (below, threads cost
// more than they save).
#include "core/ops/elementwise.h"
#include "core/ops/relu/relu.h"
#include "core/registry.h"

namespace ai3 {
namespace {

template <typename>
using Fn = ReluFn;
using Direct = ElementwiseDirect<ReluAttrs, Fn, (1 << 15)>;
AI3_REGISTER_ALGORITHM(ReluAttrs, "direct", Device::kCPU, Direct);

}  // namespace
}  // namespace ai3
