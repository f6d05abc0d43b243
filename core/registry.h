// The registry: for each op, the algorithms this build offers, per device.
//
// Every algorithm lives in its own file under core/ops/<op>/ and registers
// itself with AI3_REGISTER_ALGORITHM. The registry answers three questions:
//   - which algorithms exist (ListAlgorithms, for ai3.algorithms());
//   - can algorithm X take these layer parameters, and if not, why not;
//   - what is "default" for these parameters (the applicable algorithm with
//     the highest Preference).
// Like oneDNN's ordered implementation lists, but keyed by name so the user
// chooses.
#ifndef AI3_CORE_REGISTRY_H_
#define AI3_CORE_REGISTRY_H_

#include <map>
#include <memory>
#include <string>
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
  // How strongly "default" should prefer this algorithm for `attrs`.
  virtual int Preference(const Attrs& attrs) const {
    (void)attrs;
    return 0;
  }
  // `params` are the layer's weights in the op's documented order (e.g.
  // conv2d: weight, then bias if attrs.has_bias); they outlive the kernel.
  virtual std::unique_ptr<Kernel> Prepare(
      const Attrs& attrs, const std::vector<Tensor>& params) const = 0;
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

  std::vector<std::string> Names(Device device) const {
    std::vector<std::string> names;
    for (const Entry& e : entries_) {
      if (e.device == device) names.push_back(e.name);
    }
    return names;
  }

  // The algorithm called `name` on `device` for a layer with `attrs`.
  // "default" picks the applicable algorithm with the highest Preference.
  // Throws kUnknownAlgorithm for a name nobody registered and
  // kAlgorithmNotApplicable, with the reason, when it can't take `attrs`.
  const Algorithm<Attrs>& Resolve(const std::string& name, Device device,
                                  const Attrs& attrs,
                                  std::string* resolved_name) const {
    if (name == kDefaultAlgorithm) return ResolveDefault(device, attrs,
                                                         resolved_name);
    const Entry* found = nullptr;
    for (const Entry& e : entries_) {
      if (e.name == name && e.device == device) found = &e;
    }
    if (!found) {
      std::string known;
      for (const std::string& n : Names(device)) known += " '" + n + "'";
      Fail(ErrorKind::kUnknownAlgorithm, "unknown ", Attrs::kOp,
           " algorithm '", name, "' on ", Name(device),
           "; this build has:", known, " and 'default'");
    }
    std::string why = found->algorithm->WhyNot(attrs);
    if (!why.empty()) {
      Fail(ErrorKind::kAlgorithmNotApplicable, Attrs::kOp, " algorithm '",
           name, "' cannot take this layer: ", why);
    }
    *resolved_name = found->name;
    return *found->algorithm;
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

  const Algorithm<Attrs>& ResolveDefault(Device device, const Attrs& attrs,
                                         std::string* resolved_name) const {
    const Entry* best = nullptr;
    int best_preference = 0;
    std::string reasons;
    for (const Entry& e : entries_) {
      if (e.device != device) continue;
      std::string why = e.algorithm->WhyNot(attrs);
      if (!why.empty()) {
        reasons += "; " + e.name + ": " + why;
        continue;
      }
      int preference = e.algorithm->Preference(attrs);
      if (!best || preference > best_preference) {
        best = &e;
        best_preference = preference;
      }
    }
    if (!best) {
      Fail(ErrorKind::kAlgorithmNotApplicable, "no ", Attrs::kOp,
           " algorithm on ", Name(device), " can take this layer", reasons);
    }
    *resolved_name = best->name;
    return *best->algorithm;
  }

  std::vector<Entry> entries_;
};

#define AI3_CONCAT_INNER(a, b) a##b
#define AI3_CONCAT(a, b) AI3_CONCAT_INNER(a, b)

// In an algorithm's .cc file:
//   AI3_REGISTER_ALGORITHM(Conv2dAttrs, "winograd", Device::kCPU, Winograd);
// The library holding these files must be linked with alwayslink = 1.
#define AI3_REGISTER_ALGORITHM(AttrsType, name, device, AlgorithmClass)    \
  static const bool AI3_CONCAT(ai3_registered_algorithm_, __LINE__) =       \
      (::ai3::Registry<AttrsType>::Get().Add(                               \
           name, device, std::make_unique<AlgorithmClass>()),               \
       true)

}  // namespace ai3

#endif  // AI3_CORE_REGISTRY_H_
