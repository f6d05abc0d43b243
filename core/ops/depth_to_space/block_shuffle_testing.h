// What depth_to_space's and space_to_depth's tests share: the definition
// (y[n, c, h*b + i, w*b + j] = x[n, k, h, w], k by mode), run on NCHW
// doubles, and the check of every algorithm of one of the two ops against
// it over block sizes, modes, layouts and dtypes.
#ifndef AI3_CORE_OPS_DEPTH_TO_SPACE_BLOCK_SHUFFLE_TESTING_H_
#define AI3_CORE_OPS_DEPTH_TO_SPACE_BLOCK_SHUFFLE_TESTING_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/layer.h"
#include "core/ops/depth_to_space/depth_to_space.h"
#include "core/testing/op_test.h"
#include "core/testing/reference.h"

namespace ai3::testing {

struct ShuffleCase {
  int64_t n, c, h, w, b;  // the space side (N, C, H*b, W*b) from (H, W)
  bool crd;
};

// (depth, space), NCHW, with the depth side random.
inline void ShuffleReference(const ShuffleCase& p, std::vector<double>* depth,
                             std::vector<double>* space) {
  const int64_t b = p.b, cd = p.c * b * b, sh = p.h * b, sw = p.w * b;
  *depth = RandomVector(p.n * cd * p.h * p.w, 21);
  space->assign(depth->size(), 0.0);
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t c = 0; c < p.c; ++c)
      for (int64_t y = 0; y < sh; ++y)
        for (int64_t x = 0; x < sw; ++x) {
          const int64_t i = y % b, j = x % b;
          const int64_t k =
              p.crd ? c * b * b + i * b + j : (i * b + j) * p.c + c;
          (*space)[((n * p.c + c) * sh + y) * sw + x] =
              (*depth)[((n * cd + k) * p.h + y / b) * p.w + x / b];
        }
}

// Every algorithm of `Attrs` (depth_to_space: depth -> space, else space ->
// depth) against the reference.
template <class Attrs>
int RunShuffleTests(bool to_space) {
  const std::vector<ShuffleCase> cases = {
      {1, 1, 1, 1, 1, false}, {2, 3, 2, 3, 2, false}, {2, 3, 2, 3, 2, true},
      {1, 2, 3, 1, 3, true},  {1, 4, 2, 2, 3, false}, {2, 8, 16, 16, 2, true},
  };
  return RunEachLayout(
      CpuAlgorithms<Attrs>(), cases,
      [&](auto zero, const ShuffleCase& p, Layout layout,
          const std::string& algorithm) {
        using T = decltype(zero);
        const DType dtype = DTypeOf<T>();
        std::vector<double> depth, space;
        ShuffleReference(p, &depth, &space);
        for (auto* v : {&depth, &space}) {
          for (double& e : *v) e = double(T(e));  // the values T holds: exact
        }
        const int64_t cd = p.c * p.b * p.b;
        if (layout == Layout::kNHWC) {
          depth = ToNhwc(depth, p.n, cd, p.h, p.w);
          space = ToNhwc(space, p.n, p.c, p.h * p.b, p.w * p.b);
        }
        const Shape depth_shape = ImageShape({p.n, cd, p.h, p.w}, layout);
        const Shape space_shape =
            ImageShape({p.n, p.c, p.h * p.b, p.w * p.b}, layout);
        auto x = Cast<T>(to_space ? depth : space);
        const std::vector<double>& want = to_space ? space : depth;
        Attrs a;
        a.blocksize = p.b;
        a.crd = p.crd;
        a.layout = layout;
        Layer<Attrs> layer("shuffle", a, {}, algorithm);
        const Shape& in = to_space ? depth_shape : space_shape;
        const Shape& out = to_space ? space_shape : depth_shape;
        const std::string desc = std::string(Attrs::kOp) + " " + algorithm +
                                 " " + Name(dtype) + " " + Name(layout) + " " +
                                 ToString(in) + (p.crd ? " CRD" : " DCR");
        Tensor xt{x.data(), dtype, in};
        Check(layer.OutputShape(xt) == out, desc + ": output shape");
        std::vector<T> y(want.size(), T(-42));
        layer.Forward(xt, Tensor{y.data(), dtype, out});
        Check(MaxRelativeError(y, want) == 0, desc);
      });
}

}  // namespace ai3::testing

#endif  // AI3_CORE_OPS_DEPTH_TO_SPACE_BLOCK_SHUFFLE_TESTING_H_
