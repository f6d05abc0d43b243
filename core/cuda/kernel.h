// CudaKernel: what every CUDA algorithm's kernel shares. It is prepared on
// the GPU that is current when the layer is built (the frontends make the
// input's device current), keeps its device state there, and runs each call
// on that GPU and on the stream of the call's input tensor.
#ifndef AI3_CORE_CUDA_KERNEL_H_
#define AI3_CORE_CUDA_KERNEL_H_

#include <cuda_runtime_api.h>

#include <vector>

#include "core/cuda/runtime.h"
#include "core/registry.h"
#include "core/tensor.h"

namespace ai3 {
namespace cuda {

//
// A kernel's device state (workspaces, cuDNN's plan) is reused by every
// call. Calls are serialised on the host (Layer holds a lock), but their GPU
// work is queued asynchronously: a call on another stream than the last one
// first waits (on the GPU, cudaStreamWaitEvent) for the last one's work, so
// two streams never share a workspace at once.
class CudaKernel : public Kernel {
 public:
  CudaKernel() : device_(CurrentDevice()) {
    Check(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming),
          "creating an event");
  }
  ~CudaKernel() override { cudaEventDestroy(done_); }
  CudaKernel(const CudaKernel&) = delete;
  CudaKernel& operator=(const CudaKernel&) = delete;

  // Device kernels keep their own device workspaces (Layer's workspace is
  // host memory), so they ask it for none.
  size_t WorkspaceBytes(const Shape&) const final { return 0; }

  void Run(const Tensor& input, const Tensor& output, void*) final {
    CheckOnDevice(input, device_, "input");
    CheckOnDevice(output, device_, "output");
    DeviceGuard guard(device_);
    cudaStream_t stream = StreamOf(input);
    if (ran_ && stream != last_stream_) {
      Check(cudaStreamWaitEvent(stream, done_, 0),
            "ordering after the previous call's stream");
    }
    RunOnDevice(input, output, stream);
    Check(cudaEventRecord(done_, stream), "recording the call's end");
    ran_ = true;
    last_stream_ = stream;
  }

 protected:
  // `input` and `output` are contiguous, on this kernel's GPU; work is
  // queued on `stream` and not waited for.
  virtual void RunOnDevice(const Tensor& input, const Tensor& output,
                           cudaStream_t stream) = 0;

  int device() const { return device_; }

 private:
  int device_;
  cudaEvent_t done_ = nullptr;  // recorded after each call's work
  cudaStream_t last_stream_ = nullptr;
  bool ran_ = false;
};

// The weight and optional bias of a conv2d or linear layer, copied to the
// GPU once when the kernel is prepared.
struct DeviceWeights {
  DeviceWeights(const std::vector<Tensor>& params, bool has_bias)
      : weight(Upload(params[0].data,
                      params[0].numel() * SizeOf(params[0].dtype))),
        bias(has_bias ? Upload(params[1].data,
                               params[1].numel() * SizeOf(params[1].dtype))
                      : DeviceBuffer()) {}
  template <typename T>
  const T* w() const {
    return weight.as<const T>();
  }
  template <typename T>
  const T* b() const {
    return bias.size() ? bias.as<const T>() : nullptr;
  }
  DeviceBuffer weight;
  DeviceBuffer bias;
};

}  // namespace cuda
}  // namespace ai3

#endif  // AI3_CORE_CUDA_KERNEL_H_
