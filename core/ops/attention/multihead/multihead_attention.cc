#include "core/ops/attention/multihead/multihead_attention.h"

#include <string>

#include "core/errors.h"

namespace ai3 {

void MultiheadAttentionAttrs::Validate(
    const std::vector<Tensor>& params) const {
  if (embed_dim < 1) {
    Fail(ErrorKind::kInvalidArgument, "embed_dim must be >= 1, got ",
         embed_dim);
  }
  if (num_heads < 1 || embed_dim % num_heads != 0) {
    Fail(ErrorKind::kInvalidArgument, "num_heads must be >= 1 and divide ",
         "embed_dim=", embed_dim, ", got ", num_heads);
  }
  const size_t want = has_bias ? 4 : 2;
  if (params.size() != want) {
    Fail(ErrorKind::kInvalidArgument, "expected ", want,
         " parameter tensors (in_proj_weight, out_proj_weight",
         has_bias ? ", in_proj_bias, out_proj_bias" : "", "), got ",
         params.size());
  }
  const int64_t d = embed_dim;
  const Shape shapes[] = {{3 * d, d}, {d, d}, {3 * d}, {d}};
  const char* names[] = {"in_proj_weight", "out_proj_weight", "in_proj_bias",
                         "out_proj_bias"};
  for (size_t i = 0; i < want; ++i) {
    if (params[i].shape != shapes[i]) {
      Fail(ErrorKind::kShape, names[i], " has shape ",
           ToString(params[i].shape), ", expected ", ToString(shapes[i]));
    }
    if (params[i].dtype != dtype) {
      Fail(ErrorKind::kDType, names[i], " is ", Name(params[i].dtype),
           ", layer is ", Name(dtype));
    }
  }
}

MultiheadAttentionAttrs::Dims MultiheadAttentionAttrs::DimsOf(
    const std::vector<Tensor>& inputs) const {
  static const char* const kSelf[] = {"x", "mask"};
  static const char* const kQkv[] = {"q", "k", "v", "mask"};
  const char* const* names = self_attention ? kSelf : kQkv;
  const size_t n_qkv = self_attention ? 1 : 3;
  if (inputs.size() != static_cast<size_t>(MinInputs())) {
    Fail(ErrorKind::kInvalidArgument, "expected ", MinInputs(), " inputs, got ",
         inputs.size());
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    CheckShape(inputs[i].shape, names[i]);
  }
  const int64_t rank = inputs[0].rank();
  if (rank != 2 && rank != 3) {
    Fail(ErrorKind::kShape, names[0], " must be ",
         batch_first ? "(B, L, D)" : "(L, B, D)", " or unbatched (L, D), got ",
         ToString(inputs[0].shape));
  }
  for (size_t i = 0; i < n_qkv; ++i) {
    const Tensor& t = inputs[i];
    if (t.rank() != rank || t.shape.back() != embed_dim) {
      Fail(ErrorKind::kShape, names[i], " has shape ", ToString(t.shape),
           "; expected rank ", rank,
           " with last dimension embed_dim=", embed_dim);
    }
    if (t.dtype != dtype) {
      Fail(ErrorKind::kDType, names[i], " is ", Name(t.dtype),
           " but the weights are ", Name(dtype));
    }
  }
  Dims dims;
  dims.batched = rank == 3;
  const int b_axis = batch_first ? 0 : 1, l_axis = batch_first ? 1 : 0;
  auto batch_of = [&](const Tensor& t) {
    return dims.batched ? t.shape[b_axis] : 1;
  };
  auto len_of = [&](const Tensor& t) {
    return dims.batched ? t.shape[l_axis] : t.shape[0];
  };
  dims.batch = batch_of(inputs[0]);
  dims.l = len_of(inputs[0]);
  dims.s = len_of(inputs[n_qkv == 1 ? 0 : 1]);
  dims.head_dim = embed_dim / num_heads;
  if (n_qkv == 3) {
    if (batch_of(inputs[1]) != dims.batch ||
        batch_of(inputs[2]) != dims.batch) {
      Fail(ErrorKind::kShape, "q, k and v must have one batch size, got q ",
           ToString(inputs[0].shape), ", k ", ToString(inputs[1].shape), ", v ",
           ToString(inputs[2].shape));
    }
    if (len_of(inputs[2]) != dims.s) {
      Fail(ErrorKind::kShape, "k and v must have one sequence length, got k ",
           ToString(inputs[1].shape), ", v ", ToString(inputs[2].shape));
    }
  }
  return dims;
}

Shape MultiheadAttentionAttrs::OutputShape(
    const std::vector<Tensor>& inputs) const {
  const Dims dims = DimsOf(inputs);
  if (has_mask) {
    // The heads' attention checks the mask's broadcast to (B, H, L, S).
    const int64_t hd = dims.head_dim;
    std::vector<Tensor> heads(4);
    heads[0].shape = {dims.batch, num_heads, dims.l, hd};
    heads[1].shape = {dims.batch, num_heads, dims.s, hd};
    heads[2].shape = heads[1].shape;
    heads[3] = inputs.back();
    for (Tensor& t : heads) t.dtype = dtype;
    AttentionGeometry::Of(HeadAttrs(), heads);
  }
  return inputs[0].shape;
}

AttentionAttrs MultiheadAttentionAttrs::HeadAttrs() const {
  AttentionAttrs a;
  a.causal = causal;
  a.has_mask = has_mask;
  return a;  // scale: 1/sqrt(head_dim), as torch
}

LinearAttrs MultiheadAttentionAttrs::InProjectionAttrs() const {
  LinearAttrs a;
  a.in_features = embed_dim;
  a.out_features = self_attention ? 3 * embed_dim : embed_dim;
  a.has_bias = has_bias;
  a.dtype = dtype;
  return a;
}

LinearAttrs MultiheadAttentionAttrs::OutProjectionAttrs() const {
  LinearAttrs a = InProjectionAttrs();
  a.out_features = embed_dim;
  return a;
}

}  // namespace ai3
