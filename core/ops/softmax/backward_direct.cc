// softmax_backward_data "direct": SliceGradKernel (slices.h), split as the
// forward: per slice c = sum(dy y), then dx = y (dy - c).
#include "core/ops/softmax/slices.h"
#include "core/ops/softmax/softmax.h"

namespace ai3 {
namespace {

struct SoftmaxGrad {
  template <typename T>
  static T Term(T dy, T y, const vmath::ExpRange<T>&) {
    return dy * y;
  }
  template <typename T>
  static T Out(T dy, T y, T c, const vmath::ExpRange<T>&) {
    return y * (dy - c);
  }
};

AI3_REGISTER_ALGORITHM(
    SoftmaxBackwardDataAttrs, "direct", Device::kCPU,
    KernelAlgorithm<SoftmaxBackwardDataAttrs,
                    SliceGradKernel<SoftmaxBackwardDataAttrs, SoftmaxGrad>>);

}  // namespace
}  // namespace ai3
