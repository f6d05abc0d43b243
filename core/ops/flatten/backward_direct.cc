// flatten_backward_data "direct": dx holds dy's bytes (the two differ only
// in shape), copied by the forward's CopyKernel (core/ops/copy.h).
#include <vector>

#include "core/layer.h"
#include "core/ops/copy.h"
#include "core/ops/flatten/flatten.h"
#include "core/registry.h"

namespace ai3 {
namespace {

class DataKernel : public MultiInputKernel {
 public:
  void RunInputs(const std::vector<Tensor>& inputs, const Tensor& output,
                 void* workspace) override {
    copy_.Run(inputs[kGradOutput], output, workspace);
  }

 private:
  CopyKernel copy_;
};

AI3_REGISTER_ALGORITHM(FlattenBackwardDataAttrs, "direct", Device::kCPU,
                       KernelAlgorithm<FlattenBackwardDataAttrs, DataKernel>);

}  // namespace
}  // namespace ai3
