// The kernel of ops whose output holds the input's bytes unchanged (flatten
// and reshape of a contiguous tensor change only the shape): a copy, since
// the Model gives every node its own buffer and the output must not alias
// the input. Large copies are split over OpenMP threads in contiguous
// chunks.
#ifndef AI3_CORE_OPS_COPY_H_
#define AI3_CORE_OPS_COPY_H_

#include <algorithm>
#include <cstdint>
#include <cstring>

#include <vector>

#include "core/layer.h"
#include "core/ops/backward.h"
#include "core/parallel.h"
#include "core/registry.h"
#include "core/tensor.h"

namespace ai3 {

class CopyKernel : public Kernel {
 public:
  void Run(const Tensor& input, const Tensor& output, void*) override {
    const int64_t bytes = input.numel() * SizeOf(input.dtype);
    const char* x = static_cast<const char*>(input.data);
    char* y = static_cast<char*>(output.data);
    const int64_t chunks = (bytes + kChunk - 1) / kChunk;
    ParallelFor(0, chunks, chunks > 1, [&](int64_t c) {
      const int64_t begin = c * kChunk;
      std::memcpy(y + begin, x + begin, std::min(kChunk, bytes - begin));
    });
  }

 private:
  // Bytes per thread chunk (a multiple of the cache line, so threads never
  // share one); below two chunks one thread copies.
  static constexpr int64_t kChunk = 1 << 18;
};

// The input gradient of such an op (flatten_backward_data,
// reshape_backward_data): dy's bytes in x's shape, copied as above.
class GradOutputCopyKernel : public MultiInputKernel {
 public:
  void RunInputs(const std::vector<Tensor>& inputs, const Tensor& output,
                 void* workspace) override {
    copy_.Run(inputs[kGradOutput], output, workspace);
  }

 private:
  CopyKernel copy_;
};

}  // namespace ai3

#endif  // AI3_CORE_OPS_COPY_H_
