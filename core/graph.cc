#include "core/graph.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/errors.h"
#include "core/ops/add/add.h"
#include "core/ops/batchnorm2d/batchnorm2d.h"
#include "core/ops/batchnorm2d/scale_shift_kernel.h"
#include "core/ops/concat/concat.h"
#include "core/ops/conv2d/conv2d.h"
#include "core/ops/conv2d/pointwise_depthwise.h"
#include "core/ops/conv2d/residual_conv.h"
#include "core/ops/conv2d/scaled_input_conv.h"
#include "core/parallel.h"

namespace ai3 {

namespace {

void CheckModelTensor(const Tensor& t, const char* what) {
  // Other devices need this build to have their backend (--config=cuda).
  if (t.device != Device::kCPU && !GraphBackendFor(t.device)) {
    Fail(ErrorKind::kInvalidArgument, what, " is on ", Name(t.device),
         " but this build runs models on cpu only");
  }
  if (!t.IsContiguous()) {
    Fail(ErrorKind::kInvalidArgument, what,
         " is not contiguous; the core reads dense buffers only");
  }
  // Any dtype: each node's layer checks the dtypes it reads.
  if (t.numel() > 0 && t.data == nullptr) {
    Fail(ErrorKind::kInvalidArgument, what, " has no data");
  }
}

}  // namespace

// ---- Building ---------------------------------------------------------------

std::string Model::NodeContext(int node) const {
  const Node& n = nodes_[node];
  std::string context = n.kind == Kind::kAdd      ? "add node"
                        : n.kind == Kind::kConcat ? "concat node"
                                                  : "layer node";
  if (!n.name.empty()) return context + " '" + n.name + "'";
  return context + " " + std::to_string(node);
}

std::string Model::InputDescription(int input) const {
  if (input == kInput && input_count_ == 1) return "the model input";
  if (input < 0) return "model input " + std::to_string(-1 - input);
  std::string text = "node " + std::to_string(input);
  if (!nodes_[input].name.empty()) text += " '" + nodes_[input].name + "'";
  return text;
}

void Model::CheckInputId(int input, const std::string& context) const {
  if (input < 0 && input >= InputId(input_count_ - 1)) return;
  if (input < 0 || input >= static_cast<int>(nodes_.size())) {
    if (input_count_ == 1) {
      Fail(ErrorKind::kInvalidArgument, context, ": input ", input,
           " is not a node of this model (it has ", nodes_.size(), " nodes; ",
           kInput, " is the model input)");
    }
    Fail(ErrorKind::kInvalidArgument, context, ": input ", input,
         " is not a node of this model (it has ", nodes_.size(), " nodes; ",
         kInput, " to ", InputId(input_count_ - 1), " are its ", input_count_,
         " inputs)");
  }
}

void Model::SetInputCount(int count) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (count < 1) {
    Fail(ErrorKind::kInvalidArgument,
         "SetInputCount: a model takes at least 1 input, got ", count);
  }
  for (const Node& n : nodes_) {
    for (int input : n.inputs) {
      if (input < InputId(count - 1)) {
        Fail(ErrorKind::kInvalidArgument, "SetInputCount: ",
             NodeContext(static_cast<int>(&n - nodes_.data())),
             " reads model input ", -1 - input,
             ", so the model takes more than ", count);
      }
    }
  }
  input_count_ = count;
  plan_.valid = false;
}

int Model::input_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return input_count_;
}

int Model::AddNode(Node node) {
  nodes_.push_back(std::move(node));
  plan_.valid = false;
  return static_cast<int>(nodes_.size()) - 1;
}

int Model::AddLayer(std::shared_ptr<AnyLayer> layer, int input) {
  return AddLayer(std::move(layer), std::vector<int>{input});
}

int Model::AddLayer(std::shared_ptr<AnyLayer> layer, std::vector<int> inputs) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!layer) Fail(ErrorKind::kInvalidArgument, "AddLayer: layer is null");
  std::string context =
      std::string(layer->op()) + " layer '" + layer->name() + "'";
  const int count = static_cast<int>(inputs.size());
  if (count < layer->min_inputs() || count > layer->max_inputs()) {
    if (layer->min_inputs() == layer->max_inputs()) {
      Fail(ErrorKind::kInvalidArgument, context, ": takes ",
           layer->min_inputs(), " input", layer->min_inputs() == 1 ? "" : "s",
           ", got ", count);
    }
    Fail(ErrorKind::kInvalidArgument, context, ": takes ", layer->min_inputs(),
         " to ", layer->max_inputs(), " inputs, got ", count);
  }
  for (int input : inputs) CheckInputId(input, context);
  Node node{Kind::kLayer, layer->name(), std::move(layer), std::move(inputs)};
  return AddNode(std::move(node));
}

int Model::AddAdd(std::vector<int> inputs, std::string name) {
  std::lock_guard<std::mutex> lock(mutex_);
  const std::string context = "add node '" + name + "'";
  if (inputs.size() < 2) {
    Fail(ErrorKind::kInvalidArgument, context,
         ": needs at least 2 inputs, got ", inputs.size());
  }
  for (int input : inputs) CheckInputId(input, context);
  return AddNode({Kind::kAdd, std::move(name), nullptr, std::move(inputs)});
}

int Model::AddConcat(std::vector<int> inputs, int64_t axis, std::string name) {
  std::lock_guard<std::mutex> lock(mutex_);
  const std::string context = "concat node '" + name + "'";
  if (inputs.empty()) {
    Fail(ErrorKind::kInvalidArgument, context, ": needs at least 1 input");
  }
  for (int input : inputs) CheckInputId(input, context);
  return AddNode(
      {Kind::kConcat, std::move(name), nullptr, std::move(inputs), axis});
}

void Model::SetOutput(int node) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (node < 0 || node >= static_cast<int>(nodes_.size())) {
    Fail(ErrorKind::kInvalidArgument, "SetOutput: ", node,
         " is not a node of this model (it has ", nodes_.size(), " nodes)");
  }
  outputs_.assign(1, node);
  plan_.valid = false;
}

void Model::SetOutputs(std::vector<int> nodes) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (nodes.empty()) {
    Fail(ErrorKind::kInvalidArgument,
         "SetOutputs: a model has at least 1 output");
  }
  for (int node : nodes) {
    if (node < 0 || node >= static_cast<int>(nodes_.size())) {
      Fail(ErrorKind::kInvalidArgument, "SetOutputs: ", node,
           " is not a node of this model (it has ", nodes_.size(), " nodes)");
    }
  }
  outputs_ = std::move(nodes);
  plan_.valid = false;
}

std::vector<int> Model::OutputNodes() const {
  if (!outputs_.empty()) return outputs_;
  return {static_cast<int>(nodes_.size()) - 1};
}

int Model::output() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return OutputNodes()[0];
}

