// Every registered CPU space_to_depth algorithm against the definition
// (depth_to_space's, read the other way: block_shuffle_testing.h), DCR and
// CRD, NCHW and NHWC, both dtypes; then the errors bad inputs must raise.
#include "core/ops/space_to_depth/space_to_depth.h"
#include "core/errors.h"
#include "core/ops/depth_to_space/block_shuffle_testing.h"

namespace ai3 {

int Main() {
  const int ran = testing::RunShuffleTests<SpaceToDepthAttrs>(false);
  SpaceToDepthAttrs a;
  a.blocksize = 2;
  std::vector<float> x(24);
  Layer<SpaceToDepthAttrs> layer("s", a, {}, "direct");
  testing::ExpectError(
      "spatial", ErrorKind::kShape,
      "has spatial size 3x4, not divisible by blocksize 2", [&] {
        layer.OutputShape(Tensor{x.data(), DType::kFloat32, {1, 2, 3, 4}});
      });
  return testing::Summary("space_to_depth", ran);
}

}  // namespace ai3
