// silu "direct" through ElementwiseDirect (core/ops/elementwise.h):
// x * sigmoid(x) in one pass, split over OpenMP threads from 2^13 elements,
// the loop vectorised by the compiler; exp is vmath::Exp
// (core/ops/sigmoid/exp.h), written to vectorise, where std::exp would not.
#include "core/ops/elementwise.h"
#include "core/ops/sigmoid/exp.h"
#include "core/ops/silu/silu.h"
#include "core/registry.h"

namespace ai3 {
namespace {

template <typename T>
struct SiluFn {
  explicit SiluFn(const SiluAttrs&) {}
  T operator()(T x) const { return x / vmath::OnePlusExp(-x, range); }
  vmath::ExpRange<T> range;  // a member, not literals: see exp.h
};

using Direct = ElementwiseDirect<SiluAttrs, SiluFn>;
AI3_REGISTER_ALGORITHM(SiluAttrs, "direct", Device::kCPU, Direct);

}  // namespace
}  // namespace ai3