std::vector<int> Model::outputs() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return nodes_.empty() ? std::vector<int>{} : OutputNodes();
}

int Model::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int>(nodes_.size());
}

Model::NodeInfo Model::Describe(int node) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (node < 0 || node >= static_cast<int>(nodes_.size())) {
    Fail(ErrorKind::kInvalidArgument, "Describe: ", node,
         " is not a node of this model (it has ", nodes_.size(), " nodes)");
  }
  const Node& n = nodes_[node];
  if (n.kind == Kind::kLayer) {
    return {n.name, n.layer->op(), n.layer->algorithm(), n.inputs};
  }
  return {n.name, n.kind == Kind::kAdd ? "add" : "concat", "direct", n.inputs};
}

// ---- Shapes -----------------------------------------------------------------

std::vector<bool> Model::Live() const {
  std::vector<bool> live(nodes_.size(), false);
  if (nodes_.empty()) return live;
  for (int out : OutputNodes()) live[out] = true;
  // Inputs come before their consumers, so one backward sweep suffices.
  for (int i = static_cast<int>(nodes_.size()) - 1; i >= 0; --i) {
    if (!live[i]) continue;
    for (int input : nodes_[i].inputs) {
      if (input >= 0) live[input] = true;
    }
  }
  return live;
}

Shape Model::ConcatShape(int node, const std::vector<Shape>& shapes) const {
  const Node& n = nodes_[node];
  auto shape_of = [&](int input) -> const Shape& {
    return shapes[ShapeIndex(input)];
  };
  const Shape& first = shape_of(n.inputs[0]);
  const int64_t rank = static_cast<int64_t>(first.size());
  if (n.axis < -rank || n.axis >= rank) {
    Fail(ErrorKind::kShape, NodeContext(node), ": axis ", n.axis,
         " is out of range for inputs of rank ", rank, " (",
         InputDescription(n.inputs[0]), " has shape ", ToString(first), ")");
  }
  const int64_t axis = n.axis < 0 ? n.axis + rank : n.axis;
  Shape out = first;
  for (size_t k = 1; k < n.inputs.size(); ++k) {
    const Shape& s = shape_of(n.inputs[k]);
    bool match = static_cast<int64_t>(s.size()) == rank;
    for (int64_t d = 0; match && d < rank; ++d) {
      match = d == axis || s[d] == first[d];
    }
    if (!match) {
      Fail(ErrorKind::kShape, NodeContext(node), ": input ", k, " (",
           InputDescription(n.inputs[k]), ") has shape ", ToString(s),
           " but input 0 (", InputDescription(n.inputs[0]), ") has shape ",
           ToString(first), "; concat along axis ", n.axis,
           " needs every other dimension to match");
    }
    out[axis] += s[axis];
  }
  return out;
}

// shapes[i] is node i's shape; the model inputs' shapes ride at the back
// (ShapeIndex) so that lookups need no special case.
std::vector<Shape> Model::InferShapes(const Shape* inputs,
                                      const DType* input_dtypes,
                                      const std::vector<bool>& live,
                                      Device device,
                                      std::vector<DType>* dtypes_out) const {
  if (nodes_.empty()) {
    Fail(ErrorKind::kInvalidArgument, "the model has no nodes");
  }
  std::vector<Shape> shapes(nodes_.size() + input_count_);
  for (int k = 0; k < input_count_; ++k) {
    for (int64_t d : inputs[k]) {
      if (d < 0) {
        Fail(ErrorKind::kShape, InputDescription(InputId(k)),
             " has a negative dimension: ", ToString(inputs[k]));
      }
    }
    shapes[ShapeIndex(InputId(k))] = inputs[k];
  }
  // Each node's result dtype, indexed like shapes.
  std::vector<DType> dtypes(shapes.size(), DType::kFloat32);
  for (int k = 0; k < input_count_; ++k) {
    dtypes[ShapeIndex(InputId(k))] = input_dtypes[k];
  }
  auto shape_of = [&](int id) -> const Shape& {
    return shapes[ShapeIndex(id)];
  };
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (!live[i]) continue;
    const Node& n = nodes_[i];
    const int node = static_cast<int>(i);
    switch (n.kind) {
      case Kind::kLayer: {
        std::vector<Tensor> probes(n.inputs.size());
        for (size_t k = 0; k < n.inputs.size(); ++k) {
          probes[k].dtype = dtypes[ShapeIndex(n.inputs[k])];
          probes[k].shape = shape_of(n.inputs[k]);
          probes[k].layout = n.layer->layout();
          probes[k].device = device;  // layers check the input's device
        }
        shapes[i] = probes.size() == 1
                        ? n.layer->OutputShape(probes[0])  // names the layer
                        : n.layer->OutputShape(probes);
        dtypes[i] = probes.size() == 1 ? n.layer->OutputDType(probes[0])
                                       : n.layer->OutputDType(probes);
        break;
      }
      case Kind::kAdd:
      case Kind::kConcat:
        // Their loops are float32 / float64 ones, of one dtype.
        dtypes[i] = dtypes[ShapeIndex(n.inputs[0])];
        for (int id : n.inputs) {
          const DType t = dtypes[ShapeIndex(id)];
          if (!IsFloat(t) || t != dtypes[i]) {
            Fail(ErrorKind::kDType, NodeContext(node), ": ",
                 InputDescription(id), " is ", Name(t), "; ",
                 n.kind == Kind::kAdd ? "add" : "concat",
                 " takes inputs of one dtype, float32 or float64");
          }
        }
        break;
    }
    switch (n.kind) {
      case Kind::kLayer:
        break;
      case Kind::kAdd: {
        const Shape& first = shape_of(n.inputs[0]);
        for (size_t k = 1; k < n.inputs.size(); ++k) {
          const Shape& s = shape_of(n.inputs[k]);
          if (s != first) {
            Fail(ErrorKind::kShape, NodeContext(node), ": input ", k, " (",
                 InputDescription(n.inputs[k]), ") has shape ", ToString(s),
                 " but input 0 (", InputDescription(n.inputs[0]),
                 ") has shape ", ToString(first),
                 "; add needs identical shapes");
          }
        }
        shapes[i] = first;
        break;
      }
      case Kind::kConcat:
        shapes[i] = ConcatShape(node, shapes);
        break;
    }
  }
  if (dtypes_out) *dtypes_out = std::move(dtypes);
  return shapes;
}

Shape Model::OutputShape(const Shape& input, DType dtype) const {
  return OutputShapes({input}, dtype)[0];
}

std::vector<Shape> Model::OutputShapes(const std::vector<Shape>& inputs,
                                       DType dtype) const {
  return OutputShapes(inputs, std::vector<DType>(inputs.size(), dtype));
}

