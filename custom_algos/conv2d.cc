// Your own conv2d algorithm, compiled into ai3 as "custom".
//
// 1. Write CustomConv2d below (see custom_algorithm.h for what you receive).
// 2. Set kCustomConv2dImplemented = true.
// 3. Optionally set kCustomConv2dIsDefault = true so that "default" picks it.
// 4. Rebuild (./bazelw build //...). ai3.algorithms()["conv2d"] lists "custom",
//    and every selector can name it.
#include "core/ops/conv2d/conv2d.h"
#include "custom_algos/custom_algorithm.h"

namespace ai3 {
namespace {

// The switches.
constexpr bool kCustomConv2dImplemented = false;
constexpr bool kCustomConv2dIsDefault = false;

void CustomConv2d(const Conv2dAttrs& attrs, const Tensor& input,
                  const std::vector<Tensor>& params, const Tensor& output) {
  // The placeholder: never called while kCustomConv2dImplemented is false.
  // Weights are params[0] = [out_channels, in_channels / groups, kernel_h,
  // kernel_w], params[1] = bias if attrs.has_bias; GeometryOf(attrs,
  // input.shape) gives the output size and strides/padding in one struct.
  (void)attrs;
  (void)input;
  (void)params;
  (void)output;
}

AI3_REGISTER_CUSTOM(Conv2dAttrs, CustomConv2d, kCustomConv2dImplemented,
                    kCustomConv2dIsDefault);

}  // namespace
}  // namespace ai3
