// Model: a whole network as a DAG of layers, run entirely in C++.
//
// The frontends build one Model per converted network and call Forward once
// per batch, so no Python runs between layers. Nodes are layers (any op,
// through AnyLayer; multi-input layers such as a broadcasting add, matmul or
// attention read several nodes), elementwise sums (residual connections) and
// concatenations (DenseNet, GoogLeNet, Inception, SqueezeNet), added in
// topological order: a node's inputs are the model input or earlier nodes.
//
//   Model m;
//   int c1 = m.AddLayer(conv1, Model::kInput);
//   int r1 = m.AddLayer(relu, c1);
//   int c2 = m.AddLayer(conv2, r1);
//   int sum = m.AddAdd({c2, Model::kInput}, "block.add");
//   m.AddLayer(relu, sum);   // the same layer object may appear twice
//   m.AddLayer(matmul, {c2, sum});  // a layer reading two nodes
//   m.Forward(x, y);         // y: OutputShape(x.shape, x.dtype)
//
// Memory: the first Forward for an input shape and dtype plans the run: it
// checks every node's shape and gives each node's result a buffer, sharing
// buffers between nodes whose results are not alive at the same time (a
// buffer is reused once the last node reading it has run). Later calls with
// the same shape and dtype allocate no activation memory; the output node
// writes straight into the caller's output. A call with another shape plans
// again, growing the buffers it keeps as needed.
//
// Nodes the output does not depend on (directly or through other nodes) are
// pruned: they are neither shape-checked nor run nor given a buffer.
//
// Fusion (on CPU, on by default; SetFusion): a residual add of two inputs
// of one shape (an add node, or a 2-input "add" layer of algorithm
// "direct") whose input P is read by nothing else runs in place: P writes
// its result into the add's buffer and the add then adds the other input
// into it, so the sum costs no buffer of its own and reads P's result while
// it is still in cache. A "relu" layer (algorithm "direct") that is the
// add's only reader is folded into that pass too: conv -> add -> relu (a
// ResNet block's tail) is the conv plus one pass over its output. The
// folded relu node does not run (its NodeSeconds stay 0).
//
// Conv -> residual add (the same switch): where P of such an add is a
// conv2d whose kernel can add into its output (a maker is registered,
// core/ops/conv2d/residual_conv.h: "guess", oneDNN's sum post-op), the
// other input Q lies in a buffer nothing else writes after Q nor reads
// after P runs, and P does not read that buffer, P adds its result into
// Q's buffer itself and applies the folded relu: conv -> add -> relu is
// the conv alone. (With two such convs, the one that runs last adds into
// the other's: a ResNet downsample block.) The add and relu nodes do not
// run (NodeSeconds 0; FusedInto of the add names the conv). ResNet-50 at
// batch 8 on the 2-core Xeon: 199 -> 189 ms a forward (the adds' passes
// over memory were 8.5 ms); at batch 1, where those tensors stay in
// cache, within noise.
//
// Zero-copy concat (the same switch): where each input of a concat is one
// contiguous block of the concat's result -- the product of the dims before
// the axis is 1, as for channels in NCHW at batch 1 (or any axis-0 concat)
// -- an input node writes its result straight into its slice of the
// concat's buffer, and the concat copies only the inputs that cannot (the
// model input, an input read twice, one already placed in another concat).
// A concat whose inputs begin with all of an earlier concat's, in order
// (DenseNet's growing block: cat(f0), cat(f0, f1), cat(f0, f1, f2), ...),
// takes that concat's buffer as its first slice, so the earlier features
// are never copied again: the whole block lives in one buffer. In NHWC (and
// NCHW at batch > 1) a channel slice is strided, which no layer's kernel
// writes, so those concats copy as before.
//
// Concat -> batchnorm2d (the same switch): a concat along NHWC channels
// whose only reader is a "direct" batchnorm2d layer (with any activation
// folded into it: DenseNet's cat -> BN -> ReLU before each dense layer)
// applies the layer's per-channel map as it copies, into one buffer the two
// share, so the normalised features cost one pass over memory instead of
// two. The batchnorm2d node does not run (its NodeSeconds stay 0; the
// concat's hold both). A concat whose buffer other nodes share (zero-copy
// placements) keeps its layer.
//
// Pointwise -> depthwise (the same switch): a 1x1 conv2d whose only reader
// is a 3x3 depthwise conv2d, both running "guess" in NHWC float32
// (MobileNetV2's expand and depthwise), runs as one oneDNN convolution with
// a depthwise post-op where oneDNN has a fused kernel for the shape (at
// batch 8 on the large maps; core/ops/conv2d/guess.cc), so the expanded
// tensor never reaches memory. The pointwise node runs the pair and writes
// the depthwise node's result; the depthwise node does not run (its
// NodeSeconds stay 0, FusedInto names the pointwise node).
//
// Gate -> conv (the same switch): a two-input "direct" mul of a tensor x
// and a gate s of one value per image and channel ((N, 1, 1, C) in NHWC,
// (N, C, 1, 1) in NCHW: the squeeze-excitation of EfficientNet and
// MobileNetV3), whose only reader is a conv2d running "guess" on the CPU,
// runs as that conv on x with its weights scaled by s where the registered
// maker takes the pair (core/ops/conv2d/scaled_input_conv.h; it declines
// where the weights outnumber the activation), so x * s never reaches
// memory. The mul node runs the conv and writes the conv node's result;
// the conv node does not run (its NodeSeconds stay 0, FusedInto names the
// mul node).
//
// Views (the same switch): a reshape, flatten, slice of one contiguous
// block or permute of size-1 dimensions (AnyLayer::ViewOffset, algorithm
// "direct") whose result would be a block of its input's, in order, does
// not run: its readers read the input's buffer at that offset, which lives
// until they have run (a transformer's reshapes and q/k/v splits cost no
// copy). Not for a model input or an output node, nor where a later node
// writes the input's buffer (an add fused in place into it). FusedInto names
// the input node.
//
// Several inputs and outputs (SetInputCount, SetOutputs): input k is the
// node id InputId(k) = -1 - k (kInput is input 0); each has its own dtype,
// all share one device. The first output writes straight into the caller's
// buffer like a single output; the others keep their own buffers to the end of
// the pass and are copied into the caller's (what they cost: one copy each, of
// a result a model returns alongside its main one).
//
// Dtypes: each input has its own (float token features beside int64 token
// ids and bool masks); each node's result has the dtype its layer gives
// (AnyLayer::OutputDType: the input's for most ops; gather, cast and
// comparisons give others), and its buffer is sized for it. Add and concat
// nodes take float inputs of one dtype.
//
// Thread safety: every method locks the model, so concurrent Forward calls
// on one Model are serialised (they share the planned buffers).
#ifndef AI3_CORE_GRAPH_H_
#define AI3_CORE_GRAPH_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/buffer.h"
#include "core/cuda/graph_backend.h"
#include "core/layer.h"
#include "core/tensor.h"

