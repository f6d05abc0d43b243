// conv3d "gemm": vol2col (im2col over three dims), then GEMMs through
// ai3::Gemm (BLIS), per image and group.
//
// NCDHW: the columns matrix is col[(c, q, r, s), position], so
//   Y_g[kg, positions] = W_g[kg, cg*kd*kh*kw] x col   (+ bias)
// with the weights as they are (OIDHW rows are (c, q, r, s) already).
// NDHWC: col[position, (q, r, s, c)], so
//   Y[positions, kg] (a column slice of the NDHWC output, ldc = K)
//       = col x W_g^T
// with the weights reordered once to [k][q][r][s][c].
// The columns of a whole video are large (a 3x3x3 layer over 64 channels at
// 8x56x56: 173 MB), so they are built and multiplied a few output frames
// at a time, within kMaxColumnBytes. A 1x1x1 unit layer needs no vol2col:
// the input is the matrix (in NDHWC all images of the batch form one).
#include <algorithm>
#include <cstring>

#include "core/buffer.h"
#include "core/math/activation.h"
#include "core/math/dispatch.h"
#include "core/math/gemm.h"
#include "core/ops/conv3d/conv3d.h"

namespace ai3 {
namespace {

constexpr int64_t kMaxColumnBytes = int64_t{8} << 20;

bool IsUnit(const Conv3dAttrs& a) {
  for (int d = 0; d < 3; ++d) {
    if (a.kernel[d] != 1 || a.stride[d] != 1) return false;
  }
  for (int64_t p : a.padding) {
    if (p != 0) return false;
  }
  return true;
}

class GemmKernel : public WeightBiasKernel<Conv3dAttrs> {
 public:
  GemmKernel(const Conv3dAttrs& attrs, const std::vector<Tensor>& params)
      : WeightBiasKernel(attrs, params), unit_(IsUnit(attrs)) {
    if (attrs.layout == Layout::kNHWC && !unit_) {
      const int64_t k = attrs.out_channels,
                    cg = attrs.in_channels / attrs.groups;
      const int64_t taps = attrs.kernel[0] * attrs.kernel[1] * attrs.kernel[2];
      reordered_ =
          Buffer(static_cast<size_t>(k * cg * taps) * SizeOf(attrs.dtype));
      DispatchFloat(attrs.dtype, [&](auto zero) {
        using T = decltype(zero);
        const T* src = weight<T>();
        T* dst = reordered_.as<T>();
        for (int64_t o = 0; o < k; ++o)
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t t = 0; t < taps; ++t)
              dst[(o * taps + t) * cg + c] = src[(o * cg + c) * taps + t];
        return 0;
      });
    }
  }

  size_t WorkspaceBytes(const Shape& input_shape) const override {
    if (unit_) return 0;
    const Conv3dGeometry g = GeometryOf(attrs_, input_shape);
    return static_cast<size_t>(Depth(g) * FramesPerChunk(g) * g.out[1] *
                               g.out[2]) *
           SizeOf(attrs_.dtype);
  }

  void Run(const Tensor& input, const Tensor& output,
           void* workspace) override {
    const Conv3dGeometry g = GeometryOf(attrs_, input.shape);
    DispatchFloat(attrs_.dtype, [&](auto zero) {
      using T = decltype(zero);
      RunTyped(g, input.data_as<const T>(), output.data_as<T>(),
               static_cast<T*>(workspace));
      return 0;
    });
  }

 private:
  static int64_t Depth(const Conv3dGeometry& g) {
    return g.cg * g.kernel_volume();
  }
  // Output frames whose columns fit kMaxColumnBytes (at least one).
  int64_t FramesPerChunk(const Conv3dGeometry& g) const {
    const int64_t frame = Depth(g) * g.out[1] * g.out[2] *
                          static_cast<int64_t>(SizeOf(attrs_.dtype));
    return std::clamp<int64_t>(kMaxColumnBytes / std::max<int64_t>(frame, 1), 1,
                               g.out[0]);
  }

