// The CPU "direct" kernels of the pools' input gradients (maxpool2d,
// avgpool2d, adaptiveavgpool2d, adaptivemaxpool2d _backward_data): two loop
// templates, one spreading each output's gradient over its window (the
// averages) and one sending it to its window's maximum (the maxes), each
// given the op's windows as the taps they read (PoolTaps). They run through
// the forward's RunPoolLoops, geometry and thread split (pool2d_direct.h):
//   AI3_REGISTER_ALGORITHM(
//       MaxPool2dBackwardDataAttrs, "direct", Device::kCPU,
//       PoolBackwardDirect<MaxPool2dBackwardDataAttrs,
//                          MaxBackwardLoops<SlidingTaps>>);
// dx is written whole: zeroed, then accumulated, by threads that each own
// whole NCHW planes, or in NHWC a block of channels of one image, so no two
// threads add to one element.
#ifndef AI3_CORE_OPS_POOL2D_POOL2D_BACKWARD_H_
#define AI3_CORE_OPS_POOL2D_POOL2D_BACKWARD_H_

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/layer.h"
#include "core/ops/backward.h"
#include "core/ops/pool2d/pool2d.h"
#include "core/ops/pool2d/pool2d_direct.h"
#include "core/parallel.h"
#include "core/registry.h"

namespace ai3 {

// The input taps of one output's window: rows h0, h0 + dh, ... (hn of
// them) by columns w0, w0 + dw, ... (wn), all inside the input, and what an
// average divides by.
struct PoolTaps {
  int64_t h0, hn, dh, w0, wn, dw;
  int64_t divisor = 1;
};

// maxpool2d's windows: kernel, stride, padding and dilation, padding taps
// dropped (PoolTapRange).
struct SlidingTaps {
  template <class Attrs>
  static PoolTaps Of(const Attrs&, const Pool2dGeometry& g, int64_t oh,
                     int64_t ow) {
    const int64_t hs = oh * g.sh - g.pt, ws = ow * g.sw - g.pl;
    int64_t r0, r1, s0, s1;
    PoolTapRange(hs, g.kh, g.dh, g.h, &r0, &r1);
    PoolTapRange(ws, g.kw, g.dw, g.w, &s0, &s1);
    return {hs + r0 * g.dh, r1 - r0, g.dh, ws + s0 * g.dw, s1 - s0, g.dw};
  }
};

// avgpool2d's windows and divisors, as its forward (AvgSpanOf, AvgDivisor).
struct AvgTaps {
  static PoolTaps Of(const AvgPool2dAttrs& a, const Pool2dGeometry& g,
                     int64_t oh, int64_t ow) {
    const AvgSpan hs = AvgSpanOf(oh, g.sh, g.pt, g.pb, g.kh, g.h);
    const AvgSpan ws = AvgSpanOf(ow, g.sw, g.pl, g.pr, g.kw, g.w);
    return {hs.begin,
            std::max<int64_t>(hs.end - hs.begin, 0),
            1,
            ws.begin,
            std::max<int64_t>(ws.end - ws.begin, 0),
            1,
            AvgDivisor(a, hs, ws)};
  }
};

// The adaptive pools' windows (AdaptiveSpan), an average dividing by the
// window's size.
struct AdaptiveTaps {
  template <class Attrs>
  static PoolTaps Of(const Attrs&, const Pool2dGeometry& g, int64_t oh,
                     int64_t ow) {
    const PoolSpan h = AdaptiveSpan(oh, g.oh, g.h);
    const PoolSpan w = AdaptiveSpan(ow, g.ow, g.w);
    return {h.begin,
            h.end - h.begin,
            1,
            w.begin,
            w.end - w.begin,
            1,
            (h.end - h.begin) * (w.end - w.begin)};
  }
};

// NHWC channels per task: one image's block of channels, its running
// maxima and their places kept on the stack.
inline constexpr int64_t kPoolChannelBlock = 64;

// The NHWC tasks: fn(n, c0, width) for each image n and block of `width`
// channels from c0, over OpenMP threads.
template <class Fn>
void ForEachChannelBlock(const Pool2dGeometry& g, Fn fn) {
  const int64_t blocks = (g.c + kPoolChannelBlock - 1) / kPoolChannelBlock;
  ParallelFor(0, g.n * blocks, g.n * blocks > 1, [&](int64_t t) {
    const int64_t c0 = (t % blocks) * kPoolChannelBlock;
    fn(t / blocks, c0, std::min(kPoolChannelBlock, g.c - c0));
  });
}

// dx zeroed for NHWC image n's channels [c0, c0 + width).
template <typename T>
void ZeroChannels(const Pool2dGeometry& g, T* dx, int64_t n, int64_t c0,
                  int64_t width) {
  for (int64_t p = 0; p < g.h * g.w; ++p) {
    T* d = dx + n * g.xs.n + p * g.xs.w + c0;
    for (int64_t k = 0; k < width; ++k) d[k] = T(0);
  }
}

// Each output's gradient dy / divisor added to every tap of its window.
template <class Taps>
struct AvgBackwardLoops {
  template <class Attrs, typename T>
  static void Nchw(const Attrs& a, const Pool2dGeometry& g, const T* dy,
                   const T*, const T*, T* dx) {
    ForEachPlaneIndex(g, [&](int64_t plane) {
      const T* dyp = dy + plane * g.oh * g.ow;
      T* __restrict dxp = dx + plane * g.h * g.w;
      std::fill(dxp, dxp + g.h * g.w, T(0));
      for (int64_t oh = 0; oh < g.oh; ++oh) {
        for (int64_t ow = 0; ow < g.ow; ++ow) {
          const PoolTaps t = Taps::Of(a, g, oh, ow);
          const T v = dyp[oh * g.ow + ow] / static_cast<T>(t.divisor);
          for (int64_t i = 0; i < t.hn; ++i) {
            T* row = dxp + (t.h0 + i * t.dh) * g.w + t.w0;
            for (int64_t j = 0; j < t.wn; ++j) row[j * t.dw] += v;
          }
        }
      }
    });
  }

