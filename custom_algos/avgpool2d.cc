// Your own avgpool2d algorithm, compiled into ai3 as "custom".
//
// 1. Write CustomAvgPool2d below (see custom_algorithm.h for what you receive).
// 2. Set kCustomAvgPool2dImplemented = true.
// 3. Optionally set kCustomAvgPool2dIsDefault = true so that "default" picks
// it.
// 4. Rebuild (./bazelw build //...). ai3.algorithms()["avgpool2d"] lists
// "custom",
//    and every selector can name it.
#include "core/ops/pool2d/pool2d.h"
#include "custom_algos/custom_algorithm.h"

namespace ai3 {
namespace {

// The switches.
constexpr bool kCustomAvgPool2dImplemented = false;
constexpr bool kCustomAvgPool2dIsDefault = false;

void CustomAvgPool2d(const AvgPool2dAttrs& attrs, const Tensor& input,
                     const std::vector<Tensor>& params, const Tensor& output) {
  // The placeholder: never called while kCustomAvgPool2dImplemented is false.
  (void)attrs;
  (void)input;
  (void)params;
  (void)output;
}

AI3_REGISTER_CUSTOM(AvgPool2dAttrs, CustomAvgPool2d,
                    kCustomAvgPool2dImplemented, kCustomAvgPool2dIsDefault);

}  // namespace
}  // namespace ai3
