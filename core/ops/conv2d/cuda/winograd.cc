// conv2d "winograd" on CUDA: cuDNN's Winograd convolutions: the fused
// kernel (CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD, 3x3) where cuDNN has it for
// the shape, else the non-fused one (WINOGRAD_NONFUSED: 3x3 and 5x5).
#include <memory>
#include <string>

#include "core/ops/conv2d/cuda/cudnn_conv.h"

namespace ai3 {
namespace {

class Algo : public cuda::CudnnConv2d {
 public:
  Algo()
      : CudnnConv2d("winograd",
                    {CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD,
                     CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED}) {}
  std::string WhyNot(const Conv2dAttrs& a) const override {
    std::string why = CudnnConv2d::WhyNot(a);
    if (!why.empty()) return why;
    if (a.kernel_h != a.kernel_w || (a.kernel_h != 3 && a.kernel_h != 5)) {
      return "cuDNN winograd needs a 3x3 or 5x5 kernel, got " +
             std::to_string(a.kernel_h) + "x" + std::to_string(a.kernel_w);
    }
    return cuda::CudnnTransformWhyNot(a, "cuDNN winograd");
  }
};

AI3_REGISTER_ALGORITHM(Conv2dAttrs, "winograd", Device::kCUDA, Algo);

}  // namespace
}  // namespace ai3
