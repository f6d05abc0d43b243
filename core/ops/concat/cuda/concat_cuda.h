// concat on CUDA: the join an ai3::Model runs for DenseNet, GoogLeNet,
// Inception and SqueezeNet blocks when its tensors live on a GPU (see
// core/ops/concat/concat.h for the rows-and-widths view).
#ifndef AI3_CORE_OPS_CONCAT_CUDA_CONCAT_CUDA_H_
#define AI3_CORE_OPS_CONCAT_CUDA_CONCAT_CUDA_H_

#include <cstddef>
#include <cstdint>

namespace ai3 {
namespace cuda {

// y[o, :] = x[0][o, :] | ... | x[count - 1][o, :] with input k's rows
// widths[k] elements of `element_size` bytes; x[k] and y are device
// pointers, queued on `stream` (a cudaStream_t).
void ConcatForward(const void* const* x, const int64_t* widths, int count,
                   int64_t outer, size_t element_size, void* y, void* stream);

}  // namespace cuda
}  // namespace ai3

#endif  // AI3_CORE_OPS_CONCAT_CUDA_CONCAT_CUDA_H_
