// A user's conv2d algorithm, written the way custom_algos/conv2d.cc asks
// (the function and the two switches), but kept out of the shipped tree: the
// test builds a second ai3._core with this file in place of custom_algos/
// and checks that Python reaches it as "custom" and that the default switch
// works, without editing the shipped placeholders.
#include "core/ops/conv2d/conv2d.h"
#include "custom_algos/custom_algorithm.h"

namespace ai3 {
namespace {

constexpr bool kCustomConv2dImplemented = true;
constexpr bool kCustomConv2dIsDefault = true;

template <typename T>
void UserConv2d(const Conv2dGeometry& g, const T* x, const T* w, const T* b,
                T* y) {
  ImageStrides xs = ImageStridesOf({g.n, g.c, g.h, g.w}, g.layout);
  ImageStrides ys = ImageStridesOf({g.n, g.k, g.oh, g.ow}, g.layout);
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t k = 0; k < g.k; ++k)
      for (int64_t i = 0; i < g.oh; ++i)
        for (int64_t j = 0; j < g.ow; ++j) {
          T acc = b ? b[k] : T(0);
          for (int64_t c = 0; c < g.cg; ++c)
            for (int64_t r = 0; r < g.kh; ++r)
              for (int64_t s = 0; s < g.kw; ++s) {
                int64_t ih = i * g.sh - g.ph + r * g.dh;
                int64_t iw = j * g.sw - g.pw + s * g.dw;
                if (ih < 0 || ih >= g.h || iw < 0 || iw >= g.w) continue;
                acc += w[((k * g.cg + c) * g.kh + r) * g.kw + s] *
                       x[n * xs.n + ((k / g.kg) * g.cg + c) * xs.c + ih * xs.h +
                         iw * xs.w];
              }
          y[n * ys.n + k * ys.c + i * ys.h + j * ys.w] = acc;
        }
}

void CustomConv2d(const Conv2dAttrs& attrs, const Tensor& input,
                  const std::vector<Tensor>& params, const Tensor& output) {
  Conv2dGeometry g = GeometryOf(attrs, input.shape);
  if (attrs.dtype == DType::kFloat64) {
    UserConv2d(g, input.data_as<const double>(),
               params[0].data_as<const double>(),
               attrs.has_bias ? params[1].data_as<const double>() : nullptr,
               output.data_as<double>());
  } else {
    UserConv2d(g, input.data_as<const float>(),
               params[0].data_as<const float>(),
               attrs.has_bias ? params[1].data_as<const float>() : nullptr,
               output.data_as<float>());
  }
}

AI3_REGISTER_CUSTOM(Conv2dAttrs, CustomConv2d, kCustomConv2dImplemented,
                    kCustomConv2dIsDefault);

}  // namespace
}  // namespace ai3
