// depth_to_space "direct": the block shuffle (depth_to_space.cc), depth to
// space.
#include "core/ops/depth_to_space/depth_to_space.h"
#include "core/registry.h"

namespace ai3 {
namespace {

class DirectKernel : public Kernel {
 public:
  explicit DirectKernel(const DepthToSpaceAttrs& attrs) : attrs_(attrs) {}

  void Run(const Tensor& input, const Tensor& output, void*) override {
    const BlockShuffle s{ImageDimsOf(output.shape, attrs_.layout),
                         attrs_.blocksize, attrs_.crd, attrs_.layout};
    RunBlockShuffle(s, /*to_space=*/true, input.dtype, input.data, output.data);
  }

 private:
  DepthToSpaceAttrs attrs_;
};

AI3_REGISTER_ALGORITHM(DepthToSpaceAttrs, "direct", Device::kCPU,
                       KernelAlgorithm<DepthToSpaceAttrs, DirectKernel>);

// The input gradient's "direct": dy shuffled back (depth_to_space.h).
AI3_REGISTER_ALGORITHM(
    DepthToSpaceBackwardDataAttrs, "direct", Device::kCPU,
    KernelAlgorithm<DepthToSpaceBackwardDataAttrs,
                    BlockShuffleDataKernel<DepthToSpaceBackwardDataAttrs,
                                           /*to_space=*/false>>);

}  // namespace
}  // namespace ai3
