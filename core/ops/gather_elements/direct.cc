// gather_elements "direct": each output element's data offset is the sum of
// its coordinates times the data's strides, the axis' coordinate replaced by
// its index; elements are moved as bytes (any dtype). Every index is checked
// before anything is read, so one out of range raises and reads nothing.
// Output elements are split over threads when there are enough.
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/layer.h"
#include "core/ops/binary/operands.h"
#include "core/ops/checks.h"
#include "core/ops/gather/gather.h"
#include "core/ops/gather_elements/gather_elements.h"
#include "core/parallel.h"
#include "core/registry.h"

namespace ai3 {
namespace {

constexpr int64_t kParallelElements = 1 << 15;

class DirectKernel : public OperandsKernel<GatherElementsAttrs> {
 public:
  using OperandsKernel::OperandsKernel;

  void RunInputs(const std::vector<Tensor>& inputs, const Tensor& output,
                 void*) override {
    const Tensor& data = attrs_.has_other ? Other(inputs) : inputs[0];
    const Tensor& indices = attrs_.Indices(inputs);
    const int64_t axis = DimOfAxis(attrs_.axis, data.shape);
    const int64_t size = data.shape[axis];
    const int64_t count = indices.numel();
    const int64_t* idx = indices.data_as<const int64_t>();
    CheckIndicesInRange(idx, count, axis, size, data.shape);
    const Shape& shape = indices.shape;
    const size_t elem = SizeOf(data.dtype);
    const char* x = static_cast<const char*>(data.data);
    char* y = static_cast<char*>(output.data);
    ParallelFor(0, count, count >= kParallelElements, [&](int64_t j) {
      const int64_t offset =
          AxisReplacedOffset(j, shape, data.shape, axis, idx[j]);
      std::memcpy(y + j * elem, x + offset * elem, elem);
    });
  }
};

AI3_REGISTER_ALGORITHM(GatherElementsAttrs, "direct", Device::kCPU,
                       KernelAlgorithm<GatherElementsAttrs, DirectKernel>);

}  // namespace
}  // namespace ai3
