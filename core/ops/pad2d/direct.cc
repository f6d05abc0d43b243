// pad2d "direct": both layouts are a stack of planes of rows (Pad2dRows,
// pad2d.h). One task per output row (split over OpenMP threads when large
// enough):
// constant mode: a padding row is filled with `value`; a data row is the
// left fill, a copy of the input row and the right fill, each a vectorised
// loop. The other modes: each output row copies the input row its index
// maps to (PadSourceIndex), its middle as one vectorised copy and each pad
// pixel (C elements in NHWC) from the column its index maps to.
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
void Copy(const T* __restrict x, int64_t n, T* __restrict y) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = x[i];
}

// reflect, replicate, circular: every output row reads an input row.
template <typename T>
void PadMapped(const Pad2dAttrs& a, const ImageDims& d, const T* x, T* y) {
  const Pad2dRows g = Pad2dRowsOf(a, d);
  const int64_t unit = a.layout == Layout::kNHWC ? d.c : 1;
  const int64_t rows = g.planes * g.out_h;
  ParallelFor(0, rows, rows * g.out_row >= kParallelThreshold, [&](int64_t r) {
    const int64_t p = r / g.out_h;
    const int64_t h = PadSourceIndex(r % g.out_h - a.pad_top, g.in_h, a.mode);
    const T* xr = x + (p * g.in_h + h) * g.in_row;
    T* yr = y + r * g.out_row;
    Copy(xr, g.in_row, yr + g.left);
    for (int64_t j = 0; j < a.pad_left + a.pad_right; ++j) {
      // Pad pixels left of the input, then right of it.
      const int64_t ow = j < a.pad_left ? j : j + d.w;
      const int64_t iw = PadSourceIndex(ow - a.pad_left, d.w, a.mode);
      Copy(xr + iw * unit, unit, yr + ow * unit);
    }
  });
}

template <typename T>
void Pad(const Pad2dAttrs& a, const ImageDims& d, const T* x, T* y) {
  if (a.mode != PadMode::kConstant) return PadMapped(a, d, x, y);
  const auto [planes, in_h, out_h, in_row, left, right, out_row] =
      Pad2dRowsOf(a, d);
  const int64_t rows = planes * out_h;
  const T value = static_cast<T>(a.value);
  ParallelFor(0, rows, rows * out_row >= kParallelThreshold, [&](int64_t r) {
    const int64_t p = r / out_h;
    const int64_t h = r % out_h - a.pad_top;
    T* __restrict yr = y + r * out_row;
    if (h < 0 || h >= in_h) {
      Fill(yr, out_row, value);
      return;
    }
    const T* __restrict xr = x + (p * in_h + h) * in_row;
    Fill(yr, left, value);
    Copy(xr, in_row, yr + left);
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
