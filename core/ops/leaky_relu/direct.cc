// leaky_relu "direct" through SharedElementwiseDirect (core/ops/elementwise.h)
// with the formula of leaky_relu.h: one pass, a compare, a multiply and a
// blend the compiler vectorises, split over OpenMP threads from 2^15
// elements (as relu: below, threads cost more than they save).
#include "core/ops/elementwise.h"
#include "core/ops/leaky_relu/leaky_relu.h"
#include "core/registry.h"

namespace ai3 {
namespace {

AI3_REGISTER_SHARED_ELEMENTWISE_DIRECTS(LeakyRelu, (1 << 15));

}  // namespace
}  // namespace ai3
