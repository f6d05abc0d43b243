// log_softmax "direct": the input as [outer, axis, inner], split into row and
// block tasks by ForEachSoftmaxSlice (core/ops/softmax/slices.h). Per slice:
// the max over the axis, the sum of exp(x - max) (vmath::Exp, which
// vectorises), then y = x - (max + log(sum)).
#include <cmath>

#include "core/ops/log_softmax/log_softmax.h"
#include "core/ops/softmax/slices.h"
#include "core/registry.h"

namespace ai3 {
namespace {

// What the passes of each slice do (SliceRow, slices.h): only the sum of
// the exps, then y = x - (max + log(sum)).
struct LogSoftmaxMath {
  template <typename T>
  static void Store(T&, T) {}
  template <typename T>
  static T Finish(T max, T sum) {
    return max + std::log(sum);
  }
  template <typename T>
  static void Out(T x, T& y, T c) {
    y = x - c;
  }
};

AI3_REGISTER_ALGORITHM(
    LogSoftmaxAttrs, "direct", Device::kCPU,
    KernelAlgorithm<LogSoftmaxAttrs,
                    SliceKernel<LogSoftmaxAttrs, LogSoftmaxMath>>);

}  // namespace
}  // namespace ai3