std::vector<Shape> Model::OutputShapes(const std::vector<Shape>& inputs,
                                       const std::vector<DType>& dtypes) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (dtypes.size() != inputs.size()) {
    Fail(ErrorKind::kInvalidArgument, "got ", inputs.size(), " shapes but ",
         dtypes.size(), " dtypes");
  }
  if (static_cast<int>(inputs.size()) != input_count_) {
    Fail(ErrorKind::kInvalidArgument, "the model takes ", input_count_,
         " input", input_count_ == 1 ? "" : "s", ", got ", inputs.size(),
         " shapes");
  }
  const std::vector<bool> live = Live();
  // A shape query for the device the model's layers run on.
  Device device = Device::kCPU;
  for (const Node& n : nodes_) {
    if (n.kind == Kind::kLayer) {
      device = n.layer->device();
      break;
    }
  }
  std::vector<Shape> shapes =
      InferShapes(inputs.data(), dtypes.data(), live, device);
  std::vector<Shape> result;
  for (int out : OutputNodes()) result.push_back(shapes[out]);
  return result;
}

// ---- Planning ---------------------------------------------------------------

Model::NodeReaders Model::ReadersOf(const std::vector<bool>& live,
                                    const std::vector<int>& root) const {
  const int count = static_cast<int>(nodes_.size());
  NodeReaders r{std::vector<int>(count, 0), std::vector<int>(count, -1),
                std::vector<int>(count, 0)};
  for (int i = 0; i < count; ++i) {
    if (!live[i]) continue;
    ++r.group_size[root[i]];
    for (int input : nodes_[i].inputs) {
      if (input < 0) continue;
      ++r.count[input];
      r.last[input] = i;
    }
  }
  return r;
}

std::vector<int> Model::PlanFusion(const std::vector<bool>& live,
                                   const std::vector<Shape>& shapes,
                                   const std::vector<char>& is_output,
                                   bool enabled, Plan* plan) const {
  const int count = static_cast<int>(nodes_.size());
  std::vector<int> root(count);
  for (int i = 0; i < count; ++i) root[i] = i;
  plan->accumulate.assign(count, kNotFused);
  plan->fused_relu.assign(count, 0);
  plan->fused_into.assign(count, -1);
  plan->offset.assign(count, 0);
  plan->placed_in.assign(count, -1);
  plan->in_place.assign(count, {});
  plan->concat_map.assign(count, nullptr);
  plan->pointwise_depthwise.assign(count, {});
  plan->gated_conv.assign(count, {});
  plan->residual.assign(count, nullptr);
  if (!enabled) return root;
  const NodeReaders node_readers = ReadersOf(live, root);
  const std::vector<int>& readers = node_readers.count;
  const std::vector<int>& reader = node_readers.last;
  // Only the core's own kernels: a user's "custom" add or relu keeps its
  // node (nobody promises what it computes).
  auto direct_layer = [&](int node, const char* op) {
    const Node& n = nodes_[node];
    return n.kind == Kind::kLayer && std::strcmp(n.layer->op(), op) == 0 &&
           n.layer->algorithm() == "direct";
  };
  auto shape_of = [&](int id) -> const Shape& {
    return shapes[ShapeIndex(id)];
  };
  for (int i = 0; i < count; ++i) {
    if (!live[i]) continue;
    const Node& n = nodes_[i];
    if (n.inputs.size() != 2 || n.inputs[0] == n.inputs[1]) continue;
    if (n.kind != Kind::kAdd && !direct_layer(i, "add")) continue;
    // No broadcasting: both operands have the sum's shape.
    if (shape_of(n.inputs[0]) != shapes[i] ||
        shape_of(n.inputs[1]) != shapes[i]) {
      continue;
    }
    for (int k = 0; k < 2; ++k) {
      const int p = n.inputs[k];
      if (p < 0 || is_output[p] || readers[p] != 1) continue;
      root[i] = root[p];
      plan->accumulate[i] = n.inputs[1 - k];
      plan->fused_into[i] = p;
      break;
    }
    if (plan->accumulate[i] == kNotFused || is_output[i] || readers[i] != 1) {
      continue;
    }
    const int u = reader[i];
    if (direct_layer(u, "relu") && nodes_[u].inputs.size() == 1) {
      root[u] = root[i];
      plan->fused_relu[i] = 1;
      plan->fused_into[u] = i;
    }
  }
  PlaceConcatInputs(live, shapes, OutputNodes()[0], &root, plan);
  FoldConcatBatchNorm(live, shapes, is_output, &root, plan);
  FusePointwiseDepthwise(live, shapes, is_output, &root, plan);
  FuseGatedConvs(live, shapes, is_output, &root, plan);
  FuseResidualConvs(live, shapes, is_output, OutputNodes()[0], &root, plan);
  AliasViews(live, shapes, is_output, &root, plan);
  return root;
}

void Model::AliasViews(const std::vector<bool>& live,
                       const std::vector<Shape>& shapes,
                       const std::vector<char>& is_output,
                       std::vector<int>* root, Plan* plan) const {
  const int count = static_cast<int>(nodes_.size());
  std::vector<int>& r = *root;
  const std::vector<int> group_size = ReadersOf(live, r).group_size;
  // Per group root: its last member in run order. Only a group's members
  // write its buffer, so a view taken after the last one stays valid.
  std::vector<int> last_member(count, -1);
  for (int i = 0; i < count; ++i) {
    if (live[i]) last_member[r[i]] = i;
  }
  for (int v = 0; v < count; ++v) {
    const Node& n = nodes_[v];
    // The view's own buffer would be written by nothing but itself: no add
    // accumulates into it, no concat holds it. Its input is a node (the
    // model's inputs are the caller's, set per call) and it is no output
    // (the caller's buffer must receive the elements).
    if (!live[v] || is_output[v] || n.kind != Kind::kLayer ||
        n.inputs.size() != 1 || n.inputs[0] < 0 || r[v] != v ||
        group_size[v] != 1 || plan->fused_into[v] >= 0 ||
        plan->placed_in[v] >= 0) {
      continue;
    }
    const int p = n.inputs[0];
    const int g = r[p];
    if (last_member[g] > v) continue;
    const std::optional<int64_t> offset =
        n.layer->ViewOffset(shapes[ShapeIndex(p)]);
    if (!offset) continue;
    r[v] = g;
    plan->offset[v] = plan->offset[p] + *offset;
    plan->fused_into[v] = p;
    last_member[g] = v;
  }
}

const Layer<Conv2dAttrs>* Model::GuessConv(int node) const {
  const Node& n = nodes_[node];
  if (n.kind != Kind::kLayer || n.inputs.size() != 1 ||
      n.layer->algorithm() != "guess" || n.layer->device() != Device::kCPU) {
    return nullptr;
  }
  return dynamic_cast<const Layer<Conv2dAttrs>*>(n.layer.get());
}

