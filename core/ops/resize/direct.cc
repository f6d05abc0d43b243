// resize "direct": each output row's and column's taps (ResizeTapOf,
// CubicTapOf) are computed once per call into the workspace; then, one task
// per output row (split over OpenMP threads when large enough), each output
// element is its input tap (nearest) or the blend of its four (linear) or
// sixteen (cubic):
//   NCHW: along the row, one element per column;
//   NHWC: one pixel of C contiguous channels per column, vectorised.
// Its input gradient (resize_backward_data) runs the same taps backwards.
#include <cstdint>
#include <type_traits>
#include <vector>

#include "core/layer.h"
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

// cubic: each output element the weighted sum of its 4 x 4 taps.
template <typename T>
void ResizeCubic(const ImageDims& in, const ImageDims& out, Layout layout,
                 const CubicTap* rows, const CubicTap* cols, const T* x, T* y) {
  const bool nhwc = layout == Layout::kNHWC;
  const int64_t unit = nhwc ? in.c : 1;
  const int64_t planes = nhwc ? in.n : in.n * in.c;
  const int64_t total = planes * out.h;
  ParallelFor(0, total, total * out.w * unit >= (1 << 13), [&](int64_t r) {
    const int64_t p = r / out.h;
    const CubicTap& t = rows[r % out.h];
    T* __restrict yr = y + r * out.w * unit;
    for (int64_t ow = 0; ow < out.w; ++ow) {
      const CubicTap& c = cols[ow];
      T* __restrict yp = yr + ow * unit;
      for (int64_t k = 0; k < unit; ++k) yp[k] = T(0);
      for (int q = 0; q < 4; ++q) {
        const T* xq = x + (p * in.h + t.i[q]) * in.w * unit;
        for (int s = 0; s < 4; ++s) {
          const T w = T(t.weight[q] * c.weight[s]);
          const T* xs = xq + c.i[s] * unit;
#pragma omp simd
          for (int64_t k = 0; k < unit; ++k) yp[k] += w * xs[k];
        }
      }
    }
  });
}

// The taps of every output row and column, into `taps` (out.h rows, then
// out.w columns: TapsBytes), of the mode's kind.
size_t TapsBytes(const ResizeAttrs& a, const ImageDims& out) {
  const bool cubic = a.mode == ResizeAttrs::Mode::kCubic;
  return static_cast<size_t>(out.h + out.w) *
         (cubic ? sizeof(CubicTap) : sizeof(ResizeTap));
}
template <typename T, typename Tap, class TapOf>
void ComputeTaps(const ResizeAttrs& a, const ImageDims& in,
                 const ImageDims& out, Tap* taps, const TapOf& tap_of) {
  for (int64_t i = 0; i < out.h; ++i) {
    taps[i] = tap_of(a, i, in.h, out.h, a.scale_h);
  }
  for (int64_t i = 0; i < out.w; ++i) {
    taps[out.h + i] = tap_of(a, i, in.w, out.w, a.scale_w);
  }
}

// Runs `body(rows, cols)` on the mode's taps computed into `workspace`:
// CubicTap's for cubic, else ResizeTap's.
template <typename T, class Body>
void WithTaps(const ResizeAttrs& a, const ImageDims& in, const ImageDims& out,
              void* workspace, const Body& body) {
  if (a.mode == ResizeAttrs::Mode::kCubic) {
    CubicTap* taps = static_cast<CubicTap*>(workspace);
    ComputeTaps<T>(a, in, out, taps, &CubicTapOf<T>);
    body(taps, taps + out.h);
  } else {
    ResizeTap* taps = static_cast<ResizeTap*>(workspace);
    ComputeTaps<T>(a, in, out, taps, &ResizeTapOf<T>);
    body(taps, taps + out.h);
  }
}

class DirectKernel : public Kernel {
 public:
  explicit DirectKernel(const ResizeAttrs& attrs) : attrs_(attrs) {}

  size_t WorkspaceBytes(const Shape& input_shape) const override {
    const Shape out =
        attrs_.OutputShape(Tensor{nullptr, DType::kFloat32, input_shape});
    return TapsBytes(attrs_, ImageDimsOf(out, attrs_.layout));
  }

  void Run(const Tensor& input, const Tensor& output,
           void* workspace) override {
    const ImageDims in = ImageDimsOf(input.shape, attrs_.layout);
    const ImageDims out = ImageDimsOf(output.shape, attrs_.layout);
    DispatchFloat(input.dtype, [&](auto zero) {
      using T = decltype(zero);
      WithTaps<T>(attrs_, in, out, workspace, [&](auto rows, auto cols) {
        if constexpr (std::is_same_v<decltype(rows), CubicTap*>) {
          ResizeCubic<T>(in, out, attrs_.layout, rows, cols,
                         input.data_as<const T>(), output.data_as<T>());
        } else {
          Resize<T>(in, out, attrs_.layout, rows, cols,
                    input.data_as<const T>(), output.data_as<T>());
        }
      });
    });
  }

 private:
  ResizeAttrs attrs_;
};

