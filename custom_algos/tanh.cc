// Your own tanh algorithm, compiled into ai3 as "custom".
//
// 1. Write CustomTanh below (see custom_algorithm.h for what you receive).
// 2. Set kCustomTanhImplemented = true.
// 3. Optionally set kCustomTanhIsDefault = true so that "default" picks it.
// 4. Rebuild (./bazelw build //...). ai3.algorithms()["tanh"] lists "custom",
//    and every selector can name it.
#include "core/ops/tanh/tanh.h"
#include "custom_algos/custom_algorithm.h"

namespace ai3 {
namespace {

// The switches.
constexpr bool kCustomTanhImplemented = false;
constexpr bool kCustomTanhIsDefault = false;

void CustomTanh(const TanhAttrs& attrs, const Tensor& input,
                const std::vector<Tensor>& params, const Tensor& output) {
  // The placeholder: never called while kCustomTanhImplemented is false.
  (void)attrs;
  (void)input;
  (void)params;
  (void)output;
}

AI3_REGISTER_CUSTOM(TanhAttrs, CustomTanh, kCustomTanhImplemented,
                    kCustomTanhIsDefault);

}  // namespace
}  // namespace ai3
