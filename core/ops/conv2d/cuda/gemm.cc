// conv2d "gemm" on CUDA: cuDNN's explicit GEMM
// (CUDNN_CONVOLUTION_FWD_ALGO_GEMM: im2col into the workspace, then a GEMM).
#include <memory>
#include <string>

#include "core/ops/conv2d/cuda/cudnn_conv.h"

namespace ai3 {
namespace {

class Algo : public cuda::CudnnConv2d {
 public:
  Algo() : CudnnConv2d("gemm", {CUDNN_CONVOLUTION_FWD_ALGO_GEMM}) {}
};

AI3_REGISTER_ALGORITHM(Conv2dAttrs, "gemm", Device::kCUDA, Algo);

}  // namespace
}  // namespace ai3
