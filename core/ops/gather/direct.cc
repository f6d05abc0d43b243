// gather "direct": the data viewed as [outer, size, inner] around the axis;
// output row (o, j) is the inner-long run at data row (o, index[j]), one
// memcpy each, so any dtype is the same bytes moved. Every index is checked
// before anything is copied, so an index out of range raises and reads
// nothing. Rows are split over threads when there is enough to copy.
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/layer.h"
#include "core/ops/binary/operands.h"
#include "core/ops/checks.h"
#include "core/ops/gather/gather.h"
#include "core/parallel.h"
#include "core/registry.h"

namespace ai3 {
namespace {

constexpr int64_t kParallelBytes = 1 << 17;

class DirectKernel : public OperandsKernel<GatherAttrs> {
 public:
  using OperandsKernel::OperandsKernel;

  void RunInputs(const std::vector<Tensor>& inputs, const Tensor& output,
                 void*) override {
    const Tensor& data = attrs_.has_other ? Other(inputs) : inputs[0];
    const Tensor& indices = attrs_.Indices(inputs);
    const int64_t axis = DimOfAxis(attrs_.axis, data.shape);
    const int64_t outer = DimsProduct(data.shape, 0, axis);
    const int64_t size = data.shape[axis];
    const int64_t inner = DimsProduct(data.shape, axis + 1, data.rank());
    const int64_t count = indices.numel();
    const int64_t* idx = indices.data_as<const int64_t>();
    CheckIndicesInRange(idx, count, axis, size, data.shape);
    const size_t row = static_cast<size_t>(inner) * SizeOf(data.dtype);
    const char* x = static_cast<const char*>(data.data);
    char* y = static_cast<char*>(output.data);
    const int64_t rows = outer * count;
    const bool parallel =
        static_cast<int64_t>(row) * rows >= kParallelBytes && rows > 1;
    ParallelFor(0, rows, parallel, [&](int64_t r) {
      const int64_t o = r / count, j = r % count;
      const int64_t i = idx[j] < 0 ? idx[j] + size : idx[j];
      std::memcpy(y + r * row, x + (o * size + i) * row, row);
    });
  }
};

AI3_REGISTER_ALGORITHM(GatherAttrs, "direct", Device::kCPU,
                       KernelAlgorithm<GatherAttrs, DirectKernel>);

}  // namespace
}  // namespace ai3
