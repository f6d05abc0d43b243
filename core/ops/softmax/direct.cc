// softmax "direct": the input as [outer, axis, inner], split into row and
// block tasks by ForEachSoftmaxSlice (slices.h). Three passes over each slice
// (max, exp and sum, scale by 1/sum), all in the layer's dtype; a block keeps
// its running max and sum on the stack. exp is vmath::Exp
// (core/ops/sigmoid/exp.h), which vectorises where std::exp would not.
#include "core/ops/softmax/slices.h"
#include "core/ops/softmax/softmax.h"
#include "core/registry.h"

namespace ai3 {
namespace {

// What the passes of each slice do (SliceRow, slices.h): keep e, then
// scale by 1/sum.
struct SoftmaxMath {
  template <typename T>
  static void Store(T& y, T e) {
    y = e;
  }
  template <typename T>
  static T Finish(T, T sum) {
    return T(1) / sum;
  }
  template <typename T>
  static void Out(T, T& y, T c) {
    y *= c;
  }
};

AI3_REGISTER_ALGORITHM(
    SoftmaxAttrs, "direct", Device::kCPU,
    KernelAlgorithm<SoftmaxAttrs, SliceKernel<SoftmaxAttrs, SoftmaxMath>>);

}  // namespace
}  // namespace ai3
