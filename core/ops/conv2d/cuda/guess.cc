// conv2d "guess" on CUDA: whatever cuDNN's heuristics rank first for
// the input shape (cudnnGetConvolutionForwardAlgorithm_v7, FP32 math only),
// asked once per shape and cached with the layer. The CUDA default.
#include "core/ops/conv2d/cuda/cudnn_conv.h"

AI3_REGISTER_CUDNN_CONV2D("guess", /* none: cuDNN's heuristics */);
