// slice "direct": the output as [outer, count] rows of `inner` contiguous
// elements, each copied from its source row; rows are split over OpenMP
// threads when there is enough to copy. Two cases are copied otherwise:
//   step 1      an outer index's `count` rows are one block in the input
//               and in the output: one copy per outer index (x[:, 1:] of
//               an (8, 4296) tensor took 79 us as 34,360 copies of 4 bytes;
//               an LSTM's gates are such slices of the last axis);
//   inner 1     any other step along the last axis (x[..., ::2]): element
//               by element, the element's size a constant (a move each, not
//               a memcpy call).
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "core/layer.h"
#include "core/ops/function_kernel.h"
#include "core/ops/slice/slice.h"
#include "core/parallel.h"
#include "core/registry.h"

namespace ai3 {
namespace {

constexpr int64_t kParallelBytes = 1 << 17;

// Calls copy(slice_offset, tensor_offset, bytes) for each run of bytes the
// slice takes from a [outer, len, inner] tensor of `element`-byte values,
// the slice's runs in order: the forward copies each run into the slice,
// the backward back into the tensor.
template <typename Copy>
void ForEachRun(const SliceAttrs::Range& r, int64_t step, int64_t element,
                Copy&& copy) {
  const int64_t row = r.inner * element;
  // Nothing to copy (an empty slice's buffer may be null, which memcpy
  // must not be given even for 0 bytes).
  if (r.outer == 0 || r.count == 0 || row == 0) return;
  if (step == 1) {  // an outer index's rows: one block on both sides
    const int64_t block = r.count * row;
    ParallelFor(0, r.outer, r.outer * block >= kParallelBytes, [&](int64_t o) {
      copy(o * block, (o * r.len + r.first) * row, block);
    });
    return;
  }
  // One element per row: its size a constant, so each copy is one move.
  auto elements = [&](auto size) {
    constexpr int64_t kSize = decltype(size)::value;
    ParallelFor(0, r.outer, r.outer * r.count * kSize >= kParallelBytes,
                [&](int64_t o) {
                  const int64_t first = (o * r.len + r.first) * kSize;
                  const int64_t out = o * r.count * kSize;
                  for (int64_t k = 0; k < r.count; ++k) {
                    copy(out + k * kSize, first + k * step * kSize, kSize);
                  }
                });
  };
  if (r.inner == 1 && element == 1) {
    return elements(std::integral_constant<int64_t, 1>{});
  }
  if (r.inner == 1 && element == 4) {
    return elements(std::integral_constant<int64_t, 4>{});
  }
  if (r.inner == 1 && element == 8) {
    return elements(std::integral_constant<int64_t, 8>{});
  }
  const int64_t rows = r.outer * r.count;
  ParallelFor(0, rows, rows * row >= kParallelBytes, [&](int64_t t) {
    const int64_t o = t / r.count, k = t % r.count;
    copy(t * row, (o * r.len + r.first + k * step) * row, row);
  });
}

void Direct(const SliceAttrs& attrs, const Tensor& input,
            const Tensor& output) {
  const SliceAttrs::Range r = attrs.RangeOf(input.shape);
  const char* x = static_cast<const char*>(input.data);
  char* y = static_cast<char*>(output.data);
  ForEachRun(r, attrs.step, SizeOf(input.dtype),
             [&](int64_t at, int64_t from, int64_t bytes) {
               std::memcpy(y + at, x + from, bytes);
             });
}

AI3_REGISTER_ALGORITHM(SliceAttrs, "direct", Device::kCPU,
                       FunctionAlgorithm<SliceAttrs, Direct>);

// slice_backward_data's "direct": dx zeroed, then each of dy's rows copied
// back to the input row the forward read it from (ForEachRun, the forward's
// runs the other way).
class DataKernel : public MultiInputKernel {
 public:
  explicit DataKernel(const SliceBackwardDataAttrs& attrs) : attrs_(attrs) {}

  void RunInputs(const std::vector<Tensor>& inputs, const Tensor& output,
                 void*) override {
    const SliceAttrs::Range r = attrs_.RangeOf(output.shape);
    char* dx = static_cast<char*>(output.data);
    const int64_t bytes = output.numel() * SizeOf(output.dtype);
    if (bytes == 0) return;
    std::memset(dx, 0, bytes);
    const char* dy = static_cast<const char*>(inputs[kGradOutput].data);
    ForEachRun(r, attrs_.step, SizeOf(output.dtype),
               [&](int64_t from, int64_t at, int64_t bytes) {
                 std::memcpy(dx + at, dy + from, bytes);
               });
  }

 private:
  SliceBackwardDataAttrs attrs_;
};

AI3_REGISTER_ALGORITHM(SliceBackwardDataAttrs, "direct", Device::kCPU,
                       KernelAlgorithm<SliceBackwardDataAttrs, DataKernel>);

}  // namespace
}  // namespace ai3
