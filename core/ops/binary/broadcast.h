// NumPy broadcasting of two shapes, shared by the binary elementwise ops
// (add, sub, mul, div) and matmul's batch dimensions.
//
// Shapes are aligned at their last dimension; each pair of dimensions must
// be equal or one of them 1, and the result takes the larger. A missing
// leading dimension counts as 1.
//
// BroadcastIndex turns the broadcast into loops a kernel can run fast: the
// output viewed as rows of a contiguous innermost run, with adjacent
// dimensions merged where neither operand breaks them, and each operand's
// element stride per merged dimension (0 where it is broadcast). It lives in
// fixed arrays so that running a layer allocates nothing.
#ifndef AI3_CORE_OPS_BINARY_BROADCAST_H_
#define AI3_CORE_OPS_BINARY_BROADCAST_H_

#include <algorithm>
#include <cstdint>
#include <string>

#include "core/errors.h"
#include "core/tensor.h"

namespace ai3 {

// The most dimensions a broadcast output may have.
inline constexpr int kMaxBroadcastRank = 12;

// The broadcast of `a` and `b`; throws kShape naming both shapes (`what_a`,
// `what_b` say which operands they are) when they do not broadcast.
inline Shape BroadcastShapes(const Shape& a, const Shape& b, const char* what_a,
                             const char* what_b) {
  const size_t rank = std::max(a.size(), b.size());
  if (rank > static_cast<size_t>(kMaxBroadcastRank)) {
    Fail(ErrorKind::kShape, what_a, " ", ToString(a), " and ", what_b, " ",
         ToString(b), " have more than ", kMaxBroadcastRank, " dimensions");
  }
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da < 0 || db < 0) {
      Fail(ErrorKind::kShape, "negative dimension in ", what_a, " ",
           ToString(a), " or ", what_b, " ", ToString(b));
    }
    if (da != db && da != 1 && db != 1) {
      Fail(ErrorKind::kShape, what_a, " ", ToString(a), " and ", what_b, " ",
           ToString(b), " do not broadcast: dimension ",
           static_cast<int64_t>(i) - static_cast<int64_t>(rank), " is ", da,
           " vs ", db, " (NumPy broadcasting needs equal sizes or 1)");
    }
    out[i] = da == 1 ? db : da;
  }
  // Broadcasting multiplies sizes ((n, 1) with (1, m)): the result must
  // still be a tensor the core can index.
  CheckShape(out, "the broadcast shape");
  return out;
}

// `out` = BroadcastShapes(a, b) viewed as `rank` merged dimensions; element
// (i_0, ..., i_{rank-1}) of the output is a[sum i_d * stride_a[d]] op
// b[sum i_d * stride_b[d]]. The last merged dimension is the innermost run:
// its strides are 0 or 1.
struct BroadcastIndex {
  int rank = 0;
  int64_t dims[kMaxBroadcastRank];
  int64_t stride_a[kMaxBroadcastRank];
  int64_t stride_b[kMaxBroadcastRank];

  BroadcastIndex(const Shape& a, const Shape& b, const Shape& out) {
    const int full = static_cast<int>(out.size());
    // Per output dimension: size and each operand's contiguous stride (0
    // where broadcast), from the innermost out.
    int64_t sa[kMaxBroadcastRank], sb[kMaxBroadcastRank];
    int64_t pa = 1, pb = 1;
    for (int i = full - 1; i >= 0; --i) {
      const int ia = i - (full - static_cast<int>(a.size()));
      const int ib = i - (full - static_cast<int>(b.size()));
      const int64_t da = ia >= 0 ? a[ia] : 1;
      const int64_t db = ib >= 0 ? b[ib] : 1;
      sa[i] = da == 1 && out[i] != 1 ? 0 : pa;
      sb[i] = db == 1 && out[i] != 1 ? 0 : pb;
      pa *= da;
      pb *= db;
    }
    // Merge dimension i into the running (inner) one when, for both
    // operands, stepping i equals stepping the inner one by its full size.
    // Size-1 dimensions vanish.
    for (int i = full - 1; i >= 0; --i) {
      if (out[i] == 1) continue;
      if (rank > 0) {
        const int j = rank - 1;  // the dimension merged last (outermost)
        const bool mergeable =
            sa[i] == stride_a[j] * dims[j] && sb[i] == stride_b[j] * dims[j];
        if (mergeable) {
          dims[j] *= out[i];
          continue;
        }
      }
      dims[rank] = out[i];
      stride_a[rank] = sa[i];
      stride_b[rank] = sb[i];
      ++rank;
    }
    if (rank == 0) {  // a single element
      dims[0] = 1;
      stride_a[0] = stride_b[0] = 1;
      rank = 1;
    }
    // Built innermost first; store outermost first.
    std::reverse(dims, dims + rank);
    std::reverse(stride_a, stride_a + rank);
    std::reverse(stride_b, stride_b + rank);
  }

  int64_t inner() const { return dims[rank - 1]; }
  int64_t rows() const {
    int64_t r = 1;
    for (int d = 0; d + 1 < rank; ++d) r *= dims[d];
    return r;
  }
  // The operands' offsets of the first element of output row `row`.
  void RowOffsets(int64_t row, int64_t* off_a, int64_t* off_b) const {
    int64_t oa = 0, ob = 0;
    for (int d = rank - 2; d >= 0; --d) {
      const int64_t i = row % dims[d];
      row /= dims[d];
      oa += i * stride_a[d];
      ob += i * stride_b[d];
    }
    *off_a = oa;
    *off_b = ob;
  }
};

}  // namespace ai3

#endif  // AI3_CORE_OPS_BINARY_BROADCAST_H_
