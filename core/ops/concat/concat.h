// concat: several tensors joined along one axis, for DenseNet, GoogLeNet,
// Inception and SqueezeNet blocks in an ai3::Model.
//
// Unlike the other ops this is a plain function, not a Layer with
// registered algorithms: Layer and the registry are built around one input
// tensor, and joining several is a copy with one sensible algorithm. The
// Model (core/graph.cc) checks shapes and calls this.
#ifndef AI3_CORE_OPS_CONCAT_CONCAT_H_
#define AI3_CORE_OPS_CONCAT_CONCAT_H_

#include <cstdint>

namespace ai3 {

// Any concatenation of contiguous tensors along an axis is this: view input
// k as `outer` rows of widths[k] elements (widths[k] = its size along the
// axis times the product of the dims after it; outer = the product of the
// dims before it); each output row is the inputs' rows side by side:
//   y[o, :] = x[0][o, :] | x[1][o, :] | ... | x[count - 1][o, :]
// A null x[k] is already in place (ai3::Model had its producer write it
// into its slice of y) and is skipped. `y`'s row slice being written must
// not overlap the input copied into it (an input may be another slice of
// y: an input read twice, copied from where it was placed).
void ConcatForward(const float* const* x, const int64_t* widths, int count,
                   int64_t outer, float* y);
void ConcatForward(const double* const* x, const int64_t* widths, int count,
                   int64_t outer, double* y);

}  // namespace ai3

#endif  // AI3_CORE_OPS_CONCAT_CONCAT_H_
