// conv3d_backward_bias "direct": db[k] = the sum of dy[n, k, o] over the
// images and the output positions, in either layout: a reduction over every
// axis but the channels' on the reductions' block walk
// (core/ops/mean/reduce_walk.h), as conv_transpose2d's bias gradient.
#include <vector>

#include "core/layer.h"
#include "core/math/dispatch.h"
#include "core/ops/conv3d/conv3d.h"
#include "core/ops/mean/reduce_walk.h"
#include "core/registry.h"

namespace ai3 {
namespace {

class BiasKernel : public MultiInputKernel {
 public:
  explicit BiasKernel(const Conv3dBackwardBiasAttrs& attrs)
      : last_(attrs.layout == Layout::kNHWC) {}

  void RunInputs(const std::vector<Tensor>& inputs, const Tensor& output,
                 void*) override {
    const Tensor& dy = inputs[kGradOutput];
    const std::vector<bool> reduced =
        last_ ? std::vector<bool>{true, true, true, true, false}
              : std::vector<bool>{true, false, true, true, true};
    const reduce::Blocks b = reduce::MakeBlocks(dy.shape, reduced);
    DispatchFloat(dy.dtype, [&](auto zero) {
      using T = decltype(zero);
      reduce::FoldInto<Reduction::kSum, T>(b, dy.data_as<const T>(),
                                           output.data_as<T>(), nullptr,
                                           dy.numel(), output.numel());
    });
  }

 private:
  bool last_;
};

AI3_REGISTER_ALGORITHM(Conv3dBackwardBiasAttrs, "direct", Device::kCPU,
                       KernelAlgorithm<Conv3dBackwardBiasAttrs, BiasKernel>);

}  // namespace
}  // namespace ai3
