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

inline py::array EmptyArray(DType dtype, const Shape& shape) {
  std::vector<py::ssize_t> dims(shape.begin(), shape.end());
  switch (dtype) {
    case DType::kFloat64:
      return py::array_t<double>(dims);
    case DType::kInt64:
      return py::array_t<int64_t>(dims);
    case DType::kBool:
      return py::array_t<bool>(dims);
    case DType::kFloat32:
      break;
  }
  return py::array_t<float>(dims);
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
