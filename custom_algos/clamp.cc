// Your own clamp algorithm, compiled into ai3 as "custom".
//
// 1. Write CustomClamp below (see custom_algorithm.h for what you receive).
// 2. Set kCustomClampImplemented = true.
// 3. Optionally set kCustomClampIsDefault = true so that "default" picks it.
// 4. Rebuild (./bazelw build //...). ai3.algorithms()["clamp"] lists "custom",
//    and every selector can name it.
#include "core/ops/clamp/clamp.h"
#include "custom_algos/custom_algorithm.h"

namespace ai3 {
namespace {

// The switches.
constexpr bool kCustomClampImplemented = false;
constexpr bool kCustomClampIsDefault = false;

void CustomClamp(const ClampAttrs& attrs, const Tensor& input,
                 const std::vector<Tensor>& params, const Tensor& output) {
  // The placeholder: never called while kCustomClampImplemented is false.
  (void)attrs;
  (void)input;
  (void)params;
  (void)output;
}

AI3_REGISTER_CUSTOM(ClampAttrs, CustomClamp, kCustomClampImplemented,
                    kCustomClampIsDefault);

}  // namespace
}  // namespace ai3
