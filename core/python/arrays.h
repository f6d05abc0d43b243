// NumPy arrays <-> core tensors, for the bindings of ai3._core: views of
// an array's memory (no copy), with its strides kept so that the core can
// refuse a non-contiguous array instead of misreading it.
#ifndef AI3_CORE_PYTHON_ARRAYS_H_
#define AI3_CORE_PYTHON_ARRAYS_H_

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

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
  Fail(ErrorKind::kDType, what, " has dtype ", std::string(py::str(a.dtype())),
       "; ai3 takes float32 or float64");
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

inline py::array EmptyArray(DType dtype, const Shape& shape) {
  std::vector<py::ssize_t> dims(shape.begin(), shape.end());
  if (dtype == DType::kFloat64) return py::array_t<double>(dims);
  return py::array_t<float>(dims);
}

inline DType ParseDType(const std::string& dtype) {
  if (dtype == "float32") return DType::kFloat32;
  if (dtype == "float64") return DType::kFloat64;
  Fail(ErrorKind::kDType, "dtype must be 'float32' or 'float64', got '", dtype,
       "'");
}

}  // namespace ai3

#endif  // AI3_CORE_PYTHON_ARRAYS_H_
