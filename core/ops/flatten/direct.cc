// flatten "direct": flattening a contiguous tensor changes only its shape, so
// the output (a separate buffer) is a copy of the input's bytes; large copies
// are split over OpenMP threads.
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "core/ops/flatten/flatten.h"
#include "core/registry.h"

namespace ai3 {
namespace {

// Below this many bytes one thread copies faster than several.
constexpr size_t kParallelBytes = size_t{1} << 20;

class DirectKernel : public Kernel {
 public:
  void Run(const Tensor& input, const Tensor& output, void*) override {
    const size_t bytes = input.numel() * SizeOf(input.dtype);
    const char* src = static_cast<const char*>(input.data);
    char* dst = static_cast<char*>(output.data);
    if (bytes < kParallelBytes) {
      std::memcpy(dst, src, bytes);
      return;
    }
#pragma omp parallel
    {
      const size_t threads = omp_get_num_threads();
      const size_t t = omp_get_thread_num();
      // 64-byte aligned chunks, so threads never share a cache line.
      const size_t chunk = (bytes / threads + 63) / 64 * 64;
      const size_t begin = std::min(bytes, t * chunk);
      const size_t end = std::min(bytes, begin + chunk);
      if (end > begin) std::memcpy(dst + begin, src + begin, end - begin);
    }
  }
};

class Direct : public Algorithm<FlattenAttrs> {
 public:
  std::unique_ptr<Kernel> Prepare(const FlattenAttrs&,
                                  const std::vector<Tensor>&) const override {
    return std::make_unique<DirectKernel>();
  }
};

AI3_REGISTER_ALGORITHM(FlattenAttrs, "direct", Device::kCPU, Direct);

}  // namespace
}  // namespace ai3
