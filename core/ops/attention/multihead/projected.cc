// multihead_attention: the in_proj linears (one (rows, 3D) product for
// self-attention), a copy into per-head (B, H, L, D/H) tensors, the
// attention algorithm the layer chose (naive, flash or chunked -- the names
// are attention's, resolved through its registry), a copy back into (rows, D)
// and the out_proj linear. The copies are O(tokens * D), small next to the
// products, and let every attention algorithm read dense heads. The
// projections are kernels of linear's algorithms (in_projection,
// out_projection), prepared once with the layer's weights.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/layer.h"
#include "core/math/dispatch.h"
#include "core/ops/attention/attention.h"
#include "core/ops/attention/multihead/multihead_attention.h"
#include "core/ops/linear/linear.h"
#include "core/parallel.h"
#include "core/registry.h"

namespace ai3 {
namespace {

using Dims = MultiheadAttentionAttrs::Dims;

size_t Round64(size_t bytes) { return (bytes + 63) / 64 * 64; }

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

// The linear algorithm `name` ("default": linear's pick) for a projection
// of these attributes; throws naming the projection if it cannot run it.
const Algorithm<LinearAttrs>& ProjectionAlgorithm(const std::string& name,
                                                  const LinearAttrs& attrs,
                                                  const char* which) {
  std::string resolved;
  try {
    return Registry<LinearAttrs>::Get().Resolve(name, Device::kCPU, attrs,
                                                &resolved);
  } catch (const Error& e) {
    Fail(e.kind(), which, ": ", e.what());
  }
}

// A view of `count` rows of `width` elements at `data` (the kernels read
// their inputs and weights through Tensors; nothing is copied).
Tensor Rows(const void* data, DType dtype, int64_t count, int64_t width) {
  return Tensor{const_cast<void*>(data), dtype, {count, width}};
}

class ProjectedKernel : public MultiInputKernel {
 public:
  ProjectedKernel(const MultiheadAttentionAttrs& attrs,
                  const std::vector<Tensor>& params,
                  std::unique_ptr<Kernel> attention)
      : attrs_(attrs), kernel_(std::move(attention)) {
    attention_ = dynamic_cast<MultiInputKernel*>(kernel_.get());
    if (!attention_) {
      Fail(ErrorKind::kInternal, "attention kernel is not a MultiInputKernel");
    }
    heads_.resize(attrs.has_mask ? 4 : 3);
    // In-projection kernels: one of (3 D, D) for self-attention, else one
    // per q, k, v on its (D, D) rows of in_proj_weight (and its bias).
    const LinearAttrs in = attrs.InProjectionAttrs();
    const Algorithm<LinearAttrs>& in_algorithm =
        ProjectionAlgorithm(attrs.in_projection, in, "in_projection");
    const int64_t d = attrs.embed_dim, size = SizeOf(attrs.dtype);
    const char* w_in = static_cast<const char*>(params[0].data);
    const char* b_in =
        attrs.has_bias ? static_cast<const char*>(params[2].data) : nullptr;
    const int parts = attrs.self_attention ? 1 : 3;
    for (int i = 0; i < parts; ++i) {
      std::vector<Tensor> p = {
          Rows(w_in + i * d * d * size, attrs.dtype, in.out_features, d)};
      if (b_in) {
        p.push_back(Tensor{const_cast<char*>(b_in + i * d * size),
                           attrs.dtype,
                           {in.out_features}});
      }
      in_proj_.push_back(in_algorithm.Prepare(in, p));
    }
    const LinearAttrs out = attrs.OutProjectionAttrs();
    std::vector<Tensor> p = {params[1]};
    if (attrs.has_bias) p.push_back(params[3]);
    out_proj_ = ProjectionAlgorithm(attrs.out_projection, out, "out_projection")
                    .Prepare(out, p);
  }

  size_t InputsWorkspaceBytes(
      const std::vector<Tensor>& inputs) const override {
    const Dims dims = attrs_.DimsOf(inputs);
    const Layout l = LayoutOf(dims, inputs);
    SetHeadShapes(dims, inputs);
    return l.attention_offset +
           std::max(attention_->InputsWorkspaceBytes(heads_),
                    ProjectionWorkspaceBytes(dims));
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

  // The projections' kernels share the attention's workspace: they run
  // before and after it.
  size_t ProjectionWorkspaceBytes(const Dims& dims) const {
    const int64_t d = attrs_.embed_dim;
    size_t bytes = out_proj_->WorkspaceBytes({dims.batch * dims.l, d});
    for (const auto& k : in_proj_) {
      bytes = std::max(
          bytes, k->WorkspaceBytes({dims.batch * std::max(dims.l, dims.s), d}));
    }
    return bytes;
  }

  // y[rows, width of `kernel`] = x[rows, D] through a projection kernel.
  void Project(Kernel* kernel, const void* x, int64_t rows, void* y,
               int64_t width, void* workspace) const {
    kernel->Run(Rows(x, attrs_.dtype, rows, attrs_.embed_dim),
                Rows(y, attrs_.dtype, rows, width), workspace);
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
    T* proj = reinterpret_cast<T*>(ws + lay.proj);
    T* head_q = reinterpret_cast<T*>(ws + lay.head_q);
    T* head_k = reinterpret_cast<T*>(ws + lay.head_k);
    T* head_v = reinterpret_cast<T*>(ws + lay.head_v);
    T* head_o = reinterpret_cast<T*>(ws + lay.head_o);
    void* scratch = ws + lay.attention_offset;  // the projections' too
    const TokenRows q_row{attrs_.batch_first, dims.batch, dims.l};
    const TokenRows kv_row{attrs_.batch_first, dims.batch, dims.s};
    // Projected q, k, v: pointers and row strides into `proj`.
    T *pq, *pk, *pv;
    int64_t ld;
    if (attrs_.self_attention) {
      ld = 3 * d;
      Project(in_proj_[0].get(), inputs[0].data, q_rows, proj, ld, scratch);
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
        Project(in_proj_[i].get(), inputs[i].data, i == 0 ? q_rows : kv_rows,
                outs[i], ld, scratch);
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
    Project(out_proj_.get(), proj, q_rows, output.data, d, scratch);
  }

  MultiheadAttentionAttrs attrs_;
  std::unique_ptr<Kernel> kernel_;
  MultiInputKernel* attention_;
  std::vector<std::unique_ptr<Kernel>> in_proj_;  // self-attention: one
  std::unique_ptr<Kernel> out_proj_;
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
      ProjectionAlgorithm(attrs.in_projection, attrs.InProjectionAttrs(),
                          "in_projection");
      ProjectionAlgorithm(attrs.out_projection, attrs.OutProjectionAttrs(),
                          "out_projection");
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
