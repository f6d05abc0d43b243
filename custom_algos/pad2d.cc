// Your own pad2d algorithm, compiled into ai3 as "custom".
//
// 1. Write CustomPad2d below (see custom_algorithm.h for what you receive).
// 2. Set kCustomPad2dImplemented = true.
// 3. Optionally set kCustomPad2dIsDefault = true so that "default" picks it.
// 4. Rebuild (./bazelw build //...). ai3.algorithms()["pad2d"] lists "custom",
//    and every selector can name it.
#include "core/ops/pad2d/pad2d.h"
#include "custom_algos/custom_algorithm.h"

namespace ai3 {
namespace {

// The switches.
constexpr bool kCustomPad2dImplemented = false;
constexpr bool kCustomPad2dIsDefault = false;

void CustomPad2d(const Pad2dAttrs& attrs, const Tensor& input,
                 const std::vector<Tensor>& params, const Tensor& output) {
  // The placeholder: never called while kCustomPad2dImplemented is false.
  (void)attrs;
  (void)input;
  (void)params;
  (void)output;
}

AI3_REGISTER_CUSTOM(Pad2dAttrs, CustomPad2d, kCustomPad2dImplemented,
                    kCustomPad2dIsDefault);

}  // namespace
}  // namespace ai3
