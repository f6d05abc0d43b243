// The fused activation (core/math/epilogue.h) for CUDA kernels that end in a
// library call (cuDNN, cuBLAS): one extra elementwise pass on the output,
// queued on the same stream. ai3's own kernels apply it as they write.
#ifndef AI3_CORE_CUDA_ACTIVATION_H_
#define AI3_CORE_CUDA_ACTIVATION_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/math/epilogue.h"
#include "core/tensor.h"

namespace ai3 {
namespace cuda {

// Clamps n elements of `y` (device memory of `dtype`) in place; a no-op
// without an activation.
void ApplyActivation(const Activation& activation, DType dtype, void* y,
                     int64_t n, cudaStream_t stream);

}  // namespace cuda
}  // namespace ai3

#endif  // AI3_CORE_CUDA_ACTIVATION_H_
