// JSON attributes: the text the Python frontends write for an in-graph op
// (json.dumps of numbers, strings, booleans, None, lists and dicts), read
// into core attribute values. The TensorFlow op (frontends/ai3/keras/tf_ops)
// and the ONNX Runtime op (frontends/ai3/onnx/ort_op) both carry a layer's
// attributes this way, so both read them here.
#ifndef AI3_CORE_JSON_ATTRS_H_
#define AI3_CORE_JSON_ATTRS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/op_schema.h"

namespace ai3 {

struct Json {
  enum Kind {
    kNull,
    kBool,
    kInt,
    kFloat,
    kString,
    kList,
    kObject
  } kind = kNull;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;
  std::vector<Json> list;
  std::vector<std::pair<std::string, Json>> object;

  bool IsNumber() const { return kind == kInt || kind == kFloat; }
  double Number() const { return kind == kInt ? static_cast<double>(i) : f; }
  const Json* Find(const std::string& key) const {
    for (const auto& [k, v] : object) {
      if (k == key) return &v;
    }
    return nullptr;
  }
};

// `text` parsed; malformed text is an InvalidArgument naming the offset.
Json ParseJson(const std::string& text);

// A JSON value as the attribute `decl` (if declared) takes it; what does not
// fit is passed on as it reads, for OpSchema::Resolve to refuse by name.
AttrValue ToAttr(const Json& v, const AttrDecl* decl);

// A JSON object of attributes (`text`, empty meaning {}) for `schema`'s op,
// each value read as its declaration takes it.
AttrMap JsonAttrs(const OpSchema& schema, const std::string& text);

// A list of ints (`what` names it in errors); null gives an empty list.
std::vector<int64_t> Ints(const Json* v, const char* what);

}  // namespace ai3

#endif  // AI3_CORE_JSON_ATTRS_H_
