// conv2d "implicit precomp gemm" on CUDA: cuDNN's implicit GEMM
// with precomputed indices (CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM:
// the input offsets are computed once into a small workspace).
#include <memory>
#include <string>

#include "core/ops/conv2d/cuda/cudnn_conv.h"

namespace ai3 {
namespace {

class Algo : public cuda::CudnnConv2d {
 public:
  Algo() : CudnnConv2d("implicit precomp gemm", {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM}) {}
};

AI3_REGISTER_ALGORITHM(Conv2dAttrs, "implicit precomp gemm", Device::kCUDA, Algo);

}  // namespace
}  // namespace ai3
