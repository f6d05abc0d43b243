// clamp "direct" through ElementwiseDirect (core/ops/elementwise.h) with the
// formula of clamp.h: one pass over the elements, vectorised by the
// compiler and split over OpenMP threads from 2^15 elements (below, threads
// cost more than they save).
#include "core/ops/clamp/clamp.h"
#include "core/ops/elementwise.h"
#include "core/registry.h"

namespace ai3 {
namespace {

AI3_REGISTER_SHARED_ELEMENTWISE_DIRECTS(Clamp, (1 << 15));

}  // namespace
}  // namespace ai3
