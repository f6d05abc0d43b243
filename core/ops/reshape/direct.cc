// reshape "direct": a copy of the elements (the Model gives every node its
// own buffer, and the output must not alias the input). Large copies are
// split over OpenMP threads in contiguous chunks.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "core/ops/reshape/reshape.h"
#include "core/parallel.h"
#include "core/registry.h"

namespace ai3 {
namespace {

// Bytes per thread chunk; below two chunks one thread copies.
constexpr int64_t kChunk = 1 << 18;

class DirectKernel : public Kernel {
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
};

class Direct : public Algorithm<ReshapeAttrs> {
 public:
  std::unique_ptr<Kernel> Prepare(const ReshapeAttrs&,
                                  const std::vector<Tensor>&) const override {
    return std::make_unique<DirectKernel>();
  }
};

AI3_REGISTER_ALGORITHM(ReshapeAttrs, "direct", Device::kCPU, Direct);

}  // namespace
}  // namespace ai3
