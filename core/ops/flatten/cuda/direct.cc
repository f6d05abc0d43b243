// flatten "direct" on CUDA: the output has the input's elements in the same
// order, so the whole op is one device-to-device copy queued on the caller's
// stream (the output is a separate buffer the caller owns).
#include "core/cuda/kernel.h"
#include "core/ops/flatten/flatten.h"
#include "core/registry.h"

namespace ai3 {
namespace {

class CopyKernel : public cuda::CudaKernel {
 protected:
  void RunOnDevice(const Tensor& input, const Tensor& output,
                   cudaStream_t stream) override {
    cuda::Check(cudaMemcpyAsync(output.data, input.data,
                                input.numel() * SizeOf(input.dtype),
                                cudaMemcpyDeviceToDevice, stream),
                "copying the flattened tensor");
  }
};

using Direct = KernelAlgorithm<FlattenAttrs, CopyKernel>;
AI3_REGISTER_ALGORITHM(FlattenAttrs, "direct", Device::kCUDA, Direct);

}  // namespace
}  // namespace ai3
