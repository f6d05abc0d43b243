// scatter_elements "direct": the data copied to the output, then each
// update, in the indices' order, combined into the output element whose
// coordinate is the update's with its `axis` coordinate replaced by its
// index (offsets from the coordinates and the data's strides, no stride
// table: a forward allocates nothing). Every index is checked first.
#include <cstdint>
#include <vector>

#include "core/layer.h"
#include "core/ops/binary/operands.h"
#include "core/ops/checks.h"
#include "core/ops/gather/gather.h"
#include "core/ops/scatter/scatter.h"
#include "core/ops/scatter/scatter_combine.h"
#include "core/registry.h"

namespace ai3 {
namespace {

class DirectKernel : public OperandsKernel<ScatterElementsAttrs> {
 public:
  using OperandsKernel::OperandsKernel;

  void RunInputs(const std::vector<Tensor>& inputs, const Tensor& output,
                 void*) override {
    const Tensor& data = inputs[0];
    const Tensor& indices = Other(inputs);
    const Tensor& updates = inputs.back();
    const int rank = static_cast<int>(data.rank());
    const int64_t axis = DimOfAxis(attrs_.axis, data.shape);
    const int64_t size = data.shape[axis];
    const int64_t count = indices.numel();
    const int64_t* idx = indices.data_as<const int64_t>();
    CheckIndicesInRange(idx, count, axis, size, data.shape);
    const Shape& shape = indices.shape;
    ScatterInto(attrs_.reduction, data, updates, count, 1, output,
                [&](int64_t j) {
                  int64_t rest = j, offset = 0, stride = 1;
                  for (int d = rank - 1; d >= 0; --d) {
                    const int64_t c = rest % shape[d];
                    rest /= shape[d];
                    const int64_t at =
                        d == axis ? (idx[j] < 0 ? idx[j] + size : idx[j]) : c;
                    offset += at * stride;
                    stride *= data.shape[d];
                  }
                  return offset;
                });
  }
};

AI3_REGISTER_ALGORITHM(ScatterElementsAttrs, "direct", Device::kCPU,
                       KernelAlgorithm<ScatterElementsAttrs, DirectKernel>);

}  // namespace
}  // namespace ai3
