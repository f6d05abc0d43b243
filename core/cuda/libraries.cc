#include "core/cuda/libraries.h"

#include "core/errors.h"

namespace ai3 {
namespace cuda {

void CheckCudnn(cudnnStatus_t status, const char* what) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  ErrorKind kind = status == CUDNN_STATUS_NOT_SUPPORTED
                       ? ErrorKind::kAlgorithmNotApplicable
                       : ErrorKind::kInternal;
  Fail(kind, "cuDNN failed ", what, ": ", cudnnGetErrorString(status));
}

void CheckCublas(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  Fail(ErrorKind::kInternal, "cuBLAS failed ", what, ": ",
       cublasGetStatusName(status), " (", cublasGetStatusString(status), ")");
}

}  // namespace cuda
}  // namespace ai3
