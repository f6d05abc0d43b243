// Your own batchnorm2d algorithm, compiled into ai3 as "custom".
//
// 1. Write CustomBatchNorm2d below (see custom_algorithm.h for what you
//    receive).
// 2. Set kCustomBatchNorm2dImplemented = true.
// 3. Optionally set kCustomBatchNorm2dIsDefault = true so that "default"
//    picks it.
// 4. Rebuild (./bazelw build //...). ai3.algorithms()["batchnorm2d"] lists
//    "custom", and every selector can name it.
#include "core/ops/batchnorm2d/batchnorm2d.h"
#include "custom_algos/custom_algorithm.h"

namespace ai3 {
namespace {

// The switches.
constexpr bool kCustomBatchNorm2dImplemented = false;
constexpr bool kCustomBatchNorm2dIsDefault = false;

void CustomBatchNorm2d(const BatchNorm2dAttrs& attrs, const Tensor& input,
                       const std::vector<Tensor>& params,
                       const Tensor& output) {
  // The placeholder: never called while kCustomBatchNorm2dImplemented is
  // false. params = {weight, bias, running_mean, running_var}, each
  // [attrs.channels]; y = (x - mean) / sqrt(var + attrs.eps) * weight + bias
  // per channel, in attrs.layout.
  (void)attrs;
  (void)input;
  (void)params;
  (void)output;
}

AI3_REGISTER_CUSTOM(BatchNorm2dAttrs, CustomBatchNorm2d,
                    kCustomBatchNorm2dImplemented, kCustomBatchNorm2dIsDefault);

}  // namespace
}  // namespace ai3
