#include "core/ops/space_to_depth/space_to_depth.h"

#include "core/errors.h"

namespace ai3 {

Shape SpaceToDepthAttrs::OutputShape(const Tensor& input) const {
  ImageDims d = Rank4InputDims(input, layout);
  if (d.h % blocksize || d.w % blocksize) {
    Fail(ErrorKind::kShape, "input ", ToString(input.shape), " (", Name(layout),
         ") has spatial size ", d.h, "x", d.w, ", not divisible by blocksize ",
         blocksize);
  }
  d.c = CheckedMul(d.c, blocksize * blocksize, "the output channels");
  d.h /= blocksize;
  d.w /= blocksize;
  return ImageShape(d, layout);
}

}  // namespace ai3
