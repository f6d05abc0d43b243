// add: the elementwise sum of several tensors of one shape, for residual
// connections in an ai3::Model.
//
// Unlike the other ops this is a plain function, not a Layer with
// registered algorithms: Layer and the registry are built around one input
// tensor, and a sum of several has only one sensible algorithm. The Model
// (core/graph.cc) checks shapes and dtypes and calls this.
#ifndef AI3_CORE_OPS_ADD_ADD_H_
#define AI3_CORE_OPS_ADD_ADD_H_

#include <cstdint>

namespace ai3 {

// y[i] = x[0][i] + x[1][i] + ... + x[count - 1][i] for i < n, summed left to
// right as PyTorch's a + b + c. count >= 1. `y` may be one of the inputs
// (each element is read before it is written) but must not partly overlap
// one.
void AddForward(const float* const* x, int count, int64_t n, float* y);
void AddForward(const double* const* x, int count, int64_t n, double* y);

// A residual add fused after the layer that wrote y: y[i] += r[i], then
// relu if `relu`, in one pass over y while it is still in cache (ai3::Model's
// in-place residual add, core/graph.h, and the ONNX Runtime op's residual
// node, frontends/ai3/onnx/ort_op). y and r must not overlap.
void AddInPlace(float* y, const float* r, int64_t n, bool relu);
void AddInPlace(double* y, const double* r, int64_t n, bool relu);

}  // namespace ai3

#endif  // AI3_CORE_OPS_ADD_ADD_H_
