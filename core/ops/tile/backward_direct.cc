// tile_backward_data and expand_backward_data, "direct": dx[j] is the sum of
// dy over every output position copied from x[j]. Output coordinate c of a
// dimension reads input coordinate c mod n (n the input's size there, tile.h),
// so dy's dimension of size m seen as (m / n, n), copy-major, puts each
// position's source in the second axis: dx is dy in that view summed over
// the first axes, which is a reduction over the block walk that mean and
// its family use (core/ops/mean/reduce_walk.h).
#include <cstdint>
#include <vector>

#include "core/layer.h"
#include "core/math/dispatch.h"
#include "core/ops/binary/broadcast.h"
#include "core/ops/mean/reduce_walk.h"
#include "core/ops/tile/tile.h"
#include "core/registry.h"

namespace ai3 {
namespace {

template <class Attrs>
class RepeatGradientKernel : public MultiInputKernel {
 public:
  explicit RepeatGradientKernel(const Attrs&) {}

  void RunInputs(const std::vector<Tensor>& inputs, const Tensor& output,
                 void*) override {
    const Tensor& dy = inputs[kGradOutput];
    const size_t rank = dy.shape.size();
    const Shape in = AlignedInputShape(output.shape, rank);
    // The view [m0 / n0, n0, m1 / n1, n1, ...], its copy axes reduced.
    // (n = 0 means m = 0: no copies and no elements.)
    Shape view;
    std::vector<bool> reduced;
    for (size_t d = 0; d < rank; ++d) {
      view.push_back(in[d] == 0 ? 0 : dy.shape[d] / in[d]);
      view.push_back(in[d]);
      reduced.push_back(true);
      reduced.push_back(false);
    }
    const reduce::Blocks b = reduce::MakeBlocks(view, reduced);
    DispatchFloat(dy.dtype, [&](auto zero) {
      using T = decltype(zero);
      reduce::FoldInto<Reduction::kSum, T>(b, dy.data_as<const T>(),
                                           output.data_as<T>(), nullptr,
                                           dy.numel(), output.numel());
    });
  }
};

// (Tile and expand take at most kMaxBroadcastRank dims, so the view's twice
// as many fit reduce::kMaxBlocks.)
static_assert(2 * kMaxBroadcastRank <= reduce::kMaxBlocks);

AI3_REGISTER_ALGORITHM(
    TileBackwardDataAttrs, "direct", Device::kCPU,
    KernelAlgorithm<TileBackwardDataAttrs,
                    RepeatGradientKernel<TileBackwardDataAttrs>>);
AI3_REGISTER_ALGORITHM(
    ExpandBackwardDataAttrs, "direct", Device::kCPU,
    KernelAlgorithm<ExpandBackwardDataAttrs,
                    RepeatGradientKernel<ExpandBackwardDataAttrs>>);

}  // namespace
}  // namespace ai3
