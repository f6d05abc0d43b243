// conv2d "direct": the definition of convolution as nested loops, one output
// element at a time. Takes every parameter set and both layouts; it is the
// reference the other algorithms are measured against, not a fast path.
#include <memory>

#include "core/ops/conv2d/conv2d.h"

namespace ai3 {
namespace {

class DirectKernel : public Conv2dKernelBase<DirectKernel> {
 public:
  using Conv2dKernelBase::Conv2dKernelBase;

  template <typename T>
  void RunTyped(const Conv2dGeometry& g, const T* x, T* y, void*) const {
    const T* w = weight<T>();
    const T* b = bias<T>();
    const ImageStrides xs = ImageStridesOf({g.n, g.c, g.h, g.w}, g.layout);
    const ImageStrides ys = ImageStridesOf({g.n, g.k, g.oh, g.ow}, g.layout);
    const auto act = attrs_.activation.As<T>();
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t n = 0; n < g.n; ++n) {
      for (int64_t k = 0; k < g.k; ++k) {
        const int64_t c0 = (k / g.kg) * g.cg;  // first input channel of k's group
        const T* wk = w + k * g.cg * g.kh * g.kw;
        for (int64_t oh = 0; oh < g.oh; ++oh) {
          for (int64_t ow = 0; ow < g.ow; ++ow) {
            T acc = b ? b[k] : T(0);
            for (int64_t c = 0; c < g.cg; ++c) {
              for (int64_t r = 0; r < g.kh; ++r) {
                const int64_t ih = oh * g.sh - g.ph + r * g.dh;
                if (ih < 0 || ih >= g.h) continue;
                for (int64_t s = 0; s < g.kw; ++s) {
                  const int64_t iw = ow * g.sw - g.pw + s * g.dw;
                  if (iw < 0 || iw >= g.w) continue;
                  acc += wk[(c * g.kh + r) * g.kw + s] *
                         x[n * xs.n + (c0 + c) * xs.c + ih * xs.h + iw * xs.w];
                }
              }
            }
            y[n * ys.n + k * ys.c + oh * ys.h + ow * ys.w] = act(acc);
          }
        }
      }
    }
  }
};

class Direct : public Algorithm<Conv2dAttrs> {
 public:
  int Preference(const Conv2dAttrs&) const override { return 0; }
  std::unique_ptr<Kernel> Prepare(
      const Conv2dAttrs& attrs,
      const std::vector<Tensor>& params) const override {
    return std::make_unique<DirectKernel>(attrs, params);
  }
};

AI3_REGISTER_ALGORITHM(Conv2dAttrs, "direct", Device::kCPU, Direct);

}  // namespace
}  // namespace ai3
