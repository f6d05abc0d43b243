// resize's declaration (core/op_schema.h), and its input gradient's.
#include <string>
#include <utility>
#include <vector>

#include "core/op_schema.h"
#include "core/ops/elementwise_schema.h"
#include "core/ops/resize/resize.h"

namespace ai3 {
namespace {

AI3_DECLARE_ATTRIBUTES(
        .Attr(
            [] {
              AttrDecl d{"size", AttrType::kInts};
              d.nullable = true;
              d.size = 2;
              d.doc = "(out_h, out_w); None: floor(in * scale)";
              return d;
            }(),
            [](A& a, const AttrValue& v) {
              if (internal::IsNone(v)) return;
              const auto& s = internal::As<std::vector<int64_t>>(v);
              a.out_h = s[0];
              a.out_w = s[1];
            })
        .Attr(
            [] {
              AttrDecl d{"scale", AttrType::kFloats};
              d.nullable = true;
              d.size = 2;
              d.doc =
                  "(h, w) output/input; given, it maps the "
                  "coordinates (torch's scale_factor, ONNX's scales)";
              return d;
            }(),
            [](A& a, const AttrValue& v) {
              if (internal::IsNone(v)) return;
              const auto& s = internal::As<std::vector<double>>(v);
              a.scale_h = s[0];
              a.scale_w = s[1];
            })
        .OneOf("mode", &A::mode, {"nearest", "linear", "cubic"},
               "nearest, (bi)linear or (bi)cubic")
        .OneOf("coordinate_transformation_mode", &A::coordinates,
               {"half_pixel", "pytorch_half_pixel", "align_corners",
                "asymmetric", "half_pixel_symmetric"},
               "how an output index maps to an input coordinate (ONNX's "
               "names)")
        .OneOf("nearest_mode", &A::rounding,
               {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"},
               "how nearest rounds the coordinate (ONNX's names)")
        .Field("cubic_coeff_a", &A::cubic_a,
               "cubic: Keys' coefficient (ONNX's and torch's -0.75, "
               "TensorFlow's -0.5)")
        .Field("exclude_outside", &A::exclude_outside,
               "cubic: taps outside the input weigh 0, the rest renormalised")
        .LayoutAttr());

AI3_REGISTER_OP_SCHEMA(
    Declare<ResizeAttrs>("nearest, bilinear or bicubic resampling of H and W")
        .Default(Device::kCPU, {{"direct"}}));
AI3_REGISTER_GRADIENT_SCHEMA(Declare<ResizeBackwardDataAttrs>(
    "resize's input gradient: dy spread back over each output's taps"));

}  // namespace
}  // namespace ai3
