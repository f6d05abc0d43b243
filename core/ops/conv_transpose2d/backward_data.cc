// conv_transpose2d_backward_data: dx = C(dy), the forward of the conv2d C
// this op is the data gradient of (via_conv2d_kernel.h), with the layer's
// weight and no bias. Its algorithms are conv2d's of the same names run on
// C: "gemm" (im2col + GEMM) and "direct".
#include <memory>
#include <vector>

#include "core/layer.h"
#include "core/ops/conv_transpose2d/via_conv2d_kernel.h"

namespace ai3 {
namespace {

class DataKernel : public MultiInputKernel {
 public:
  DataKernel(const ConvTranspose2dBackwardDataAttrs& attrs,
             const std::vector<Tensor>& params,
             const Algorithm<Conv2dAttrs>& conv)
      : input_(attrs) {
    input_.conv().Validate({params[0]});
    conv_ = conv.Prepare(input_.conv(), {params[0]});
  }

  size_t InputsWorkspaceBytes(
      const std::vector<Tensor>& inputs) const override {
    const Tensor& dy = inputs[kGradOutput];
    return input_.CropBytes(dy) +
           conv_->WorkspaceBytes(input_.ShapeOf(dy.shape));
  }

  void RunInputs(const std::vector<Tensor>& inputs, const Tensor& output,
                 void* workspace) override {
    const Tensor& dy = inputs[kGradOutput];
    const Tensor in = input_.Of(dy, workspace);
    conv_->Run(in, output,
               static_cast<char*>(workspace) + input_.CropBytes(dy));
  }

 private:
  AdjointInput input_;
  std::unique_ptr<Kernel> conv_;
};

constexpr char kGemm[] = "gemm";
constexpr char kDirect[] = "direct";
template <const char* kName>
using Via = ViaConv2d<ConvTranspose2dBackwardDataAttrs, Conv2dAttrs, DataKernel,
                      kName, &AdjointConvOf>;

AI3_REGISTER_ALGORITHM(ConvTranspose2dBackwardDataAttrs, "gemm", Device::kCPU,
                       Via<kGemm>);
AI3_REGISTER_ALGORITHM(ConvTranspose2dBackwardDataAttrs, "direct", Device::kCPU,
                       Via<kDirect>);

}  // namespace
}  // namespace ai3
