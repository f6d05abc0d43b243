// The loops both pool3d kernels run (maxpool3d_direct.cc,
// avgpool3d_direct.cc): each output element reduces the window's taps that
// land inside the input (pool2d's PoolTapRange per dim), with the op's
// Init / Combine / Finish. NCDHW: an output row at a time, each tap one
// run along the input row; (image, channel, frame) spread over threads.
// NDHWC: a pixel's channels side by side, each tap one contiguous run.
// Either way the inner loop is one the compiler vectorises.
#ifndef AI3_CORE_OPS_POOL3D_POOL3D_DIRECT_H_
#define AI3_CORE_OPS_POOL3D_POOL3D_DIRECT_H_

#include <algorithm>
#include <array>
#include <cstdint>

#include "core/ops/pool2d/pool2d.h"  // PoolTapRange, AvgSpanOf
#include "core/ops/pool3d/pool3d.h"

namespace ai3 {

// Calls fn(offset) for the input offset (from the image's, and in NCDHW
// the channel's, first element) of each tap of output (z, i, j)'s window
// inside the input.
template <class Fn>
inline void ForEachTap3d(const Pool3dGeometry& g, int64_t z, int64_t i,
                         int64_t j, const Fn& fn) {
  const std::array<int64_t, 3> o = {z, i, j};
  std::array<int64_t, 3> start, lo, hi;
  for (int d = 0; d < 3; ++d) {
    start[d] = o[d] * g.stride[d] - g.pad_before[d];
    PoolTapRange(start[d], g.kernel[d], g.dilation[d], g.in[d], &lo[d], &hi[d]);
  }
  for (int64_t q = lo[0]; q < hi[0]; ++q) {
    const int64_t oz = (start[0] + q * g.dilation[0]) * g.x_step[0];
    for (int64_t r = lo[1]; r < hi[1]; ++r) {
      const int64_t oi = oz + (start[1] + r * g.dilation[1]) * g.x_step[1];
      for (int64_t s = lo[2]; s < hi[2]; ++s) {
        fn(oi + (start[2] + s * g.dilation[2]) * g.x_step[2]);
      }
    }
  }
}

// avgpool3d's divisor of output (z, i, j), PyTorch's way: divisor_override
// where given, else the window's extent inside the padded input with
// count_include_pad, else the number of its taps inside the input.
inline int64_t AvgDivisor3d(const AvgPool3dAttrs& a, const Pool3dGeometry& g,
                            int64_t z, int64_t i, int64_t j) {
  if (a.divisor_override > 0) return a.divisor_override;
  const std::array<int64_t, 3> o = {z, i, j};
  int64_t padded = 1, inside = 1;
  for (int d = 0; d < 3; ++d) {
    const AvgSpan span = AvgSpanOf(o[d], g.stride[d], g.pad_before[d],
                                   g.pad_after[d], g.kernel[d], g.in[d]);
    padded *= span.padded;
    inside *= span.end - span.begin;
  }
  return a.count_include_pad ? padded : inside;
}

// Op: T Init(), T Combine(T acc, T v), T Finish(T acc, z, i, j).
template <typename T, class Op>
void RunPool3d(const Pool3dGeometry& g, const T* x, T* y, const Op& op) {
  if (g.x_channel == 1) {  // NDHWC
#pragma omp parallel for schedule(static) collapse(2)
    for (int64_t n = 0; n < g.n; ++n) {
      for (int64_t z = 0; z < g.out[0]; ++z) {
        const T* xn = x + n * g.x_image;
        for (int64_t i = 0; i < g.out[1]; ++i) {
          for (int64_t j = 0; j < g.out[2]; ++j) {
            T* yp = y + n * g.y_image + z * g.y_step[0] + i * g.y_step[1] +
                    j * g.y_step[2];
            std::fill(yp, yp + g.c, op.Init());
            ForEachTap3d(g, z, i, j, [&](int64_t offset) {
              const T* xp = xn + offset;
              for (int64_t c = 0; c < g.c; ++c) {
                yp[c] = op.Combine(yp[c], xp[c]);
              }
            });
            for (int64_t c = 0; c < g.c; ++c) {
              yp[c] = op.Finish(yp[c], z, i, j);
            }
          }
        }
      }
    }
    return;
  }
  // NCDHW: an output row at a time. For each depth and height tap inside
  // the input and each width tap, the outputs whose column lies inside the
  // input read one strided run of the input row: for stride 1 a
  // contiguous one, which the compiler vectorises.
  const int64_t ow = g.out[2], sw = g.stride[2], dw = g.dilation[2];
#pragma omp parallel for schedule(static) collapse(2)
  for (int64_t plane = 0; plane < g.n * g.c; ++plane) {
    for (int64_t z = 0; z < g.out[0]; ++z) {
      const int64_t n = plane / g.c, c = plane % g.c;
      const T* xc = x + n * g.x_image + c * g.x_channel;
      T* yc = y + n * g.y_image + c * g.y_channel;
      const int64_t z0 = z * g.stride[0] - g.pad_before[0];
      int64_t q0, q1;
      PoolTapRange(z0, g.kernel[0], g.dilation[0], g.in[0], &q0, &q1);
      for (int64_t i = 0; i < g.out[1]; ++i) {
        T* yrow = yc + z * g.y_step[0] + i * g.y_step[1];
        std::fill(yrow, yrow + ow, op.Init());
        const int64_t i0 = i * g.stride[1] - g.pad_before[1];
        int64_t r0, r1;
        PoolTapRange(i0, g.kernel[1], g.dilation[1], g.in[1], &r0, &r1);
        for (int64_t q = q0; q < q1; ++q) {
          for (int64_t r = r0; r < r1; ++r) {
            const T* xrow = xc + (z0 + q * g.dilation[0]) * g.x_step[0] +
                            (i0 + r * g.dilation[1]) * g.x_step[1];
            for (int64_t s = 0; s < g.kernel[2]; ++s) {
              // Output j reads column j*sw + shift, inside for j in [lo, hi).
              const int64_t shift = s * dw - g.pad_before[2];
              const int64_t lo = shift >= 0 ? 0 : (-shift + sw - 1) / sw;
              const int64_t top = g.in[2] - 1 - shift;
              const int64_t hi = top < 0 ? 0 : std::min(ow, top / sw + 1);
              if (sw == 1) {
                for (int64_t j = lo; j < hi; ++j) {
                  yrow[j] = op.Combine(yrow[j], xrow[j + shift]);
                }
              } else {
                for (int64_t j = lo; j < hi; ++j) {
                  yrow[j] = op.Combine(yrow[j], xrow[j * sw + shift]);
                }
              }
            }
          }
        }
        for (int64_t j = 0; j < ow; ++j) yrow[j] = op.Finish(yrow[j], z, i, j);
      }
    }
  }
}

}  // namespace ai3

#endif  // AI3_CORE_OPS_POOL3D_POOL3D_DIRECT_H_