namespace ai3 {

struct Conv2dAttrs;        // core/ops/conv2d/conv2d.h
class ScaleShiftMap;       // core/ops/batchnorm2d/scale_shift_kernel.h
class PointwiseDepthwise;  // core/ops/conv2d/pointwise_depthwise.h
class ResidualConv;        // core/ops/conv2d/residual_conv.h
class ScaledInputConv;     // core/ops/conv2d/scaled_input_conv.h

class Model {
 public:
  // The node id of the model's (first) input; input k is InputId(k).
  static constexpr int kInput = -1;
  static constexpr int InputId(int k) { return -1 - k; }

  Model() = default;
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  // Each Add* returns the new node's id (0, 1, 2, ... in the order added).
  // An input must be kInput or the id of an existing node, else
  // kInvalidArgument. Shapes are only checked when the model is planned
  // (they depend on the input's shape).

  // A layer reading `input`. The model keeps the layer alive; the same layer
  // object may be added several times (e.g. a ReLU a block calls twice).
  int AddLayer(std::shared_ptr<AnyLayer> layer, int input);
  // A layer reading several nodes, in the order its op documents (e.g. sub:
  // inputs[0] - inputs[1]). Their number must be within the layer's
  // min_inputs()..max_inputs(); a node may be read twice (x * x).
  int AddLayer(std::shared_ptr<AnyLayer> layer, std::vector<int> inputs);
  // The elementwise sum of >= 2 inputs of identical shape.
  int AddAdd(std::vector<int> inputs, std::string name);
  // The concatenation of >= 1 inputs along `axis` (negative counts from the
  // end), in memory order: NCHW channels are axis 1, NHWC channels axis 3
  // (or -1). The inputs' other dimensions must match.
  int AddConcat(std::vector<int> inputs, int64_t axis, std::string name);

  // How many inputs the model takes (1 unless set; at least 1). Set it
  // before adding nodes that read InputId(k) for k >= 1.
  void SetInputCount(int count);
  int input_count() const;