bool Model::FeedsOnlyItsReader(int i, const std::vector<bool>& live,
                               const std::vector<char>& is_output,
                               const std::vector<int>& root,
                               const NodeReaders& readers, const Plan& plan) {
  return live[i] && !is_output[i] && readers.count[i] == 1 && root[i] == i &&
         readers.group_size[i] == 1 && plan.fused_into[i] < 0;
}

void Model::FusePointwiseDepthwise(const std::vector<bool>& live,
                                   const std::vector<Shape>& shapes,
                                   const std::vector<char>& is_output,
                                   std::vector<int>* root, Plan* plan) const {
  const PointwiseDepthwiseMaker make = PointwiseDepthwiseFusion();
  if (make == nullptr) return;
  const int count = static_cast<int>(nodes_.size());
  std::vector<int>& r = *root;
  const NodeReaders readers = ReadersOf(live, r);
  for (int i = 0; i < count; ++i) {
    // The pointwise node's result is only the depthwise node's input.
    if (!FeedsOnlyItsReader(i, live, is_output, r, readers, *plan)) continue;
    const Layer<Conv2dAttrs>* pointwise = GuessConv(i);
    const int u = readers.last[i];
    const Layer<Conv2dAttrs>* depthwise = pointwise ? GuessConv(u) : nullptr;
    if (depthwise == nullptr || plan->fused_into[u] >= 0) continue;
    std::unique_ptr<PointwiseDepthwise> fused =
        make(pointwise->attrs(), pointwise->weights(), depthwise->attrs(),
             depthwise->weights(), shapes[ShapeIndex(nodes_[i].inputs[0])]);
    if (!fused) continue;
    // Nothing writes the pointwise node's result. Its node joins the
    // depthwise node's buffer group, which the fused kernel writes, so that
    // buffer is held from the fused node's run on (MakePlan sizes groups
    // by the results that are written).
    r[i] = r[u];
    plan->fused_into[u] = i;
    plan->pointwise_depthwise[i] = {std::move(fused), u};
  }
}

void Model::FuseGatedConvs(const std::vector<bool>& live,
                           const std::vector<Shape>& shapes,
                           const std::vector<char>& is_output,
                           std::vector<int>* root, Plan* plan) const {
  const ScaledInputConvMaker make = ScaledInputConvFusion();
  if (make == nullptr) return;
  const int count = static_cast<int>(nodes_.size());
  std::vector<int>& r = *root;
  const NodeReaders readers = ReadersOf(live, r);
  for (int i = 0; i < count; ++i) {
    // The product is only the conv's input. Only the core's own mul (a
    // user's "custom" one keeps its node: nobody promises what it computes).
    const Node& n = nodes_[i];
    if (!FeedsOnlyItsReader(i, live, is_output, r, readers, *plan) ||
        n.kind != Kind::kLayer || n.inputs.size() != 2 ||
        n.inputs[0] == n.inputs[1] || std::strcmp(n.layer->op(), "mul") != 0 ||
        n.layer->algorithm() != "direct" || n.layer->device() != Device::kCPU) {
      continue;
    }
    const int u = readers.last[i];
    const Layer<Conv2dAttrs>* conv = GuessConv(u);
    if (conv == nullptr || plan->fused_into[u] >= 0 ||
        plan->pointwise_depthwise[u].kernel) {
      continue;
    }
    const Shape& product = shapes[i];
    if (product.size() != 4) continue;
    const bool nhwc = conv->attrs().layout == Layout::kNHWC;
    const int64_t channels = product[nhwc ? 3 : 1];
    for (int k = 0; k < 2; ++k) {
      // Input k the gate, of (N or 1) x C values; the other x itself.
      const Shape& x = shapes[ShapeIndex(n.inputs[1 - k])];
      const Shape& gate = shapes[ShapeIndex(n.inputs[k])];
      const int64_t images = gate.size() == 4 ? gate[0] : 0;
      if (x != product || (images != 1 && images != product[0]) ||
          gate != (nhwc ? Shape{images, 1, 1, channels}
                        : Shape{images, channels, 1, 1})) {
        continue;
      }
      std::unique_ptr<ScaledInputConv> fused =
          make(conv->attrs(), conv->weights(), x, images);
      if (!fused) break;
      // As for a pointwise conv fused with its depthwise reader: the mul
      // node writes nothing of its own and joins the conv's buffer group.
      r[i] = r[u];
      plan->fused_into[u] = i;
      plan->gated_conv[i] = {std::move(fused), u, k};
      break;
    }
  }
}

void Model::FuseResidualConvs(const std::vector<bool>& live,
                              const std::vector<Shape>& shapes,
                              const std::vector<char>& is_output, int out,
                              std::vector<int>* root, Plan* plan) const {
  const ResidualConvMaker make = ResidualConvFusion();
  if (make == nullptr) return;
  const int count = static_cast<int>(nodes_.size());
  std::vector<int>& r = *root;
  const NodeReaders readers = ReadersOf(live, r);
  // A "guess" conv2d layer (GuessConv: the maker's kernel is oneDNN's, a
  // layer of another algorithm keeps its own) whose result nothing but
  // `add` reads, in a group of its own (with the add and its relu), or null.
  auto lone_conv = [&](int node, int add) -> const Layer<Conv2dAttrs>* {
    if (node < 0 || !live[node] || is_output[node] ||
        readers.count[node] != 1 || readers.last[node] != add ||
        plan->placed_in[node] >= 0 || plan->offset[node] != 0 ||
        plan->fused_into[node] >= 0 || plan->pointwise_depthwise[node].kernel) {
      return nullptr;
    }
    return GuessConv(node);
  };
  for (int a = 0; a < count; ++a) {
    if (!live[a] || plan->accumulate[a] == kNotFused || is_output[a]) continue;
    // The add's operands: the conv that runs last adds into the other.
    const int x = plan->fused_into[a], y = plan->accumulate[a];
    const int conv = std::max(x, y), residual = std::min(x, y);
    const Layer<Conv2dAttrs>* layer = lone_conv(conv, a);
    if (layer == nullptr || residual < 0 || is_output[residual] ||
        plan->placed_in[residual] >= 0 || plan->offset[residual] != 0) {
      continue;
    }
    const int relu = plan->fused_relu[a] ? readers.last[a] : -1;
    if (relu >= 0 && is_output[relu]) continue;
    // The residual's buffer becomes the sum: its group must end with it
    // (nothing else writes that buffer after it, the add and its relu
    // aside), be no concat's nor the output's (nor may the add's be: the
    // caller's buffer), and nothing may read it after the conv runs -- nor
    // may the conv read it.
    const int g = r[residual];
    const int input = nodes_[conv].inputs[0];
    bool free = g != r[out] && r[a] != r[out] &&
                nodes_[g].kind != Kind::kConcat && (input < 0 || r[input] != g);
    for (int m = 0; m < count && free; ++m) {
      if (!live[m] || m == a || m == relu || m == conv) continue;
      if (r[m] == g &&
          (m > residual || plan->placed_in[m] >= 0 || plan->offset[m] != 0)) {
        free = false;
      }
      for (int in : nodes_[m].inputs) {
        // (The sum itself, the add's or its relu's, is read after it.)
        if (m > conv && in >= 0 && r[in] == g && in != a && in != relu) {
          free = false;
        }
      }
    }
    if (!free) continue;
    const Activation after =
        plan->fused_relu[a]
            ? Activation::Clamp(0, std::numeric_limits<double>::infinity())
            : Activation{};
    std::unique_ptr<ResidualConv> fused = make(
        layer->attrs(), layer->weights(), after, shapes[ShapeIndex(input)]);
    if (!fused) continue;
    // The conv, the add and its relu join the residual's group: the conv
    // writes the sum there; the add and the relu do not run.
    const int old_group = r[a];
    for (int m = 0; m < count; ++m) {
      if (live[m] && (r[m] == old_group || m == conv)) r[m] = g;
    }
    plan->residual[conv] = std::move(fused);
    plan->accumulate[a] = kNotFused;
    plan->fused_relu[a] = 0;
    plan->fused_into[a] = conv;
  }
}

