// Your own linear algorithm, compiled into ai3 as "custom".
//
// 1. Write CustomLinear below (see custom_algorithm.h for what you receive).
// 2. Set kCustomLinearImplemented = true.
// 3. Optionally set kCustomLinearIsDefault = true so that "default" picks it.
// 4. Rebuild (./bazelw build //...). ai3.algorithms()["linear"] lists "custom",
//    and every selector can name it.
#include "core/ops/linear/linear.h"
#include "custom_algos/custom_algorithm.h"

namespace ai3 {
namespace {

// The switches.
constexpr bool kCustomLinearImplemented = false;
constexpr bool kCustomLinearIsDefault = false;

void CustomLinear(const LinearAttrs& attrs, const Tensor& input,
                  const std::vector<Tensor>& params, const Tensor& output) {
  // The placeholder: never called while kCustomLinearImplemented is false.
  // params[0] = weight [out_features, in_features], params[1] = bias.
  (void)attrs;
  (void)input;
  (void)params;
  (void)output;
}

AI3_REGISTER_CUSTOM(LinearAttrs, CustomLinear, kCustomLinearImplemented,
                    kCustomLinearIsDefault);

}  // namespace
}  // namespace ai3
