// The registry: for each op, the algorithms this build offers, per device.
//
// Every algorithm lives in its own file under core/ops/<op>/ and registers
// itself with AI3_REGISTER_ALGORITHM. The registry answers three questions:
//   - which algorithms exist (ListAlgorithms, for ai3.algorithms());
//   - can algorithm X take these layer parameters, and if not, why not;
//   - what is "default" for these parameters: the first applicable entry
//     of the op's ordered "default" list for the device, which the op's
//     declaration (core/ops/<op>/<op>_schema.cc) gives in one place.
// Like oneDNN's ordered implementation lists, but keyed by name so the user
// chooses.
#ifndef AI3_CORE_REGISTRY_H_
#define AI3_CORE_REGISTRY_H_

#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/errors.h"
#include "core/tensor.h"

namespace ai3 {

// An algorithm prepared for one layer: it holds what it derived from the
// layer's weights (transformed or packed) and runs forward passes.
class Kernel {
 public:
  virtual ~Kernel() = default;
  // Scratch memory Run needs for an input of this shape. The caller owns it
  // and reuses it across calls.
  virtual size_t WorkspaceBytes(const Shape& input_shape) const {
    (void)input_shape;
    return 0;
  }
  // `input` and `output` are contiguous, on this kernel's device, of the
  // dtype and shapes the layer validated; `workspace` has WorkspaceBytes.
  virtual void Run(const Tensor& input, const Tensor& output,
                   void* workspace) = 0;
};

// A kernel of an op with a weight and an optional bias (conv2d, linear):
// params[0] is the weight, params[1] the bias when attrs.has_bias. It keeps
// the attributes and the weights (which outlive it, see Prepare).
template <class Attrs>
class WeightBiasKernel : public Kernel {
 public:
  WeightBiasKernel(const Attrs& attrs, const std::vector<Tensor>& params)
      : attrs_(attrs),
        weight_(params[0].data),
        bias_(attrs.has_bias ? params[1].data : nullptr) {}

 protected:
  template <typename T>
  const T* weight() const {
    return static_cast<const T*>(weight_);
  }
  template <typename T>
  const T* bias() const {
    return static_cast<const T*>(bias_);  // null without a bias
  }

  Attrs attrs_;
  const void* weight_;
  const void* bias_;
};

// The Validate part of such an op's weights: params is {weight[, bias]} as
// has_bias says, the weight shaped `weight_shape` (whose dimensions
// `weight_dims` names, e.g. "(out_features, in_features)"), the bias
// (weight_shape[0],), and all of them `dtype`.
void ValidateWeightBias(const std::vector<Tensor>& params, bool has_bias,
                        const Shape& weight_shape, const char* weight_dims,
                        DType dtype);
// The OutputShape part: the input has the weights' dtype.
void ValidateInputDType(const Tensor& input, DType dtype);

// One algorithm for the op whose layer parameters are `Attrs`.
template <class Attrs>
class Algorithm {
 public:
  virtual ~Algorithm() = default;
  // Empty if this algorithm can take `attrs`; otherwise the reason, phrased
  // to follow "cannot take this layer: ".
  virtual std::string WhyNot(const Attrs& attrs) const {
    (void)attrs;
    return {};
  }
  // Whether "default" takes this algorithm before the op's ordered list
  // (its schema, Registry::SetDefaultOrder) wherever it applies: the user's
  // "custom" algorithm with its default switch on (custom_algos/).
  virtual bool ChosenFirst(const Attrs& attrs) const {
    (void)attrs;
    return false;
  }
  // `params` are the layer's weights in the op's documented order (e.g.
  // conv2d: weight, then bias if attrs.has_bias); they outlive the kernel.
  virtual std::unique_ptr<Kernel> Prepare(
      const Attrs& attrs, const std::vector<Tensor>& params) const = 0;
};

// The Algorithm whose Prepare only makes a `K`: from the attributes and the
// weights, the attributes alone or nothing, whichever K takes. One with
// conditions of its own derives from it and adds WhyNot:
//   AI3_REGISTER_ALGORITHM(FlattenAttrs, "direct", Device::kCPU,
//                          KernelAlgorithm<FlattenAttrs, CopyKernel>);
template <class Attrs, class K>
class KernelAlgorithm : public Algorithm<Attrs> {
 public:
  std::unique_ptr<Kernel> Prepare(
      const Attrs& attrs, const std::vector<Tensor>& params) const override {
    if constexpr (std::is_constructible_v<K, const Attrs&,
                                          const std::vector<Tensor>&>) {
      return std::make_unique<K>(attrs, params);
    } else if constexpr (std::is_constructible_v<K, const Attrs&>) {
      (void)params;
      return std::make_unique<K>(attrs);
    } else {
      (void)attrs, (void)params;
      return std::make_unique<K>();
    }
  }
};

struct AlgorithmInfo {
  std::string op;
  std::string name;
  Device device;
};

namespace internal {
// Ops add a lister here the first time their registry is touched, so that
// ListAlgorithms sees every op without naming them.
void AddOpLister(std::vector<AlgorithmInfo> (*lister)());
}  // namespace internal

// Every (op, algorithm, device) this build offers, sorted by op.
std::vector<AlgorithmInfo> ListAlgorithms();

inline constexpr char kDefaultAlgorithm[] = "default";

template <class Attrs>
class Registry {
 public:
  static Registry& Get() {
    static Registry* registry = new Registry();  // never destroyed: static
                                                 // registrations outlive main
    return *registry;
  }

