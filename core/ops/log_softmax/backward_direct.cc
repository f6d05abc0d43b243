// log_softmax_backward_data "direct": SliceGradKernel
// (core/ops/softmax/slices.h), split as the forward: per slice c = sum(dy),
// then dx = dy - exp(y) c (vmath::Exp, which vectorises).
#include "core/ops/log_softmax/log_softmax.h"
#include "core/ops/softmax/slices.h"

namespace ai3 {
namespace {

struct LogSoftmaxGrad {
  template <typename T>
  static T Term(T dy, T, const vmath::ExpRange<T>&) {
    return dy;
  }
  template <typename T>
  static T Out(T dy, T y, T c, const vmath::ExpRange<T>& range) {
    return dy - vmath::Exp(y, range) * c;
  }
};

AI3_REGISTER_ALGORITHM(
    LogSoftmaxBackwardDataAttrs, "direct", Device::kCPU,
    KernelAlgorithm<
        LogSoftmaxBackwardDataAttrs,
        SliceGradKernel<LogSoftmaxBackwardDataAttrs, LogSoftmaxGrad>>);

}  // namespace
}  // namespace ai3
