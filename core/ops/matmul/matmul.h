// matmul: torch.matmul / ONNX MatMul / numpy @ — a product of the last two
// dims, batched over the leading ones with NumPy broadcasting:
//   2 inputs:           y = x0 @ x1
//   1 input + "other":  y = x @ other (a constant weight, e.g. ONNX MatMul
//                       with an initializer)
// A 1-D left operand (K) is a row (1, K) and a 1-D right one a column (K, 1),
// and that dimension is dropped from the result, as torch.matmul does. The
// dtype, float32 or float64, is the inputs' (a constant must have it too).
#ifndef AI3_CORE_OPS_MATMUL_MATMUL_H_
#define AI3_CORE_OPS_MATMUL_MATMUL_H_

#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace ai3 {

struct MatmulAttrs {
  static constexpr char kOp[] = "matmul";

  // True: one input and the constant right operand params[0].
  bool has_other = false;
  // With has_other: the constant's shape and dtype, as params[0] has them.
  Shape other_shape;
  DType other_dtype = DType::kFloat32;

  int MinInputs() const { return has_other ? 1 : 2; }
  int MaxInputs() const { return has_other ? 1 : 2; }

  // The product's dimensions: batch shapes of both operands (rank-2 views,
  // right-aligned) and of the output, and M, K, N.
  struct Dims {
    Shape a_batch, b_batch, batch;
    int64_t m, k, n;
    Shape out;
  };

  void Validate(const std::vector<Tensor>& params) const;
  Shape OutputShape(const std::vector<Tensor>& inputs) const;
  // Throws kShape when K differs or the batch dims do not broadcast.
  Dims DimsOf(const Shape& a, const Shape& b) const;
};

}  // namespace ai3

#endif  // AI3_CORE_OPS_MATMUL_MATMUL_H_
