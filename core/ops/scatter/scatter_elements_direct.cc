// scatter_elements "direct": the data copied to the output, then each
// update, in the indices' order, combined into the output element whose
// coordinate is the update's with its `axis` coordinate replaced by its
// index (AxisReplacedOffset, as gather_elements reads). Every index is
// checked first.
#include <cstdint>
#include <vector>

#include "core/layer.h"
#include "core/ops/checks.h"
#include "core/ops/gather/gather.h"
#include "core/ops/scatter/scatter.h"
#include "core/ops/scatter/scatter_combine.h"
#include "core/registry.h"

namespace ai3 {
namespace {

class DirectKernel final : public ScatterKernel<ScatterElementsAttrs> {
 public:
  using ScatterKernel::ScatterKernel;

 protected:
  void Scatter(const Tensor& data, const Tensor& indices, const Tensor& updates,
               const Tensor& output) override {
    const int64_t axis = DimOfAxis(attrs_.axis, data.shape);
    const int64_t count = indices.numel();
    const int64_t* idx = indices.data_as<const int64_t>();
    CheckIndicesInRange(idx, count, axis, data.shape[axis], data.shape);
    ScatterInto(
        attrs_.reduction, data, updates, count, 1, output, [&](int64_t j) {
          return AxisReplacedOffset(j, indices.shape, data.shape, axis, idx[j]);
        });
  }
};

AI3_REGISTER_ALGORITHM(ScatterElementsAttrs, "direct", Device::kCPU,
                       KernelAlgorithm<ScatterElementsAttrs, DirectKernel>);

}  // namespace
}  // namespace ai3
