// slice "direct": the output as [outer, count] rows of `inner` contiguous
// elements, each copied from its source row; rows are split over OpenMP
// threads when there is enough to copy.
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/layer.h"
#include "core/ops/function_kernel.h"
#include "core/ops/slice/slice.h"
#include "core/parallel.h"
#include "core/registry.h"

namespace ai3 {
namespace {

constexpr int64_t kParallelBytes = 1 << 17;

void Direct(const SliceAttrs& attrs, const Tensor& input,
            const Tensor& output) {
  const SliceAttrs::Range r = attrs.RangeOf(input.shape);
  const int64_t row = r.inner * SizeOf(input.dtype);
  const char* x = static_cast<const char*>(input.data);
  char* y = static_cast<char*>(output.data);
  const int64_t rows = r.outer * r.count;
  const int64_t step = attrs.step;
  ParallelFor(0, rows, rows * row >= kParallelBytes, [&](int64_t t) {
    const int64_t o = t / r.count, k = t % r.count;
    const int64_t src = o * r.len + r.first + k * step;
    std::memcpy(y + t * row, x + src * row, row);
  });
}

AI3_REGISTER_ALGORITHM(SliceAttrs, "direct", Device::kCPU,
                       FunctionAlgorithm<SliceAttrs, Direct>);

// slice_backward_data's "direct": dx zeroed, then each of dy's rows copied
// back to the input row the forward read it from (the same row map), rows
// split over OpenMP threads when there is enough to copy.
class DataKernel : public MultiInputKernel {
 public:
  explicit DataKernel(const SliceBackwardDataAttrs& attrs) : attrs_(attrs) {}

  void RunInputs(const std::vector<Tensor>& inputs, const Tensor& output,
                 void*) override {
    const SliceAttrs::Range r = attrs_.RangeOf(output.shape);
    const int64_t row = r.inner * SizeOf(output.dtype);
    const char* dy = static_cast<const char*>(inputs[kGradOutput].data);
    char* dx = static_cast<char*>(output.data);
    const int64_t bytes = output.numel() * SizeOf(output.dtype);
    if (bytes == 0) return;
    std::memset(dx, 0, bytes);
    const int64_t rows = r.outer * r.count;
    ParallelFor(0, rows, rows * row >= kParallelBytes, [&](int64_t t) {
      const int64_t o = t / r.count, k = t % r.count;
      const int64_t dst = o * r.len + r.first + k * attrs_.step;
      std::memcpy(dx + dst * row, dy + t * row, row);
    });
  }

 private:
  SliceBackwardDataAttrs attrs_;
};

AI3_REGISTER_ALGORITHM(SliceBackwardDataAttrs, "direct", Device::kCPU,
                       KernelAlgorithm<SliceBackwardDataAttrs, DataKernel>);

}  // namespace
}  // namespace ai3
