// OpSchema: each op declared once, beside its Attrs
// (core/ops/<op>/<op>_schema.cc).
//
// A declaration says what a layer of the op is made of, in words every
// binding can read without knowing the op:
//   - its attributes: names, types, defaults;
//   - its weights, in the order the op's kernels take them (optional ones
//     marked);
//   - how the Attrs struct is filled from those (including what follows from
//     the weights' shapes, e.g. conv2d's channels and kernel size);
//   - the op's "default" list per device (core/registry.h).
// The output-shape rule and the validation stay the Attrs' own OutputShape
// and Validate; the schema calls them, so there is one of each.
//
// The generic bindings (core/python) build any layer from a schema
// (MakeLayer) and answer output shapes without building a kernel or copying
// a weight (OutputShape), so no binding names an op.
#ifndef AI3_CORE_OP_SCHEMA_H_
#define AI3_CORE_OP_SCHEMA_H_

#include <array>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "core/errors.h"
#include "core/layer.h"
#include "core/math/epilogue.h"
#include "core/registry.h"
#include "core/tensor.h"

namespace ai3 {

enum class AttrType { kInt, kFloat, kBool, kString, kInts, kFloats };
const char* Name(AttrType type);

// An attribute's value as a binding passes it; monostate is "None".
using AttrValue =
    std::variant<std::monostate, bool, int64_t, double, std::string,
                 std::vector<int64_t>, std::vector<double>>;
using AttrMap = std::map<std::string, AttrValue>;
std::string ToString(const AttrValue& value);  // Python-like: 1, [1, 2], 'NCHW'

struct AttrDecl {
  std::string name;
  AttrType type = AttrType::kInt;
  // What an absent attribute (or None) becomes. monostate: the attribute
  // must be given, unless it is `nullable`.
  AttrValue default_value;
  // None is a value of its own, which the op gives a meaning (slice's open
  // end, attention's default scale, a pool's stride = its kernel).
  bool nullable = false;
  // kInts / kFloats: the exact length (-1: any). A scalar stands for a list
  // of it repeated; for a length-4 padding a pair (h, w) means (h, h, w, w).
  int size = -1;
  std::vector<std::string> choices;  // kString: the values allowed, if set
  std::string doc;
};

struct WeightDecl {
  std::string name;
  bool optional = false;
  std::string doc;
};

// A layer's weights in declaration order; an absent optional one is nullopt.
// For shape queries they have a shape and dtype and no data.
using WeightSlots = std::vector<std::optional<Tensor>>;

// One entry of an op's "default" list, for op_schemas() and the docs.
struct DefaultEntry {
  std::string algorithm;
  std::string condition;  // empty: wherever the algorithm applies
};

class OpSchema {
 public:
  const std::string& op() const { return op_; }
  const std::string& doc() const { return doc_; }
  const std::vector<AttrDecl>& attrs() const { return attrs_; }
  const std::vector<WeightDecl>& weights() const { return weights_; }
  // Whether a layer of the op reads several inputs (a MultiLayer).
  bool multi_input() const { return multi_input_; }
  // The op's "default" list on `device`, in order (core/registry.h).
  std::vector<DefaultEntry> DefaultOrder(Device device) const {
    return default_order_(device);
  }

  // `attrs` checked against the declarations (every name known, every
  // required one given, each value of its type) with the defaults filled in
  // and values widened to the declared type (an int where a float is
  // declared, a scalar where a list is). Errors name the attribute.
  AttrMap Resolve(const AttrMap& attrs) const;
  // The index of the weight called `name`, or -1.
  int WeightIndex(const std::string& name) const;

  // A layer called `name`; weights are copied into it. Errors name the op
  // and the layer.
  std::shared_ptr<AnyLayer> MakeLayer(const std::string& name,
                                      const AttrMap& attrs,
                                      const WeightSlots& weights,
                                      const std::string& algorithm,
                                      Device device) const;
  // Throws what MakeLayer would for these (an invalid attribute or weight
  // shape, an unknown algorithm, one that cannot take the layer), without
  // copying a weight or preparing a kernel: weights need a shape and a dtype
  // only. "predict" checks its pick with it, where building the layer would
  // pack the weights (about 1 ms for a 1280x1000 linear layer).
  void CheckAlgorithm(const std::string& name, const AttrMap& attrs,
                      const WeightSlots& weights, const std::string& algorithm,
                      Device device) const;
  // The shape a layer made from these would give for `inputs` (shapes and
  // dtypes only), through the op's Validate and OutputShape.
  Shape OutputShape(const std::string& name, const AttrMap& attrs,
                    const WeightSlots& weights,
                    const std::vector<Tensor>& inputs) const;

