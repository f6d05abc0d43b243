#include "core/ops/pad2d/pad2d.h"

#include <algorithm>

#include "core/errors.h"

namespace ai3 {

void Pad2dAttrs::Validate(const std::vector<Tensor>& params) const {
  if (!params.empty()) {
    Fail(ErrorKind::kInvalidArgument, "pad2d takes no parameter tensors, got ",
         params.size());
  }
  if (pad_top < 0 || pad_bottom < 0 || pad_left < 0 || pad_right < 0) {
    Fail(ErrorKind::kInvalidArgument,
         "pads must be >= 0 (cropping is not supported), got (top, bottom, "
         "left, right) = (",
         pad_top, ", ", pad_bottom, ", ", pad_left, ", ", pad_right, ")");
  }
}

Shape Pad2dAttrs::OutputShape(const Tensor& input) const {
  ImageDims d = Rank4InputDims(input, layout);
  // An empty image would pad to rows of `value` from no input at all, which
  // the layer would not run for (it skips empty inputs): refuse it.
  if (d.h < 1 || d.w < 1) {
    Fail(ErrorKind::kShape, "input ", ToString(input.shape), " (", Name(layout),
         ") has spatial size ", d.h, "x", d.w, "; both must be >= 1");
  }
  if (mode == PadMode::kReflect || mode == PadMode::kCircular) {
    // reflect mirrors about the edge without repeating it, so it reaches
    // dim - 1 elements; circular tiles one copy of the dim.
    const int64_t slack = mode == PadMode::kReflect ? 1 : 0;
    const char* what = mode == PadMode::kReflect ? "reflect" : "circular";
    if (std::max(pad_top, pad_bottom) > d.h - slack ||
        std::max(pad_left, pad_right) > d.w - slack) {
      Fail(ErrorKind::kInvalidArgument, what, " padding needs each pad ",
           slack ? "<" : "<=",
           " the size of its dim, got (top, bottom, left, "
           "right) = (",
           pad_top, ", ", pad_bottom, ", ", pad_left, ", ", pad_right,
           ") for input ", ToString(input.shape), " (", Name(layout), ")");
    }
  }
  const int64_t vertical =
      CheckedAdd(pad_top, pad_bottom, "the vertical padding");
  const int64_t horizontal =
      CheckedAdd(pad_left, pad_right, "the horizontal padding");
  d.h = CheckedAdd(d.h, vertical, "the padded height");
  d.w = CheckedAdd(d.w, horizontal, "the padded width");
  Shape out = ImageShape(d, layout);
  CheckShape(out, "output");
  return out;
}

}  // namespace ai3
