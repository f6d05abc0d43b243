// JSON attributes (core/json_attrs.h).
#include "core/json_attrs.h"

#include <cctype>
#include <cmath>
#include <cstring>

#include "core/errors.h"

namespace ai3 {
namespace {

class JsonParser {
 public:
  explicit JsonParser(const std::string& text) : t_(text) {}

  Json Parse() {
    Json v = Value();
    Space();
    if (p_ != t_.size()) Bad("trailing characters");
    return v;
  }

 private:
  [[noreturn]] void Bad(const char* what) const {
    Fail(ErrorKind::kInvalidArgument, "malformed JSON attribute (", what,
         " at offset ", p_, "): ", t_);
  }
  void Space() {
    while (p_ < t_.size() && std::isspace(static_cast<unsigned char>(t_[p_])))
      ++p_;
  }
  // At a list's or object's opening bracket: consumes it, and its end
  // `close` too if nothing is between them.
  bool Empty(char close) {
    ++p_;
    Space();
    if (p_ < t_.size() && t_[p_] == close) return ++p_, true;
    return false;
  }
  // After an element of a list or object: true at its end `close`, false
  // at a ',' (both consumed).
  bool End(char close) {
    Space();
    if (p_ < t_.size() && (t_[p_] == ',' || t_[p_] == close))
      return t_[p_++] == close;
    Bad(close == ']' ? "expected ',' or ']'" : "expected ',' or '}'");
  }
  bool Eat(const char* word) {
    const size_t n = std::strlen(word);
    if (t_.compare(p_, n, word) != 0) return false;
    p_ += n;
    return true;
  }
  Json Value() {
    Space();
    if (p_ >= t_.size()) Bad("unexpected end");
    Json v;
    const char c = t_[p_];
    if (Eat("null")) return v;
    if (Eat("true") || Eat("false")) {
      v.kind = Json::kBool;
      v.b = t_[p_ - 1] == 'e' && t_[p_ - 2] == 'u';  // "true", not "false"
      return v;
    }
    if (c == '"') {
      v.kind = Json::kString;
      v.s = String();
      return v;
    }
    if (c == '[') {
      v.kind = Json::kList;
      if (Empty(']')) return v;
      do {
        v.list.push_back(Value());
      } while (!End(']'));
      return v;
    }
    if (c == '{') {
      v.kind = Json::kObject;
      if (Empty('}')) return v;
      for (;;) {
        Space();
        if (p_ >= t_.size() || t_[p_] != '"') Bad("expected a key");
        std::string key = String();
        Space();
        if (p_ >= t_.size() || t_[p_] != ':') Bad("expected ':'");
        ++p_;
        v.object.emplace_back(std::move(key), Value());
        if (End('}')) return v;
      }
    }
    return Number();
  }
  std::string String() {
    std::string out;
    ++p_;  // the opening quote
    while (p_ < t_.size() && t_[p_] != '"') {
      if (t_[p_] == '\\') {
        if (++p_ >= t_.size()) Bad("unterminated escape");
        const char e = t_[p_];
        out += e == 'n' ? '\n' : e == 't' ? '\t' : e;  // \" \\ \/ as is
        if (e == 'u') Bad("\\u escapes are not used by ai3's attributes");
      } else {
        out += t_[p_];
      }
      ++p_;
    }
    if (p_ >= t_.size()) Bad("unterminated string");
    ++p_;
    return out;
  }
  Json Number() {
    Json v;
    // Python's json writes the non-finite floats as words.
    if (Eat("Infinity")) return v.kind = Json::kFloat, v.f = HUGE_VAL, v;
    if (Eat("-Infinity")) return v.kind = Json::kFloat, v.f = -HUGE_VAL, v;
    if (Eat("NaN")) return v.kind = Json::kFloat, v.f = std::nan(""), v;
    const size_t start = p_;
    bool integral = true;
    while (p_ < t_.size() &&
           (std::isdigit(static_cast<unsigned char>(t_[p_])) ||
            std::strchr("+-.eE", t_[p_]) != nullptr)) {
      if (std::strchr(".eE", t_[p_]) != nullptr) integral = false;
      ++p_;
    }
    if (p_ == start) Bad("unexpected character");
    const std::string text = t_.substr(start, p_ - start);
    try {
      if (integral) {
        v.kind = Json::kInt;
        v.i = std::stoll(text);
      } else {
        v.kind = Json::kFloat;
        v.f = std::stod(text);
      }
    } catch (const std::exception&) {
      Bad("bad number");
    }
    return v;
  }

  const std::string& t_;
  size_t p_ = 0;
};

}  // namespace

Json ParseJson(const std::string& text) { return JsonParser(text).Parse(); }

AttrValue ToAttr(const Json& v, const AttrDecl* decl) {
  const bool floats = decl != nullptr && (decl->type == AttrType::kFloat ||
                                          decl->type == AttrType::kFloats);
  switch (v.kind) {
    case Json::kNull:
      return AttrValue();
    case Json::kBool:
      return v.b;
    case Json::kInt:
      return floats ? AttrValue(static_cast<double>(v.i)) : AttrValue(v.i);
    case Json::kFloat:
      return v.f;
    case Json::kString:
      return v.s;
    case Json::kList: {
      bool all_int = !floats;
      for (const Json& e : v.list) {
        if (!e.IsNumber()) {
          Fail(ErrorKind::kInvalidArgument, "attribute list of non-numbers");
        }
        all_int = all_int && e.kind == Json::kInt;
      }
      if (all_int) {
        std::vector<int64_t> out;
        for (const Json& e : v.list) out.push_back(e.i);
        return out;
      }
      std::vector<double> out;
      for (const Json& e : v.list) out.push_back(e.Number());
      return out;
    }
    case Json::kObject:
      break;
  }
  Fail(ErrorKind::kInvalidArgument, "an attribute cannot be a JSON object");
}

AttrMap JsonAttrs(const OpSchema& schema, const std::string& text) {
  const Json a = ParseJson(text.empty() ? "{}" : text);
  if (a.kind != Json::kObject)
    Fail(ErrorKind::kInvalidArgument, "attrs must be a JSON object");
  AttrMap attrs;
  for (const auto& [key, value] : a.object) {
    const AttrDecl* decl = nullptr;
    for (const AttrDecl& d : schema.attrs()) {
      if (d.name == key) decl = &d;
    }
    attrs[key] = ToAttr(value, decl);
  }
  return attrs;
}

std::vector<int64_t> Ints(const Json* v, const char* what) {
  std::vector<int64_t> out;
  if (v == nullptr) return out;
  if (v->kind != Json::kList)
    Fail(ErrorKind::kInvalidArgument, what, " must be a list");
  for (const Json& e : v->list) {
    if (e.kind != Json::kInt)
      Fail(ErrorKind::kInvalidArgument, what, " must hold ints");
    out.push_back(e.i);
  }
  return out;
}

}  // namespace ai3
