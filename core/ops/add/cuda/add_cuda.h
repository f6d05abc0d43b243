// add on CUDA: the elementwise sum an ai3::Model runs for residual
// connections when its tensors live on a GPU (see core/ops/add/add.h).
#ifndef AI3_CORE_OPS_ADD_CUDA_ADD_CUDA_H_
#define AI3_CORE_OPS_ADD_CUDA_ADD_CUDA_H_

#include <cstdint>

namespace ai3 {
namespace cuda {

// y[i] = x[0][i] + ... + x[count - 1][i], left to right as PyTorch sums, for
// device pointers x[k] (the array `x` itself is host memory). Queued on
// `stream` (a cudaStream_t); `y` may be one of the inputs.
void AddForward(const float* const* x, int count, int64_t n, float* y,
                void* stream);
void AddForward(const double* const* x, int count, int64_t n, double* y,
                void* stream);

}  // namespace cuda
}  // namespace ai3

#endif  // AI3_CORE_OPS_ADD_CUDA_ADD_CUDA_H_