void Model::FoldConcatBatchNorm(const std::vector<bool>& live,
                                const std::vector<Shape>& shapes,
                                const std::vector<char>& is_output,
                                std::vector<int>* root, Plan* plan) const {
  const int count = static_cast<int>(nodes_.size());
  std::vector<int>& r = *root;
  const NodeReaders node_readers = ReadersOf(live, r);
  const std::vector<int>& readers = node_readers.count;
  const std::vector<int>& reader = node_readers.last;
  const std::vector<int>& group_size = node_readers.group_size;
  for (int i = 0; i < count; ++i) {
    const Node& n = nodes_[i];
    if (!live[i] || n.kind != Kind::kConcat || is_output[i] ||
        readers[i] != 1) {
      continue;
    }
    // The concat copies every input into a buffer of its own: none is
    // placed in it, it is placed nowhere, and no later concat extends it.
    const std::vector<char>& placed = plan->in_place[i];
    if (r[i] != i || group_size[i] != 1 || plan->placed_in[i] >= 0 ||
        std::find(placed.begin(), placed.end(), 1) != placed.end()) {
      continue;
    }
    const int u = reader[i];
    const Node& bn = nodes_[u];
    if (bn.kind != Kind::kLayer || bn.inputs.size() != 1 ||
        bn.layer->algorithm() != "direct" ||
        bn.layer->device() != Device::kCPU) {
      continue;
    }
    const auto* layer =
        dynamic_cast<const Layer<BatchNorm2dAttrs>*>(bn.layer.get());
    const int64_t rank = static_cast<int64_t>(shapes[i].size());
    if (layer == nullptr || layer->attrs().layout != Layout::kNHWC ||
        rank != 4 || (n.axis < 0 ? n.axis + rank : n.axis) != 3) {
      continue;
    }
    // The layer's buffer (shared with a residual add fused into it, if
    // any) becomes the concat's.
    const int old_root = r[u];
    for (int j = 0; j < count; ++j) {
      if (live[j] && r[j] == old_root) r[j] = i;
    }
    plan->fused_into[u] = i;
    plan->concat_map[i] = std::make_shared<const ScaleShiftMap>(
        layer->attrs(), layer->weights(), /*shift=*/true);
  }
}

void Model::PlaceConcatInputs(const std::vector<bool>& live,
                              const std::vector<Shape>& shapes, int out,
                              std::vector<int>* root, Plan* plan) const {
  std::vector<int>& r = *root;
  const int count = static_cast<int>(nodes_.size());
  auto shape_of = [&](int id) -> const Shape& {
    return shapes[ShapeIndex(id)];
  };
  // Whether each input of concat `node` is one contiguous block of its
  // result: the dims before the axis multiply to 1.
  auto contiguous_slices = [&](int node) {
    const int64_t rank = static_cast<int64_t>(shapes[node].size());
    const int64_t axis =
        nodes_[node].axis < 0 ? nodes_[node].axis + rank : nodes_[node].axis;
    int64_t outer = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= shapes[node][d];
    return outer == 1;
  };
  // The last node (in run order) writing group g's buffer: a group moved
  // into a concat must end with the value the concat reads (a fused add
  // after it would overwrite it).
  auto last_member = [&](int g) {
    int last = -1;
    for (int m = 0; m < count; ++m) {
      if (live[m] && r[m] == g) last = m;
    }
    return last;
  };
  auto move_group = [&](int g, int concat, int64_t offset) {
    for (int m = 0; m < count; ++m) {
      if (live[m] && r[m] == g) {
        r[m] = concat;
        plan->offset[m] += offset;
      }
    }
  };
  for (int i = 0; i < count; ++i) {
    if (!live[i] || nodes_[i].kind != Kind::kConcat) continue;
    const std::vector<int>& inputs = nodes_[i].inputs;
    plan->in_place[i].assign(inputs.size(), 0);
    // A concat that a fused add then overwrites in place would destroy
    // the inputs placed in it while others may still read them.
    if (!contiguous_slices(i) || last_member(i) != i) continue;
    // The earlier concat with the most inputs that begin this one's: its
    // buffer, left as it wrote it, is this one's first slice. The output's
    // group stays the caller's buffer.
    int prefix = -1;
    size_t covered = 0;
    for (int j = 0; j < i; ++j) {
      if (!live[j] || nodes_[j].kind != Kind::kConcat || r[j] != j ||
          r[j] == r[out] || !contiguous_slices(j)) {
        continue;
      }
      const std::vector<int>& head = nodes_[j].inputs;
      if (head.size() > inputs.size() || head.size() <= covered ||
          !std::equal(head.begin(), head.end(), inputs.begin()) ||
          last_member(j) != j) {
        continue;
      }
      prefix = j;
      covered = head.size();
    }
    if (prefix >= 0) {
      move_group(prefix, i, 0);
      plan->placed_in[prefix] = i;
      std::fill(plan->in_place[i].begin(), plan->in_place[i].begin() + covered,
                1);
    }
    int64_t offset = 0;
    for (size_t k = 0; k < inputs.size(); ++k) {
      const int p = inputs[k];
      const int64_t width = NumElements(shape_of(p));
      if (k >= covered && p >= 0 && r[p] != i && r[p] != r[out] &&
          last_member(r[p]) == p) {
        move_group(r[p], i, offset);
        plan->placed_in[p] = i;
        plan->in_place[i][k] = 1;
      }
      offset += width;
    }
  }
}