  // Makes `node` the model's output. Until this is called the output is the
  // last node added.
  void SetOutput(int node);
  // Several outputs, in order (a node may be listed twice); each must be a
  // node of the model (not an input).
  void SetOutputs(std::vector<int> nodes);
  // The (first) output node; kInput while the model is empty.
  int output() const;
  std::vector<int> outputs() const;
  // The number of nodes.
  int size() const;

  struct NodeInfo {
    std::string name;
    std::string op;         // the layer's op, or "add" / "concat"
    std::string algorithm;  // the layer's resolved algorithm; "direct" for
                            // add and concat
    std::vector<int> inputs;
  };
  NodeInfo Describe(int node) const;

  // The output's shape for an input of this shape and dtype, checking every
  // node the output needs. Errors name the node that cannot take its input,
  // e.g. "conv2d layer 'layer1.0.conv1' (gemm): input (1, 32, 56, 56) (NCHW)
  // has 32 channels, the layer expects 64".
  Shape OutputShape(const Shape& input, DType dtype) const;
  // Every output's shape for inputs of these shapes (one per input).
  std::vector<Shape> OutputShapes(const std::vector<Shape>& inputs,
                                  DType dtype) const;
  // The same with one dtype per input (int64 token ids beside float ones).
  std::vector<Shape> OutputShapes(const std::vector<Shape>& inputs,
                                  const std::vector<DType>& dtypes) const;
  // Every output's dtype under the current plan (after Prepare / Forward).
  std::vector<DType> OutputDTypes() const;

  // Checks `input` (CPU, contiguous, float32/float64, with data), plans for
  // its shape and dtype unless already planned, and returns the output's
  // shape. Forward does this itself; callers that allocate the output
  // themselves call it first to learn its shape.
  Shape Prepare(const Tensor& input);
  // The same for a model of several inputs (all of one dtype): every
  // output's shape. Errors name the input ("model input 1 'mask'" is the
  // frontend's; here "model input 1").
  std::vector<Shape> Prepare(const std::vector<Tensor>& inputs);

  // Runs the model. `output` must be contiguous, of input's dtype and of the
  // shape Prepare returns, and must not overlap `input`.
  void Forward(const Tensor& input, const Tensor& output);
  // The same with one tensor per input and per output; like the one-input
  // form it allocates nothing once planned.
  void Forward(const std::vector<Tensor>& inputs,
               const std::vector<Tensor>& outputs);

  // Per-node timing inside whole forward passes (a layer measured alone,
  // as "auto" does, misses what it costs among its neighbours: caches,
  // thread wake-ups). While on, Forward adds each node's wall time to
  // NodeSeconds(node) (two clock reads per node; it allocates nothing);
  // turning it on clears the sums. NodeSeconds of a node that did not run is 0.
  void SetProfiling(bool on);
  double NodeSeconds(int node) const;

  // Turns the in-place residual add (and the relu folded into it) and the
  // zero-copy concat on or off; see the top of this file. Off, every node
  // runs as added.
  void SetFusion(bool on);
  // Under the current plan (after Prepare/Forward): the node whose result
  // `node` adds into in place, or -1 when it runs on its own buffer; for a
  // folded relu, the add that applies it; for a node written straight into
  // a concat's buffer (an input, or an earlier concat it extends), that
  // concat; for a batchnorm2d folded into the concat before it, that
  // concat; for a view, its input. For tests and reports.
  int FusedInto(int node) const;

  // What the current plan holds, for tests and memory reports: the number of
  // activation buffers and their total size (0 before the first Forward).
  int ActivationBuffers() const;
  size_t ActivationBytes() const;

 private:
  enum class Kind { kLayer, kAdd, kConcat };

  struct Node {
    Kind kind;
    std::string name;
    std::shared_ptr<AnyLayer> layer;  // kLayer only
    std::vector<int> inputs;
    int64_t axis = 0;  // kConcat only; as given (may be negative)
  };

