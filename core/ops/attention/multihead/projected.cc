// multihead_attention: the in_proj GEMMs (one (rows, 3D) GEMM for
// self-attention), a copy into per-head (B, H, L, D/H) tensors, the
// attention algorithm the layer chose (naive, flash or chunked -- the names
// are attention's, resolved through its registry), a copy back into (rows, D)
// and the out_proj GEMM. The copies are O(tokens * D), small next to the
// GEMMs, and let every attention algorithm read dense heads.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/layer.h"
#include "core/math/dispatch.h"
#include "core/math/gemm.h"
#include "core/ops/attention/attention.h"
#include "core/ops/attention/multihead/multihead_attention.h"
#include "core/parallel.h"
#include "core/registry.h"

namespace ai3 {
namespace {

using Dims = MultiheadAttentionAttrs::Dims;

size_t Round64(size_t bytes) { return (bytes + 63) / 64 * 64; }

// y[rows, D or 3D] (ld ldy) = x[rows, D] w^T + b.
template <typename T>
void Project(const T* x, int64_t rows, int64_t d_in, const T* w, int64_t d_out,
             const T* b, T* y, int64_t ldy) {
  if (b) {
    ParallelFor(0, rows, rows * d_out >= (1 << 14),
                [&](int64_t r) { std::copy(b, b + d_out, y + r * ldy); });
  }
  Gemm<T>(false, true, rows, d_out, d_in, T(1), x, d_in, w, d_in,
          b ? T(1) : T(0), y, ldy);
}

// The row of token (b, l) in an input of this layout.
struct TokenRows {
  bool batch_first;
  int64_t batch, len;
  int64_t operator()(int64_t b, int64_t l) const {
    return batch_first ? b * len + l : l * batch + b;
  }
};

// heads[((b * H + h) * len + l) * hd + c] <-> rows[row(b, l) * ld + h * hd + c]
template <typename T, bool kToHeads>
void CopyHeads(const TokenRows& row, int64_t heads, int64_t hd, T* rows,
               int64_t ld, T* split) {
  const int64_t tokens = row.batch * row.len;
  ParallelFor(0, tokens, tokens * heads * hd >= (1 << 15), [&](int64_t t) {
    const int64_t b = t / row.len, l = t % row.len;
    T* r = rows + row(b, l) * ld;
    for (int64_t h = 0; h < heads; ++h) {
      T* s = split + ((b * heads + h) * row.len + l) * hd;
      if (kToHeads) {
        std::copy(r + h * hd, r + (h + 1) * hd, s);
      } else {
        std::copy(s, s + hd, r + h * hd);
      }
    }
  });
}

class ProjectedKernel : public MultiInputKernel {
 public:
  ProjectedKernel(const MultiheadAttentionAttrs& attrs,
                  const std::vector<Tensor>& params,
                  std::unique_ptr<Kernel> attention)
      : attrs_(attrs), params_(params), kernel_(std::move(attention)) {
    attention_ = dynamic_cast<MultiInputKernel*>(kernel_.get());
    if (!attention_) {
      Fail(ErrorKind::kInternal, "attention kernel is not a MultiInputKernel");
    }
    heads_.resize(attrs.has_mask ? 4 : 3);
  }

  size_t InputsWorkspaceBytes(
      const std::vector<Tensor>& inputs) const override {
    const Dims dims = attrs_.DimsOf(inputs);
    const Layout l = LayoutOf(dims, inputs);
    SetHeadShapes(dims, inputs);
    return l.attention_offset + attention_->InputsWorkspaceBytes(heads_);
  }

  void RunInputs(const std::vector<Tensor>& inputs, const Tensor& output,
                 void* workspace) override {
    DispatchFloat(attrs_.dtype, [&](auto zero) {
      using T = decltype(zero);
      RunTyped<T>(inputs, output, static_cast<char*>(workspace));
    });
  }

 private:
  // Byte offsets of the workspace's parts.
  struct Layout {
    size_t proj, head_q, head_k, head_v, head_o, attention_offset;
  };

  Layout LayoutOf(const Dims& dims, const std::vector<Tensor>& inputs) const {
    (void)inputs;
    const size_t t = SizeOf(attrs_.dtype), d = attrs_.embed_dim;
    const size_t q_tokens = dims.batch * dims.l,
                 kv_tokens = dims.batch * dims.s;
    Layout l;
    l.proj = 0;
    // Projections: q, k, v rows (self-attention: one (rows, 3D) block).
    size_t at = Round64((q_tokens + 2 * kv_tokens) * d * t);
    l.head_q = at;
    at += Round64(q_tokens * d * t);
    l.head_k = at;
    at += Round64(kv_tokens * d * t);
    l.head_v = at;
    at += Round64(kv_tokens * d * t);
    l.head_o = at;
    at += Round64(q_tokens * d * t);
    l.attention_offset = at;
    return l;
  }

  void SetHeadShapes(const Dims& dims,
                     const std::vector<Tensor>& inputs) const {
    const int64_t h = attrs_.num_heads, hd = dims.head_dim;
    heads_[0].shape = {dims.batch, h, dims.l, hd};
    heads_[1].shape = {dims.batch, h, dims.s, hd};
    heads_[2].shape = heads_[1].shape;
    for (int i = 0; i < 3; ++i) heads_[i].dtype = attrs_.dtype;
    if (attrs_.has_mask) heads_[3] = inputs.back();
  }

