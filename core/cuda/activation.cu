#include "core/cuda/activation.h"

#include "core/cuda/runtime.h"

namespace ai3 {
namespace cuda {
namespace {

template <typename T>
__global__ void Clamp(T* y, int64_t n, T lo, T hi) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    // NaN stays NaN: both comparisons are false for it.
    T v = y[i] < lo ? lo : y[i];
    y[i] = v > hi ? hi : v;
  }
}

}  // namespace

void ApplyActivation(const Activation& activation, DType dtype, void* y,
                     int64_t n, cudaStream_t stream) {
  if (!activation.enabled || n == 0) return;
  if (dtype == DType::kFloat64) {
    Clamp<double><<<BlocksFor(n), kThreads, 0, stream>>>(
        static_cast<double*>(y), n, activation.min, activation.max);
  } else {
    Clamp<float><<<BlocksFor(n), kThreads, 0, stream>>>(
        static_cast<float*>(y), n, static_cast<float>(activation.min),
        static_cast<float>(activation.max));
  }
  CheckLaunch("the fused activation");
}

}  // namespace cuda
}  // namespace ai3