 private:
  template <class Attrs>
  friend class OpDeclaration;

  std::string op_, doc_;
  std::vector<AttrDecl> attrs_;
  std::vector<WeightDecl> weights_;
  bool multi_input_ = false;
  // Set by OpDeclaration: the typed steps, given resolved attributes.
  std::function<std::shared_ptr<AnyLayer>(const std::string&, const AttrMap&,
                                          const WeightSlots&,
                                          const std::string&, Device)>
      make_;
  std::function<void(const AttrMap&, const WeightSlots&, const std::string&,
                     Device)>
      check_;
  std::function<Shape(const AttrMap&, const WeightSlots&,
                      const std::vector<Tensor>&)>
      output_shape_;
  std::function<std::vector<DefaultEntry>(Device)> default_order_;
};

// The schema of `op`; throws kUnsupported listing the ops there are.
const OpSchema& GetOpSchema(const std::string& op);
// Every declared op, sorted by name.
std::vector<const OpSchema*> AllOpSchemas();
// Adds a schema (once per op; a second one for an op is a bug: kInternal).
void RegisterOpSchema(OpSchema schema);

// A multi-input layer that also says how much scratch memory a call with
// given inputs takes (the single-input AnyLayer says it through
// InputWorkspaceBytes).
class InputsWorkspace {
 public:
  virtual ~InputsWorkspace() = default;
  virtual size_t InputsWorkspaceBytes(
      const std::vector<Tensor>& inputs) const = 0;
};

namespace internal {
template <class Attrs, class = void>
struct IsMultiInput : std::false_type {};
template <class Attrs>
struct IsMultiInput<Attrs,
                    std::void_t<decltype(std::declval<Attrs>().MinInputs())>>
    : std::true_type {};

template <class Attrs>
class SchemaMultiLayer : public MultiLayer<Attrs>, public InputsWorkspace {
 public:
  using MultiLayer<Attrs>::MultiLayer;
  size_t InputsWorkspaceBytes(
      const std::vector<Tensor>& inputs) const override {
    this->OutputShape(inputs);  // validates; errors name the layer
    try {
      return static_cast<const MultiInputKernel*>(this->kernel_.get())
          ->InputsWorkspaceBytes(inputs);
    } catch (const Error& e) {
      throw e.WithContext(this->Context());
    }
  }
};

// Typed reads of a resolved attribute (OpDeclaration's setters).
inline bool IsNone(const AttrValue& v) {
  return std::holds_alternative<std::monostate>(v);
}
template <class T>
const T& As(const AttrValue& v) {
  return std::get<T>(v);
}
Layout LayoutOf(const AttrValue& v);  // "NCHW" / "NHWC"
// Weight k's shape, which must have rank `rank` (kShape naming it if not).
const Shape& WeightShape(const WeightSlots& weights, size_t k, size_t rank,
                         const char* what);
// "<op> layer '<name>'" (without the name when it is empty).
std::string LayerContext(const std::string& op, const std::string& name);
}  // namespace internal

// The declaration of the op whose layer parameters are `Attrs`, written
// once in core/ops/<op>/<op>_schema.cc:
//
//   AI3_REGISTER_OP_SCHEMA(
//       OpDeclaration<Conv2dAttrs>("2-D convolution")
//           .Pair("stride", &Conv2dAttrs::stride_h, &Conv2dAttrs::stride_w)
//           ...
//           .Weight("weight").OptionalWeight("bias")
//           .FromWeights([](Conv2dAttrs& a, const AttrMap&,
//                           const WeightSlots& w) { ... })
//           .Default(Device::kCPU, {{"guess"}, {"gemm"}, ...}));
//
// Setters run in declaration order, so one may read a field an earlier
// attribute set; FromWeights runs last.
template <class Attrs>
class OpDeclaration {
 public:
  using Setter = std::function<void(Attrs&, const AttrValue&)>;
  using FromWeightsFn =
      std::function<void(Attrs&, const AttrMap&, const WeightSlots&)>;
  using Choice = typename Registry<Attrs>::DefaultChoice;

  explicit OpDeclaration(std::string doc) {
    schema_.op_ = Attrs::kOp;
    schema_.doc_ = std::move(doc);
    schema_.multi_input_ = internal::IsMultiInput<Attrs>::value;
  }

