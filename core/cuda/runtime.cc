#include "core/cuda/runtime.h"

#include <utility>

namespace ai3 {
namespace cuda {

void Check(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  cudaGetLastError();  // clear the sticky error this call left
  Fail(ErrorKind::kInternal, "CUDA failed ", what, ": ",
       cudaGetErrorName(status), " (", cudaGetErrorString(status), ")");
}

int CurrentDevice() {
  int device = 0;
  Check(cudaGetDevice(&device), "getting the current device");
  return device;
}

DeviceGuard::DeviceGuard(int device) : previous_(CurrentDevice()) {
  switched_ = previous_ != device;
  if (switched_) Check(cudaSetDevice(device), "selecting the device");
}

DeviceGuard::~DeviceGuard() {
  // A destructor must not throw; the previous device was valid a moment ago.
  if (switched_) cudaSetDevice(previous_);
}

DeviceBuffer::~DeviceBuffer() { Release(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    Release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void DeviceBuffer::Reserve(size_t bytes) {
  if (bytes <= size_) return;
  Release();
  // Rounded to 256 bytes: cuDNN and cuBLAS like aligned workspaces, and
  // cudaMalloc aligns the start already.
  size_t rounded = (bytes + 255) / 256 * 256;
  Check(cudaMalloc(&data_, rounded), "allocating device memory");
  size_ = bytes;
}

void DeviceBuffer::Release() {
  // cudaFree synchronises the device, so work queued on a buffer finishes
  // before the memory is reused. Errors at teardown are not actionable.
  if (data_) cudaFree(data_);
  data_ = nullptr;
  size_ = 0;
}

DeviceBuffer Upload(const void* host, size_t bytes) {
  DeviceBuffer buffer(bytes);
  if (bytes) {
    Check(cudaMemcpy(buffer.data(), host, bytes, cudaMemcpyHostToDevice),
          "copying weights to the device");
  }
  return buffer;
}

void CheckOnDevice(const Tensor& t, int device, const char* what) {
  if (t.device != Device::kCUDA) {
    Fail(ErrorKind::kInvalidArgument, what, " is on ", Name(t.device),
         ", the layer runs on cuda:", device);
  }
  if (t.device_index != device) {
    Fail(ErrorKind::kInvalidArgument, what, " is on cuda:", t.device_index,
         " but the layer was prepared on cuda:", device,
         "; build the layer on the input's device");
  }
}

void CheckLaunch(const char* kernel) { Check(cudaGetLastError(), kernel); }

}  // namespace cuda
}  // namespace ai3
