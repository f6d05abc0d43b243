// Your own maxpool2d algorithm, compiled into ai3 as "custom".
//
// 1. Write CustomMaxPool2d below (see custom_algorithm.h for what you receive).
// 2. Set kCustomMaxPool2dImplemented = true.
// 3. Optionally set kCustomMaxPool2dIsDefault = true so that "default" picks
// it.
// 4. Rebuild (./bazelw build //...). ai3.algorithms()["maxpool2d"] lists
// "custom",
//    and every selector can name it.
#include "core/ops/pool2d/pool2d.h"
#include "custom_algos/custom_algorithm.h"

namespace ai3 {
namespace {

// The switches.
constexpr bool kCustomMaxPool2dImplemented = false;
constexpr bool kCustomMaxPool2dIsDefault = false;

void CustomMaxPool2d(const MaxPool2dAttrs& attrs, const Tensor& input,
                     const std::vector<Tensor>& params, const Tensor& output) {
  // The placeholder: never called while kCustomMaxPool2dImplemented is false.
  (void)attrs;
  (void)input;
  (void)params;
  (void)output;
}

AI3_REGISTER_CUSTOM(MaxPool2dAttrs, CustomMaxPool2d,
                    kCustomMaxPool2dImplemented, kCustomMaxPool2dIsDefault);

}  // namespace
}  // namespace ai3