  template <class Attrs, typename T>
  static void Nhwc(const Attrs& a, const Pool2dGeometry& g, const T* dy,
                   const T*, const T*, T* dx) {
    ForEachChannelBlock(g, [&](int64_t n, int64_t c0, int64_t width) {
      ZeroChannels(g, dx, n, c0, width);
      T v[kPoolChannelBlock];
      for (int64_t oh = 0; oh < g.oh; ++oh) {
        for (int64_t ow = 0; ow < g.ow; ++ow) {
          const PoolTaps t = Taps::Of(a, g, oh, ow);
          const T* dyp = dy + n * g.ys.n + oh * g.ys.h + ow * g.ys.w + c0;
          const T divisor = static_cast<T>(t.divisor);
          for (int64_t k = 0; k < width; ++k) v[k] = dyp[k] / divisor;
          for (int64_t i = 0; i < t.hn; ++i) {
            for (int64_t j = 0; j < t.wn; ++j) {
              T* __restrict d = dx + n * g.xs.n + (t.h0 + i * t.dh) * g.xs.h +
                                (t.w0 + j * t.dw) * g.xs.w + c0;
#pragma omp simd
              for (int64_t k = 0; k < width; ++k) d[k] += v[k];
            }
          }
        }
      }
    });
  }
};

// Each output's gradient added at its window's maximum: the first in
// window order (rows, then columns) as PyTorch's CPU max pools choose it,
// `v > max || v is NaN` replacing it, from -inf at the first tap (so a
// window of -infs sends it to its first tap, as PyTorch does).
template <class Taps>
struct MaxBackwardLoops {
  template <class Attrs, typename T>
  static void Nchw(const Attrs& a, const Pool2dGeometry& g, const T* dy,
                   const T* x, const T*, T* dx) {
    ForEachPlaneIndex(g, [&](int64_t plane) {
      const T* dyp = dy + plane * g.oh * g.ow;
      const T* xp = x + plane * g.h * g.w;
      T* dxp = dx + plane * g.h * g.w;
      std::fill(dxp, dxp + g.h * g.w, T(0));
      for (int64_t oh = 0; oh < g.oh; ++oh) {
        for (int64_t ow = 0; ow < g.ow; ++ow) {
          const PoolTaps t = Taps::Of(a, g, oh, ow);
          if (t.hn <= 0 || t.wn <= 0) continue;  // no tap inside the input
          int64_t best = t.h0 * g.w + t.w0;
          T m = -std::numeric_limits<T>::infinity();
          for (int64_t i = 0; i < t.hn; ++i) {
            const int64_t row = (t.h0 + i * t.dh) * g.w + t.w0;
            for (int64_t j = 0; j < t.wn; ++j) {
              const int64_t at = row + j * t.dw;
              const T v = xp[at];
              if (v > m || v != v) {
                m = v;
                best = at;
              }
            }
          }
          dxp[best] += dyp[oh * g.ow + ow];
        }
      }
    });
  }