// resize_backward_data's "direct": dx zeroed, then each output's dy added
// back to its four taps (one, nearest) with the forward's weights. Planes
// of rows of pixels (NCHW: one per image and channel; NHWC: one per image,
// a pixel's C channels the inner loop) own disjoint parts of dx and are
// split over OpenMP threads; within a plane the outputs go in order, since
// neighbouring outputs share taps. (The inner loop is not vectorised: its
// four taps may be one element, nearest's or a clamped edge's.)
// cubic's: each output's dy added back to its 16 taps, likewise.
template <typename T>
void ResizeGradient(const ImageDims& in, const ImageDims& out, Layout layout,
                    const CubicTap* rows, const CubicTap* cols, const T* dy,
                    T* dx) {
  const bool nhwc = layout == Layout::kNHWC;
  const int64_t unit = nhwc ? in.c : 1;
  const int64_t planes = nhwc ? in.n : in.n * in.c;
  const int64_t plane_in = in.h * in.w * unit, plane_out = out.h * out.w * unit;
  ParallelFor(0, planes, planes * plane_out >= (1 << 13), [&](int64_t p) {
    T* __restrict dxp = dx + p * plane_in;
    for (int64_t i = 0; i < plane_in; ++i) dxp[i] = T(0);
    for (int64_t oh = 0; oh < out.h; ++oh) {
      const CubicTap& t = rows[oh];
      const T* dyr = dy + p * plane_out + oh * out.w * unit;
      for (int64_t ow = 0; ow < out.w; ++ow) {
        const CubicTap& c = cols[ow];
        const T* g = dyr + ow * unit;
        for (int q = 0; q < 4; ++q) {
          for (int s = 0; s < 4; ++s) {
            const T w = T(t.weight[q] * c.weight[s]);
            T* d = dxp + (t.i[q] * in.w + c.i[s]) * unit;
            for (int64_t k = 0; k < unit; ++k) d[k] += w * g[k];
          }
        }
      }
    }
  });
}

template <typename T>
void ResizeGradient(const ImageDims& in, const ImageDims& out, Layout layout,
                    const ResizeTap* rows, const ResizeTap* cols, const T* dy,
                    T* dx) {
  const bool nhwc = layout == Layout::kNHWC;
  const int64_t unit = nhwc ? in.c : 1;
  const int64_t planes = nhwc ? in.n : in.n * in.c;
  const int64_t plane_in = in.h * in.w * unit, plane_out = out.h * out.w * unit;
  ParallelFor(0, planes, planes * plane_out >= (1 << 15), [&](int64_t p) {
    T* __restrict dxp = dx + p * plane_in;
    for (int64_t i = 0; i < plane_in; ++i) dxp[i] = T(0);
    for (int64_t oh = 0; oh < out.h; ++oh) {
      const ResizeTap& t = rows[oh];
      T* x0 = dxp + t.i0 * in.w * unit;
      T* x1 = dxp + t.i1 * in.w * unit;
      const T wy = T(t.weight);
      const T* dyr = dy + p * plane_out + oh * out.w * unit;
      for (int64_t ow = 0; ow < out.w; ++ow) {
        const ResizeTap& c = cols[ow];
        const T wx = T(c.weight);
        const T* g = dyr + ow * unit;
        T* a = x0 + c.i0 * unit;
        T* b = x0 + c.i1 * unit;
        T* d = x1 + c.i0 * unit;
        T* e = x1 + c.i1 * unit;
        for (int64_t k = 0; k < unit; ++k) {
          const T top = g[k] * (T(1) - wy), bottom = g[k] * wy;
          a[k] += top * (T(1) - wx);
          b[k] += top * wx;
          d[k] += bottom * (T(1) - wx);
          e[k] += bottom * wx;
        }
      }
    }
  });
}

class BackwardKernel : public MultiInputKernel {
 public:
  explicit BackwardKernel(const ResizeBackwardDataAttrs& attrs)
      : attrs_(attrs) {}

  size_t InputsWorkspaceBytes(
      const std::vector<Tensor>& inputs) const override {
    return TapsBytes(attrs_,
                     ImageDimsOf(inputs[kGradOutput].shape, attrs_.layout));
  }

  void RunInputs(const std::vector<Tensor>& inputs, const Tensor& output,
                 void* workspace) override {
    const ImageDims in = ImageDimsOf(output.shape, attrs_.layout);
    const ImageDims out = ImageDimsOf(inputs[kGradOutput].shape, attrs_.layout);
    DispatchFloat(output.dtype, [&](auto zero) {
      using T = decltype(zero);
      WithTaps<T>(attrs_, in, out, workspace, [&](auto rows, auto cols) {
        ResizeGradient<T>(in, out, attrs_.layout, rows, cols,
                          inputs[kGradOutput].data_as<const T>(),
                          output.data_as<T>());
      });
    });
  }

 private:
  ResizeBackwardDataAttrs attrs_;
};

AI3_REGISTER_ALGORITHM(ResizeAttrs, "direct", Device::kCPU,
                       KernelAlgorithm<ResizeAttrs, DirectKernel>);
AI3_REGISTER_ALGORITHM(
    ResizeBackwardDataAttrs, "direct", Device::kCPU,
    KernelAlgorithm<ResizeBackwardDataAttrs, BackwardKernel>);

}  // namespace
}  // namespace ai3
