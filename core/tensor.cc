#include "core/tensor.h"

#include <sstream>

#include "core/errors.h"

namespace ai3 {

size_t SizeOf(DType dtype) {
  switch (dtype) {
    case DType::kFloat64:
      return sizeof(double);
    case DType::kInt64:
      return sizeof(int64_t);
    case DType::kBool:
      return sizeof(bool);
    case DType::kFloat32:
      break;
  }
  return sizeof(float);
}

const char* Name(DType dtype) {
  switch (dtype) {
    case DType::kFloat64:
      return "float64";
    case DType::kInt64:
      return "int64";
    case DType::kBool:
      return "bool";
    case DType::kFloat32:
      break;
  }
  return "float32";
}

const char* Name(Layout layout) {
  return layout == Layout::kNHWC ? "NHWC" : "NCHW";
}

const char* Name(Device device) {
  return device == Device::kCUDA ? "cuda" : "cpu";
}

std::string ToString(const Shape& shape) {
  std::ostringstream out;
  out << "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    out << (i ? ", " : "") << shape[i];
  }
  out << (shape.size() == 1 ? ",)" : ")");
  return out.str();
}

int64_t NumElements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t CheckedAdd(int64_t a, int64_t b, const char* what) {
  int64_t sum;
  if (__builtin_add_overflow(a, b, &sum)) {
    Fail(ErrorKind::kShape, what, " overflows int64 (", a, " + ", b, ")");
  }
  return sum;
}

int64_t CheckedMul(int64_t a, int64_t b, const char* what) {
  int64_t product;
  if (__builtin_mul_overflow(a, b, &product)) {
    Fail(ErrorKind::kShape, what, " overflows int64 (", a, " * ", b, ")");
  }
  return product;
}

int64_t CheckShape(const Shape& shape, const char* what) {
  int64_t nonzero = 1;
  bool empty = false;
  for (int64_t d : shape) {
    if (d < 0) {
      Fail(ErrorKind::kShape, what,
           " has a negative dimension: ", ToString(shape));
    }
    if (d == 0) {
      empty = true;
      continue;
    }
    // nonzero <= kMaxElements, so nonzero * d cannot wrap unless d is more
    // than kMaxElements / nonzero, which this tests without multiplying.
    if (d > kMaxElements / nonzero) {
      Fail(ErrorKind::kShape, what, " ", ToString(shape),
           " is too large: its size in bytes would overflow int64");
    }
    nonzero *= d;
  }
  return empty ? 0 : nonzero;
}

bool Tensor::IsContiguous() const {
  if (strides.empty() || numel() == 0) return true;
  int64_t expected = 1;
  for (int64_t i = rank() - 1; i >= 0; --i) {
    // A dimension of size 1 may carry any stride without changing addresses.
    if (shape[i] != 1 && strides[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}

ImageDims ImageDimsOf(const Shape& shape, Layout layout) {
  if (layout == Layout::kNHWC) return {shape[0], shape[3], shape[1], shape[2]};
  return {shape[0], shape[1], shape[2], shape[3]};
}

ImageDims ChannelDims(const Shape& shape, Layout layout) {
  const size_t rank = shape.size();
  const bool last = layout == Layout::kNHWC;
  int64_t spatial = 1;
  for (size_t d = last ? 1 : 2; d < (last ? rank - 1 : rank); ++d) {
    spatial *= shape[d];
  }
  return {shape[0], shape[last ? rank - 1 : 1], spatial, 1};
}

ImageDims Rank4InputDims(const Tensor& input, Layout layout) {
  if (input.rank() != 4) {
    Fail(ErrorKind::kShape, "expected a rank-4 ", Name(layout), " input (",
         layout == Layout::kNHWC ? "N, H, W, C" : "N, C, H, W", "), got rank ",
         input.rank(), " ", ToString(input.shape));
  }
  CheckShape(input.shape, "input");
  return ImageDimsOf(input.shape, layout);
}

Shape ImageShape(const ImageDims& d, Layout layout) {
  if (layout == Layout::kNHWC) return {d.n, d.h, d.w, d.c};
  return {d.n, d.c, d.h, d.w};
}

ImageStrides ImageStridesOf(const ImageDims& d, Layout layout) {
  if (layout == Layout::kNHWC) return {d.h * d.w * d.c, 1, d.w * d.c, d.c};
  return {d.c * d.h * d.w, d.h * d.w, d.w, 1};
}

}  // namespace ai3
