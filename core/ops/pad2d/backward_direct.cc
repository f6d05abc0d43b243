// pad2d_backward_data "direct": dx is dy with the padding cut away, walked
// as the forward's rows (Pad2dRows, pad2d.h): one task per input row, a
// vectorised copy from the middle of its padded row; split over OpenMP
// threads when large enough. In the other modes (reflect, replicate,
// circular) each padded element's gradient is then added to the input
// element it copied (PadSourceIndex), one task per plane, as the rows of a
// plane add into each other.
#include <cstdint>
#include <vector>

#include "core/layer.h"
#include "core/math/dispatch.h"
#include "core/ops/pad2d/pad2d.h"
#include "core/parallel.h"
#include "core/registry.h"

namespace ai3 {
namespace {

class DataKernel : public MultiInputKernel {
 public:
  explicit DataKernel(const Pad2dAttrs& attrs) : attrs_(attrs) {}

  void RunInputs(const std::vector<Tensor>& inputs, const Tensor& output,
                 void*) override {
    const Pad2dRows g =
        Pad2dRowsOf(attrs_, ImageDimsOf(output.shape, attrs_.layout));
    const int64_t rows = g.planes * g.in_h;
    DispatchFloat(output.dtype, [&](auto zero) {
      using T = decltype(zero);
      const T* dy = inputs[kGradOutput].data_as<const T>();
      T* dx = output.data_as<T>();
      ParallelFor(0, rows, rows * g.in_row >= (1 << 15), [&](int64_t r) {
        const int64_t p = r / g.in_h, h = r % g.in_h;
        const T* __restrict src =
            dy + (p * g.out_h + h + attrs_.pad_top) * g.out_row + g.left;
        T* __restrict dst = dx + r * g.in_row;
#pragma omp simd
        for (int64_t i = 0; i < g.in_row; ++i) dst[i] = src[i];
      });
      if (attrs_.mode != PadMode::kConstant) AddPadding(g, dy, dx, output);
    });
  }

 private:
  template <typename T>
  void AddPadding(const Pad2dRows& g, const T* dy, T* dx,
                  const Tensor& output) const {
    const ImageDims d = ImageDimsOf(output.shape, attrs_.layout);
    const int64_t unit = attrs_.layout == Layout::kNHWC ? d.c : 1;
    const int64_t out_w = d.w + attrs_.pad_left + attrs_.pad_right;
    ParallelFor(0, g.planes, g.planes * g.out_h * g.out_row >= (1 << 15),
                [&](int64_t p) {
                  for (int64_t oh = 0; oh < g.out_h; ++oh) {
                    const int64_t h = oh - attrs_.pad_top;
                    const bool pad_row = h < 0 || h >= g.in_h;
                    T* dst = dx + (p * g.in_h +
                                   PadSourceIndex(h, g.in_h, attrs_.mode)) *
                                      g.in_row;
                    const T* src = dy + (p * g.out_h + oh) * g.out_row;
                    for (int64_t ow = 0; ow < out_w; ++ow) {
                      const int64_t w = ow - attrs_.pad_left;
                      if (!pad_row && w >= 0 && w < d.w)
                        continue;  // copied above
                      const int64_t iw = PadSourceIndex(w, d.w, attrs_.mode);
#pragma omp simd
                      for (int64_t i = 0; i < unit; ++i) {
                        dst[iw * unit + i] += src[ow * unit + i];
                      }
                    }
                  }
                });
  }

  Pad2dAttrs attrs_;
};

AI3_REGISTER_ALGORITHM(Pad2dBackwardDataAttrs, "direct", Device::kCPU,
                       KernelAlgorithm<Pad2dBackwardDataAttrs, DataKernel>);

}  // namespace
}  // namespace ai3