  template <typename T>
  void RunTyped(const Conv3dGeometry& g, const T* x, T* y, T* col) const {
    const T* b = bias<T>();
    const int64_t volume = g.out_volume();
    if (b) {  // beta = 1 below adds the products to the bias
#pragma omp parallel for schedule(static)
      for (int64_t i = 0; i < g.n * volume; ++i) {
        for (int64_t k = 0; k < g.k; ++k) {
          // position i % volume of image i / volume (positions are
          // y_step[2] apart in either layout)
          y[i / volume * g.y_image + k * g.y_channel +
            i % volume * g.y_step[2]] = b[k];
        }
      }
    }
    const T beta = b ? T(1) : T(0);
    const T* w = weight<T>();
    const bool last = attrs_.layout == Layout::kNHWC;
    if (unit_) {
      if (last) {  // [N*volume, C] x W_g^T, one GEMM per group
        for (int64_t grp = 0; grp < g.groups; ++grp) {
          Gemm<T>(false, true, g.n * volume, g.kg, g.cg, T(1), x + grp * g.cg,
                  g.c, w + grp * g.kg * g.cg, g.cg, beta, y + grp * g.kg, g.k);
        }
      } else {
        for (int64_t n = 0; n < g.n; ++n)
          for (int64_t grp = 0; grp < g.groups; ++grp) {
            Gemm<T>(false, false, g.kg, volume, g.cg, T(1),
                    w + grp * g.kg * g.cg, g.cg,
                    x + n * g.x_image + grp * g.cg * volume, volume, beta,
                    y + n * g.y_image + grp * g.kg * volume, volume);
          }
      }
    } else {
      const int64_t depth = Depth(g), frame = g.out[1] * g.out[2];
      const int64_t frames = FramesPerChunk(g);
      const T* wr = last ? reordered_.as<T>() : w;
      for (int64_t n = 0; n < g.n; ++n)
        for (int64_t grp = 0; grp < g.groups; ++grp)
          for (int64_t z0 = 0; z0 < g.out[0]; z0 += frames) {
            const int64_t z1 = std::min(z0 + frames, g.out[0]);
            const int64_t positions = (z1 - z0) * frame;
            const T* xg = x + n * g.x_image + grp * g.cg * g.x_channel;
            const T* wg = wr + grp * g.kg * depth;
            if (last) {
              VolToColLast(g, xg, z0, z1, col);
              Gemm<T>(false, true, positions, g.kg, depth, T(1), col, depth, wg,
                      depth, beta,
                      y + n * g.y_image + z0 * frame * g.k + grp * g.kg, g.k);
            } else {
              VolToColFirst(g, xg, z0, z1, col);
              Gemm<T>(false, false, g.kg, positions, depth, T(1), wg, depth,
                      col, positions, beta,
                      y + n * g.y_image + grp * g.kg * volume + z0 * frame,
                      volume);
            }
          }
    }
    ApplyActivationParallelWidest(attrs_.activation.As<T>(), y,
                                  g.n * g.y_image);
  }

  // NCDHW: col[(c*kd + q)*kh*kw + r*kw + s][position] for output frames
  // [z0, z1) of one image's group (xg: its first channel).
  template <typename T>
  static void VolToColFirst(const Conv3dGeometry& g, const T* xg, int64_t z0,
                            int64_t z1, T* col) {
    const int64_t taps = g.kernel_volume();
    const int64_t positions = (z1 - z0) * g.out[1] * g.out[2];
#pragma omp parallel for schedule(static)
    for (int64_t row = 0; row < g.cg * taps; ++row) {
      const int64_t c = row / taps, t = row % taps;
      const int64_t q = t / (g.kernel[1] * g.kernel[2]);
      const int64_t r = t / g.kernel[2] % g.kernel[1], s = t % g.kernel[2];
      const T* xc = xg + c * g.x_channel;
      T* d = col + row * positions;
      for (int64_t z = z0; z < z1; ++z) {
        const int64_t iz = InputPosition(g, 0, z, q);
        for (int64_t i = 0; i < g.out[1]; ++i) {
          const int64_t ii = InputPosition(g, 1, i, r);
          const bool inside =
              iz >= 0 && iz < g.in[0] && ii >= 0 && ii < g.in[1];
          for (int64_t j = 0; j < g.out[2]; ++j, ++d) {
            const int64_t ij = InputPosition(g, 2, j, s);
            *d = inside && ij >= 0 && ij < g.in[2]
                     ? xc[iz * g.x_step[0] + ii * g.x_step[1] + ij]
                     : T(0);
          }
        }
      }
    }
  }

  // NDHWC: col[position][((q*kh + r)*kw + s)*cg + c], each tap's cg
  // channels one contiguous copy.
  template <typename T>
  static void VolToColLast(const Conv3dGeometry& g, const T* xg, int64_t z0,
                           int64_t z1, T* col) {
    const int64_t depth = g.cg * g.kernel_volume();
    const int64_t frame = g.out[1] * g.out[2];
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < (z1 - z0) * frame; ++p) {
      const int64_t z = z0 + p / frame, i = p % frame / g.out[2],
                    j = p % g.out[2];
      T* d = col + p * depth;
      for (int64_t q = 0; q < g.kernel[0]; ++q) {
        const int64_t iz = InputPosition(g, 0, z, q);
        for (int64_t r = 0; r < g.kernel[1]; ++r) {
          const int64_t ii = InputPosition(g, 1, i, r);
          for (int64_t s = 0; s < g.kernel[2]; ++s, d += g.cg) {
            const int64_t ij = InputPosition(g, 2, j, s);
            if (iz < 0 || iz >= g.in[0] || ii < 0 || ii >= g.in[1] || ij < 0 ||
                ij >= g.in[2]) {
              std::fill(d, d + g.cg, T(0));
            } else {
              std::memcpy(
                  d,
                  xg + iz * g.x_step[0] + ii * g.x_step[1] + ij * g.x_step[2],
                  static_cast<size_t>(g.cg) * sizeof(T));
            }
          }
        }
      }
    }
  }

  bool unit_;
  Buffer reordered_;  // NDHWC: weights as [k][q][r][s][c]
};

AI3_REGISTER_ALGORITHM(Conv3dAttrs, "gemm", Device::kCPU,
                       KernelAlgorithm<Conv3dAttrs, GemmKernel>);

}  // namespace
}  // namespace ai3
