// conv2d "fft" on CUDA: cuDNN's FFT convolutions: the whole-image
// FFT (CUDNN_CONVOLUTION_FWD_ALGO_FFT) where cuDNN has it for the shape (it
// limits the padded image size), else the tiled one (FFT_TILING).
#include <memory>
#include <string>

#include "core/ops/conv2d/cuda/cudnn_conv.h"

namespace ai3 {
namespace {

class Algo : public cuda::CudnnConv2d {
 public:
  Algo()
      : CudnnConv2d("fft", {CUDNN_CONVOLUTION_FWD_ALGO_FFT,
                            CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING}) {}
  std::string WhyNot(const Conv2dAttrs& a) const override {
    std::string why = CudnnConv2d::WhyNot(a);
    if (!why.empty()) return why;
    return cuda::CudnnTransformWhyNot(a, "cuDNN fft");
  }
};

AI3_REGISTER_ALGORITHM(Conv2dAttrs, "fft", Device::kCUDA, Algo);

}  // namespace
}  // namespace ai3
