// conv_transpose2d_backward_bias "direct": db[o] = the sum of dy[n, o, h, w]
// over the batch and the pixels, in either layout: a reduction over those
// axes on the reductions' block walk (core/ops/mean/reduce_walk.h).
#include <vector>

#include "core/layer.h"
#include "core/math/dispatch.h"
#include "core/ops/conv_transpose2d/conv_transpose2d.h"
#include "core/ops/mean/reduce_walk.h"
#include "core/registry.h"

namespace ai3 {
namespace {

class BiasKernel : public MultiInputKernel {
 public:
  explicit BiasKernel(const ConvTranspose2dBackwardBiasAttrs& attrs)
      : nhwc_(attrs.layout == Layout::kNHWC) {}

  void RunInputs(const std::vector<Tensor>& inputs, const Tensor& output,
                 void*) override {
    const Tensor& dy = inputs[kGradOutput];
    // Every axis but the channels'.
    const std::vector<bool> reduced =
        nhwc_ ? std::vector<bool>{true, true, true, false}
              : std::vector<bool>{true, false, true, true};
    const reduce::Blocks b = reduce::MakeBlocks(dy.shape, reduced);
    DispatchFloat(dy.dtype, [&](auto zero) {
      using T = decltype(zero);
      reduce::FoldInto<Reduction::kSum, T>(b, dy.data_as<const T>(),
                                           output.data_as<T>(), nullptr,
                                           dy.numel(), output.numel());
    });
  }

 private:
  bool nhwc_;
};

AI3_REGISTER_ALGORITHM(
    ConvTranspose2dBackwardBiasAttrs, "direct", Device::kCPU,
    KernelAlgorithm<ConvTranspose2dBackwardBiasAttrs, BiasKernel>);

}  // namespace
}  // namespace ai3