  void Add(const std::string& name, Device device,
           std::unique_ptr<Algorithm<Attrs>> algorithm) {
    entries_.push_back({name, device, std::move(algorithm)});
  }

  // One entry of the op's "default" list: the algorithm `name`, where it
  // can take the layer and `when` (if set) holds; `condition` says `when`
  // in words.
  struct DefaultChoice {
    std::string name;
    std::string condition;
    bool (*when)(const Attrs&) = nullptr;
  };

  // The op's "default" list on `device`, in order of preference.
  // Algorithms it does not name come after it, in registration order, so
  // "default" finds any algorithm that applies.
  void SetDefaultOrder(Device device, std::vector<DefaultChoice> order) {
    default_order_[device] = std::move(order);
  }
  const std::vector<DefaultChoice>& DefaultOrder(Device device) const {
    static const std::vector<DefaultChoice> kNone;
    auto it = default_order_.find(device);
    return it == default_order_.end() ? kNone : it->second;
  }

  std::vector<std::string> Names(Device device) const {
    std::vector<std::string> names;
    for (const Entry& e : entries_) {
      if (e.device == device) names.push_back(e.name);
    }
    return names;
  }

  // The algorithm called `name` on `device` for a layer with `attrs`.
  // "default" picks the first applicable one of the op's list (see
  // ResolveDefault).
  // Throws kUnknownAlgorithm for a name nobody registered and
  // kAlgorithmNotApplicable, with the reason, when it can't take `attrs`.
  const Algorithm<Attrs>& Resolve(const std::string& name, Device device,
                                  const Attrs& attrs,
                                  std::string* resolved_name) const {
    if (name == kDefaultAlgorithm)
      return ResolveDefault(device, attrs, resolved_name);
    const Entry* found = Find(name, device);
    if (!found) {
      std::string known;
      for (const std::string& n : Names(device)) known += " '" + n + "'";
      Fail(ErrorKind::kUnknownAlgorithm, "unknown ", Attrs::kOp, " algorithm '",
           name, "' on ", Name(device), "; this build has:", known,
           " and 'default'");
    }
    std::string why = found->algorithm->WhyNot(attrs);
    if (!why.empty()) {
      Fail(ErrorKind::kAlgorithmNotApplicable, Attrs::kOp, " algorithm '", name,
           "' cannot take this layer: ", why);
    }
    *resolved_name = found->name;
    return *found->algorithm;
  }