  // Any attribute, with the function that stores its value in Attrs.
  OpDeclaration& Attr(AttrDecl decl, Setter set) {
    schema_.attrs_.push_back(std::move(decl));
    setters_.push_back(std::move(set));
    return *this;
  }

  // An attribute stored as is in one field (int64_t, double, bool, a string
  // or a list of int64_t); its default is the field's value in a default Attrs.
  // (C: Attrs or the base it inherits the field from.)
  template <class M, class C>
  OpDeclaration& Field(std::string name, M C::* field, std::string doc) {
    static_assert(std::is_base_of_v<C, Attrs>, "a field of another struct");
    AttrDecl decl{std::move(name)};
    decl.type = TypeOf<M>();
    decl.default_value = AttrValue(Attrs{}.*field);
    decl.doc = std::move(doc);
    return Attr(std::move(decl), [field](Attrs& a, const AttrValue& v) {
      a.*field = internal::As<M>(v);
    });
  }

  // A string attribute naming one of `choices` (the first its default),
  // stored in an enum field as the value's index: the enum lists its values
  // in the order of `choices`.
  template <class E, class C>
  OpDeclaration& OneOf(std::string name, E C::* field,
                       std::vector<std::string> choices, std::string doc) {
    static_assert(std::is_enum_v<E>, "OneOf stores into an enum field");
    static_assert(std::is_base_of_v<C, Attrs>, "a field of another struct");
    AttrDecl decl{std::move(name), AttrType::kString, choices[0]};
    decl.choices = std::move(choices);
    decl.doc = std::move(doc);
    return Attr(decl,
                [field, values = decl.choices](Attrs& a, const AttrValue& v) {
                  const auto& s = internal::As<std::string>(v);
                  for (size_t i = 0; i < values.size(); ++i) {
                    if (values[i] == s) a.*field = static_cast<E>(i);
                  }
                });
  }

  // An (h, w) pair of ints in two fields; an int means (v, v).
  OpDeclaration& Pair(std::string name, int64_t Attrs::* h, int64_t Attrs::* w,
                      std::string doc) {
    Attrs defaults;
    AttrDecl decl{std::move(name), AttrType::kInts,
                  std::vector<int64_t>{defaults.*h, defaults.*w}};
    decl.size = 2;
    decl.doc = std::move(doc);
    return Attr(std::move(decl), [h, w](Attrs& a, const AttrValue& v) {
      const auto& p = internal::As<std::vector<int64_t>>(v);
      a.*h = p[0];
      a.*w = p[1];
    });
  }

  // Padding (top, bottom, left, right) in four fields; an int pads all
  // sides alike, a pair (h, w) pads top/bottom by h and left/right by w.
  OpDeclaration& Pads(std::string name, std::array<int64_t Attrs::*, 4> sides,
                      std::string doc) {
    AttrDecl decl{std::move(name), AttrType::kInts,
                  std::vector<int64_t>{0, 0, 0, 0}};
    decl.size = 4;
    decl.doc = std::move(doc);
    return Attr(std::move(decl), [sides](Attrs& a, const AttrValue& v) {
      const auto& p = internal::As<std::vector<int64_t>>(v);
      for (int k = 0; k < 4; ++k) a.*sides[k] = p[k];
    });
  }

  // The attribute declared last has no default: it must be given.
  OpDeclaration& Required() {
    schema_.attrs_.back().default_value = AttrValue();
    return *this;
  }

  // "activation": None, or the (min, max) of a clamp fused into the
  // epilogue (ReLU is (0, inf); core/math/epilogue.h); and "activation_fn".
  OpDeclaration& ActivationAttr() {
    AttrDecl decl{"activation", AttrType::kFloats};
    decl.nullable = true;
    decl.size = 2;
    decl.doc = "(min, max) of a clamp fused into the epilogue, or None";
    Attr(std::move(decl), [](Attrs& a, const AttrValue& v) {
      if (internal::IsNone(v)) return;
      const auto& bounds = internal::As<std::vector<double>>(v);
      const ActivationFn fn = a.activation.fn;
      a.activation = Activation::Clamp(bounds[0], bounds[1]);
      a.activation.fn = fn;
    });
    // "activation_fn": what the epilogue applies before that clamp
    // (core/math/epilogue.h): y = clamp(fn(x), min, max).
    AttrDecl fn_decl{"activation_fn", AttrType::kString,
                     std::string("identity")};
    fn_decl.choices = {"identity",  "silu", "sigmoid",
                       "hardswish", "gelu", "gelu_tanh"};
    fn_decl.doc =
        "function fused into the epilogue before the activation clamp";
    return Attr(std::move(fn_decl), [](Attrs& a, const AttrValue& v) {
      ActivationFn fn = ActivationFn::kIdentity;
      ActivationFnOf(internal::As<std::string>(v), &fn);  // one of choices
      if (fn == ActivationFn::kIdentity) {
        a.activation.fn = fn;
        return;
      }
      const bool clamped = a.activation.enabled;
      if (!clamped) a.activation = Activation::Function(fn);
      a.activation.fn = fn;
    });
  }

