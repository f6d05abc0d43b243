// relu "direct" through ElementwiseDirect (core/ops/elementwise.h): one pass
// over the elements, vectorised by the compiler (x < 0 ? 0 : x is a single
// max instruction that keeps NaN) and split over OpenMP threads from 2^15
// elements (below, threads cost more than they save).
#include "core/ops/elementwise.h"
#include "core/ops/relu/relu.h"
#include "core/registry.h"

namespace ai3 {
namespace {

template <typename T>
struct ReluFn {
  explicit ReluFn(const ReluAttrs&) {}
  T operator()(T x) const { return x < T(0) ? T(0) : x; }
};

using Direct = ElementwiseDirect<ReluAttrs, ReluFn, (1 << 15)>;
AI3_REGISTER_ALGORITHM(ReluAttrs, "direct", Device::kCPU, Direct);

}  // namespace
}  // namespace ai3
