// adaptiveavgpool2d "direct": output (i, j) averages input rows
// [floor(i*H/OH), ceil((i+1)*H/OH)) and the matching columns, as PyTorch
// (AdaptiveSpan, pool2d.h). NCHW runs one thread per (n, c) plane; NHWC runs
// threads over output rows, or over pieces of each window's rows where the
// output pixels are fewer than the threads (a global pool), with the
// channels in vector lanes kept in registers over the window
// (ReduceTapsNhwc).
#include <omp.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "core/ops/pool2d/pool2d.h"
#include "core/ops/pool2d/pool2d_direct.h"
#include "core/registry.h"

namespace ai3 {
namespace {

struct AdaptiveAvgPoolLoops {
  template <typename T>
  static void Nchw(const AdaptiveAvgPool2dAttrs&, const Pool2dGeometry& g,
                   const T* x, T* y) {
    ForEachPlane(g, x, y, [&](const T* xp, T* yp) {
      for (int64_t oh = 0; oh < g.oh; ++oh) {
        const auto [h0, h1] = AdaptiveSpan(oh, g.oh, g.h);
        for (int64_t ow = 0; ow < g.ow; ++ow) {
          const auto [w0, w1] = AdaptiveSpan(ow, g.ow, g.w);
          T sum = 0;
          if (w0 == 0 && w1 == g.w) {  // whole rows: one contiguous run
            sum = SumContiguous(xp + h0 * g.w, (h1 - h0) * g.w);
          } else {
            for (int64_t ih = h0; ih < h1; ++ih) {
              sum += SumContiguous(xp + ih * g.w + w0, w1 - w0);
            }
          }
          yp[oh * g.ow + ow] = sum / static_cast<T>((h1 - h0) * (w1 - w0));
        }
      }
    });
  }

  // Output pixel `pixel` (flat over images, rows and columns): where it is
  // and the input window it averages.
  struct Window {
    int64_t n, oh, ow;
    PoolSpan h, w;
    int64_t size() const { return (h.end - h.begin) * (w.end - w.begin); }
  };
  static Window WindowOf(const Pool2dGeometry& g, int64_t pixel) {
    const int64_t ow = pixel % g.ow, oh = pixel / g.ow % g.oh;
    return {pixel / g.ow / g.oh, oh, ow, AdaptiveSpan(oh, g.oh, g.h),
            AdaptiveSpan(ow, g.ow, g.w)};
  }

  // Rows [r0, r1) of window `win` only, summed into y[0, c) and divided by
  // `divisor`.
  template <typename T>
  static void SumWindowRows(const Pool2dGeometry& g, const T* x,
                            const Window& win, int64_t r0, int64_t r1,
                            T divisor, T* y) {
    const int64_t w0 = win.w.begin, w1 = win.w.end;
    const T* image = x + win.n * g.xs.n;
    ReduceTapsNhwc(g.c, y, AvgOp<T>{divisor}, [&](auto&& fn) {
      for (int64_t ih = r0; ih < r1; ++ih) {
        for (int64_t iw = w0; iw < w1; ++iw) {
          fn(image + ih * g.xs.h + iw * g.xs.w);
        }
      }
    });
  }

  template <typename T>
  static void Nhwc(const AdaptiveAvgPool2dAttrs&, const Pool2dGeometry& g,
                   const T* x, T* y) {
    const int64_t pixels = g.n * g.oh * g.ow;
    const int64_t threads = omp_get_max_threads();
    // Where the output pixels are fewer than the threads (an SE block's
    // global pool at batch 1 has one), each pixel's window is split by rows
    // over the threads into partial sums, added up after. Each thread then
    // reads the rows the conv before it most likely wrote on the same core;
    // splitting the channels instead made every thread read every row, and
    // ran slower on 2 threads than on 1 (efficientnet_b0's 17 pools, b1:
    // 0.32 ms against 0.17).
    constexpr int64_t kPartialBytes = 32 << 10;  // on the caller's stack
    const int64_t pieces =
        pixels >= threads ? 1 : (threads + pixels - 1) / pixels;
    if (pieces > 1 && pixels * pieces * g.c * static_cast<int64_t>(sizeof(T)) <=
                          kPartialBytes) {
      alignas(64) T partial[kPartialBytes / sizeof(T)];
#pragma omp parallel for schedule(static)
      for (int64_t item = 0; item < pixels * pieces; ++item) {
        const int64_t piece = item % pieces;
        const Window win = WindowOf(g, item / pieces);
        const int64_t rows = win.h.end - win.h.begin;
        SumWindowRows(g, x, win, win.h.begin + rows * piece / pieces,
                      win.h.begin + rows * (piece + 1) / pieces, T(1),
                      partial + item * g.c);
      }
      for (int64_t pixel = 0; pixel < pixels; ++pixel) {
        const Window win = WindowOf(g, pixel);
        const T divisor = static_cast<T>(win.size());
        const T* sums = partial + pixel * pieces * g.c;
        T* yp = y + win.n * g.ys.n + win.oh * g.ys.h + win.ow * g.ys.w;
        for (int64_t k = 0; k < g.c; ++k) {
          T sum = sums[k];
          for (int64_t piece = 1; piece < pieces; ++piece) {
            sum += sums[piece * g.c + k];
          }
          yp[k] = sum / divisor;
        }
      }
      return;
    }
    ForEachOutputRow(g, [&](int64_t n, int64_t oh) {
      for (int64_t ow = 0; ow < g.ow; ++ow) {
        const Window win = WindowOf(g, (n * g.oh + oh) * g.ow + ow);
        SumWindowRows(g, x, win, win.h.begin, win.h.end,
                      static_cast<T>(win.size()),
                      y + n * g.ys.n + oh * g.ys.h + ow * g.ys.w);
      }
    });
  }
};

AI3_REGISTER_ALGORITHM(
    AdaptiveAvgPool2dAttrs, "direct", Device::kCPU,
    PoolDirect<AdaptiveAvgPool2dAttrs, AdaptiveAvgPoolLoops>);

}  // namespace
}  // namespace ai3