  template <typename T>
  void RunTyped(const std::vector<Tensor>& inputs, const Tensor& output,
                char* ws) {
    const Dims dims = attrs_.DimsOf(inputs);
    const Layout lay = LayoutOf(dims, inputs);
    SetHeadShapes(dims, inputs);
    const int64_t d = attrs_.embed_dim, h = attrs_.num_heads;
    const int64_t hd = dims.head_dim;
    const int64_t q_rows = dims.batch * dims.l, kv_rows = dims.batch * dims.s;
    const T* w_in = params_[0].data_as<const T>();
    const T* w_out = params_[1].data_as<const T>();
    const T* b_in = attrs_.has_bias ? params_[2].data_as<const T>() : nullptr;
    const T* b_out = attrs_.has_bias ? params_[3].data_as<const T>() : nullptr;
    T* proj = reinterpret_cast<T*>(ws + lay.proj);
    T* head_q = reinterpret_cast<T*>(ws + lay.head_q);
    T* head_k = reinterpret_cast<T*>(ws + lay.head_k);
    T* head_v = reinterpret_cast<T*>(ws + lay.head_v);
    T* head_o = reinterpret_cast<T*>(ws + lay.head_o);
    const TokenRows q_row{attrs_.batch_first, dims.batch, dims.l};
    const TokenRows kv_row{attrs_.batch_first, dims.batch, dims.s};
    // Projected q, k, v: pointers and row strides into `proj`.
    T *pq, *pk, *pv;
    int64_t ld;
    if (attrs_.self_attention) {
      ld = 3 * d;
      Project<T>(inputs[0].data_as<const T>(), q_rows, d, w_in, 3 * d, b_in,
                 proj, ld);
      pq = proj;
      pk = proj + d;
      pv = proj + 2 * d;
    } else {
      ld = d;
      pq = proj;
      pk = pq + q_rows * d;
      pv = pk + kv_rows * d;
      T* outs[] = {pq, pk, pv};
      for (int i = 0; i < 3; ++i) {
        Project<T>(inputs[i].data_as<const T>(), i == 0 ? q_rows : kv_rows, d,
                   w_in + i * d * d, d, b_in ? b_in + i * d : nullptr, outs[i],
                   ld);
      }
    }
    CopyHeads<T, true>(q_row, h, hd, pq, ld, head_q);
    CopyHeads<T, true>(kv_row, h, hd, pk, ld, head_k);
    CopyHeads<T, true>(kv_row, h, hd, pv, ld, head_v);
    heads_[0].data = head_q;
    heads_[1].data = head_k;
    heads_[2].data = head_v;
    Tensor head_out;
    head_out.data = head_o;
    head_out.dtype = attrs_.dtype;
    head_out.shape = heads_[0].shape;
    attention_->RunInputs(heads_, head_out, ws + lay.attention_offset);
    // Heads back into (rows, D), reusing the projections' space.
    CopyHeads<T, false>(q_row, h, hd, proj, d, head_o);
    Project<T>(proj, q_rows, d, w_out, d, b_out, output.data_as<T>(), d);
  }

  MultiheadAttentionAttrs attrs_;
  std::vector<Tensor> params_;  // owned by the layer, which outlives us
  std::unique_ptr<Kernel> kernel_;
  MultiInputKernel* attention_;
  // The heads' tensors, kept so a call allocates nothing (the layer runs one
  // call at a time).
  mutable std::vector<Tensor> heads_;
};

// One registry entry per attention algorithm, named like it.
template <const char* kAttention>
class Projected : public Algorithm<MultiheadAttentionAttrs> {
 public:
  std::string WhyNot(const MultiheadAttentionAttrs& attrs) const override {
    std::string resolved;
    try {
      Registry<AttentionAttrs>::Get().Resolve(kAttention, Device::kCPU,
                                              attrs.HeadAttrs(), &resolved);
    } catch (const Error& e) {
      return e.what();
    }
    return {};
  }
  std::unique_ptr<Kernel> Prepare(
      const MultiheadAttentionAttrs& attrs,
      const std::vector<Tensor>& params) const override {
    std::string resolved;
    const AttentionAttrs head = attrs.HeadAttrs();
    return std::make_unique<ProjectedKernel>(
        attrs, params,
        Registry<AttentionAttrs>::Get()
            .Resolve(kAttention, Device::kCPU, head, &resolved)
            .Prepare(head, {}));
  }
};

constexpr char kNaive[] = "naive";
constexpr char kFlash[] = "flash";
constexpr char kChunked[] = "chunked";

AI3_REGISTER_ALGORITHM(MultiheadAttentionAttrs, "naive", Device::kCPU,
                       Projected<kNaive>);
AI3_REGISTER_ALGORITHM(MultiheadAttentionAttrs, "flash", Device::kCPU,
                       Projected<kFlash>);
AI3_REGISTER_ALGORITHM(MultiheadAttentionAttrs, "chunked", Device::kCPU,
                       Projected<kChunked>);

}  // namespace
}  // namespace ai3
