#include "core/ops/depth_to_space/depth_to_space.h"

#include "core/errors.h"
#include "core/math/dispatch.h"
#include "core/parallel.h"

namespace ai3 {

void BlockShuffleAttrs::Validate(const std::vector<Tensor>& params) const {
  if (!params.empty()) {
    Fail(ErrorKind::kInvalidArgument, "takes no parameter tensors, got ",
         params.size());
  }
  if (blocksize < 1 || blocksize > (int64_t{1} << 20)) {
    Fail(ErrorKind::kInvalidArgument, "blocksize must be in [1, 2^20], got ",
         blocksize);
  }
}

Shape DepthToSpaceAttrs::OutputShape(const Tensor& input) const {
  ImageDims d = Rank4InputDims(input, layout);
  const int64_t bb = blocksize * blocksize;
  if (d.c % bb) {
    Fail(ErrorKind::kShape, "input ", ToString(input.shape), " (", Name(layout),
         ") has ", d.c, " channels, not divisible by blocksize^2 = ", bb);
  }
  d.c /= bb;
  d.h = CheckedMul(d.h, blocksize, "the output height");
  d.w = CheckedMul(d.w, blocksize, "the output width");
  Shape out = ImageShape(d, layout);
  CheckShape(out, "output");
  return out;
}

namespace {

template <typename T>
void Shuffle(const BlockShuffle& s, bool to_space, const T* from, T* to) {
  const ImageDims& sp = s.space;
  const int64_t b = s.b, h = sp.h / b, w = sp.w / b, cd = sp.c * b * b;
  const ImageStrides ss = ImageStridesOf(sp, s.layout);
  const ImageStrides ds = ImageStridesOf({sp.n, cd, h, w}, s.layout);
  const int64_t rows = sp.n * sp.c * sp.h;
  ParallelFor(0, rows, rows * sp.w >= (1 << 15), [&](int64_t r) {
    const int64_t n = r / (sp.c * sp.h), c = r / sp.h % sp.c;
    const int64_t oh = r % sp.h, hh = oh / b, i = oh % b;
    for (int64_t ow = 0; ow < sp.w; ++ow) {
      const int64_t j = ow % b;
      const int64_t k = s.crd ? (c * b + i) * b + j : (i * b + j) * sp.c + c;
      const int64_t space = n * ss.n + c * ss.c + oh * ss.h + ow * ss.w;
      const int64_t depth = n * ds.n + k * ds.c + hh * ds.h + ow / b * ds.w;
      if (to_space) {
        to[space] = from[depth];
      } else {
        to[depth] = from[space];
      }
    }
  });
}

}  // namespace

void RunBlockShuffle(const BlockShuffle& s, bool to_space, DType dtype,
                     const void* from, void* to) {
  DispatchFloat(dtype, [&](auto zero) {
    using T = decltype(zero);
    Shuffle<T>(s, to_space, static_cast<const T*>(from), static_cast<T*>(to));
  });
}

}  // namespace ai3
