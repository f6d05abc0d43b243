// slice's declaration (core/op_schema.h).
#include <limits>

#include "core/op_schema.h"
#include "core/ops/elementwise_schema.h"
#include "core/ops/slice/slice.h"

namespace ai3 {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

// start or stop, where None is the open end Python gives it for the step's
// direction (so "step" is declared first).
AttrDecl Bound(const char* name, const char* doc) {
  AttrDecl d{name, AttrType::kInt};
  d.nullable = true;
  d.doc = doc;
  return d;
}

// slice's attributes, which its gradient takes as they are.
AI3_DECLARE_ATTRIBUTES(
        .Field("axis", &A::axis, "memory-order axis (negative from the end)")
        .Required()
        .Field("step", &A::step, "!= 0; negative walks backwards")
        .Attr(Bound("start", "None: the first element of the walk"),
              [](A& a, const AttrValue& v) {
                a.start = internal::IsNone(v) ? (a.step > 0 ? 0 : kMax)
                                              : internal::As<int64_t>(v);
              })
        .Attr(Bound("stop", "None: past the last element of the walk"),
              [](A& a, const AttrValue& v) {
                a.stop = internal::IsNone(v) ? (a.step > 0 ? kMax : kMin)
                                             : internal::As<int64_t>(v);
              }));

AI3_REGISTER_OP_SCHEMA(
    Declare<SliceAttrs>("x[..., start:stop:step, ...] along axis, with "
                        "Python's slice semantics (clamped)")
        .Default(Device::kCPU, {{"direct"}}));
AI3_REGISTER_GRADIENT_SCHEMA(Declare<SliceBackwardDataAttrs>(
    "slice's input gradient: dy's rows where the slice took them, else 0"));

}  // namespace
}  // namespace ai3
