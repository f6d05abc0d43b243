// pad2d_backward_data "direct": dx is dy with the padding cut away, walked
// as the forward's rows (Pad2dRows, pad2d.h): one task per input row, a
// vectorised copy from the middle of its padded row; split over OpenMP
// threads when large enough.
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
    });
  }

 private:
  Pad2dAttrs attrs_;
};

AI3_REGISTER_ALGORITHM(Pad2dBackwardDataAttrs, "direct", Device::kCPU,
                       KernelAlgorithm<Pad2dBackwardDataAttrs, DataKernel>);

}  // namespace
}  // namespace ai3