void Model::MakePlan(const Tensor* inputs) {
  plan_.valid = false;
  const Tensor& input = inputs[0];  // its dtype and device are every input's
  const std::vector<bool> live = Live();
  std::vector<Shape> input_shapes;
  std::vector<DType> input_dtypes;
  for (int k = 0; k < input_count_; ++k) {
    input_shapes.push_back(inputs[k].shape);
    input_dtypes.push_back(inputs[k].dtype);
  }
  std::vector<DType> dtypes;  // per node, then per input (ShapeIndex)
  std::vector<Shape> shapes = InferShapes(
      input_shapes.data(), input_dtypes.data(), live, input.device, &dtypes);
  const int count = static_cast<int>(nodes_.size());
  const std::vector<int> outputs = OutputNodes();
  const int out = outputs[0];
  std::vector<char> is_output(count, 0);
  for (int o : outputs) is_output[o] = 1;
  // A GPU input gets its activations in that GPU's memory (allocated on the
  // current device, which the frontend makes the input's).
  GraphBackend* backend = GraphBackendFor(input.device);

  // Fused nodes write into another node's buffer (their root's); a group
  // of nodes sharing one lives until the last reader of any of them.
  Plan plan;
  const std::vector<int> root = PlanFusion(
      live, shapes, is_output, fusion_ && !backend, &plan);  // CPU only

  // The last live node reading each node's result.
  std::vector<int> last_use(count, -1);
  for (int i = 0; i < count; ++i) {
    if (!live[i]) continue;
    for (int input_id : nodes_[i].inputs) {
      if (input_id >= 0) last_use[input_id] = i;
    }
  }

  // The outputs after the first are copied out after the last node runs:
  // their buffers live to the end.
  for (size_t k = 1; k < outputs.size(); ++k) last_use[outputs[k]] = count;
  // Per group (indexed by its root): the last reader of any member, the
  // bytes its members span (a concat's inputs sit at offsets in it) and its
  // first member in run order, which takes its slot.
  // A group's members share a dtype (those placed in a concat have the
  // concat's, InferShapes), so its first member's element size is every one's.
  std::vector<int> group_last_use(count, -1), group_first(count, -1);
  std::vector<size_t> group_bytes(count, 0);
  for (int i = 0; i < count; ++i) {
    if (!live[i]) continue;
    const int g = root[i];
    group_last_use[g] = std::max(group_last_use[g], last_use[i]);
    // A pointwise node fused with its depthwise reader writes only the
    // depthwise node's result (FusePointwiseDepthwise); a mul fused with
    // its conv reader, the conv's (FuseGatedConvs).
    if (!plan.pointwise_depthwise[i].kernel && !plan.gated_conv[i].kernel) {
      group_bytes[g] = std::max(
          group_bytes[g],
          (static_cast<size_t>(plan.offset[i]) + NumElements(shapes[i])) *
              SizeOf(dtypes[i]));
    }
    if (group_first[g] < 0) group_first[g] = i;
  }
  const int out_root = root[out];

  // Give each live group but the output's a slot, walking the nodes in run
  // order: a group's first node takes a free slot (the smallest that fits,
  // else the largest, grown) and a node frees its inputs' slots once it is
  // their group's last reader. Freeing only after taking keeps a node's
  // output apart from its inputs: kernels read and write through
  // __restrict pointers (a fused add, which writes over one input, is the
  // graph's own loop).
  std::vector<int> slot(count, -1);
  std::vector<size_t> slot_bytes;
  std::vector<int> free_slots;
  for (int i = 0; i < count; ++i) {
    if (!live[i]) continue;
    if (group_first[root[i]] == i && root[i] != out_root) {
      const size_t need = group_bytes[root[i]];
      int best = -1;
      for (int s : free_slots) {
        const bool fits = slot_bytes[s] >= need;
        const bool best_fits = best >= 0 && slot_bytes[best] >= need;
        const bool smaller = best >= 0 && slot_bytes[s] < slot_bytes[best];
        const bool larger = best >= 0 && slot_bytes[s] > slot_bytes[best];
        if (best < 0 || (fits && (!best_fits || smaller)) ||
            (!fits && !best_fits && larger)) {
          best = s;
        }
      }
      if (best < 0) {
        best = static_cast<int>(slot_bytes.size());
        slot_bytes.push_back(0);
      } else {
        free_slots.erase(std::find(free_slots.begin(), free_slots.end(), best));
      }
      slot_bytes[best] = std::max(slot_bytes[best], need);
      slot[root[i]] = best;
    }
    std::vector<int> groups;
    for (int input_id : nodes_[i].inputs) {
      if (input_id >= 0) groups.push_back(root[input_id]);
    }
    std::sort(groups.begin(), groups.end());
    groups.erase(std::unique(groups.begin(), groups.end()), groups.end());
    for (int g : groups) {
      if (group_last_use[g] == i && slot[g] >= 0) free_slots.push_back(slot[g]);
    }
  }

  std::vector<void*> slot_data(slot_bytes.size());
  if (backend) {
    // Slots planned for another GPU (or none) are freed, not reused.
    if (plan_.device != input.device ||
        plan_.device_index != input.device_index) {
      device_slots_.clear();
    }
    for (size_t s = 0; s < slot_bytes.size(); ++s) {
      if (s == device_slots_.size()) device_slots_.emplace_back(backend);
      device_slots_[s].Reserve(slot_bytes[s]);
      slot_data[s] = device_slots_[s].data();
    }
  } else {
    if (slots_.size() < slot_bytes.size()) slots_.resize(slot_bytes.size());
    for (size_t s = 0; s < slot_bytes.size(); ++s) {
      slots_[s].Reserve(slot_bytes[s]);
      slot_data[s] = slots_[s].data();
    }
  }

  plan.input_shapes = std::move(input_shapes);
  plan.input_dtypes = std::move(input_dtypes);
  plan.device = input.device;
  plan.device_index = input.device_index;
  for (int o : outputs) {
    plan.output_shapes.push_back(shapes[o]);
    plan.output_dtypes.push_back(dtypes[o]);
  }
  plan.tensors.resize(count);
  plan.f32_inputs.resize(count);
  plan.f64_inputs.resize(count);
  plan.widths.resize(count);
  plan.outer.resize(count, 0);
  plan.layer_inputs.resize(count);
  for (int i = 0; i < count; ++i) {
    if (!live[i]) continue;
    if (root[i] == out_root) plan.output_group.push_back(i);
    // A folded relu runs inside its add.
    const bool folded =
        plan.fused_into[i] >= 0 && plan.accumulate[i] == kNotFused;
    if (!folded) plan.order.push_back(i);
    const Node& n = nodes_[i];
    Tensor& t = plan.tensors[i];
    t.data = slot[root[i]] >= 0 ? static_cast<char*>(slot_data[slot[root[i]]]) +
                                      plan.offset[i] * SizeOf(dtypes[i])
                                : nullptr;
    t.dtype = dtypes[i];
    t.device = input.device;
    t.device_index = input.device_index;
    t.shape = shapes[i];
    if (n.kind == Kind::kLayer) {
      t.layout = n.layer->layout();
    } else {
      const int first = n.inputs[0];
      t.layout =
          first < 0 ? inputs[-1 - first].layout : plan.tensors[first].layout;
    }
    if (n.kind == Kind::kLayer) {
      if (n.inputs.size() > 1) {
        for (int input_id : n.inputs) {
          plan.layer_inputs[i].push_back(input_id < 0 ? inputs[-1 - input_id]
                                                      : plan.tensors[input_id]);
        }
      }
      continue;
    }
    plan.f32_inputs[i].resize(n.inputs.size());
    plan.f64_inputs[i].resize(n.inputs.size());
    if (n.kind == Kind::kConcat) {
      // Rows of the concat: everything before the axis is the row count,
      // the axis and everything after it one input's row.
      const int64_t rank = static_cast<int64_t>(t.shape.size());
      const int64_t axis = n.axis < 0 ? n.axis + rank : n.axis;
      int64_t outer = 1;
      for (int64_t d = 0; d < axis; ++d) outer *= t.shape[d];
      plan.outer[i] = outer;
      for (int input_id : n.inputs) {
        const Shape& s = shapes[ShapeIndex(input_id)];
        int64_t width = 1;
        for (int64_t d = axis; d < rank; ++d) width *= s[d];
        plan.widths[i].push_back(width);
      }
    }
  }
  plan.valid = true;
  plan_ = std::move(plan);
}

