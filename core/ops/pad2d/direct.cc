// pad2d "direct": both layouts are a stack of planes of rows, each input
// row landing contiguously inside a wider output row:
//   NCHW: N*C planes of H rows of W elements;
//   NHWC: N planes of H rows of W*C elements (a pixel is C contiguous
//         elements, so the left/right pads are left*C / right*C elements).
// One task per output row (split over OpenMP threads when large enough):
// a padding row is filled with `value`; a data row is the left fill, a copy
// of the input row and the right fill, each a vectorised loop.
#include <cstdint>
#include <memory>
#include <vector>

#include "core/math/dispatch.h"
#include "core/ops/pad2d/pad2d.h"
#include "core/parallel.h"
#include "core/registry.h"

namespace ai3 {
namespace {

// Below this many output elements threads cost more than they save.
constexpr int64_t kParallelThreshold = 1 << 15;

template <typename T>
void Fill(T* __restrict y, int64_t n, T value) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = value;
}

template <typename T>
void Pad(const Pad2dAttrs& a, const ImageDims& d, const T* x, T* y) {
  const bool nhwc = a.layout == Layout::kNHWC;
  const int64_t unit = nhwc ? d.c : 1;  // elements per pixel in a row
  const int64_t planes = nhwc ? d.n : d.n * d.c;
  const int64_t in_row = d.w * unit;
  const int64_t left = a.pad_left * unit;
  const int64_t right = a.pad_right * unit;
  const int64_t out_row = left + in_row + right;
  const int64_t out_h = d.h + a.pad_top + a.pad_bottom;
  const int64_t rows = planes * out_h;
  const T value = static_cast<T>(a.value);
  ParallelFor(0, rows, rows * out_row >= kParallelThreshold, [&](int64_t r) {
    const int64_t p = r / out_h;
    const int64_t h = r % out_h - a.pad_top;
    T* __restrict yr = y + r * out_row;
    if (h < 0 || h >= d.h) {
      Fill(yr, out_row, value);
      return;
    }
    const T* __restrict xr = x + (p * d.h + h) * in_row;
    Fill(yr, left, value);
    T* __restrict mid = yr + left;
#pragma omp simd
    for (int64_t i = 0; i < in_row; ++i) mid[i] = xr[i];
    Fill(yr + left + in_row, right, value);
  });
}

class DirectKernel : public Kernel {
 public:
  explicit DirectKernel(const Pad2dAttrs& attrs) : attrs_(attrs) {}

  void Run(const Tensor& input, const Tensor& output, void*) override {
    const ImageDims d = ImageDimsOf(input.shape, attrs_.layout);
    DispatchFloat(input.dtype, [&](auto zero) {
      using T = decltype(zero);
      Pad<T>(attrs_, d, input.data_as<const T>(), output.data_as<T>());
    });
  }

 private:
  Pad2dAttrs attrs_;
};

using Direct = KernelAlgorithm<Pad2dAttrs, DirectKernel>;

AI3_REGISTER_ALGORITHM(Pad2dAttrs, "direct", Device::kCPU, Direct);

}  // namespace
}  // namespace ai3
