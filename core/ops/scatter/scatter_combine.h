// What both scatter kernels share: their shell (ScatterKernel: the data,
// the indices, computed or constant, and the updates), and what they do
// once they know where an update goes (ScatterInto: copy the data to the
// output, then combine `count` runs of `run` elements of the updates into
// the output at the offsets `offset_of(j)` gives, in order, by the layer's
// reduction, typed per dtype). Both kernels check every index before they
// call ScatterInto.
#ifndef AI3_CORE_OPS_SCATTER_SCATTER_COMBINE_H_
#define AI3_CORE_OPS_SCATTER_SCATTER_COMBINE_H_

#include <algorithm>
#include <cstdint>
#include <cstring>

#include <vector>

#include "core/errors.h"
#include "core/ops/binary/operands.h"
#include "core/ops/scatter/scatter.h"
#include "core/tensor.h"

namespace ai3 {

template <class Attrs>
class ScatterKernel : public OperandsKernel<Attrs> {
 public:
  using OperandsKernel<Attrs>::OperandsKernel;

  void RunInputs(const std::vector<Tensor>& inputs, const Tensor& output,
                 void*) final {
    Scatter(inputs[0], this->Other(inputs), inputs.back(), output);
  }

 protected:
  virtual void Scatter(const Tensor& data, const Tensor& indices,
                       const Tensor& updates, const Tensor& output) = 0;
};

template <typename T, typename Combine, typename OffsetOf>
void CombineRunsWith(Combine combine, const T* updates, int64_t count,
                     int64_t run, T* y, OffsetOf&& offset_of) {
  for (int64_t j = 0; j < count; ++j) {
    T* out = y + offset_of(j);
    const T* u = updates + j * run;
    for (int64_t i = 0; i < run; ++i) out[i] = combine(out[i], u[i]);
  }
}

// The reduction chosen once per call, not per element.
template <typename T, typename OffsetOf>
void CombineRuns(ScatterReduction reduction, const T* updates, int64_t count,
                 int64_t run, T* y, OffsetOf&& offset_of) {
  switch (reduction) {
    case ScatterReduction::kNone:
      return CombineRunsWith([](T, T u) { return u; }, updates, count, run, y,
                             offset_of);
    case ScatterReduction::kAdd:
      return CombineRunsWith([](T a, T u) { return a + u; }, updates, count,
                             run, y, offset_of);
    case ScatterReduction::kMul:
      return CombineRunsWith([](T a, T u) { return a * u; }, updates, count,
                             run, y, offset_of);
    case ScatterReduction::kMax:  // NaN propagates, as torch's
      return CombineRunsWith([](T a, T u) { return (u > a || u != u) ? u : a; },
                             updates, count, run, y, offset_of);
    case ScatterReduction::kMin:
      return CombineRunsWith([](T a, T u) { return (u < a || u != u) ? u : a; },
                             updates, count, run, y, offset_of);
  }
}

template <typename OffsetOf>
void ScatterInto(ScatterReduction reduction, const Tensor& data,
                 const Tensor& updates, int64_t count, int64_t run,
                 const Tensor& output, OffsetOf&& offset_of) {
  std::memcpy(output.data, data.data, data.numel() * SizeOf(data.dtype));
  switch (data.dtype) {
    case DType::kFloat32:
      return CombineRuns(reduction, updates.data_as<const float>(), count, run,
                         output.data_as<float>(), offset_of);
    case DType::kFloat64:
      return CombineRuns(reduction, updates.data_as<const double>(), count, run,
                         output.data_as<double>(), offset_of);
    case DType::kInt64:
      return CombineRuns(reduction, updates.data_as<const int64_t>(), count,
                         run, output.data_as<int64_t>(), offset_of);
    case DType::kBool:  // "none" only (OutputShape)
      return CombineRuns(ScatterReduction::kNone,
                         updates.data_as<const uint8_t>(), count, run,
                         output.data_as<uint8_t>(), offset_of);
  }
  Fail(ErrorKind::kDType, "scatter of ", Name(data.dtype), " data");
}

}  // namespace ai3

#endif  // AI3_CORE_OPS_SCATTER_SCATTER_COMBINE_H_