void Model::PrepareLocked(const Tensor* inputs, size_t count) {
  if (static_cast<int>(count) != input_count_) {
    Fail(ErrorKind::kInvalidArgument, "the model takes ", input_count_,
         " input", input_count_ == 1 ? "" : "s", ", got ", count);
  }
  bool planned = plan_.valid;
  for (int k = 0; k < input_count_; ++k) {
    const Tensor& x = inputs[k];
    if (input_count_ == 1) {
      CheckModelTensor(x, "model input");
    } else {
      try {
        CheckModelTensor(x, "this input");
      } catch (const Error& e) {
        throw e.WithContext(InputDescription(InputId(k)));
      }
      if (x.device != inputs[0].device ||
          x.device_index != inputs[0].device_index) {
        Fail(ErrorKind::kInvalidArgument, InputDescription(InputId(k)),
             " is on ", Name(x.device), " but model input 0 is on ",
             Name(inputs[0].device), "; a model's inputs share one device");
      }
    }
    planned = planned && plan_.input_shapes[k] == x.shape &&
              plan_.input_dtypes[k] == x.dtype;
  }
  if (!planned || plan_.device != inputs[0].device ||
      plan_.device_index != inputs[0].device_index) {
    MakePlan(inputs);
  }
}

std::vector<DType> Model::OutputDTypes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!plan_.valid) {
    Fail(ErrorKind::kInvalidArgument,
         "the output dtypes are known once the model is prepared");
  }
  return plan_.output_dtypes;
}

Shape Model::Prepare(const Tensor& input) {
  std::lock_guard<std::mutex> lock(mutex_);
  PrepareLocked(&input, 1);
  return plan_.output_shapes[0];
}

std::vector<Shape> Model::Prepare(const std::vector<Tensor>& inputs) {
  std::lock_guard<std::mutex> lock(mutex_);
  PrepareLocked(inputs.data(), inputs.size());
  return plan_.output_shapes;
}

int Model::ActivationBuffers() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return plan_.valid ? static_cast<int>(slots_.size()) : 0;
}

size_t Model::ActivationBytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!plan_.valid) return 0;
  size_t bytes = 0;
  for (const Buffer& b : slots_) bytes += b.size();
  return bytes;
}

// ---- Running ----------------------------------------------------------------

void Model::Forward(const Tensor& input, const Tensor& output) {
  std::lock_guard<std::mutex> lock(mutex_);
  ForwardLocked(&input, 1, &output, 1);
}

void Model::Forward(const std::vector<Tensor>& inputs,
                    const std::vector<Tensor>& outputs) {
  std::lock_guard<std::mutex> lock(mutex_);
  ForwardLocked(inputs.data(), inputs.size(), outputs.data(), outputs.size());
}

namespace {
bool Overlap(const Tensor& a, const Tensor& b) {
  const size_t a_bytes = a.numel() * SizeOf(a.dtype);
  const size_t b_bytes = b.numel() * SizeOf(b.dtype);
  const char* a_begin = static_cast<const char*>(a.data);
  const char* b_begin = static_cast<const char*>(b.data);
  return a_bytes && b_bytes && a_begin < b_begin + b_bytes &&
         b_begin < a_begin + a_bytes;
}
}  // namespace

void Model::ForwardLocked(const Tensor* inputs, size_t input_count,
                          const Tensor* outputs, size_t output_count) {
  PrepareLocked(inputs, input_count);
  if (output_count != plan_.output_shapes.size()) {
    Fail(ErrorKind::kInvalidArgument, "the model has ",
         plan_.output_shapes.size(), " output",
         plan_.output_shapes.size() == 1 ? "" : "s", ", got ", output_count,
         " output buffers");
  }
  const bool one = output_count == 1;
  for (size_t o = 0; o < output_count; ++o) {
    const Tensor& output = outputs[o];
    CheckModelTensor(output, one ? "model output" : "a model output");
    if (output.shape != plan_.output_shapes[o] ||
        output.dtype != plan_.output_dtypes[o]) {
      Fail(ErrorKind::kShape, one ? "model output" : "a model output",
           " buffer is ", Name(output.dtype), " ", ToString(output.shape),
           ", expected ", Name(plan_.output_dtypes[o]), " ",
           ToString(plan_.output_shapes[o]));
    }
    for (size_t k = 0; k < input_count; ++k) {
      if (Overlap(inputs[k], output)) {
        Fail(ErrorKind::kInvalidArgument,
             one ? "model output" : "a model output", " overlaps ",
             input_count == 1 ? std::string("the model input")
                              : InputDescription(InputId(static_cast<int>(k))));
      }
    }
    for (size_t p = 0; p < o; ++p) {
      if (Overlap(outputs[p], output)) {
        Fail(ErrorKind::kInvalidArgument, "model outputs ", p, " and ", o,
             " overlap");
      }
    }
  }
  const Tensor& input = inputs[0];

  for (int node : plan_.output_group) {
    plan_.tensors[node].data = static_cast<char*>(outputs[0].data) +
                               plan_.offset[node] * SizeOf(outputs[0].dtype);
  }
  GraphBackend* backend = GraphBackendFor(plan_.device);  // null on the CPU
  if (backend) {
    // Every node runs on the caller's stream of this call.
    for (Tensor& t : plan_.tensors) t.stream = input.stream;
    for (auto& xs : plan_.layer_inputs) {
      for (Tensor& t : xs) t.stream = input.stream;
    }
  }
  for (int i : plan_.order) {
    if (!profiling_) {
      RunNode(i, inputs, backend);
      continue;
    }
    const auto start = std::chrono::steady_clock::now();
    RunNode(i, inputs, backend);
    node_seconds_[i] +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
  }
  // The outputs after the first kept their buffers (MakePlan): copied out.
  for (size_t o = 1; o < output_count; ++o) {
    const int node =
        outputs_.empty() ? static_cast<int>(nodes_.size()) - 1 : outputs_[o];
    const Tensor& y = plan_.tensors[node];
    const size_t bytes = y.numel() * SizeOf(y.dtype);
    if (bytes == 0) continue;
    if (backend) {  // a concat of one input is a copy
      const void* x = y.data;
      const int64_t width = y.numel();
      backend->Concat(&x, &width, 1, 1, SizeOf(y.dtype), outputs[o].data,
                      input.stream);
    } else {
      std::memcpy(outputs[o].data, y.data, bytes);
    }
  }
}

