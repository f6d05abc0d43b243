// conv2d "implicit gemm" on CUDA: cuDNN's implicit GEMM
// (CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM: the GEMM reads the input in
// place, no workspace). cuDNN takes every parameter set with it.
#include <memory>
#include <string>

#include "core/ops/conv2d/cuda/cudnn_conv.h"

namespace ai3 {
namespace {

class Algo : public cuda::CudnnConv2d {
 public:
  Algo() : CudnnConv2d("implicit gemm", {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM}) {}
};

AI3_REGISTER_ALGORITHM(Conv2dAttrs, "implicit gemm", Device::kCUDA, Algo);

}  // namespace
}  // namespace ai3
