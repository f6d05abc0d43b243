// Every registered CPU depth_to_space algorithm against the definition
// (block_shuffle_testing.h), DCR and CRD, NCHW and NHWC, both dtypes; then
// the errors bad attributes and inputs must raise.
#include "core/errors.h"
#include "core/ops/depth_to_space/block_shuffle_testing.h"

namespace ai3 {

int Main() {
  const int ran = testing::RunShuffleTests<DepthToSpaceAttrs>(true);
  DepthToSpaceAttrs a;
  a.blocksize = 0;
  testing::ExpectError("blocksize", ErrorKind::kInvalidArgument,
                       "blocksize must be in [1, 2^20], got 0",
                       [&] { Layer<DepthToSpaceAttrs>("d", a, {}, "direct"); });
  a.blocksize = 2;
  std::vector<float> x(24);
  Layer<DepthToSpaceAttrs> layer("d", a, {}, "direct");
  testing::ExpectError(
      "channels", ErrorKind::kShape,
      "has 6 channels, not divisible by blocksize^2 = 4", [&] {
        layer.OutputShape(Tensor{x.data(), DType::kFloat32, {1, 6, 2, 2}});
      });
  return testing::Summary("depth_to_space", ran);
}

}  // namespace ai3
