// conv2d "guess" on CUDA: whatever cuDNN's heuristics rank first for
// the input shape (cudnnGetConvolutionForwardAlgorithm_v7, FP32 math only),
// asked once per shape and cached with the layer. The CUDA default.
#include <memory>
#include <string>

#include "core/ops/conv2d/cuda/cudnn_conv.h"

namespace ai3 {
namespace {

class Algo : public cuda::CudnnConv2d {
 public:
  Algo() : CudnnConv2d("guess", {}) {}
};

AI3_REGISTER_ALGORITHM(Conv2dAttrs, "guess", Device::kCUDA, Algo);

}  // namespace
}  // namespace ai3
