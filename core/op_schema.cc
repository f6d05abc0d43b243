#include "core/op_schema.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace ai3 {
namespace {

std::map<std::string, OpSchema>& Schemas() {
  // Never destroyed: static registrations outlive main.
  static auto* schemas = new std::map<std::string, OpSchema>();
  return *schemas;
}

// What a declaration wants, in words: "a list of 2 ints".
std::string Wanted(const AttrDecl& d) {
  std::string what;
  switch (d.type) {
    case AttrType::kInt:
      what = "an int";
      break;
    case AttrType::kFloat:
      what = "a float";
      break;
    case AttrType::kBool:
      what = "a bool";
      break;
    case AttrType::kString:
      what = "a string";
      if (!d.choices.empty()) {  // 'a', 'b' or 'c'
        what.clear();
        for (size_t k = 0; k < d.choices.size(); ++k) {
          if (k) what += k + 1 == d.choices.size() ? " or " : ", ";
          what += "'" + d.choices[k] + "'";
        }
      }
      break;
    case AttrType::kInts:
    case AttrType::kFloats: {
      const char* of = d.type == AttrType::kInts ? "int" : "float";
      what = d.size >= 0
                 ? "a list of " + std::to_string(d.size) + " " + of +
                       "s (or one " + of + ")"
                 : std::string("an ") + of + " or a list of " + of + "s";
      break;
    }
  }
  if (d.nullable) what += " or None";
  return what;
}

// `value` as the declared type, widened where that loses nothing; nullopt
// if it is not of that type.
std::optional<AttrValue> Coerce(const AttrDecl& d, const AttrValue& value) {
  switch (d.type) {
    case AttrType::kInt:
      if (std::holds_alternative<int64_t>(value)) return value;
      return std::nullopt;
    case AttrType::kFloat:
      if (std::holds_alternative<double>(value)) return value;
      if (auto* i = std::get_if<int64_t>(&value)) {
        return AttrValue(static_cast<double>(*i));
      }
      return std::nullopt;
    case AttrType::kBool:
      if (std::holds_alternative<bool>(value)) return value;
      return std::nullopt;
    case AttrType::kString: {
      auto* s = std::get_if<std::string>(&value);
      if (!s) return std::nullopt;
      if (!d.choices.empty() && std::find(d.choices.begin(), d.choices.end(),
                                          *s) == d.choices.end()) {
        return std::nullopt;
      }
      return value;
    }
    case AttrType::kInts: {
      std::vector<int64_t> list;
      if (auto* i = std::get_if<int64_t>(&value)) {
        list.assign(d.size >= 0 ? d.size : 1, *i);
      } else if (auto* l = std::get_if<std::vector<int64_t>>(&value)) {
        list = *l;
        if (d.size == 4 && list.size() == 2) {  // (h, w) padding
          list = {list[0], list[0], list[1], list[1]};
        }
      } else {
        return std::nullopt;
      }
      if (d.size >= 0 && static_cast<int>(list.size()) != d.size) {
        return std::nullopt;
      }
      return AttrValue(std::move(list));
    }
    case AttrType::kFloats: {
      std::vector<double> list;
      if (auto* f = std::get_if<double>(&value)) {
        list.assign(d.size >= 0 ? d.size : 1, *f);
      } else if (auto* i = std::get_if<int64_t>(&value)) {
        list.assign(d.size >= 0 ? d.size : 1, static_cast<double>(*i));
      } else if (auto* l = std::get_if<std::vector<double>>(&value)) {
        list = *l;
      } else if (auto* li = std::get_if<std::vector<int64_t>>(&value)) {
        list.assign(li->begin(), li->end());
      } else {
        return std::nullopt;
      }
      if (d.size >= 0 && static_cast<int>(list.size()) != d.size) {
        return std::nullopt;
      }
      return AttrValue(std::move(list));
    }
  }
  return std::nullopt;
}

// Runs `fn`, prefixing an error with the layer's context unless the layer
// (whose constructor names itself) already did.
template <class Fn>
auto InContext(const std::string& context, Fn&& fn) {
  try {
    return fn();
  } catch (const Error& e) {
    if (std::string(e.what()).rfind(context, 0) == 0) throw;
    throw e.WithContext(context);
  }
}

void CheckWeights(const OpSchema& schema, const WeightSlots& weights) {
  if (weights.size() != schema.weights().size()) {
    Fail(ErrorKind::kInternal, "got ", weights.size(), " weight slots for ",
         schema.weights().size(), " declared weights");
  }
  for (size_t k = 0; k < weights.size(); ++k) {
    if (!weights[k] && !schema.weights()[k].optional) {
      Fail(ErrorKind::kInvalidArgument, "missing weight '",
           schema.weights()[k].name, "'");
    }
  }
}

}  // namespace

const char* Name(AttrType type) {
  // In the order of AttrType; Python's names for the types.
  static const char* const kNames[] = {"int", "float",     "bool",
                                       "str", "list[int]", "list[float]"};
  return kNames[static_cast<int>(type)];
}