  // "layout": "NCHW" or "NHWC", default NCHW.
  OpDeclaration& LayoutAttr() {
    AttrDecl decl{"layout", AttrType::kString, std::string("NCHW")};
    decl.choices = {"NCHW", "NHWC"};
    decl.doc = "memory order of the image tensors";
    return Attr(std::move(decl), [](Attrs& a, const AttrValue& v) {
      a.layout = internal::LayoutOf(v);
    });
  }

  // An optional constant operand `name` in the fields has_other,
  // other_shape and other_dtype (binary ops, matmul): given, the layer
  // reads one input less.
  OpDeclaration& ConstantOperand(std::string name, std::string doc) {
    OptionalWeight(std::move(name), std::move(doc));
    const size_t k = schema_.weights_.size() - 1;
    constant_operand_ = [k](Attrs& a, const WeightSlots& w) {
      a.has_other = w[k].has_value();
      if (a.has_other) {
        a.other_shape = w[k]->shape;
        a.other_dtype = w[k]->dtype;
      }
    };
    return *this;
  }

  OpDeclaration& Weight(std::string name, std::string doc = "") {
    schema_.weights_.push_back({std::move(name), false, std::move(doc)});
    return *this;
  }
  OpDeclaration& OptionalWeight(std::string name, std::string doc = "") {
    schema_.weights_.push_back({std::move(name), true, std::move(doc)});
    return *this;
  }
  // Fills what follows from the weights' shapes, dtypes and presence (and
  // attributes that default to something taken from them).
  OpDeclaration& FromWeights(FromWeightsFn fn) {
    from_weights_ = std::move(fn);
    return *this;
  }

  // The op's "default" list on `device`: the first entry whose algorithm is
  // registered, can take the layer and (if given) whose condition holds.
  OpDeclaration& Default(Device device, std::vector<Choice> order) {
    Registry<Attrs>::Get().SetDefaultOrder(device, std::move(order));
    return *this;
  }

  // "direct", the op's only algorithm, its "default" on each of `devices`
  // (an op with one algorithm per device: `.DirectOn({Device::kCPU,
  // Device::kCUDA})`).
  OpDeclaration& DirectOn(std::initializer_list<Device> devices) {
    for (Device device : devices) Default(device, {{"direct"}});
    return *this;
  }

  bool Register() {
    schema_.make_ = [attrs_of = AttrsFn()](
                        const std::string& name, const AttrMap& attrs,
                        const WeightSlots& weights,
                        const std::string& algorithm,
                        Device device) -> std::shared_ptr<AnyLayer> {
      Attrs a = attrs_of(attrs, weights);
      std::vector<Tensor> params = Present(weights);
      if constexpr (internal::IsMultiInput<Attrs>::value) {
        return std::make_shared<internal::SchemaMultiLayer<Attrs>>(
            name, a, params, algorithm, device);
      } else {
        return std::make_shared<Layer<Attrs>>(name, a, params, algorithm,
                                              device);
      }
    };
    // LayerBase's own steps before Prepare: Validate, then Resolve.
    schema_.check_ = [attrs_of = AttrsFn()](
                         const AttrMap& attrs, const WeightSlots& weights,
                         const std::string& algorithm, Device device) {
      Attrs a = attrs_of(attrs, weights);
      a.Validate(Present(weights));
      std::string resolved;
      Registry<Attrs>::Get().Resolve(algorithm, device, a, &resolved);
    };
    schema_.output_shape_ =
        [attrs_of = AttrsFn()](const AttrMap& attrs, const WeightSlots& weights,
                               const std::vector<Tensor>& inputs) {
          Attrs a = attrs_of(attrs, weights);
          a.Validate(Present(weights));
          if constexpr (internal::IsMultiInput<Attrs>::value) {
            const int n = static_cast<int>(inputs.size());
            if (n < a.MinInputs() || n > a.MaxInputs()) {
              Fail(ErrorKind::kInvalidArgument, "takes ", a.MinInputs(), " to ",
                   a.MaxInputs(), " inputs, got ", n);
            }
            return a.OutputShape(inputs);
          } else {
            if (inputs.size() != 1) {
              Fail(ErrorKind::kInvalidArgument, "takes 1 input, got ",
                   inputs.size());
            }
            return a.OutputShape(inputs[0]);
          }
        };
    schema_.default_order_ = [](Device device) {
      std::vector<DefaultEntry> out;
      for (const Choice& c : Registry<Attrs>::Get().DefaultOrder(device)) {
        out.push_back({c.name, c.condition});
      }
      return out;
    };
    RegisterOpSchema(std::move(schema_));
    return true;
  }

