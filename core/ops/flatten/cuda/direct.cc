// flatten "direct" on CUDA: the output has the input's elements in the same
// order, so the whole op is one device-to-device copy queued on the caller's
// stream (the output is a separate buffer the caller owns).
#include <memory>
#include <vector>

#include "core/cuda/kernel.h"
#include "core/ops/flatten/flatten.h"

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

class Direct : public Algorithm<FlattenAttrs> {
 public:
  std::unique_ptr<Kernel> Prepare(const FlattenAttrs&,
                                  const std::vector<Tensor>&) const override {
    return std::make_unique<CopyKernel>();
  }
};

AI3_REGISTER_ALGORITHM(FlattenAttrs, "direct", Device::kCUDA, Direct);

}  // namespace
}  // namespace ai3
