// The CUDA GraphBackend: ai3::Model's activations in device memory, and
// add / concat as core/ops/{add,concat}/cuda run them. Registered at load
// time (this library is alwayslink), so linking the CUDA half of the core
// is what lets a Model run on CUDA tensors.
#include "core/cuda/graph_backend.h"
#include "core/cuda/runtime.h"
#include "core/ops/add/cuda/add_cuda.h"
#include "core/ops/concat/cuda/concat_cuda.h"

namespace ai3 {
namespace cuda {
namespace {

class CudaGraphBackend : public GraphBackend {
 public:
  void* Allocate(size_t bytes) override {
    void* data = nullptr;
    if (bytes) Check(cudaMalloc(&data, bytes), "allocating model activations");
    return data;
  }
  void Free(void* data) override { cudaFree(data); }
  void Add(DType dtype, const void* const* x, int count, int64_t n, void* y,
           void* stream) override {
    if (dtype == DType::kFloat64) {
      AddForward(reinterpret_cast<const double* const*>(x), count, n,
                 static_cast<double*>(y), stream);
    } else {
      AddForward(reinterpret_cast<const float* const*>(x), count, n,
                 static_cast<float*>(y), stream);
    }
  }
  void Concat(const void* const* x, const int64_t* widths, int count,
              int64_t outer, size_t element_size, void* y,
              void* stream) override {
    ConcatForward(x, widths, count, outer, element_size, y, stream);
  }
};

const bool registered = [] {
  static CudaGraphBackend backend;
  RegisterGraphBackend(Device::kCUDA, &backend);
  return true;
}();

}  // namespace
}  // namespace cuda
}  // namespace ai3
