// space_to_depth "direct": depth_to_space's block shuffle, space to depth.
#include "core/ops/space_to_depth/space_to_depth.h"
#include "core/registry.h"

namespace ai3 {
namespace {

class DirectKernel : public Kernel {
 public:
  explicit DirectKernel(const SpaceToDepthAttrs& attrs) : attrs_(attrs) {}

  void Run(const Tensor& input, const Tensor& output, void*) override {
    const BlockShuffle s{ImageDimsOf(input.shape, attrs_.layout),
                         attrs_.blocksize, attrs_.crd, attrs_.layout};
    RunBlockShuffle(s, /*to_space=*/false, input.dtype, input.data,
                    output.data);
  }

 private:
  SpaceToDepthAttrs attrs_;
};

AI3_REGISTER_ALGORITHM(SpaceToDepthAttrs, "direct", Device::kCPU,
                       KernelAlgorithm<SpaceToDepthAttrs, DirectKernel>);

// The input gradient's "direct": dy shuffled back (depth_to_space.h).
AI3_REGISTER_ALGORITHM(
    SpaceToDepthBackwardDataAttrs, "direct", Device::kCPU,
    KernelAlgorithm<SpaceToDepthBackwardDataAttrs,
                    BlockShuffleDataKernel<SpaceToDepthBackwardDataAttrs,
                                           /*to_space=*/true>>);

}  // namespace
}  // namespace ai3
