// sigmoid "direct" through ElementwiseDirect (core/ops/elementwise.h): one
// pass, split over OpenMP threads from 2^13 elements, the loop vectorised by
// the compiler; exp is vmath::Exp (core/ops/sigmoid/exp.h), written to
// vectorise, where std::exp would not.
#include "core/ops/elementwise.h"
#include "core/ops/sigmoid/exp.h"
#include "core/ops/sigmoid/sigmoid.h"
#include "core/registry.h"

namespace ai3 {
namespace {

template <typename T>
struct SigmoidFn {
  explicit SigmoidFn(const SigmoidAttrs&) {}
  T operator()(T x) const { return T(1) / vmath::OnePlusExp(-x, range); }
  vmath::ExpRange<T> range;  // a member, not literals: see exp.h
};

using Direct = ElementwiseDirect<SigmoidAttrs, SigmoidFn>;
AI3_REGISTER_ALGORITHM(SigmoidAttrs, "direct", Device::kCPU, Direct);

// sigmoid_backward_data's "direct": the gradient sigmoid.h declares beside the
// op, threaded and vectorised as the forward.
AI3_REGISTER_ALGORITHM(SigmoidBackwardDataAttrs, "direct", Device::kCPU,
                       ElementwiseGradientDirect<SigmoidBackwardDataAttrs>);

}  // namespace
}  // namespace ai3