  // The same choice per channel, the block's channels the vectorised loop.
  template <class Attrs, typename T>
  static void Nhwc(const Attrs& a, const Pool2dGeometry& g, const T* dy,
                   const T* x, const T*, T* dx) {
    ForEachChannelBlock(g, [&](int64_t n, int64_t c0, int64_t width) {
      ZeroChannels(g, dx, n, c0, width);
      T m[kPoolChannelBlock];
      int64_t best[kPoolChannelBlock];
      const T* xn = x + n * g.xs.n + c0;
      T* dxn = dx + n * g.xs.n + c0;
      for (int64_t oh = 0; oh < g.oh; ++oh) {
        for (int64_t ow = 0; ow < g.ow; ++ow) {
          const PoolTaps t = Taps::Of(a, g, oh, ow);
          if (t.hn <= 0 || t.wn <= 0) continue;
          const int64_t first = t.h0 * g.xs.h + t.w0 * g.xs.w;
          for (int64_t k = 0; k < width; ++k) {
            m[k] = -std::numeric_limits<T>::infinity();
            best[k] = first;
          }
          for (int64_t i = 0; i < t.hn; ++i) {
            for (int64_t j = 0; j < t.wn; ++j) {
              const int64_t at =
                  (t.h0 + i * t.dh) * g.xs.h + (t.w0 + j * t.dw) * g.xs.w;
              const T* __restrict xp = xn + at;
#pragma omp simd
              for (int64_t k = 0; k < width; ++k) {
                const T v = xp[k];
                const bool take = v > m[k] || v != v;
                m[k] = take ? v : m[k];
                best[k] = take ? at : best[k];
              }
            }
          }
          const T* dyp = dy + n * g.ys.n + oh * g.ys.h + ow * g.ys.w + c0;
          for (int64_t k = 0; k < width; ++k) dxn[best[k] + k] += dyp[k];
        }
      }
    });
  }
};

// The kernel of a pool's gradient: the inputs [dy, x, y], dx the output,
// the geometry that of x.
template <class Attrs, class Loops>
class PoolBackwardKernel : public MultiInputKernel {
 public:
  explicit PoolBackwardKernel(const Attrs& attrs) : attrs_(attrs) {}

  void RunInputs(const std::vector<Tensor>& inputs, const Tensor& output,
                 void*) override {
    RunPoolLoops<Loops>(attrs_, inputs[kForwardInput].shape,
                        std::array{&inputs[kGradOutput], &inputs[kForwardInput],
                                   &inputs[kForwardOutput]},
                        output);
  }

 private:
  Attrs attrs_;
};

template <class Attrs, class Loops>
using PoolBackwardDirect =
    KernelAlgorithm<Attrs, PoolBackwardKernel<Attrs, Loops>>;

}  // namespace ai3

#endif  // AI3_CORE_OPS_POOL2D_POOL2D_BACKWARD_H_
