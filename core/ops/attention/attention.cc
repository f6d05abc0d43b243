#include "core/ops/attention/attention.h"

#include <cmath>
#include <string>

#include "core/errors.h"
#include "core/ops/checks.h"

namespace ai3 {

namespace {

const char* const kInputNames[] = {"q", "k", "v", "mask"};

// The batch dimensions of a shape of rank >= 2 (all but the last two).
Shape Lead(const Shape& shape) { return Shape(shape.begin(), shape.end() - 2); }

}  // namespace

void AttentionAttrs::Validate(const std::vector<Tensor>& params) const {
  CheckNoParams(kOp, params);
  if (has_scale && !std::isfinite(scale)) {
    Fail(ErrorKind::kInvalidArgument, "scale must be finite, got ", scale);
  }
}

Shape AttentionAttrs::OutputShape(const std::vector<Tensor>& inputs) const {
  AttentionGeometry::Of(*this, inputs);
  Shape out = inputs[0].shape;
  out.back() = inputs[2].shape.back();
  CheckShape(out, "output");  // v's last dim may exceed q's
  return out;
}

AttentionGeometry AttentionGeometry::Of(const AttentionAttrs& attrs,
                                        const std::vector<Tensor>& inputs) {
  if (inputs.size() != attrs.NumInputs()) {
    Fail(ErrorKind::kInvalidArgument, "expected ", attrs.NumInputs(),
         " inputs (q, k, v", attrs.has_mask ? ", mask" : "", "), got ",
         inputs.size());
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    CheckShape(inputs[i].shape, kInputNames[i]);
    if (inputs[i].dtype != inputs[0].dtype) {
      Fail(ErrorKind::kDType, kInputNames[i], " is ", Name(inputs[i].dtype),
           " but q is ", Name(inputs[0].dtype),
           "; attention takes one dtype (a boolean mask must be turned into "
           "an additive float mask)");
    }
  }
  const Tensor &q = inputs[0], &k = inputs[1], &v = inputs[2];
  for (int i = 0; i < 3; ++i) {
    if (inputs[i].rank() < 2) {
      Fail(ErrorKind::kShape, kInputNames[i],
           " must have rank >= 2 ((*batch, L or S, E)), got ",
           ToString(inputs[i].shape));
    }
  }
  if (q.rank() != k.rank() || q.rank() != v.rank()) {
    Fail(ErrorKind::kShape, "q, k and v must have one rank, got q ",
         ToString(q.shape), ", k ", ToString(k.shape), ", v ",
         ToString(v.shape));
  }
  if (Lead(k.shape) != Lead(q.shape) || Lead(v.shape) != Lead(q.shape)) {
    Fail(ErrorKind::kShape,
         "q, k and v must have the same batch dimensions, got q ",
         ToString(q.shape), ", k ", ToString(k.shape), ", v ",
         ToString(v.shape));
  }
  const int64_t rank = q.rank();
  AttentionGeometry g;
  g.l = q.shape[rank - 2];
  g.e = q.shape[rank - 1];
  g.s = k.shape[rank - 2];
  g.ev = v.shape[rank - 1];
  if (k.shape[rank - 1] != g.e) {
    Fail(ErrorKind::kShape, "k's last dimension is ", k.shape[rank - 1],
         " but q's is ", g.e, " (q ", ToString(q.shape), ", k ",
         ToString(k.shape), ")");
  }
  if (v.shape[rank - 2] != g.s) {
    Fail(ErrorKind::kShape, "v has ", v.shape[rank - 2], " keys but k has ",
         g.s, " (k ", ToString(k.shape), ", v ", ToString(v.shape), ")");
  }
  if (g.e == 0) {
    Fail(ErrorKind::kShape, "q and k have an empty last dimension (E = 0)");
  }
  for (int64_t i = 0; i + 2 < rank; ++i) g.batch *= q.shape[i];
  g.scale = attrs.has_scale ? attrs.scale : 1.0 / std::sqrt(double(g.e));
  g.causal = attrs.causal;
  if (!attrs.has_mask) return g;

  // The mask, broadcast right-aligned to (*batch, L, S).
  const Tensor& mask = inputs[3];
  Shape target = Lead(q.shape);
  target.push_back(g.l);
  target.push_back(g.s);
  if (mask.rank() > rank) {
    Fail(ErrorKind::kShape, "mask ", ToString(mask.shape),
         " has more dimensions than the scores ", ToString(target));
  }
  // Broadcast strides of the mask along each of target's dims.
  std::vector<int64_t> strides(rank, 0);
  int64_t stride = 1;
  for (int64_t d = rank - 1, md = mask.rank() - 1; md >= 0; --d, --md) {
    const int64_t size = mask.shape[md];
    if (size != target[d] && size != 1) {
      Fail(ErrorKind::kShape, "mask ", ToString(mask.shape),
           " does not broadcast to the scores ", ToString(target),
           " (*batch, L, S)");
    }
    strides[d] = size == 1 ? 0 : stride;
    stride *= size;
  }
  g.has_mask = true;
  g.mask_row_stride = strides[rank - 2];
  g.mask_col_stride = strides[rank - 1];
  g.mask_offsets.assign(g.batch, 0);
  // Offsets per flattened batch index: walk the index like an odometer.
  for (int64_t n = 0; n < g.batch; ++n) {
    int64_t rest = n, offset = 0;
    for (int64_t d = rank - 3; d >= 0; --d) {
      offset += (rest % q.shape[d]) * strides[d];
      rest /= q.shape[d];
    }
    g.mask_offsets[n] = offset;
  }
  return g;
}

}  // namespace ai3
