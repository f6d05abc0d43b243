// cumsum "direct": the input viewed as [outer, size, inner] around the axis.
// Each output row along the axis is the previous output row plus one input
// row (the current one, or the previous one when exclusive), a contiguous
// loop over `inner` the compiler vectorises; the outer blocks are split over
// OpenMP threads when there is enough to sum.
#include <cstdint>
#include <type_traits>

#include "core/errors.h"
#include "core/layer.h"
#include "core/ops/checks.h"
#include "core/ops/cumsum/cumsum.h"
#include "core/ops/function_kernel.h"
#include "core/parallel.h"
#include "core/registry.h"

namespace ai3 {
namespace {

constexpr int64_t kParallelElements = 1 << 15;

// a + b; int64 through uint64, so an overflowing sum wraps instead of being
// undefined.
template <typename T>
T Plus(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  } else {
    return a + b;
  }
}

template <typename T>
void Scan(const CumsumAttrs& attrs, const Tensor& input, const Tensor& output) {
  const Shape& shape = input.shape;
  const int64_t axis = DimOfAxis(attrs.axis, shape);
  const int64_t outer = DimsProduct(shape, 0, axis);
  const int64_t size = shape[axis];
  const int64_t inner = DimsProduct(shape, axis + 1, input.rank());
  const T* x = input.data_as<const T>();
  T* y = output.data_as<T>();
  const bool parallel = outer > 1 && input.numel() >= kParallelElements;
  ParallelFor(0, outer, parallel, [&](int64_t o) {
    const T* xo = x + o * size * inner;
    T* yo = y + o * size * inner;
    for (int64_t step = 0; step < size; ++step) {
      const int64_t i = attrs.reverse ? size - 1 - step : step;
      T* yi = yo + i * inner;
      if (step == 0) {
        const T* xi = xo + i * inner;
        for (int64_t c = 0; c < inner; ++c) {
          yi[c] = attrs.exclusive ? T(0) : xi[c];
        }
        continue;
      }
      const int64_t prev = attrs.reverse ? i + 1 : i - 1;
      const T* yp = yo + prev * inner;
      const T* xi = xo + (attrs.exclusive ? prev : i) * inner;
      for (int64_t c = 0; c < inner; ++c) yi[c] = Plus(yp[c], xi[c]);
    }
  });
}

void Direct(const CumsumAttrs& attrs, const Tensor& input,
            const Tensor& output) {
  switch (input.dtype) {
    case DType::kFloat32:
      return Scan<float>(attrs, input, output);
    case DType::kFloat64:
      return Scan<double>(attrs, input, output);
    case DType::kInt64:
      return Scan<int64_t>(attrs, input, output);
    default:
      Fail(ErrorKind::kDType, "cumsum takes float32, float64 or int64, got ",
           Name(input.dtype));
  }
}

AI3_REGISTER_ALGORITHM(CumsumAttrs, "direct", Device::kCPU,
                       FunctionAlgorithm<CumsumAttrs, Direct>);

}  // namespace
}  // namespace ai3