  // What Forward needs, computed once per input shape and dtype.
  struct Plan {
    bool valid = false;
    std::vector<Shape> input_shapes;
    std::vector<DType> input_dtypes;
    Device device = Device::kCPU;  // where the input, and so every node, is
    int device_index = 0;
    std::vector<Shape> output_shapes;
    std::vector<DType> output_dtypes;
    std::vector<int> order;       // the live nodes, in id order
    std::vector<Tensor> tensors;  // per node: its result (data in a slot;
                                  // the output's is set per call)
    // Per add / concat node: the inputs' data pointers, refilled each call
    // (the model input's changes), and concat's row widths and row count.
    std::vector<std::vector<const float*>> f32_inputs;
    std::vector<std::vector<const double*>> f64_inputs;
    std::vector<std::vector<int64_t>> widths;
    std::vector<int64_t> outer;
    // Per layer node with several inputs: its inputs as tensors (shapes set
    // when planning, data pointers refilled each call), so running it
    // allocates nothing.
    std::vector<std::vector<Tensor>> layer_inputs;
    // Fusion, per node: the fused add's other input (the one it adds into
    // its buffer; kNotFused for nodes that are not fused adds), whether it
    // applies a relu, and what the node was fused into (FusedInto).
    std::vector<int> accumulate;
    std::vector<char> fused_relu;
    std::vector<int> fused_into;
    // Zero-copy concat, per node: where its result starts in its group's
    // buffer (elements from the root's start), the concat it was placed in
    // (or -1), and per concat node and input whether that input is already
    // in place (the concat copies the others).
    std::vector<int64_t> offset;
    std::vector<int> placed_in;
    std::vector<std::vector<char>> in_place;
    // Per concat node: the map of the batchnorm2d folded into it (null
    // when none), which it applies as it copies.
    std::vector<std::shared_ptr<const ScaleShiftMap>> concat_map;
    // Per pointwise conv2d node fused with the depthwise conv2d reading it
    // (null kernel when not): the fused pair, which writes the depthwise
    // node's result, and that node.
    struct FusedDepthwise {
      std::shared_ptr<PointwiseDepthwise> kernel;
      int depthwise = -1;
    };
    std::vector<FusedDepthwise> pointwise_depthwise;
    // Per mul node fused with the conv2d reading it (null kernel when not):
    // the fused conv, which writes the conv node's result, that node, and
    // which of the mul's inputs is the gate (the other is x).
    struct GatedConv {
      std::shared_ptr<ScaledInputConv> kernel;
      int conv = -1;
      int gate_input = 1;
    };
    std::vector<GatedConv> gated_conv;
    // Per conv2d node fused with the residual add reading it (null when
    // not): the fused conv, which adds into the add's other operand's
    // buffer (its own, shared with that operand's group) and applies the
    // add's folded relu; the add does not run.
    std::vector<std::shared_ptr<ResidualConv>> residual;
    // The nodes whose result is the caller's output buffer (the output and
    // the nodes writing in place into it), set per call.
    std::vector<int> output_group;
  };
  // Not a node id nor a model input id (-1 - k), which accumulate may hold.
  static constexpr int kNotFused = INT32_MIN;

  // Per node: how many live nodes read its result and the last that does;
  // per group root (`root` maps each live node to its group's): how many
  // live nodes the group has.
  struct NodeReaders {
    std::vector<int> count, last, group_size;
  };
  NodeReaders ReadersOf(const std::vector<bool>& live,
                        const std::vector<int>& root) const;

  // The fusion of the plan for these shapes (none unless `enabled`): per
  // live node, the node whose buffer it writes (itself when not fused); and
  // the plan's fusion fields.
  std::vector<int> PlanFusion(const std::vector<bool>& live,
                              const std::vector<Shape>& shapes,
                              const std::vector<char>& is_output, bool enabled,
                              Plan* plan) const;
  // The zero-copy concat part of it: moves input groups into concats'
  // buffers, updating `root` and the plan's offset / placed_in / in_place.
  void PlaceConcatInputs(const std::vector<bool>& live,
                         const std::vector<Shape>& shapes, int out,
                         std::vector<int>* root, Plan* plan) const;
  // The concat -> batchnorm2d part: folds each such layer into its concat,
  // updating `root` and the plan's fused_into / concat_map.
  void FoldConcatBatchNorm(const std::vector<bool>& live,
                           const std::vector<Shape>& shapes,
                           const std::vector<char>& is_output,
                           std::vector<int>* root, Plan* plan) const;

  // Whether node `i`'s result has one live reader and lies in no other
  // node's buffer, no output, and no fusion yet: what a fusion that runs
  // `i` together with that reader, never writing `i`'s result, needs
  // (FusePointwiseDepthwise, FuseGatedConvs).
  static bool FeedsOnlyItsReader(int i, const std::vector<bool>& live,
                                 const std::vector<char>& is_output,
                                 const std::vector<int>& root,
                                 const NodeReaders& readers, const Plan& plan);

  // Node `node` as a one-input conv2d layer running "guess" on the CPU
  // (what the oneDNN fusions below take), or null.
  const Layer<Conv2dAttrs>* GuessConv(int node) const;

