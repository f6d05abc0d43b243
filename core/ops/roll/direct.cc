// roll "direct": the output as rows of its last dimension. Each output row
// comes from the input row whose coordinates are the output's minus the
// shifts (mod the sizes); within the row a shift of the last dimension is
// two contiguous copies (the wrapped tail first). Rows are split over
// OpenMP threads when there is enough to copy.
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/layer.h"
#include "core/ops/function_kernel.h"
#include "core/ops/roll/roll.h"
#include "core/parallel.h"
#include "core/registry.h"

namespace ai3 {
namespace {

constexpr int64_t kParallelBytes = 1 << 17;

void Direct(const RollAttrs& attrs, const Tensor& input, const Tensor& output) {
  const Shape& shape = input.shape;
  const std::vector<int64_t> shift = attrs.ShiftPerDim(shape);
  const int rank = static_cast<int>(shape.size());
  const size_t elem = SizeOf(input.dtype);
  const char* x = static_cast<const char*>(input.data);
  char* y = static_cast<char*>(output.data);
  if (rank == 0) {
    std::memcpy(y, x, elem);
    return;
  }
  const int64_t inner = shape[rank - 1];
  const int64_t s = shift[rank - 1];
  const int64_t rows = input.numel() / inner;
  const int64_t row_bytes = inner * elem;
  const bool parallel = rows * row_bytes >= kParallelBytes;
  ParallelFor(0, rows, parallel, [&](int64_t r) {
    // The source row: each coordinate moved back by its shift.
    int64_t rest = r, src = 0, stride = 1;
    for (int d = rank - 2; d >= 0; --d) {
      const int64_t c = rest % shape[d];
      rest /= shape[d];
      src += ((c - shift[d] + shape[d]) % shape[d]) * stride;
      stride *= shape[d];
    }
    const char* xr = x + src * row_bytes;
    char* yr = y + r * row_bytes;
    std::memcpy(yr, xr + (inner - s) * elem, s * elem);
    std::memcpy(yr + s * elem, xr, (inner - s) * elem);
  });
}

AI3_REGISTER_ALGORITHM(RollAttrs, "direct", Device::kCPU,
                       FunctionAlgorithm<RollAttrs, Direct>);

// roll_backward_data's "direct": the forward on dy, shifted back.
class DataKernel : public MultiInputKernel {
 public:
  explicit DataKernel(const RollBackwardDataAttrs& attrs) : back_(attrs) {
    for (int64_t& shift : back_.shifts) shift = -shift;
  }

  void RunInputs(const std::vector<Tensor>& inputs, const Tensor& output,
                 void*) override {
    Direct(back_, inputs[kGradOutput], output);
  }

 private:
  RollAttrs back_;
};

AI3_REGISTER_ALGORITHM(RollBackwardDataAttrs, "direct", Device::kCPU,
                       KernelAlgorithm<RollBackwardDataAttrs, DataKernel>);

}  // namespace
}  // namespace ai3
