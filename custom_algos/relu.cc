// Your own relu algorithm, compiled into ai3 as "custom".
//
// 1. Write CustomRelu below (see custom_algorithm.h for what you receive).
// 2. Set kCustomReluImplemented = true.
// 3. Optionally set kCustomReluIsDefault = true so that "default" picks it.
// 4. Rebuild (./bazelw build //...). ai3.algorithms()["relu"] lists "custom",
//    and every selector can name it.
#include "core/ops/relu/relu.h"
#include "custom_algos/custom_algorithm.h"

namespace ai3 {
namespace {

// The switches.
constexpr bool kCustomReluImplemented = false;
constexpr bool kCustomReluIsDefault = false;

void CustomRelu(const ReluAttrs& attrs, const Tensor& input,
                const std::vector<Tensor>& params, const Tensor& output) {
  // The placeholder: never called while kCustomReluImplemented is false.
  (void)attrs;
  (void)input;
  (void)params;
  (void)output;
}

AI3_REGISTER_CUSTOM(ReluAttrs, CustomRelu, kCustomReluImplemented,
                    kCustomReluIsDefault);

}  // namespace
}  // namespace ai3
