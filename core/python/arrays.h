// NumPy arrays <-> core tensors, for the bindings of ai3._core: views of
// an array's memory (no copy), with its strides kept so that the core can
// refuse a non-contiguous array instead of misreading it.
#ifndef AI3_CORE_PYTHON_ARRAYS_H_
#define AI3_CORE_PYTHON_ARRAYS_H_

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdlib>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/tensor.h"

namespace ai3 {
namespace py = pybind11;

// Equivalence, not identity: an unpickled or deep-copied array's dtype is an
// equal but distinct object. (A byte-swapped dtype is not equivalent.)
inline bool HasDType(const py::array& a, const py::dtype& dtype) {
  return py::detail::npy_api::get().PyArray_EquivTypes_(a.dtype().ptr(),
                                                        dtype.ptr());
}

inline DType DTypeOf(const py::array& a, const char* what) {
  if (HasDType(a, py::dtype::of<float>())) return DType::kFloat32;
  if (HasDType(a, py::dtype::of<double>())) return DType::kFloat64;
  if (HasDType(a, py::dtype::of<int64_t>())) return DType::kInt64;
  if (HasDType(a, py::dtype::of<bool>())) return DType::kBool;
  Fail(ErrorKind::kDType, what, " has dtype ", std::string(py::str(a.dtype())),
       "; ai3 takes float32, float64, int64 or bool");
}

// A view of the array's memory (no copy). Strides are kept so the core can
// refuse a non-contiguous array instead of misreading it.
inline Tensor TensorOf(const py::array& a, const char* what,
                       Layout layout = Layout::kNCHW) {
  Tensor t;
  t.dtype = DTypeOf(a, what);
  t.data = const_cast<void*>(a.data());
  t.layout = layout;
  for (py::ssize_t i = 0; i < a.ndim(); ++i) {
    t.shape.push_back(a.shape(i));
    t.strides.push_back(a.strides(i) / static_cast<py::ssize_t>(a.itemsize()));
    if (a.strides(i) % static_cast<py::ssize_t>(a.itemsize()) != 0) {
      Fail(ErrorKind::kInvalidArgument, what, " has unaligned strides");
    }
  }
  return t;
}

// The memory of large result arrays, kept for the next ones. glibc serves
// blocks this large with mmap and gives them back to the OS on free, so
// each new result's first writes fault in fresh pages, which the kernel
// zeroes: a 128 MB conv2d output (the seed's 10x64x224x224) took 13 ms to
// fill fresh against 5 ms refilled, about as long again as the convolution
// (ONNX Runtime's arena keeps its outputs' memory the same way). A freed
// array's block waits here, mapped, for the next result that fits it.
// Bounded: at most kHeldBlocks blocks and kHeldBytes bytes (the oldest go
// first), so a process that stops calling holds little.
class ResultMemory {
 public:
  static constexpr size_t kMinBytes = size_t{1} << 20;  // smaller: malloc's
  static constexpr size_t kHeldBlocks = 8;
  static constexpr size_t kHeldBytes = size_t{1} << 30;

  // Never destroyed: arrays may be freed during interpreter shutdown.
  static ResultMemory& Get() {
    static ResultMemory* memory = new ResultMemory;
    return *memory;
  }

  // A block of at least `bytes` (64-byte aligned), and its size: a held one
  // of at most twice that, else a new one.
  void* Take(size_t bytes, size_t* size) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      size_t best = held_.size();
      for (size_t i = 0; i < held_.size(); ++i) {
        const size_t s = held_[i].size;
        if (s >= bytes && s <= 2 * bytes &&
            (best == held_.size() || s < held_[best].size)) {
          best = i;
        }
      }
      if (best < held_.size()) {
        const Block block = held_[best];
        held_.erase(held_.begin() + static_cast<std::ptrdiff_t>(best));
        held_bytes_ -= block.size;
        *size = block.size;
        return block.data;
      }
    }
    *size = (bytes + 4095) / 4096 * 4096;
    void* data = std::aligned_alloc(64, *size);
    if (data == nullptr) throw std::bad_alloc();
    return data;
  }

  // Keeps a freed result's block (or frees it when it is too small, or
  // would stay alone over the bound).
  void Give(void* data, size_t size) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (size < kMinBytes || size > kHeldBytes) {
      std::free(data);
      return;
    }
    held_.push_back({data, size});
    held_bytes_ += size;
    while (held_.size() > kHeldBlocks || held_bytes_ > kHeldBytes) {
      held_bytes_ -= held_.front().size;
      std::free(held_.front().data);
      held_.erase(held_.begin());
    }
  }

 private:
  struct Block {
    void* data;
    size_t size;
  };
  std::mutex mutex_;
  std::vector<Block> held_;  // oldest first
  size_t held_bytes_ = 0;
};

// An uninitialised C-contiguous array for a result; large ones in memory
// from ResultMemory, returned to it when the array is freed.
inline py::array EmptyArray(DType dtype, const Shape& shape) {
  std::vector<py::ssize_t> dims(shape.begin(), shape.end());
  py::dtype type = py::dtype::of<float>();
  switch (dtype) {
    case DType::kFloat64:
      type = py::dtype::of<double>();
      break;
    case DType::kInt64:
      type = py::dtype::of<int64_t>();
      break;
    case DType::kBool:
      type = py::dtype::of<bool>();
      break;
    case DType::kFloat32:
      break;
  }
  const size_t bytes = static_cast<size_t>(NumElements(shape)) *
                       static_cast<size_t>(SizeOf(dtype));
  if (bytes < ResultMemory::kMinBytes) return py::array(type, dims);
  struct Owned {
    void* data;
    size_t size;
  };
  size_t size = 0;
  void* data = ResultMemory::Get().Take(bytes, &size);
  auto* owned = new Owned{data, size};
  py::capsule base(owned, [](void* p) {
    auto* o = static_cast<Owned*>(p);
    ResultMemory::Get().Give(o->data, o->size);
    delete o;
  });
  return py::array(type, dims, {}, owned->data, base);
}

inline DType ParseDType(const std::string& dtype) {
  for (DType t :
       {DType::kFloat32, DType::kFloat64, DType::kInt64, DType::kBool}) {
    if (dtype == Name(t)) return t;
  }
  Fail(ErrorKind::kDType,
       "dtype must be 'float32', 'float64', 'int64' or 'bool', got '", dtype,
       "'");
}

// One dtype per input: a list of names, or one name for every input.
inline std::vector<DType> ParseDTypes(const py::object& dtypes, size_t count) {
  if (py::isinstance<py::str>(dtypes)) {
    return std::vector<DType>(count, ParseDType(dtypes.cast<std::string>()));
  }
  std::vector<DType> out;
  for (const py::handle& d : dtypes) out.push_back(ParseDType(py::str(d)));
  return out;
}

}  // namespace ai3

#endif  // AI3_CORE_PYTHON_ARRAYS_H_