std::string ToString(const AttrValue& value) {
  std::ostringstream out;
  std::visit(
      [&out](const auto& v) {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, std::monostate>) {
          out << "None";
        } else if constexpr (std::is_same_v<V, bool>) {
          out << (v ? "True" : "False");
        } else if constexpr (std::is_same_v<V, std::string>) {
          out << "'" << v << "'";
        } else if constexpr (std::is_arithmetic_v<V>) {
          out << v;
        } else {
          out << "[";
          for (size_t k = 0; k < v.size(); ++k) out << (k ? ", " : "") << v[k];
          out << "]";
        }
      },
      value);
  return out.str();
}

AttrMap OpSchema::Resolve(const AttrMap& attrs) const {
  for (const auto& [name, value] : attrs) {
    (void)value;
    if (std::none_of(attrs_.begin(), attrs_.end(),
                     [&](const AttrDecl& d) { return d.name == name; })) {
      std::string known;
      for (const AttrDecl& d : attrs_)
        known += (known.empty() ? "" : ", ") + d.name;
      Fail(ErrorKind::kInvalidArgument, "unknown attribute '", name, "'; ", op_,
           " takes ", known.empty() ? "none" : known);
    }
  }
  AttrMap resolved;
  for (const AttrDecl& d : attrs_) {
    auto it = attrs.find(d.name);
    AttrValue value = it == attrs.end() ? AttrValue() : it->second;
    if (internal::IsNone(value)) {
      if (!internal::IsNone(d.default_value)) {
        value = d.default_value;
      } else if (d.nullable) {
        resolved[d.name] = value;
        continue;
      } else {
        Fail(ErrorKind::kInvalidArgument, "missing attribute '", d.name, "' (",
             Wanted(d), ")");
      }
    }
    std::optional<AttrValue> typed = Coerce(d, value);
    if (!typed) {
      Fail(ErrorKind::kInvalidArgument, d.name, " must be ", Wanted(d),
           ", got ", ToString(value));
    }
    resolved[d.name] = std::move(*typed);
  }
  return resolved;
}

int OpSchema::WeightIndex(const std::string& name) const {
  for (size_t k = 0; k < weights_.size(); ++k) {
    if (weights_[k].name == name) return static_cast<int>(k);
  }
  return -1;
}

std::shared_ptr<AnyLayer> OpSchema::MakeLayer(const std::string& name,
                                              const AttrMap& attrs,
                                              const WeightSlots& weights,
                                              const std::string& algorithm,
                                              Device device) const {
  return InContext(internal::LayerContext(op_, name), [&] {
    CheckWeights(*this, weights);
    return make_(name, Resolve(attrs), weights, algorithm, device);
  });
}

void OpSchema::CheckAlgorithm(const std::string& name, const AttrMap& attrs,
                              const WeightSlots& weights,
                              const std::string& algorithm,
                              Device device) const {
  InContext(internal::LayerContext(op_, name), [&] {
    CheckWeights(*this, weights);
    check_(Resolve(attrs), weights, algorithm, device);
    return 0;
  });
}

Shape OpSchema::OutputShape(const std::string& name, const AttrMap& attrs,
                            const WeightSlots& weights,
                            const std::vector<Tensor>& inputs) const {
  return InContext(internal::LayerContext(op_, name), [&] {
    CheckWeights(*this, weights);
    return output_shape_(Resolve(attrs), weights, inputs);
  });
}

const OpSchema& GetOpSchema(const std::string& op) {
  auto it = Schemas().find(op);
  if (it == Schemas().end()) {
    std::string known;
    for (const auto& [name, schema] : Schemas()) {
      (void)schema;
      known += " " + name;
    }
    Fail(ErrorKind::kUnsupported, "ai3's core has no op '", op,
         "'; it has:", known);
  }
  return it->second;
}

std::vector<const OpSchema*> AllOpSchemas() {
  std::vector<const OpSchema*> all;
  for (const auto& [name, schema] : Schemas()) {
    (void)name;
    all.push_back(&schema);
  }
  return all;
}

void RegisterOpSchema(OpSchema schema) {
  const std::string op = schema.op();
  if (!Schemas().emplace(op, std::move(schema)).second) {
    Fail(ErrorKind::kInternal, "op '", op, "' is declared twice");
  }
}

namespace internal {

Layout LayoutOf(const AttrValue& v) {
  return As<std::string>(v) == "NHWC" ? Layout::kNHWC : Layout::kNCHW;
}

const Shape& WeightShape(const WeightSlots& weights, size_t k, size_t rank,
                         const char* what) {
  const Shape& shape = weights[k]->shape;
  if (shape.size() != rank) {
    Fail(ErrorKind::kShape, what, " must have rank ", rank, ", got rank ",
         shape.size());
  }
  return shape;
}

std::string LayerContext(const std::string& op, const std::string& name) {
  std::string context = op + " layer";
  if (!name.empty()) context += " '" + name + "'";
  return context;
}

}  // namespace internal
}  // namespace ai3
