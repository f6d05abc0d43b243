// concat on CUDA: each input is one strided 2-D copy (cudaMemcpy2DAsync):
// `outer` rows of its width, written at its column offset into rows of the
// total width. The copy engine does the work; no kernel is needed.
#include "core/cuda/runtime.h"
#include "core/ops/concat/cuda/concat_cuda.h"

namespace ai3 {
namespace cuda {

void ConcatForward(const void* const* x, const int64_t* widths, int count,
                   int64_t outer, size_t element_size, void* y, void* stream) {
  int64_t total = 0;
  for (int k = 0; k < count; ++k) total += widths[k];
  const size_t pitch = total * element_size;
  size_t offset = 0;
  for (int k = 0; k < count; ++k) {
    const size_t row = widths[k] * element_size;
    if (row && outer) {
      Check(cudaMemcpy2DAsync(static_cast<char*>(y) + offset, pitch, x[k], row,
                              row, outer, cudaMemcpyDeviceToDevice,
                              static_cast<cudaStream_t>(stream)),
            "copying a concat input");
    }
    offset += row;
  }
}

}  // namespace cuda
}  // namespace ai3