  // The pointwise -> depthwise part: runs each 1x1 conv2d whose only
  // reader is a 3x3 depthwise conv2d as one fused kernel with it where the
  // registered maker takes the pair (core/ops/conv2d/pointwise_depthwise.h),
  // updating `root` and the plan's fused_into / pointwise_depthwise.
  void FusePointwiseDepthwise(const std::vector<bool>& live,
                              const std::vector<Shape>& shapes,
                              const std::vector<char>& is_output,
                              std::vector<int>* root, Plan* plan) const;

  // The gate -> conv part: runs each mul of a tensor by a per-image,
  // per-channel gate whose only reader is a "guess" conv2d as that conv
  // with scaled weights where the registered maker takes it
  // (core/ops/conv2d/scaled_input_conv.h), updating `root` and the plan's
  // fused_into / gated_conv.
  void FuseGatedConvs(const std::vector<bool>& live,
                      const std::vector<Shape>& shapes,
                      const std::vector<char>& is_output,
                      std::vector<int>* root, Plan* plan) const;

  // The conv -> residual add part (after the others, so that it sees every
  // group): a fused add whose operands are a conv2d read by nothing else
  // and, before it, a residual whose buffer nothing reads after the conv
  // runs becomes the conv adding into the residual's buffer, where the
  // registered maker takes it (core/ops/conv2d/residual_conv.h). Updates
  // `root` and the plan's accumulate / fused_relu / fused_into / residual.
  void FuseResidualConvs(const std::vector<bool>& live,
                         const std::vector<Shape>& shapes,
                         const std::vector<char>& is_output, int out,
                         std::vector<int>* root, Plan* plan) const;

  // The views (last, once every buffer is placed): each layer whose result
  // is a block of its input's, in order (AnyLayer::ViewOffset: a reshape, a
  // contiguous slice), joins its input's group at that offset and does not
  // run, updating `root` and the plan's offset / fused_into.
  void AliasViews(const std::vector<bool>& live,
                  const std::vector<Shape>& shapes,
                  const std::vector<char>& is_output, std::vector<int>* root,
                  Plan* plan) const;

  // The nodes the output depends on (itself included).
  std::vector<bool> Live() const;
  // Shapes of the live nodes (others left empty), for an input on
  // `device`. Throws naming the node.
  // `inputs` holds input_count_ shapes; the result has one per node, then
  // the inputs' (ShapeIndex).
  // `input_dtypes` holds one dtype per input; `dtypes`, if given, gets each
  // node's result dtype (indexed like the shapes).
  std::vector<Shape> InferShapes(const Shape* inputs, const DType* input_dtypes,
                                 const std::vector<bool>& live,
                                 Device device = Device::kCPU,
                                 std::vector<DType>* dtypes = nullptr) const;
  // Where node or input `id`'s shape is in InferShapes' result.
  size_t ShapeIndex(int id) const {
    return id < 0 ? nodes_.size() + static_cast<size_t>(-1 - id)
                  : static_cast<size_t>(id);
  }
  // The output nodes (the last node when none was set).
  std::vector<int> OutputNodes() const;
  Shape ConcatShape(int node, const std::vector<Shape>& shapes) const;
  // Errors of a node that is not a layer (layers name themselves).
  std::string NodeContext(int node) const;
  std::string InputDescription(int input) const;
  void CheckInputId(int input, const std::string& context) const;
  int AddNode(Node node);
  // `inputs` points at input_count_ tensors (so the one-input calls need
  // no vector).
  void MakePlan(const Tensor* inputs);
  void RunNode(int node, const Tensor* model_inputs, GraphBackend* backend);
  // Checks the inputs and plans unless planned; allocates nothing.
  void PrepareLocked(const Tensor* inputs, size_t count);
  void ForwardLocked(const Tensor* inputs, size_t input_count,
                     const Tensor* outputs, size_t output_count);

  mutable std::mutex mutex_;
  std::vector<Node> nodes_;
  int input_count_ = 1;
  std::vector<int> outputs_;  // empty: the last node added
  Plan plan_;
  std::vector<Buffer> slots_;  // activation buffers, kept across plans
  bool profiling_ = false;
  bool fusion_ = true;
  std::vector<double> node_seconds_;  // per node while profiling_
  // The same on a GPU (core/cuda/graph_backend.h), for CUDA inputs.
  std::vector<BackendBuffer> device_slots_;
};

}  // namespace ai3

#endif  // AI3_CORE_GRAPH_H_
