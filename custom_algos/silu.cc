// Your own silu algorithm, compiled into ai3 as "custom".
//
// 1. Write CustomSilu below (see custom_algorithm.h for what you receive).
// 2. Set kCustomSiluImplemented = true.
// 3. Optionally set kCustomSiluIsDefault = true so that "default" picks it.
// 4. Rebuild (./bazelw build //...). ai3.algorithms()["silu"] lists "custom",
//    and every selector can name it.
#include "core/ops/silu/silu.h"
#include "custom_algos/custom_algorithm.h"

namespace ai3 {
namespace {

// The switches.
constexpr bool kCustomSiluImplemented = false;
constexpr bool kCustomSiluIsDefault = false;

void CustomSilu(const SiluAttrs& attrs, const Tensor& input,
                const std::vector<Tensor>& params, const Tensor& output) {
  // The placeholder: never called while kCustomSiluImplemented is false.
  (void)attrs;
  (void)input;
  (void)params;
  (void)output;
}

AI3_REGISTER_CUSTOM(SiluAttrs, CustomSilu, kCustomSiluImplemented,
                    kCustomSiluIsDefault);

}  // namespace
}  // namespace ai3
