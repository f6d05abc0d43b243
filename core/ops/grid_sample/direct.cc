// grid_sample "direct": per output position, its taps (an input offset and
// a weight each: 1 for nearest, 4 / 8 for bilinear, 16 for bicubic) are
// worked out once from the grid point, then every channel reads them:
// NCHW one plane after another, NHWC a pixel's channels side by side (the
// inner loop, vectorised). Positions are spread over OpenMP threads.
#include <array>
#include <cmath>
#include <cstdint>

#include "core/layer.h"
#include "core/math/dispatch.h"
#include "core/ops/grid_sample/grid_sample.h"
#include "core/parallel.h"
#include "core/registry.h"

namespace ai3 {
namespace {

using Mode = GridSampleAttrs::Mode;
using Padding = GridSampleAttrs::Padding;

// Beyond this a coordinate is outside any input (and still an exact int64).
constexpr double kFar = 1e15;

// The coordinate arithmetic runs in T, the tensors' dtype, as PyTorch's
// grid_sampler does: in float32 a point rounds (nearest) as it does there.

// PyTorch's reflect_coordinates: `c` reflected about twice_low / 2 and
// twice_high / 2 until it lies between them.
template <typename T>
T Reflect(T c, int64_t twice_low, int64_t twice_high) {
  if (twice_low == twice_high) return 0;
  const T low = T(twice_low) / 2, span = T(twice_high - twice_low) / 2;
  c = std::fabs(c - low);
  const T extra = std::fmod(c, span);
  const int64_t flips = static_cast<int64_t>(std::floor(c / span));
  return flips % 2 == 0 ? extra + low : span - extra + low;
}

// The padding's map of a coordinate along a dim of `size` (zeros: none).
template <typename T>
T Padded(const GridSampleAttrs& a, T c, int64_t size) {
  if (a.padding == Padding::kZeros) return c;
  if (a.padding == Padding::kReflection) {
    c = a.align_corners ? Reflect(c, 0, 2 * (size - 1))
                        : Reflect(c, -1, 2 * size - 1);
  }
  return std::fmin(std::fmax(c, T(0)), T(size - 1));
}

// Keys' cubic convolution weights of the taps at distances 1 + t, t,
// 1 - t, 2 - t (A = -0.75, as torch's bicubic).
template <typename T>
std::array<T, 4> CubicWeights(T t) {
  constexpr T A = T(-0.75);
  auto near = [](T d) { return ((A + 2) * d - (A + 3)) * d * d + 1; };
  auto far = [](T d) { return ((A * d - 5 * A) * d + 8 * A) * d - 4 * A; };
  return {far(1 + t), near(t), near(1 - t), far(2 - t)};
}

// One dim's taps: up to 4 indices and weights; an index outside the input
// (zeros padding) is dropped.
template <typename T>
struct DimTaps {
  int64_t index[4];
  T weight[4];
  int count = 0;
  void Add(int64_t i, T w, int64_t size) {
    if (i < 0 || i >= size) return;
    index[count] = i;
    weight[count] = w;
    ++count;
  }
};

// The taps of grid coordinate g along a dim of `size`.
template <typename T>
DimTaps<T> TapsOf(const GridSampleAttrs& a, T g, int64_t size) {
  DimTaps<T> taps;
  // Unnormalised: -1 and 1 are the corner pixels' centres or outer edges.
  const T c0 =
      a.align_corners ? (g + 1) / 2 * T(size - 1) : ((g + 1) * T(size) - 1) / 2;
  if (!(std::fabs(c0) < T(kFar))) return taps;  // NaN or far off: reads 0
  if (a.mode == Mode::kBicubic) {
    const T f = std::floor(c0);
    const std::array<T, 4> w = CubicWeights(c0 - f);
    for (int k = 0; k < 4; ++k) {
      // Each tap's own index through the padding (torch's bounded read).
      const T i = Padded(a, f - 1 + k, size);
      taps.Add(static_cast<int64_t>(i), w[k], size);
    }
    return taps;
  }
  const T c = Padded(a, c0, size);
  if (a.mode == Mode::kNearest) {
    taps.Add(static_cast<int64_t>(std::nearbyint(c)), T(1), size);
    return taps;
  }
  const T f = std::floor(c);
  taps.Add(static_cast<int64_t>(f), 1 - (c - f), size);
  taps.Add(static_cast<int64_t>(f) + 1, c - f, size);
  return taps;
}

template <typename T>
void Sample(const GridSampleAttrs& a, const Shape& x_shape,
            const Shape& out_shape, const T* x, const T* grid, T* y) {
  const bool last = a.layout == Layout::kNHWC;
  const int64_t rank = static_cast<int64_t>(x_shape.size()), dims = rank - 2;
  const int64_t n = x_shape[0], c = x_shape[last ? rank - 1 : 1];
  int64_t in[3] = {1, 1, 1}, positions = 1;  // (d, h, w), 2-D: d = 1
  for (int64_t d = 0; d < dims; ++d) {
    in[3 - dims + d] = x_shape[(last ? 1 : 2) + d];
    positions *= out_shape[(last ? 1 : 2) + d];
  }
  const int64_t in_volume = in[0] * in[1] * in[2];
  const int64_t total = n * positions;
  ParallelFor(0, total, total * c >= (1 << 12), [&](int64_t p) {
    const int64_t b = p / positions, pos = p % positions;
    const T* point = grid + p * dims;  // (x, y[, z]): w first
    DimTaps<T> taps[3];
    for (int64_t d = 0; d < 3; ++d) {
      const int64_t k = 2 - d;  // the grid's component of dim d
      if (k >= dims) {
        taps[d].Add(0, T(1), 1);  // 2-D: the one depth
      } else {
        taps[d] = TapsOf<T>(a, point[k], in[d]);
      }
    }
    const T* xb = x + b * in_volume * c;
    if (last) {
      T* __restrict yp = y + p * c;
      for (int64_t k = 0; k < c; ++k) yp[k] = T(0);
      for (int q = 0; q < taps[0].count; ++q)
        for (int r = 0; r < taps[1].count; ++r)
          for (int s = 0; s < taps[2].count; ++s) {
            const T w =
                taps[0].weight[q] * taps[1].weight[r] * taps[2].weight[s];
            const T* xp =
                xb + ((taps[0].index[q] * in[1] + taps[1].index[r]) * in[2] +
                      taps[2].index[s]) *
                         c;
#pragma omp simd
            for (int64_t k = 0; k < c; ++k) yp[k] += w * xp[k];
          }
      return;
    }
    T* yb = y + b * c * positions + pos;
    for (int64_t k = 0; k < c; ++k) {
      const T* xc = xb + k * in_volume;
      T sum = 0;
      for (int q = 0; q < taps[0].count; ++q)
        for (int r = 0; r < taps[1].count; ++r)
          for (int s = 0; s < taps[2].count; ++s) {
            sum += taps[0].weight[q] * taps[1].weight[r] * taps[2].weight[s] *
                   xc[(taps[0].index[q] * in[1] + taps[1].index[r]) * in[2] +
                      taps[2].index[s]];
          }
      yb[k * positions] = sum;
    }
  });
}

class DirectKernel : public MultiInputKernel {
 public:
  explicit DirectKernel(const GridSampleAttrs& attrs) : attrs_(attrs) {}

  void RunInputs(const std::vector<Tensor>& inputs, const Tensor& output,
                 void*) override {
    if (output.numel() == 0) return;
    DispatchFloat(output.dtype, [&](auto zero) {
      using T = decltype(zero);
      Sample<T>(attrs_, inputs[0].shape, output.shape,
                inputs[0].data_as<const T>(), inputs[1].data_as<const T>(),
                output.data_as<T>());
    });
  }

 private:
  GridSampleAttrs attrs_;
};

AI3_REGISTER_ALGORITHM(GridSampleAttrs, "direct", Device::kCPU,
                       KernelAlgorithm<GridSampleAttrs, DirectKernel>);

}  // namespace
}  // namespace ai3
