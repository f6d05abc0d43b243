// adaptivemaxpool2d "direct": one task per (n, output row); within it, per
// output column, the window's max for every channel. Channels are the
// inner loop (vectorised over NHWC's contiguous channels; strided in NCHW,
// where the window walk is the cheaper part anyway). NaN wins the max, as in
// PyTorch's max pooling.
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/math/dispatch.h"
#include "core/ops/adaptivemaxpool2d/adaptivemaxpool2d.h"
#include "core/registry.h"

namespace ai3 {
namespace {

// floor(o * in / out) and ceil((o + 1) * in / out).
int64_t Start(int64_t o, int64_t out, int64_t in) {
  return (o / out) * in + ((o % out) * in) / out;
}
int64_t End(int64_t o, int64_t out, int64_t in) {
  return 1 + ((o + 1) * in - 1) / out;
}

template <typename T>
void Pool(const ImageDims& in, const ImageDims& out, const ImageStrides& xs,
          const ImageStrides& ys, const T* x, T* y) {
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < in.n * out.h; ++t) {
    const int64_t n = t / out.h, oh = t % out.h;
    const int64_t h0 = Start(oh, out.h, in.h), h1 = End(oh, out.h, in.h);
    for (int64_t ow = 0; ow < out.w; ++ow) {
      const int64_t w0 = Start(ow, out.w, in.w), w1 = End(ow, out.w, in.w);
      T* yo = y + n * ys.n + oh * ys.h + ow * ys.w;
      const T* first = x + n * xs.n + h0 * xs.h + w0 * xs.w;
      for (int64_t c = 0; c < in.c; ++c) yo[c * ys.c] = first[c * xs.c];
      for (int64_t h = h0; h < h1; ++h) {
        for (int64_t w = w0; w < w1; ++w) {
          const T* xp = x + n * xs.n + h * xs.h + w * xs.w;
#pragma omp simd
          for (int64_t c = 0; c < in.c; ++c) {
            const T v = xp[c * xs.c];
            T& m = yo[c * ys.c];
            m = (v > m || v != v) ? v : m;  // v != v: NaN propagates
          }
        }
      }
    }
  }
}

class DirectKernel : public Kernel {
 public:
  explicit DirectKernel(const AdaptiveMaxPool2dAttrs& attrs) : attrs_(attrs) {}

  void Run(const Tensor& input, const Tensor& output, void*) override {
    const ImageDims in = ImageDimsOf(input.shape, attrs_.layout);
    const ImageDims out = ImageDimsOf(output.shape, attrs_.layout);
    const ImageStrides xs = ImageStridesOf(in, attrs_.layout);
    const ImageStrides ys = ImageStridesOf(out, attrs_.layout);
    DispatchFloat(input.dtype, [&](auto zero) {
      using T = decltype(zero);
      Pool<T>(in, out, xs, ys, input.data_as<const T>(), output.data_as<T>());
    });
  }

 private:
  AdaptiveMaxPool2dAttrs attrs_;
};

using Direct = KernelAlgorithm<AdaptiveMaxPool2dAttrs, DirectKernel>;

AI3_REGISTER_ALGORITHM(AdaptiveMaxPool2dAttrs, "direct", Device::kCPU, Direct);

}  // namespace
}  // namespace ai3
