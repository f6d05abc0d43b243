// adaptiveavgpool2d "direct": output (i, j) averages input rows
// [floor(i*H/OH), ceil((i+1)*H/OH)) and the matching columns, as PyTorch.
// NCHW runs one thread per (n, c) plane; NHWC runs threads over (n, output
// row) with the channels as the vectorised inner loop.
#include <cstdint>
#include <memory>
#include <vector>

#include "core/math/dispatch.h"
#include "core/ops/pool2d/pool2d.h"
#include "core/registry.h"

namespace ai3 {
namespace {

// floor(o * in / out) and ceil((o + 1) * in / out), written as PyTorch does
// to keep the products small.
int64_t StartIndex(int64_t o, int64_t out, int64_t in) {
  return (o / out) * in + ((o % out) * in) / out;
}
int64_t EndIndex(int64_t o, int64_t out, int64_t in) {
  return 1 + ((o + 1) * in - 1) / out;
}

struct Dims {
  int64_t n, c, h, w, oh, ow;
  ImageStrides xs, ys;
};

template <typename T>
void AdaptiveNchw(const Dims& d, const T* x, T* y) {
#pragma omp parallel for schedule(static)
  for (int64_t plane = 0; plane < d.n * d.c; ++plane) {
    const T* xp = x + plane * d.h * d.w;
    T* yp = y + plane * d.oh * d.ow;
    for (int64_t oh = 0; oh < d.oh; ++oh) {
      const int64_t h0 = StartIndex(oh, d.oh, d.h);
      const int64_t h1 = EndIndex(oh, d.oh, d.h);
      for (int64_t ow = 0; ow < d.ow; ++ow) {
        const int64_t w0 = StartIndex(ow, d.ow, d.w);
        const int64_t w1 = EndIndex(ow, d.ow, d.w);
        T sum = 0;
        for (int64_t ih = h0; ih < h1; ++ih) {
          for (int64_t iw = w0; iw < w1; ++iw) sum += xp[ih * d.w + iw];
        }
        yp[oh * d.ow + ow] = sum / static_cast<T>((h1 - h0) * (w1 - w0));
      }
    }
  }
}

template <typename T>
void AdaptiveNhwc(const Dims& d, const T* x, T* y) {
  const int64_t c = d.c;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t n = 0; n < d.n; ++n) {
    for (int64_t oh = 0; oh < d.oh; ++oh) {
      const int64_t h0 = StartIndex(oh, d.oh, d.h);
      const int64_t h1 = EndIndex(oh, d.oh, d.h);
      for (int64_t ow = 0; ow < d.ow; ++ow) {
        const int64_t w0 = StartIndex(ow, d.ow, d.w);
        const int64_t w1 = EndIndex(ow, d.ow, d.w);
        T* __restrict yp = y + n * d.ys.n + oh * d.ys.h + ow * d.ys.w;
        for (int64_t k = 0; k < c; ++k) yp[k] = 0;
        for (int64_t ih = h0; ih < h1; ++ih) {
          for (int64_t iw = w0; iw < w1; ++iw) {
            const T* __restrict xp = x + n * d.xs.n + ih * d.xs.h +
                                     iw * d.xs.w;
            for (int64_t k = 0; k < c; ++k) yp[k] += xp[k];
          }
        }
        const T divisor = static_cast<T>((h1 - h0) * (w1 - w0));
        for (int64_t k = 0; k < c; ++k) yp[k] /= divisor;
      }
    }
  }
}

class DirectKernel : public Kernel {
 public:
  explicit DirectKernel(const AdaptiveAvgPool2dAttrs& attrs) : attrs_(attrs) {}

  void Run(const Tensor& input, const Tensor& output, void*) override {
    const ImageDims in = ImageDimsOf(input.shape, attrs_.layout);
    const ImageDims out{in.n, in.c, attrs_.output_h, attrs_.output_w};
    const Dims d{in.n,
                 in.c,
                 in.h,
                 in.w,
                 out.h,
                 out.w,
                 ImageStridesOf(in, attrs_.layout),
                 ImageStridesOf(out, attrs_.layout)};
    DispatchFloat(input.dtype, [&](auto zero) {
      using T = decltype(zero);
      if (attrs_.layout == Layout::kNHWC) {
        AdaptiveNhwc<T>(d, input.data_as<const T>(), output.data_as<T>());
      } else {
        AdaptiveNchw<T>(d, input.data_as<const T>(), output.data_as<T>());
      }
    });
  }

 private:
  AdaptiveAvgPool2dAttrs attrs_;
};

using Direct = KernelAlgorithm<AdaptiveAvgPool2dAttrs, DirectKernel>;

AI3_REGISTER_ALGORITHM(AdaptiveAvgPool2dAttrs, "direct", Device::kCPU, Direct);

}  // namespace
}  // namespace ai3
