// Tensor: a typed, shaped view of memory the core reads or writes. The core
// never owns a caller's data; frameworks hand their buffers in without
// copies (see core/python).
#ifndef AI3_CORE_TENSOR_H_
#define AI3_CORE_TENSOR_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ai3 {

// The element types of tensors. Most ops compute in float32 or float64;
// kInt64 (token ids, positions, gather indices) and kBool (masks, the result
// of comparisons; one byte per element, 0 or 1, as NumPy's and torch's bool)
// are taken only by the ops that say so (gather, cast, where, comparisons,
// logical ops, and the data-movement ops); the others refuse them with
// kDType (core/layer.h).
enum class DType { kFloat32, kFloat64, kInt64, kBool };

// How a rank-4 image tensor is laid out in memory. The shape of a tensor is
// always given in memory order: [N, C, H, W] for kNCHW, [N, H, W, C] for kNHWC.
enum class Layout { kNCHW, kNHWC };

// Where the data lives. kCUDA algorithms exist in builds with
// --config=cuda (core/cuda, core/ops/*/cuda).
enum class Device { kCPU, kCUDA };

using Shape = std::vector<int64_t>;

size_t SizeOf(DType dtype);
// float32 or float64: what the arithmetic ops compute in.
inline bool IsFloat(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kFloat64;
}
const char* Name(DType dtype);
const char* Name(Layout layout);
const char* Name(Device device);
std::string ToString(const Shape& shape);  // "(1, 3, 224, 224)"
int64_t NumElements(const Shape& shape);

// Checked size arithmetic. Shapes and attributes come from callers (a
// framework, custom code, an output_shape query with any ints), so a sum or
// product of sizes may overflow int64, and a kernel indexing with a wrapped
// size reads or writes out of bounds. These throw Error(kShape) saying
// `what` overflowed instead.
int64_t CheckedAdd(int64_t a, int64_t b, const char* what);
int64_t CheckedMul(int64_t a, int64_t b, const char* what);

// The largest element count a tensor may have: its size in bytes at the
// widest dtype (8 bytes) must fit in int64 (and so in size_t and in a NumPy
// array's nbytes).
inline constexpr int64_t kMaxElements = INT64_MAX / 8;

// Checks that `shape` can be a tensor the core indexes: every dimension >= 0
// and the product of the non-zero ones (what strides are made of) at most
// kMaxElements. Throws Error(kShape) naming `what` ("input", "output")
// otherwise; returns the element count. Every op checks its inputs and the
// shapes it computes with it.
int64_t CheckShape(const Shape& shape, const char* what);

struct Tensor {
  void* data = nullptr;
  DType dtype = DType::kFloat32;
  Shape shape;
  Shape strides;  // in elements; empty means C-contiguous
  Layout layout = Layout::kNCHW;
  Device device = Device::kCPU;
  // kCUDA only: which GPU holds `data`, and the cudaStream_t (kept opaque so
  // this header needs no CUDA) the caller orders its work on; kernels run
  // on that stream and do not synchronise it. Null is the default stream.
  int device_index = 0;
  void* stream = nullptr;

  int64_t numel() const { return NumElements(shape); }
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  bool IsContiguous() const;
  template <typename T>
  T* data_as() const {
    return static_cast<T*>(data);
  }
};

// The logical image dimensions of a rank-4 tensor, whatever its layout.
struct ImageDims {
  int64_t n, c, h, w;
};
ImageDims ImageDimsOf(const Shape& shape, Layout layout);
// The dims of a per-channel op's input of any rank >= 2 (BatchNorm1d's
// (N, C, L), BatchNorm3d's (N, C, D, H, W), channels last in NHWC models)
// as an image whose height is every spatial dim and whose width is 1:
// contiguous tensors of the two shapes lie alike in memory, so a rank-4
// per-channel kernel runs either.
ImageDims ChannelDims(const Shape& shape, Layout layout);
// The image dimensions of an op's input in `layout`: kShape unless it has
// rank 4 ("expected a rank-4 NCHW input (N, C, H, W), got rank ...") and a
// valid shape (CheckShape).
ImageDims Rank4InputDims(const Tensor& input, Layout layout);
Shape ImageShape(const ImageDims& dims, Layout layout);

// Element strides of each logical image dimension in a contiguous tensor, so
// one loop nest can index NCHW and NHWC alike: x[n*s.n + c*s.c + h*s.h +
// w*s.w].
struct ImageStrides {
  int64_t n, c, h, w;
};
ImageStrides ImageStridesOf(const ImageDims& dims, Layout layout);

}  // namespace ai3

#endif  // AI3_CORE_TENSOR_H_
