// slice "direct": the output as [outer, count] rows of `inner` contiguous
// elements, each copied from its source row; rows are split over OpenMP
// threads when there is enough to copy.
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "core/ops/slice/slice.h"
#include "core/parallel.h"
#include "core/registry.h"

namespace ai3 {
namespace {

constexpr int64_t kParallelBytes = 1 << 17;

class DirectKernel : public Kernel {
 public:
  explicit DirectKernel(const SliceAttrs& attrs) : attrs_(attrs) {}

  void Run(const Tensor& input, const Tensor& output, void*) override {
    const SliceAttrs::Range r = attrs_.RangeOf(input.shape);
    const int64_t row = r.inner * SizeOf(input.dtype);
    const char* x = static_cast<const char*>(input.data);
    char* y = static_cast<char*>(output.data);
    const int64_t rows = r.outer * r.count;
    const int64_t step = attrs_.step;
    ParallelFor(0, rows, rows * row >= kParallelBytes, [&](int64_t t) {
      const int64_t o = t / r.count, k = t % r.count;
      const int64_t src = o * r.len + r.first + k * step;
      std::memcpy(y + t * row, x + src * row, row);
    });
  }

 private:
  SliceAttrs attrs_;
};

using Direct = KernelAlgorithm<SliceAttrs, DirectKernel>;

AI3_REGISTER_ALGORITHM(SliceAttrs, "direct", Device::kCPU, Direct);

}  // namespace
}  // namespace ai3
