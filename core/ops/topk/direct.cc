// topk "direct": the input viewed as [outer, size, inner] around the axis;
// for each of the outer * inner lines along the axis, the line's indices
// 0..size-1 are partially sorted (std::partial_sort, O(size log k)) by
// value, best first, ties by index, and the first k written out. Each
// thread sorts in its own slice of the workspace (`size` indices), so a
// forward pass allocates nothing; lines are split over the threads when
// there is enough to sort.
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "core/errors.h"
#include "core/ops/checks.h"
#include "core/ops/topk/topk.h"
#include "core/registry.h"

namespace ai3 {
namespace {

constexpr int64_t kParallelElements = 1 << 14;

// Whether a ranks before b (a, b being values; ties are decided by index by
// the caller). NaN ranks above every number, and equal to another NaN.
template <typename T>
inline bool Above(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (a != a) return b == b;
    if (b != b) return false;
  }
  return a > b;
}

template <typename T>
void Sort(const TopkAttrs& attrs, const Tensor& input, const Tensor& output,
          int64_t* slots, int threads) {
  const Shape& shape = input.shape;
  const int64_t axis = DimOfAxis(attrs.axis, shape);
  const int64_t outer = DimsProduct(shape, 0, axis);
  const int64_t size = shape[axis];
  const int64_t inner = DimsProduct(shape, axis + 1, input.rank());
  const int64_t k = attrs.k;
  const bool largest = attrs.largest;
  const T* x = input.data_as<const T>();
  int64_t* y = output.data_as<int64_t>();
  const int64_t lines = outer * inner;
  if (k == 0 || lines == 0) return;
  const bool parallel =
      threads > 1 && lines > 1 && input.numel() >= kParallelElements;
#pragma omp parallel num_threads(parallel ? threads : 1)
  {
    int64_t* order = slots + static_cast<int64_t>(omp_get_thread_num()) * size;
#pragma omp for schedule(static)
    for (int64_t line = 0; line < lines; ++line) {
      const int64_t o = line / inner, c = line % inner;
      const T* xl = x + o * size * inner + c;
      for (int64_t i = 0; i < size; ++i) order[i] = i;
      auto better = [&](int64_t a, int64_t b) {
        const T va = xl[a * inner], vb = xl[b * inner];
        if (largest ? Above(va, vb) : Above(vb, va)) return true;
        if (largest ? Above(vb, va) : Above(va, vb)) return false;
        return a < b;
      };
      std::partial_sort(order, order + k, order + size, better);
      int64_t* yl = y + o * k * inner + c;
      for (int64_t j = 0; j < k; ++j) yl[j * inner] = order[j];
    }
  }
}

class TopkKernel : public Kernel {
 public:
  explicit TopkKernel(const TopkAttrs& attrs) : attrs_(attrs) {}

  // One line's indices per thread (omp_get_max_threads(), as Run asks it
  // just after, in the same context).
  size_t WorkspaceBytes(const Shape& input_shape) const override {
    if (input_shape.empty()) return 0;
    const int64_t size = input_shape[DimOfAxis(attrs_.axis, input_shape)];
    return static_cast<size_t>(omp_get_max_threads()) *
           static_cast<size_t>(size) * sizeof(int64_t);
  }

  void Run(const Tensor& input, const Tensor& output,
           void* workspace) override {
    int64_t* slots = static_cast<int64_t*>(workspace);
    const int threads = omp_get_max_threads();
    switch (input.dtype) {
      case DType::kFloat32:
        return Sort<float>(attrs_, input, output, slots, threads);
      case DType::kFloat64:
        return Sort<double>(attrs_, input, output, slots, threads);
      case DType::kInt64:
        return Sort<int64_t>(attrs_, input, output, slots, threads);
      default:
        Fail(ErrorKind::kDType, "topk takes float32, float64 or int64, got ",
             Name(input.dtype));
    }
  }

 private:
  TopkAttrs attrs_;
};

AI3_REGISTER_ALGORITHM(TopkAttrs, "direct", Device::kCPU,
                       KernelAlgorithm<TopkAttrs, TopkKernel>);

}  // namespace
}  // namespace ai3
