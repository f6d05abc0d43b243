// maxpool2d "direct": each output is the max over its window's in-bounds taps
// (padding never wins, as in PyTorch; a window with no in-bounds tap, possible
// only with dilation, gives -inf). NaN propagates. NCHW runs one thread per
// (n, c) plane; NHWC runs threads over (n, output row) with the channels as
// the contiguous, vectorised inner loop.
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "core/math/dispatch.h"
#include "core/ops/pool2d/pool2d.h"
#include "core/registry.h"

namespace ai3 {
namespace {

template <typename T>
void MaxPoolNchw(const Pool2dGeometry& g, const T* x, T* y) {
#pragma omp parallel for schedule(static)
  for (int64_t plane = 0; plane < g.n * g.c; ++plane) {
    const T* xp = x + plane * g.h * g.w;
    T* yp = y + plane * g.oh * g.ow;
    for (int64_t oh = 0; oh < g.oh; ++oh) {
      const int64_t hstart = oh * g.sh - g.pt;
      int64_t r0, r1;
      PoolTapRange(hstart, g.kh, g.dh, g.h, &r0, &r1);
      for (int64_t ow = 0; ow < g.ow; ++ow) {
        const int64_t wstart = ow * g.sw - g.pl;
        int64_t s0, s1;
        PoolTapRange(wstart, g.kw, g.dw, g.w, &s0, &s1);
        T m = -std::numeric_limits<T>::infinity();
        for (int64_t r = r0; r < r1; ++r) {
          const T* row = xp + (hstart + r * g.dh) * g.w + wstart;
          for (int64_t s = s0; s < s1; ++s) {
            const T v = row[s * g.dw];
            if (v > m || v != v) m = v;
          }
        }
        yp[oh * g.ow + ow] = m;
      }
    }
  }
}

template <typename T>
void MaxPoolNhwc(const Pool2dGeometry& g, const T* x, T* y) {
  const int64_t c = g.c;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t n = 0; n < g.n; ++n) {
    for (int64_t oh = 0; oh < g.oh; ++oh) {
      const int64_t hstart = oh * g.sh - g.pt;
      int64_t r0, r1;
      PoolTapRange(hstart, g.kh, g.dh, g.h, &r0, &r1);
      for (int64_t ow = 0; ow < g.ow; ++ow) {
        const int64_t wstart = ow * g.sw - g.pl;
        int64_t s0, s1;
        PoolTapRange(wstart, g.kw, g.dw, g.w, &s0, &s1);
        T* __restrict yp = y + n * g.ys.n + oh * g.ys.h + ow * g.ys.w;
        for (int64_t k = 0; k < c; ++k) {
          yp[k] = -std::numeric_limits<T>::infinity();
        }
        for (int64_t r = r0; r < r1; ++r) {
          for (int64_t s = s0; s < s1; ++s) {
            const T* __restrict xp = x + n * g.xs.n +
                                     (hstart + r * g.dh) * g.xs.h +
                                     (wstart + s * g.dw) * g.xs.w;
            for (int64_t k = 0; k < c; ++k) {
              const T v = xp[k];
              yp[k] = (v > yp[k] || v != v) ? v : yp[k];
            }
          }
        }
      }
    }
  }
}

class DirectKernel : public Kernel {
 public:
  explicit DirectKernel(const MaxPool2dAttrs& attrs) : attrs_(attrs) {}

  void Run(const Tensor& input, const Tensor& output, void*) override {
    const Pool2dGeometry g = Pool2dGeometryOf(attrs_, input.shape);
    DispatchFloat(input.dtype, [&](auto zero) {
      using T = decltype(zero);
      if (attrs_.layout == Layout::kNHWC) {
        MaxPoolNhwc<T>(g, input.data_as<const T>(), output.data_as<T>());
      } else {
        MaxPoolNchw<T>(g, input.data_as<const T>(), output.data_as<T>());
      }
    });
  }

 private:
  MaxPool2dAttrs attrs_;
};

class Direct : public Algorithm<MaxPool2dAttrs> {
 public:
  std::unique_ptr<Kernel> Prepare(const MaxPool2dAttrs& attrs,
                                  const std::vector<Tensor>&) const override {
    return std::make_unique<DirectKernel>(attrs);
  }
};

AI3_REGISTER_ALGORITHM(MaxPool2dAttrs, "direct", Device::kCPU, Direct);

}  // namespace
}  // namespace ai3
