// The CPU walk over a broadcast output (BroadcastIndex, broadcast.h) that
// the binary ops' and the comparisons' "direct" kernels share: (row, block
// of the innermost run) tasks over OpenMP threads when the output is large
// enough, so one long row (same-shape operands) threads as well as many
// short ones. Apart from broadcast.h because CUDA kernels include that one.
#ifndef AI3_CORE_OPS_BINARY_BROADCAST_RUNS_H_
#define AI3_CORE_OPS_BINARY_BROADCAST_RUNS_H_

#include <algorithm>
#include <cstdint>

#include "core/ops/binary/broadcast.h"
#include "core/parallel.h"

namespace ai3 {

// Calls run(off_a, off_b, off_y, len) for every block of at most `block`
// elements of every output row: the operands' offsets of the block's first
// element (each then steps by ix.stride_a / stride_b of the last dimension,
// 0 or 1) and the output's (contiguous). Threads when the output has at
// least `parallel_elements` elements.
template <class Run>
void ForEachBroadcastRun(const BroadcastIndex& ix, int64_t block,
                         int64_t parallel_elements, Run&& run) {
  const int64_t rows = ix.rows();
  const int64_t inner = ix.inner();
  const int64_t blocks = (inner + block - 1) / block;
  const int64_t step_a = ix.stride_a[ix.rank - 1];
  const int64_t step_b = ix.stride_b[ix.rank - 1];
  ParallelFor(0, rows * blocks, rows * inner >= parallel_elements,
              [&](int64_t t) {
                const int64_t row = t / blocks;
                const int64_t begin = (t % blocks) * block;
                const int64_t len = std::min(block, inner - begin);
                int64_t off_a, off_b;
                ix.RowOffsets(row, &off_a, &off_b);
                run(off_a + begin * step_a, off_b + begin * step_b,
                    row * inner + begin, len);
              });
}

}  // namespace ai3

#endif  // AI3_CORE_OPS_BINARY_BROADCAST_RUNS_H_
