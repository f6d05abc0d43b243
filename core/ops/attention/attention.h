// attention: scaled dot-product attention (PyTorch's
// F.scaled_dot_product_attention), a layer with several inputs:
//
//   q (*batch, L, E), k (*batch, S, E), v (*batch, S, Ev)[, mask]
//   out (*batch, L, Ev) = softmax(scale * q k^T + mask + causal) v
//
// The usual shapes are (B, H, L, E) etc.; any number of leading batch
// dimensions (>= 0) is taken, identical across q, k and v (no broadcasting
// of q/k/v: a frontend expands them). Layers hold no weights.
//
// - `mask` (optional 4th input): an ADDITIVE float mask of the layer's dtype,
//   broadcastable (NumPy rules, right-aligned) to (*batch, L, S). -inf
//   removes a key. Frontends turn a boolean mask (True = take part, as in
//   torch's attn_mask) into 0 where True and -inf where False.
// - `causal`: query i sees keys j <= i, aligned top-left like torch's
//   is_causal (rows i >= S see every key). Combines with a mask.
// - `scale`: multiplies q k^T; 1/sqrt(E) unless given.
// - A row whose keys are all masked (every score -inf) gives an output row
//   of zeros, as torch's SDPA does (its "safe softmax"), never NaN. NaN in
//   the inputs or the mask propagates.
// - S == 0 (no keys) gives zeros, as torch does.
//
// Algorithms (one file each): naive (the full (L, S) score matrix per batch
// entry, GEMMs), flash (tiled, online softmax, O(blocks) memory per thread),
// chunked (query chunks with a full softmax over all keys, O(chunk * S)).
#ifndef AI3_CORE_OPS_ATTENTION_ATTENTION_H_
#define AI3_CORE_OPS_ATTENTION_ATTENTION_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/layer.h"
#include "core/registry.h"
#include "core/tensor.h"

namespace ai3 {

struct AttentionAttrs {
  static constexpr char kOp[] = "attention";

  bool causal = false;
  bool has_scale = false;  // false: scale = 1/sqrt(E)
  double scale = 0;
  bool has_mask = false;  // whether a 4th input (the mask) is given

  // The number of inputs a layer with these attrs takes (3 or 4).
  size_t NumInputs() const { return has_mask ? 4 : 3; }
  int MinInputs() const { return static_cast<int>(NumInputs()); }
  int MaxInputs() const { return static_cast<int>(NumInputs()); }
  // Checks the attributes; attention takes no parameter tensors.
  void Validate(const std::vector<Tensor>& params) const;
  // Checks q, k, v[, mask] (ranks, matching dims, dtypes, the mask's
  // broadcast) and returns the output's shape (*batch, L, Ev). Only shapes
  // and dtypes are read.
  Shape OutputShape(const std::vector<Tensor>& inputs) const;
};

// What every algorithm needs to know about one call, derived from the inputs
// by AttentionGeometry::Of (which validates as OutputShape does).
struct AttentionGeometry {
  int64_t batch = 1;  // the product of the leading dims
  int64_t l = 0, s = 0, e = 0, ev = 0;
  double scale = 1;
  bool causal = false;
  // The mask, broadcast: element (n, i, j) is at
  // mask_offsets[n] + i * mask_row_stride + j * mask_col_stride
  // (strides are 0 along broadcast dims).
  bool has_mask = false;
  std::vector<int64_t> mask_offsets;  // per batch entry
  int64_t mask_row_stride = 0;
  int64_t mask_col_stride = 0;

  static AttentionGeometry Of(const AttentionAttrs& attrs,
                              const std::vector<Tensor>& inputs);
};

// The kernel of every attention algorithm (a MultiInputKernel run by
// MultiLayer<AttentionAttrs>): derives the geometry from the inputs --
// cached per input shapes, so a Model's repeated calls allocate nothing --
// handles S == 0, and hands typed pointers to `Algo`, which provides
//   template <typename T> static size_t WorkspaceElements(
//       const AttentionGeometry&);
//   template <typename T> static void Attend(const AttentionGeometry&,
//       const T* q, const T* k, const T* v, const T* mask, T* out,
//       T* workspace);  // mask is null without one; L, S >= 1
template <class Algo>
class AttentionKernel : public MultiInputKernel {
 public:
  explicit AttentionKernel(const AttentionAttrs& attrs) : attrs_(attrs) {}

  size_t InputsWorkspaceBytes(
      const std::vector<Tensor>& inputs) const override {
    const AttentionGeometry& g = GeometryOf(inputs);
    return inputs[0].dtype == DType::kFloat64
               ? Algo::template WorkspaceElements<double>(g) * sizeof(double)
               : Algo::template WorkspaceElements<float>(g) * sizeof(float);
  }

  void RunInputs(const std::vector<Tensor>& inputs, const Tensor& output,
                 void* workspace) override {
    const AttentionGeometry& g = GeometryOf(inputs);
    if (output.dtype == DType::kFloat64) {
      Typed<double>(g, inputs, output, workspace);
    } else {
      Typed<float>(g, inputs, output, workspace);
    }
  }

 private:
  template <typename T>
  static void Typed(const AttentionGeometry& g, const std::vector<Tensor>& in,
                    const Tensor& out, void* workspace) {
    if (g.s == 0) {  // no keys: torch gives zeros (an empty sum)
      std::fill(out.data_as<T>(), out.data_as<T>() + out.numel(), T(0));
      return;
    }
    Algo::template Attend<T>(g, in[0].data_as<const T>(),
                             in[1].data_as<const T>(), in[2].data_as<const T>(),
                             in.size() > 3 ? in[3].data_as<const T>() : nullptr,
                             out.data_as<T>(), static_cast<T*>(workspace));
  }

  // MultiLayer calls InputsWorkspaceBytes and RunInputs under its lock, one
  // call at a time, so the cache needs no lock of its own.
  const AttentionGeometry& GeometryOf(const std::vector<Tensor>& in) const {
    bool same = cached_ && shapes_.size() == in.size();
    for (size_t i = 0; same && i < in.size(); ++i) {
      same = shapes_[i] == in[i].shape;
    }
    if (!same) {
      geometry_ = AttentionGeometry::Of(attrs_, in);
      shapes_.clear();
      for (const Tensor& t : in) shapes_.push_back(t.shape);
      cached_ = true;
    }
    return geometry_;
  }

  AttentionAttrs attrs_;
  mutable bool cached_ = false;
  mutable std::vector<Shape> shapes_;
  mutable AttentionGeometry geometry_;
};

}  // namespace ai3

#endif  // AI3_CORE_OPS_ATTENTION_ATTENTION_H_