 private:
  template <class M>
  static constexpr AttrType TypeOf() {
    if constexpr (std::is_same_v<M, bool>) {
      return AttrType::kBool;
    } else if constexpr (std::is_same_v<M, int64_t>) {
      return AttrType::kInt;
    } else if constexpr (std::is_same_v<M, double>) {
      return AttrType::kFloat;
    } else if constexpr (std::is_same_v<M, std::string>) {
      return AttrType::kString;
    } else {
      static_assert(
          std::is_same_v<M, std::vector<int64_t>>,
          "Field takes int64_t, double, bool, string or vector<int64_t>");
      return AttrType::kInts;
    }
  }

  static std::vector<Tensor> Present(const WeightSlots& weights) {
    std::vector<Tensor> params;
    for (const auto& w : weights) {
      if (w) params.push_back(*w);
    }
    return params;
  }

  // Resolved attributes and weights -> Attrs.
  std::function<Attrs(const AttrMap&, const WeightSlots&)> AttrsFn() const {
    return [decls = schema_.attrs_, setters = setters_,
            constant_operand = constant_operand_, from_weights = from_weights_](
               const AttrMap& attrs, const WeightSlots& weights) {
      Attrs a;
      for (size_t k = 0; k < decls.size(); ++k) {
        setters[k](a, attrs.at(decls[k].name));
      }
      if (constant_operand) constant_operand(a, weights);
      if (from_weights) from_weights(a, attrs, weights);
      return a;
    };
  }

  OpSchema schema_;
  std::vector<Setter> setters_;
  std::function<void(Attrs&, const WeightSlots&)> constant_operand_;
  FromWeightsFn from_weights_;
};

// The declaration an op shares with its gradients, which take its
// attributes and weights as they are: defines, where it stands,
// `Name<A>(doc)`, the OpDeclaration<A>(doc) with the calls given, for A the
// op's Attrs or a gradient's (the caller adds the "default" lists):
//   AI3_DECLARE_ATTRIBUTES_AS(Declare, .Field("min", &A::min, "lower bound")
//                                          .Field("max", &A::max, "upper"));
//   AI3_REGISTER_OP_SCHEMA(
//       Declare<ClampAttrs>("doc").Default(Device::kCPU, {{"direct"}}));
//   AI3_REGISTER_GRADIENT_SCHEMA(Declare<ClampBackwardDataAttrs>("doc"));
// AI3_DECLARE_ATTRIBUTES(...) is AI3_DECLARE_ATTRIBUTES_AS(Declare, ...),
// in an <op>_schema.cc's anonymous namespace.
#define AI3_DECLARE_ATTRIBUTES_AS(Name, ...)             \
  template <class A>                                     \
  ::ai3::OpDeclaration<A> Name(std::string doc) {        \
    ::ai3::OpDeclaration<A> declaration(std::move(doc)); \
    declaration __VA_ARGS__;                             \
    return declaration;                                  \
  }                                                      \
  static_assert(true, "AI3_DECLARE_ATTRIBUTES_AS takes a ;")
#define AI3_DECLARE_ATTRIBUTES(...) \
  AI3_DECLARE_ATTRIBUTES_AS(Declare, __VA_ARGS__)

// In an op's <op>_schema.cc (a library linked with alwayslink = 1):
//   AI3_REGISTER_OP_SCHEMA(OpDeclaration<ReluAttrs>("max(x, 0)")...);
#define AI3_REGISTER_OP_SCHEMA(declaration)                        \
  static const bool AI3_CONCAT(ai3_registered_schema_, __LINE__) = \
      (declaration).Register()

}  // namespace ai3

#endif  // AI3_CORE_OP_SCHEMA_H_
