#include "core/tensor.h"

#include <sstream>

namespace ai3 {

size_t SizeOf(DType dtype) {
  return dtype == DType::kFloat64 ? sizeof(double) : sizeof(float);
}

const char* Name(DType dtype) {
  return dtype == DType::kFloat64 ? "float64" : "float32";
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

Shape ImageShape(const ImageDims& d, Layout layout) {
  if (layout == Layout::kNHWC) return {d.n, d.h, d.w, d.c};
  return {d.n, d.c, d.h, d.w};
}

ImageStrides ImageStridesOf(const ImageDims& d, Layout layout) {
  if (layout == Layout::kNHWC) return {d.h * d.w * d.c, 1, d.w * d.c, d.c};
  return {d.c * d.h * d.w, d.h * d.w, d.w, 1};
}

}  // namespace ai3
