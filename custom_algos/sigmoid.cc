// Your own sigmoid algorithm, compiled into ai3 as "custom".
//
// 1. Write CustomSigmoid below (see custom_algorithm.h for what you receive).
// 2. Set kCustomSigmoidImplemented = true.
// 3. Optionally set kCustomSigmoidIsDefault = true so that "default" picks it.
// 4. Rebuild (./bazelw build //...). ai3.algorithms()["sigmoid"] lists
// "custom",
//    and every selector can name it.
#include "core/ops/sigmoid/sigmoid.h"
#include "custom_algos/custom_algorithm.h"

namespace ai3 {
namespace {

// The switches.
constexpr bool kCustomSigmoidImplemented = false;
constexpr bool kCustomSigmoidIsDefault = false;

void CustomSigmoid(const SigmoidAttrs& attrs, const Tensor& input,
                   const std::vector<Tensor>& params, const Tensor& output) {
  // The placeholder: never called while kCustomSigmoidImplemented is false.
  (void)attrs;
  (void)input;
  (void)params;
  (void)output;
}

AI3_REGISTER_CUSTOM(SigmoidAttrs, CustomSigmoid, kCustomSigmoidImplemented,
                    kCustomSigmoidIsDefault);

}  // namespace
}  // namespace ai3
