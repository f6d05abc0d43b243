// scatter_nd "direct": the data copied to the output, then each index
// tuple's slice of updates, in order, combined into the data's slice at
// that tuple (its offset: the tuple's indices times the data's strides
// over its first k axes). Every index is checked first, against its own
// axis.
#include <cstdint>
#include <vector>

#include "core/errors.h"
#include "core/layer.h"
#include "core/ops/checks.h"
#include "core/ops/scatter/scatter.h"
#include "core/ops/scatter/scatter_combine.h"
#include "core/registry.h"

namespace ai3 {
namespace {

class DirectKernel final : public ScatterKernel<ScatterNdAttrs> {
 public:
  using ScatterKernel::ScatterKernel;

 protected:
  void Scatter(const Tensor& data, const Tensor& indices, const Tensor& updates,
               const Tensor& output) override {
    const int64_t k = indices.shape.back();
    const int64_t count = indices.numel() / k;
    const int64_t run = DimsProduct(data.shape, k, data.rank());
    const int64_t* idx = indices.data_as<const int64_t>();
    for (int64_t j = 0; j < count * k; ++j) {  // index j % k of a tuple
      const int64_t d = j % k, size = data.shape[d];
      if (idx[j] < -size || idx[j] >= size) {
        Fail(ErrorKind::kInvalidArgument, "index ", idx[j], " (at ", j,
             " of the indices) is out of range for axis ", d, " of size ", size,
             " in data ", ToString(data.shape));
      }
    }
    ScatterInto(
        attrs_.reduction, data, updates, count, run, output, [&](int64_t j) {
          int64_t offset = 0;
          for (int64_t d = 0; d < k; ++d) {
            const int64_t i = idx[j * k + d];
            offset = offset * data.shape[d] + (i < 0 ? i + data.shape[d] : i);
          }
          return offset * run;
        });
  }
};

AI3_REGISTER_ALGORITHM(ScatterNdAttrs, "direct", Device::kCPU,
                       KernelAlgorithm<ScatterNdAttrs, DirectKernel>);

}  // namespace
}  // namespace ai3
