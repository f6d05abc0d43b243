// conv2d "implicit gemm" on CUDA: cuDNN's implicit GEMM
// (CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM: the GEMM reads the input in
// place, no workspace). cuDNN takes every parameter set with it.
#include "core/ops/conv2d/cuda/cudnn_conv.h"

AI3_REGISTER_CUDNN_CONV2D("implicit gemm",
                          CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM);
