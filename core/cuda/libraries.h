// Error checks for the NVIDIA libraries the CUDA algorithms call: a failed
// status becomes ai3::Error naming the call. CUDNN_STATUS_NOT_SUPPORTED is
// kAlgorithmNotApplicable (cuDNN refusing these parameters, not a bug);
// everything else is kInternal.
#ifndef AI3_CORE_CUDA_LIBRARIES_H_
#define AI3_CORE_CUDA_LIBRARIES_H_

#include <cublas_v2.h>
#include <cudnn.h>

namespace ai3 {
namespace cuda {

void CheckCudnn(cudnnStatus_t status, const char* what);
void CheckCublas(cublasStatus_t status, const char* what);

}  // namespace cuda
}  // namespace ai3

#endif  // AI3_CORE_CUDA_LIBRARIES_H_
