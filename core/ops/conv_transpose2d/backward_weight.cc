// conv_transpose2d_backward_weight: y = C^T(x) for the conv2d C this op is
// the data gradient of (via_conv2d_kernel.h), and <dy, C^T x> = <C dy, x>,
// so dL/dW is C's weight gradient with dy as C's input and x as the
// gradient of C's output: conv2d_backward_weight's kernels of the same
// names ("gemm", "direct") on [x, dy, x].
#include <memory>
#include <vector>

#include "core/layer.h"
#include "core/ops/conv2d/backward/weight/conv2d_backward_weight.h"
#include "core/ops/conv_transpose2d/via_conv2d_kernel.h"

namespace ai3 {
namespace {

class WeightKernel : public MultiInputKernel {
 public:
  WeightKernel(const ConvTranspose2dBackwardWeightAttrs& attrs,
               const std::vector<Tensor>& params,
               const Algorithm<Conv2dBackwardWeightAttrs>& gradient)
      : input_(attrs) {
    input_.conv().Validate({params[0]});
    gradient_ = gradient.Prepare(AsOp<Conv2dBackwardWeightAttrs>(input_.conv()),
                                 {params[0]});
    // [grad_output, x, y] of C's weight gradient, kept so that a call
    // allocates nothing (shapes and data are set per call).
    conv_inputs_.assign(3, Tensor{nullptr, attrs.dtype, Shape(4)});
  }

  size_t InputsWorkspaceBytes(
      const std::vector<Tensor>& inputs) const override {
    const Tensor& dy = inputs[kGradOutput];
    const Tensor& x = inputs[kForwardInput];
    const Tensor in{nullptr, dy.dtype, input_.ShapeOf(dy.shape)};
    return input_.CropBytes(dy) +
           static_cast<const MultiInputKernel&>(*gradient_)
               .InputsWorkspaceBytes({x, in, x});
  }

  void RunInputs(const std::vector<Tensor>& inputs, const Tensor& output,
                 void* workspace) override {
    const Tensor& dy = inputs[kGradOutput];
    const Tensor& x = inputs[kForwardInput];
    const Tensor in = input_.Of(dy, workspace);
    conv_inputs_[0] = x;   // C's output gradient
    conv_inputs_[1] = in;  // C's input
    conv_inputs_[2] = x;   // C's output (only its shape is read: no activation)
    static_cast<MultiInputKernel&>(*gradient_)
        .RunInputs(conv_inputs_, output,
                   static_cast<char*>(workspace) + input_.CropBytes(dy));
  }

 private:
  AdjointInput input_;
  std::unique_ptr<Kernel> gradient_;
  std::vector<Tensor> conv_inputs_;
};

constexpr char kGemm[] = "gemm";
constexpr char kDirect[] = "direct";
template <const char* kName>
using Via =
    ViaConv2d<ConvTranspose2dBackwardWeightAttrs, Conv2dBackwardWeightAttrs,
              WeightKernel, kName, &AdjointConvOf>;

AI3_REGISTER_ALGORITHM(ConvTranspose2dBackwardWeightAttrs, "gemm", Device::kCPU,
                       Via<kGemm>);
AI3_REGISTER_ALGORITHM(ConvTranspose2dBackwardWeightAttrs, "direct",
                       Device::kCPU, Via<kDirect>);

}  // namespace
}  // namespace ai3
