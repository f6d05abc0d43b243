// conv2d "implicit precomp gemm" on CUDA: cuDNN's implicit GEMM
// with precomputed indices (CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM:
// the input offsets are computed once into a small workspace).
#include "core/ops/conv2d/cuda/cudnn_conv.h"

AI3_REGISTER_CUDNN_CONV2D("implicit precomp gemm",
                          CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM);
