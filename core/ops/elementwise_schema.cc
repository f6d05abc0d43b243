// The declarations (core/op_schema.h) of the elementwise ops without
// attributes or weights, whose Attrs are core/ops/elementwise.h's and
// nothing else: one line each.
#include "core/op_schema.h"
#include "core/ops/hardswish/hardswish.h"
#include "core/ops/relu/relu.h"
#include "core/ops/sigmoid/sigmoid.h"
#include "core/ops/silu/silu.h"
#include "core/ops/tanh/tanh.h"

namespace ai3 {
namespace {

// "direct" is each one's only algorithm, on every device that has one.
template <class Attrs>
bool Declare(const char* doc) {
  return OpDeclaration<Attrs>(doc)
      .Default(Device::kCPU, {{"direct"}})
      .Default(Device::kCUDA, {{"direct"}})
      .Register();
}

const bool kDeclared[] = {
    Declare<ReluAttrs>("max(x, 0) elementwise"),
    Declare<SigmoidAttrs>("1 / (1 + exp(-x)) elementwise"),
    Declare<SiluAttrs>("x * sigmoid(x) elementwise (swish)"),
    Declare<TanhAttrs>("tanh(x) elementwise"),
    Declare<HardswishAttrs>("x * relu6(x + 3) / 6 elementwise"),
};

}  // namespace
}  // namespace ai3
