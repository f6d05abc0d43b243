// batchnorm2d_backward_data "direct": dx = dy * scale, the forward's folded
// map with its shift zeroed (ScaleShiftMap, scale_shift_kernel.h), threaded
// and vectorised as the forward.
#include <vector>

#include "core/layer.h"
#include "core/ops/batchnorm2d/batchnorm2d.h"
#include "core/ops/batchnorm2d/scale_shift_kernel.h"
#include "core/registry.h"

namespace ai3 {
namespace {

class DataKernel : public MultiInputKernel {
 public:
  DataKernel(const BatchNorm2dAttrs& attrs, const std::vector<Tensor>& params)
      : map_(attrs, params, /*shift=*/false) {}

  void RunInputs(const std::vector<Tensor>& inputs, const Tensor& output,
                 void*) override {
    map_.Apply(inputs[kGradOutput], output);
  }

 private:
  ScaleShiftMap map_;
};

AI3_REGISTER_ALGORITHM(
    BatchNorm2dBackwardDataAttrs, "direct", Device::kCPU,
    KernelAlgorithm<BatchNorm2dBackwardDataAttrs, DataKernel>);

}  // namespace
}  // namespace ai3
