// The attributes of depth_to_space's and space_to_depth's declarations
// (core/op_schema.h): blocksize, mode, layout.
#ifndef AI3_CORE_OPS_DEPTH_TO_SPACE_BLOCK_SHUFFLE_DECLARATION_H_
#define AI3_CORE_OPS_DEPTH_TO_SPACE_BLOCK_SHUFFLE_DECLARATION_H_

#include <string>

#include "core/op_schema.h"
#include "core/ops/depth_to_space/depth_to_space.h"

namespace ai3 {

AI3_DECLARE_ATTRIBUTES_AS(
    BlockShuffleDeclaration,
    .Field("blocksize", &A::blocksize, "the side of a block")
        .Required()
        .Attr(
            [] {
              AttrDecl d{"mode", AttrType::kString, std::string("DCR")};
              d.choices = {"DCR", "CRD"};
              d.doc =
                  "channel order in a block: DCR (ONNX's default, TF) or "
                  "CRD (torch's PixelShuffle)";
              return d;
            }(),
            [](A& a, const AttrValue& v) {
              a.crd = internal::As<std::string>(v) == "CRD";
            })
        .LayoutAttr()
        .Default(Device::kCPU, {{"direct"}}));

}  // namespace ai3

#endif  // AI3_CORE_OPS_DEPTH_TO_SPACE_BLOCK_SHUFFLE_DECLARATION_H_
