// resize "direct": each output row's and column's taps (ResizeTapOf) are
// computed once per call into the workspace; then, one task per output row
// (split over OpenMP threads when large enough), each output element is
// its input tap (nearest) or the blend of its four (linear):
//   NCHW: along the row, one element per column;
//   NHWC: one pixel of C contiguous channels per column, vectorised.
#include <cstdint>
#include <vector>

#include "core/math/dispatch.h"
#include "core/ops/resize/resize.h"
#include "core/parallel.h"
#include "core/registry.h"

namespace ai3 {
namespace {

template <typename T>
void Resize(const ImageDims& in, const ImageDims& out, Layout layout,
            const ResizeTap* rows, const ResizeTap* cols, const T* x, T* y) {
  const bool nhwc = layout == Layout::kNHWC;
  const int64_t unit = nhwc ? in.c : 1;              // elements a pixel
  const int64_t planes = nhwc ? in.n : in.n * in.c;  // of rows of pixels
  const int64_t total = planes * out.h;
  ParallelFor(0, total, total * out.w * unit >= (1 << 15), [&](int64_t r) {
    const int64_t p = r / out.h;
    const ResizeTap& t = rows[r % out.h];
    const T* x0 = x + (p * in.h + t.i0) * in.w * unit;
    const T* x1 = x + (p * in.h + t.i1) * in.w * unit;
    T* __restrict yr = y + r * out.w * unit;
    const T wy = T(t.weight);
    for (int64_t ow = 0; ow < out.w; ++ow) {
      const ResizeTap& c = cols[ow];
      const T wx = T(c.weight);
      const T* a = x0 + c.i0 * unit;
      const T* b = x0 + c.i1 * unit;
      const T* d = x1 + c.i0 * unit;
      const T* e = x1 + c.i1 * unit;
      T* __restrict yp = yr + ow * unit;
#pragma omp simd
      for (int64_t k = 0; k < unit; ++k) {
        const T top = a[k] + (b[k] - a[k]) * wx;
        const T bottom = d[k] + (e[k] - d[k]) * wx;
        yp[k] = top + (bottom - top) * wy;
      }
    }
  });
}

class DirectKernel : public Kernel {
 public:
  explicit DirectKernel(const ResizeAttrs& attrs) : attrs_(attrs) {}

  size_t WorkspaceBytes(const Shape& input_shape) const override {
    const Shape out =
        attrs_.OutputShape(Tensor{nullptr, DType::kFloat32, input_shape});
    const ImageDims d = ImageDimsOf(out, attrs_.layout);
    return static_cast<size_t>(d.h + d.w) * sizeof(ResizeTap);
  }

  void Run(const Tensor& input, const Tensor& output,
           void* workspace) override {
    const ImageDims in = ImageDimsOf(input.shape, attrs_.layout);
    const ImageDims out = ImageDimsOf(output.shape, attrs_.layout);
    ResizeTap* rows = static_cast<ResizeTap*>(workspace);
    ResizeTap* cols = rows + out.h;
    DispatchFloat(input.dtype, [&](auto zero) {
      using T = decltype(zero);
      for (int64_t i = 0; i < out.h; ++i) {
        rows[i] = ResizeTapOf<T>(attrs_, i, in.h, out.h, attrs_.scale_h);
      }
      for (int64_t i = 0; i < out.w; ++i) {
        cols[i] = ResizeTapOf<T>(attrs_, i, in.w, out.w, attrs_.scale_w);
      }
      Resize<T>(in, out, attrs_.layout, rows, cols, input.data_as<const T>(),
                output.data_as<T>());
    });
  }

 private:
  ResizeAttrs attrs_;
};

AI3_REGISTER_ALGORITHM(ResizeAttrs, "direct", Device::kCPU,
                       KernelAlgorithm<ResizeAttrs, DirectKernel>);

}  // namespace
}  // namespace ai3
