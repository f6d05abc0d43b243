// linear's declaration (core/op_schema.h): y = x W^T + b over the last dim.
#include "core/op_schema.h"
#include "core/ops/linear/linear.h"
#include "core/ops/linear/linear_declaration.h"

namespace ai3 {
namespace {

using A = LinearAttrs;

// Where "packed" (packed.cc) ran the layers measured as fast as oneDNN's
// guess with the weights hot, and faster with them streamed from memory,
// as inside a model (2-core AVX-512 Xeon, rows x in -> out, ms hot / cold):
// 197 x 768 -> 2304 2.06/2.27 against 2.12/2.58, 196 x 384 -> 1536
// 0.67/0.88 against 0.67/1.03, 197 x 4096 -> 4096 21.7/22.4 against
// 23.2/23.5; ViT-B/16 whole, 117-118 ms against 129. Outside it guess
// stays: at 96 input features (ConvNeXt's and Swin's first MLPs, 3136
// rows) packed ran 0.81 ms against 0.70, and at 25088 (VGG's first
// classifier layer, 8 rows, a 411 MB weight streamed once) 34 against 21.5.
// In float64, which guess does not run, packed ran 5.4 ms where BLIS's gemm
// ran 10.4 (197 x 768 -> 3072).
bool PackedRange(const A& a) {
  return a.in_features >= 256 && a.in_features <= 8192;
}

AI3_REGISTER_OP_SCHEMA(LinearDeclaration<A>("y = x W^T + b over the last dim")
                           .Default(Device::kCPU,
                                    {{"packed", "256 to 8192 input features",
                                      &PackedRange},
                                     {"guess"},
                                     {"gemm"},
                                     {"direct"}})
                           .Default(Device::kCUDA, {{"gemm"}}));

}  // namespace
}  // namespace ai3
