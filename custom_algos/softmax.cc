// Your own softmax algorithm, compiled into ai3 as "custom".
//
// 1. Write CustomSoftmax below (see custom_algorithm.h for what you receive).
// 2. Set kCustomSoftmaxImplemented = true.
// 3. Optionally set kCustomSoftmaxIsDefault = true so that "default" picks it.
// 4. Rebuild (./bazelw build //...). ai3.algorithms()["softmax"] lists
// "custom",
//    and every selector can name it.
#include "core/ops/softmax/softmax.h"
#include "custom_algos/custom_algorithm.h"

namespace ai3 {
namespace {

// The switches.
constexpr bool kCustomSoftmaxImplemented = false;
constexpr bool kCustomSoftmaxIsDefault = false;

void CustomSoftmax(const SoftmaxAttrs& attrs, const Tensor& input,
                   const std::vector<Tensor>& params, const Tensor& output) {
  // The placeholder: never called while kCustomSoftmaxImplemented is false.
  (void)attrs;
  (void)input;
  (void)params;
  (void)output;
}

AI3_REGISTER_CUSTOM(SoftmaxAttrs, CustomSoftmax, kCustomSoftmaxImplemented,
                    kCustomSoftmaxIsDefault);

}  // namespace
}  // namespace ai3