// One node of the plan (Forward's loop body; plan_ and the input are set).
void Model::RunNode(int i, const Tensor* model_inputs, GraphBackend* backend) {
  const Tensor& input = model_inputs[0];
  auto in = [&](int id) -> const Tensor& {
    return id < 0 ? model_inputs[-1 - id] : plan_.tensors[id];
  };
  const Node& n = nodes_[i];
  const Tensor& y = plan_.tensors[i];
  const bool f64 = y.dtype == DType::kFloat64;  // add and concat: float only
  if (const Plan::FusedDepthwise& f = plan_.pointwise_depthwise[i]; f.kernel) {
    f.kernel->Run(in(n.inputs[0]), plan_.tensors[f.depthwise]);
    return;
  }
  if (const Plan::GatedConv& f = plan_.gated_conv[i]; f.kernel) {
    f.kernel->Run(in(n.inputs[1 - f.gate_input]), in(n.inputs[f.gate_input]),
                  plan_.tensors[f.conv]);
    return;
  }
  if (ResidualConv* fused = plan_.residual[i].get()) {
    fused->Run(in(n.inputs[0]), y);
    return;
  }
  if (plan_.accumulate[i] != kNotFused) {  // in place over its input's result
    const Tensor& r = in(plan_.accumulate[i]);
    const bool relu = plan_.fused_relu[i] != 0;
    if (f64) {
      AddInPlace(y.data_as<double>(), r.data_as<const double>(), y.numel(),
                 relu);
    } else {
      AddInPlace(y.data_as<float>(), r.data_as<const float>(), y.numel(), relu);
    }
    return;
  }
  if (n.kind == Kind::kLayer) {
    if (n.inputs.size() == 1) {
      n.layer->Forward(in(n.inputs[0]), y);
      return;
    }
    std::vector<Tensor>& xs = plan_.layer_inputs[i];
    for (size_t k = 0; k < xs.size(); ++k) xs[k].data = in(n.inputs[k]).data;
    n.layer->Forward(xs, y);
    return;
  }
  const int inputs = static_cast<int>(n.inputs.size());
  const std::vector<char>& in_place = plan_.in_place[i];
  for (int k = 0; k < inputs; ++k) {
    // An input already written into its slice is not copied (null).
    const Tensor& x = in(n.inputs[k]);
    const bool placed = !in_place.empty() && in_place[k];
    plan_.f32_inputs[i][k] = placed ? nullptr : x.data_as<const float>();
    plan_.f64_inputs[i][k] = placed ? nullptr : x.data_as<const double>();
  }
  if (y.numel() == 0) return;
  if (backend) {
    const void* const* xs =
        f64 ? reinterpret_cast<const void* const*>(plan_.f64_inputs[i].data())
            : reinterpret_cast<const void* const*>(plan_.f32_inputs[i].data());
    if (n.kind == Kind::kAdd) {
      backend->Add(y.dtype, xs, inputs, y.numel(), y.data, input.stream);
    } else {
      backend->Concat(xs, plan_.widths[i].data(), inputs, plan_.outer[i],
                      SizeOf(y.dtype), y.data, input.stream);
    }
    return;
  }
  if (const ScaleShiftMap* map = plan_.concat_map[i].get()) {
    if (f64) {
      map->ApplyConcatNhwc(plan_.f64_inputs[i].data(), plan_.widths[i].data(),
                           inputs, plan_.outer[i], y.data_as<double>());
    } else {
      map->ApplyConcatNhwc(plan_.f32_inputs[i].data(), plan_.widths[i].data(),
                           inputs, plan_.outer[i], y.data_as<float>());
    }
    return;
  }
  if (n.kind == Kind::kAdd) {
    if (f64) {
      AddForward(plan_.f64_inputs[i].data(), inputs, y.numel(),
                 y.data_as<double>());
    } else {
      AddForward(plan_.f32_inputs[i].data(), inputs, y.numel(),
                 y.data_as<float>());
    }
  } else if (f64) {
    ConcatForward(plan_.f64_inputs[i].data(), plan_.widths[i].data(), inputs,
                  plan_.outer[i], y.data_as<double>());
  } else {
    ConcatForward(plan_.f32_inputs[i].data(), plan_.widths[i].data(), inputs,
                  plan_.outer[i], y.data_as<float>());
  }
}

void Model::SetFusion(bool on) {
  std::lock_guard<std::mutex> lock(mutex_);
  fusion_ = on;
  plan_.valid = false;
}

int Model::FusedInto(int node) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (node < 0 || node >= static_cast<int>(nodes_.size())) {
    Fail(ErrorKind::kInvalidArgument, "node ", node, " is not in the model (",
         nodes_.size(), " nodes)");
  }
  if (!plan_.valid) return -1;
  return plan_.fused_into[node] >= 0 ? plan_.fused_into[node]
                                     : plan_.placed_in[node];
}

void Model::SetProfiling(bool on) {
  std::lock_guard<std::mutex> lock(mutex_);
  profiling_ = on;
  if (on) node_seconds_.assign(nodes_.size(), 0.0);
}

double Model::NodeSeconds(int node) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (node < 0 || node >= static_cast<int>(nodes_.size())) {
    Fail(ErrorKind::kInvalidArgument, "node ", node, " is not in the model (",
         nodes_.size(), " nodes)");
  }
  return node < static_cast<int>(node_seconds_.size()) ? node_seconds_[node]
                                                       : 0.0;
}

}  // namespace ai3
