// GraphBackend: what ai3::Model (core/graph.h) needs to run on a device
// other than the CPU -- memory for its activations, and its two built-in
// multi-input nodes, add and concat. The CUDA half of the core registers one
// for Device::kCUDA when it is linked in (--config=cuda); graph.cc itself
// stays free of CUDA.
#ifndef AI3_CORE_CUDA_GRAPH_BACKEND_H_
#define AI3_CORE_CUDA_GRAPH_BACKEND_H_

#include <cstddef>
#include <cstdint>

#include "core/tensor.h"

namespace ai3 {

class GraphBackend {
 public:
  virtual ~GraphBackend() = default;
  // Device memory on the calling thread's current device (the frontends
  // make the input's GPU current around a Model call).
  virtual void* Allocate(size_t bytes) = 0;
  virtual void Free(void* data) = 0;
  // core/ops/add/add.h and core/ops/concat/concat.h on device pointers,
  // queued on `stream`.
  virtual void Add(DType dtype, const void* const* x, int count, int64_t n,
                   void* y, void* stream) = 0;
  virtual void Concat(const void* const* x, const int64_t* widths, int count,
                      int64_t outer, size_t element_size, void* y,
                      void* stream) = 0;
};

// The backend for `device`, or null when this build has none (kCPU never
// has one: the Model runs CPU tensors itself).
GraphBackend* GraphBackendFor(Device device);
void RegisterGraphBackend(Device device, GraphBackend* backend);

// An activation buffer in a backend's memory; like ai3::Buffer it only
// grows.
class BackendBuffer {
 public:
  explicit BackendBuffer(GraphBackend* backend) : backend_(backend) {}
  ~BackendBuffer() {
    if (data_) backend_->Free(data_);
  }
  BackendBuffer(BackendBuffer&& other) noexcept
      : backend_(other.backend_), data_(other.data_), size_(other.size_) {
    other.data_ = nullptr;
    other.size_ = 0;
  }
  BackendBuffer(const BackendBuffer&) = delete;
  BackendBuffer& operator=(const BackendBuffer&) = delete;
  BackendBuffer& operator=(BackendBuffer&&) = delete;

  void Reserve(size_t bytes) {
    if (bytes <= size_) return;
    if (data_) backend_->Free(data_);
    data_ = nullptr;
    size_ = 0;
    data_ = backend_->Allocate(bytes);
    size_ = bytes;
  }
  void* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  GraphBackend* backend_;
  void* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace ai3

#endif  // AI3_CORE_CUDA_GRAPH_BACKEND_H_