  // The algorithm called `name` on `device`, or null (no "default", no
  // applicability check): for an algorithm of one op that runs another's
  // (linear's "direct" and "guess" run conv2d's, core/ops/linear).
  const Algorithm<Attrs>* Named(const std::string& name, Device device) const {
    const Entry* found = Find(name, device);
    return found ? found->algorithm.get() : nullptr;
  }

  // Each registered algorithm on `device` with "" or why it can't take attrs.
  std::vector<std::pair<std::string, std::string>> Applicability(
      Device device, const Attrs& attrs) const {
    std::vector<std::pair<std::string, std::string>> result;
    for (const Entry& e : entries_) {
      if (e.device == device) {
        result.emplace_back(e.name, e.algorithm->WhyNot(attrs));
      }
    }
    return result;
  }

 private:
  struct Entry {
    std::string name;
    Device device;
    std::unique_ptr<Algorithm<Attrs>> algorithm;
  };

  Registry() { internal::AddOpLister(&Registry::List); }

  static std::vector<AlgorithmInfo> List() {
    std::vector<AlgorithmInfo> infos;
    for (const Entry& e : Get().entries_) {
      infos.push_back({Attrs::kOp, e.name, e.device});
    }
    return infos;
  }

  // The entry called `name` on `device` (the last one registered, should a
  // build register a name twice), or null.
  const Entry* Find(const std::string& name, Device device) const {
    const Entry* found = nullptr;
    for (const Entry& e : entries_) {
      if (e.name == name && e.device == device) found = &e;
    }
    return found;
  }

  // In order: an algorithm asking to be chosen first (the user's custom one
  // marked default), then the op's list for the device, then the
  // algorithms the list does not name, in registration order. The first
  // that can take `attrs` wins.
  const Algorithm<Attrs>& ResolveDefault(Device device, const Attrs& attrs,
                                         std::string* resolved_name) const {
    std::vector<const Entry*> order;
    for (const Entry& e : entries_) {
      if (e.device == device && e.algorithm->ChosenFirst(attrs)) {
        order.push_back(&e);
      }
    }
    const std::vector<DefaultChoice>& listed = DefaultOrder(device);
    for (const DefaultChoice& choice : listed) {
      const Entry* e = Find(choice.name, device);
      if (e && (!choice.when || choice.when(attrs))) order.push_back(e);
    }
    for (const Entry& e : entries_) {
      bool named = false;
      for (const DefaultChoice& choice : listed) named |= choice.name == e.name;
      if (e.device == device && !named) order.push_back(&e);
    }
    std::string reasons;
    for (const Entry* e : order) {
      std::string why = e->algorithm->WhyNot(attrs);
      if (why.empty()) {
        *resolved_name = e->name;
        return *e->algorithm;
      }
      if (reasons.find("; " + e->name + ": ") == std::string::npos) {
        reasons += "; " + e->name + ": " + why;
      }
    }
    Fail(ErrorKind::kAlgorithmNotApplicable, "no ", Attrs::kOp,
         " algorithm on ", Name(device), " can take this layer", reasons);
  }

  std::vector<Entry> entries_;
  std::map<Device, std::vector<DefaultChoice>> default_order_;
};

#define AI3_CONCAT_INNER(a, b) a##b
#define AI3_CONCAT(a, b) AI3_CONCAT_INNER(a, b)

// In an algorithm's .cc file:
//   AI3_REGISTER_ALGORITHM(Conv2dAttrs, "winograd", Device::kCPU, Winograd);
// The library holding these files must be linked with alwayslink = 1.
// The algorithm class comes last and may hold commas (a template's
// arguments): AI3_REGISTER_ALGORITHM(ReluAttrs, "direct", Device::kCPU,
// SharedElementwiseDirect<ReluAttrs, ReluFn>).
#define AI3_REGISTER_ALGORITHM(AttrsType, name, device, ...)                   \
  static const bool AI3_CONCAT(ai3_registered_algorithm_, __LINE__) =          \
      (::ai3::Registry<AttrsType>::Get().Add(name, device,                     \
                                             std::make_unique<__VA_ARGS__>()), \
       true)

}  // namespace ai3

#endif  // AI3_CORE_REGISTRY_H_
