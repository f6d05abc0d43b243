// conv2d "gemm" on CUDA: cuDNN's explicit GEMM
// (CUDNN_CONVOLUTION_FWD_ALGO_GEMM: im2col into the workspace, then a GEMM).
#include "core/ops/conv2d/cuda/cudnn_conv.h"

AI3_REGISTER_CUDNN_CONV2D("gemm", CUDNN_CONVOLUTION_FWD_ALGO_GEMM);
