// How every reduction walks its input (mean.h), forward (direct.cc) and
// backward (backward_direct.cc): the input's dimensions merged into
// alternating blocks of kept and reduced ones (size-1 dims dropped), e.g.
// NCHW over (H, W) is [kept NC, reduced HW] and NHWC over (H, W) is [kept
// N, reduced HW, kept C]. The input is read as rows of its innermost
// block; OutputOffset says which output a row's first element belongs to.
#ifndef AI3_CORE_OPS_MEAN_REDUCE_KERNEL_H_
#define AI3_CORE_OPS_MEAN_REDUCE_KERNEL_H_

#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace ai3 {
namespace reduce {

constexpr int kMaxBlocks = 32;

struct Blocks {
  int count = 0;
  int64_t size[kMaxBlocks];
  bool reduced[kMaxBlocks];
  int64_t out_stride[kMaxBlocks];  // 0 for reduced blocks
  int64_t reduce_count = 1;        // elements folded per output
};

// The caller checks shape.size() <= kMaxBlocks.
inline Blocks MakeBlocks(const Shape& shape, const std::vector<bool>& reduced) {
  Blocks b;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (reduced[i]) b.reduce_count *= shape[i];
    if (shape[i] == 1) continue;
    if (b.count > 0 && b.reduced[b.count - 1] == reduced[i]) {
      b.size[b.count - 1] *= shape[i];
      continue;
    }
    b.size[b.count] = shape[i];
    b.reduced[b.count] = reduced[i];
    ++b.count;
  }
  if (b.count == 0) {  // one element
    b.size[0] = 1;
    b.reduced[0] = false;
    b.count = 1;
  }
  int64_t s = 1;
  for (int i = b.count - 1; i >= 0; --i) {
    b.out_stride[i] = b.reduced[i] ? 0 : s;
    if (!b.reduced[i]) s *= b.size[i];
  }
  return b;
}

// The output offset of row `row` of blocks [first, count - 1) (rows of the
// innermost block, numbered from the start of block `first`): a reduced
// innermost block folds the whole row into that output, a kept one spreads
// it over the outputs from there on.
inline int64_t OutputOffset(const Blocks& b, int first, int64_t row) {
  int64_t off = 0;
  for (int i = b.count - 2; i >= first; --i) {
    off += (row % b.size[i]) * b.out_stride[i];
    row /= b.size[i];
  }
  return off;
}

}  // namespace reduce
}  // namespace ai3

#endif  // AI3_CORE_OPS_MEAN_REDUCE_KERNEL_H_
