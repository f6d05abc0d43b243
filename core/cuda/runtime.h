// The CUDA runtime as the core uses it: errors become ai3::Error, device
// memory is an owned DeviceBuffer, and kernels run on the stream the caller's
// Tensor names (core/tensor.h), on the GPU that holds the data.
//
// Only code built with --config=cuda includes this header.
#ifndef AI3_CORE_CUDA_RUNTIME_H_
#define AI3_CORE_CUDA_RUNTIME_H_

#include <cuda_runtime_api.h>

#include <cstddef>

#include "core/errors.h"
#include "core/tensor.h"

namespace ai3 {
namespace cuda {

// Throws Error(kInternal) "CUDA failed <what>: <cudaGetErrorString>" unless
// `status` is cudaSuccess. Also clears the runtime's sticky last error so
// the next call does not report this one again.
void Check(cudaError_t status, const char* what);

// The stream a kernel working on `t` runs on.
inline cudaStream_t StreamOf(const Tensor& t) {
  return static_cast<cudaStream_t>(t.stream);
}

// The GPU the calling thread's CUDA calls go to (cudaGetDevice).
int CurrentDevice();

// Makes `device` current for its lifetime and restores the previous one:
// PyTorch may have any device current when it calls in.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_;
  bool switched_;
};

// Owned device memory on the device current when it first allocates. Like
// ai3::Buffer, it only grows, so a workspace reused across calls stops
// allocating once it has seen the largest input.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes) { Reserve(bytes); }
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void Reserve(size_t bytes);
  void* data() const { return data_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data_);
  }
  size_t size() const { return size_; }

 private:
  void Release();
  void* data_ = nullptr;
  size_t size_ = 0;
};

// A copy of `bytes` host bytes in device memory, done once when a layer is
// prepared (weights live on the host in the Layer and on the GPU in the
// kernel). Synchronous: the host copy may go away afterwards.
DeviceBuffer Upload(const void* host, size_t bytes);

// Throws kInvalidArgument unless `t` is on the CUDA device `device`: a layer
// prepared on one GPU keeps its weights and handles there.
void CheckOnDevice(const Tensor& t, int device, const char* what);

// Blocks for a grid-stride elementwise kernel over `n` elements: enough to
// fill the GPU, capped so the grid size stays in range.
inline unsigned BlocksFor(long long n, int threads = 256) {
  long long blocks = (n + threads - 1) / threads;
  if (blocks < 1) blocks = 1;
  if (blocks > 65535LL * 8) blocks = 65535LL * 8;
  return static_cast<unsigned>(blocks);
}
constexpr int kThreads = 256;

// After a kernel launch: launch errors (bad configuration, no device) are
// reported at once; errors while running show up on a later call.
void CheckLaunch(const char* kernel);

}  // namespace cuda
}  // namespace ai3

#endif  // AI3_CORE_CUDA_RUNTIME_H_
