// gelu "direct" through ElementwiseDirect (core/ops/elementwise.h), each
// form as core/math/gelu.h computes it (the one the conv2d and linear
// epilogues fuse), so its loop vectorises.
#include "core/math/gelu.h"
#include "core/ops/elementwise.h"
#include "core/ops/gelu/gelu.h"
#include "core/ops/sigmoid/exp.h"
#include "core/registry.h"

namespace ai3 {
namespace {

// The exact form (core/math/gelu.h).
template <typename T>
struct GeluErfFn {
  explicit GeluErfFn(const GeluAttrs&) {}
  T operator()(T x) const { return GeluErf(x, range); }
  vmath::ExpRange<T> range;
};

// The tanh form.
template <typename T>
struct GeluTanhFn {
  explicit GeluTanhFn(const GeluAttrs&) {}
  T operator()(T x) const { return GeluTanh(x, range); }
  vmath::ExpRange<T> range;
};

// One elementwise kernel per form, chosen when the layer is prepared.
using Direct = GeluForms<GeluAttrs, ElementwiseDirect<GeluAttrs, GeluErfFn>,
                         ElementwiseDirect<GeluAttrs, GeluTanhFn>>;

AI3_REGISTER_ALGORITHM(GeluAttrs, "direct", Device::kCPU, Direct);

}  // namespace
}  // namespace ai3
