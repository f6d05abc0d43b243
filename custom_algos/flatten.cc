// Your own flatten algorithm, compiled into ai3 as "custom".
//
// 1. Write CustomFlatten below (see custom_algorithm.h for what you receive).
// 2. Set kCustomFlattenImplemented = true.
// 3. Optionally set kCustomFlattenIsDefault = true so that "default" picks it.
// 4. Rebuild (./bazelw build //...). ai3.algorithms()["flatten"] lists
// "custom",
//    and every selector can name it.
#include "core/ops/flatten/flatten.h"
#include "custom_algos/custom_algorithm.h"

namespace ai3 {
namespace {

// The switches.
constexpr bool kCustomFlattenImplemented = false;
constexpr bool kCustomFlattenIsDefault = false;

void CustomFlatten(const FlattenAttrs& attrs, const Tensor& input,
                   const std::vector<Tensor>& params, const Tensor& output) {
  // The placeholder: never called while kCustomFlattenImplemented is false.
  (void)attrs;
  (void)input;
  (void)params;
  (void)output;
}

AI3_REGISTER_CUSTOM(FlattenAttrs, CustomFlatten, kCustomFlattenImplemented,
                    kCustomFlattenIsDefault);

}  // namespace
}  // namespace ai3
