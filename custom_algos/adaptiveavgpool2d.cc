// Your own adaptiveavgpool2d algorithm, compiled into ai3 as "custom".
//
// 1. Write CustomAdaptiveAvgPool2d below (see custom_algorithm.h for what you
// receive).
// 2. Set kCustomAdaptiveAvgPool2dImplemented = true.
// 3. Optionally set kCustomAdaptiveAvgPool2dIsDefault = true so that "default"
// picks it.
// 4. Rebuild (./bazelw build //...). ai3.algorithms()["adaptiveavgpool2d"]
// lists "custom",
//    and every selector can name it.
#include "core/ops/pool2d/pool2d.h"
#include "custom_algos/custom_algorithm.h"

namespace ai3 {
namespace {

// The switches.
constexpr bool kCustomAdaptiveAvgPool2dImplemented = false;
constexpr bool kCustomAdaptiveAvgPool2dIsDefault = false;

void CustomAdaptiveAvgPool2d(const AdaptiveAvgPool2dAttrs& attrs,
                             const Tensor& input,
                             const std::vector<Tensor>& params,
                             const Tensor& output) {
  // The placeholder: never called while kCustomAdaptiveAvgPool2dImplemented is
  // false.
  (void)attrs;
  (void)input;
  (void)params;
  (void)output;
}

AI3_REGISTER_CUSTOM(AdaptiveAvgPool2dAttrs, CustomAdaptiveAvgPool2d,
                    kCustomAdaptiveAvgPool2dImplemented,
                    kCustomAdaptiveAvgPool2dIsDefault);

}  // namespace
}  // namespace ai3
