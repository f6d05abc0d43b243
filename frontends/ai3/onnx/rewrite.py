"""In-graph rewrites of ONNX models: nodes ai3 runs become nodes of the
"ai3" domain that ONNX Runtime runs through ai3's core (ai3.onnx.session).

    model = ai3.onnx.swap_conv2d("resnet18.onnx", "gemm")   # each Conv -> one ai3 node
    model = ai3.onnx.partition("resnet18.onnx", {"conv2d": "auto"})  # each region -> one
    sess = ai3.onnx.InferenceSession(model)

Both start from the one ONNX -> LayerSpec mapping (ai3.onnx.graph.map_nodes,
the mapping swap_backend uses), so an op the mapping learns is swappable
here with no other code.

  swap_operation(op, model, algos)   every group of nodes the mapping turns
      into exactly one `op` layer of one activation input (a Conv; a MatMul
      with its bias Add; a written-out GELU) becomes one ai3 node running
      that layer. Other nodes stay ORT's.
  partition(model, algos)            every maximal region of nodes the
      mapping takes, with one input tensor and one output tensor, becomes
      one ai3 node running an ai3.Model of the region (built by the same
      pipeline as swap_backend: batch norms folded, activations fused,
      layouts chosen). A fully supported model is one ai3 node; an op ai3
      lacks splits it into regions around ORT's own node. A region that
      would need several inputs or outputs stays ORT's.

swap_conv2d (and swap_linear) also folds the activation after the layer
into it where ai3.fusion would (a ReLU / Clip / SiLU ... that nothing else
reads): one ai3 node, one crossing into ai3, instead of an ai3 node and an
ORT node. Likewise a residual Add that alone reads an ai3 layer's result
(and the Relu after the Add) becomes part of that layer's node, as
ai3.Model fuses it (_fold_residual_adds).

An ai3 node has the node type "ai3::Layer", with inputs (X, W), or
"ai3::ResidualLayer", with inputs (X, W, R) and one more attribute `after`
("relu" or ""): after(layer(X) + R). Both have the string attributes
  - `op`: the core op ("conv2d", ...), or "model" for a region;
  - `attrs`: canonical JSON of the core attributes (padding resolved at
    rewrite time from the shapes; an unknown size that SAME padding needs
    leaves the node ORT's), for "model" the region's specs;
  - `weights`: JSON [[name, shape or null], ...]: how W, one flat float32
    initializer, holds the layer's weights in declared order;
  - `algorithm`: the selected name (JSON of the selector for "model");
  - `node`: the layer's name, for messages; `node_key`: a unique id, the
    session's cache key (ONNX Runtime tells a Python op nothing about its
    node).
float32 only (an onnxruntime-extensions op has fixed input types). The
input model is never modified; the result is a copy whose replaced nodes'
outputs keep their names (with value_info carrying their shapes, so a
later rewrite still knows them). Models with one input and one output.
"""

from __future__ import annotations

import dataclasses
import json
import os
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ai3 import _core, errors, frontend, fusion, layers, layouts, selection
from ai3 import model as ai3_model
from ai3.onnx import graph
from ai3.selection import Selector
from ai3.spec import MODEL_INPUT, LayerSpec

DOMAIN = "ai3"
DOMAIN_VERSION = 1
# The native ops' domain (frontends/ai3/onnx/ort_op/ops.cc): what an "ai3"
# layer node becomes inside an ai3.onnx.InferenceSession (ai3.onnx.session),
# and where the rewrite writes its weightless nodes, the NHWC concats and
# broadcasting elementwise layers (_sink_transposes).
NATIVE_DOMAIN = "ai3.native"
NODE_TYPE = "Layer"
# A Layer node with a residual Add (and its Relu) folded in: inputs (X, W, R).
RESIDUAL_NODE_TYPE = "ResidualLayer"
NODE_TYPES = (NODE_TYPE, RESIDUAL_NODE_TYPE)
REGION = "model"  # the `op` of a region node

ModelLike = onnx.ModelProto | str | os.PathLike | bytes


def _copy(model: ModelLike) -> onnx.ModelProto:
    """graph.load (validated, ai3 errors) as a private copy."""
    proto = graph.load(model)
    copy = onnx.ModelProto()
    copy.CopyFrom(proto)
    return copy


def _json(value: Any) -> str:
    def plain(v: Any) -> Any:
        if isinstance(v, np.generic):
            return v.item()
        raise TypeError(f"{type(v).__name__} is not an attribute value")

    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=plain)


def _pack(weights: dict[str, Any]) -> tuple[np.ndarray, list]:
    """W (one flat float32 array) and its layout [[name, shape|None], ...]."""
    layout, parts = [], []
    for name, w in weights.items():
        if w is None:
            layout.append([name, None])
            continue
        a = np.asarray(w, dtype=np.float32)
        layout.append([name, list(a.shape)])
        parts.append(a.reshape(-1))
    return (np.concatenate(parts) if parts else np.zeros((0,), np.float32)), layout


def unpack(w: np.ndarray, layout: Sequence) -> dict[str, np.ndarray | None]:
    """The inverse of _pack: views into W, no copies."""
    out: dict[str, np.ndarray | None] = {}
    offset = 0
    flat = w.reshape(-1)
    for name, shape in layout:
        if shape is None:
            out[name] = None
            continue
        size = int(np.prod(shape, dtype=np.int64))
        if offset + size > flat.size:
            raise errors.ShapeError(
                f"the weights input holds {flat.size} values; weight '{name}' {tuple(shape)} needs more"
            )
        out[name] = flat[offset : offset + size].reshape(shape)
        offset += size
    return out


def _spec_json(spec: LayerSpec) -> dict[str, Any]:
    # The spec's own attrs: the region's pipeline (layouts, fusion) still runs on them.
    return {
        "name": spec.name,
        "op": spec.op,
        "inputs": spec.inputs,
        "attrs": spec.attrs,
        "input_shape": None if spec.input_shape is None else list(spec.input_shape),
    }


class _Rewrite:
    """The replacement of groups of nodes of one model by ai3 nodes."""

    def __init__(self, model: onnx.ModelProto, sample_input_shape: Sequence[int] | None):
        self.model = model
        self.map = graph.map_nodes(model, sample_input_shape)
        self.producer = {o: n for n in self.map.model.graph.node for o in n.output}
        self.consumers: dict[str, int] = {}
        for n in self.map.model.graph.node:
            for name in n.input:
                self.consumers[name] = self.consumers.get(name, 0) + 1
        for o in self.map.model.graph.output:
            self.consumers[o.name] = self.consumers.get(o.name, 0) + 1
        # An ORT pool or batch norm node (by its output) -> its spec: what
        # _sink_transposes may run as ai3's NHWC layer instead (nhwc_layer).
        self.nhwc_units: dict[str, tuple[graph.Group, LayerSpec]] = {
            g.nodes[0].output[0]: (g, self.map.specs[g.specs[0]])
            for g in self.map.groups
            if len(g.nodes) == 1
            and len(g.specs) == 1
            and self.map.specs[g.specs[0]].op in _NHWC_OPS
            and len(self.map.specs[g.specs[0]].inputs) == 1
        }
        self.removed: set[str] = set()  # first outputs of the nodes replaced
        # first output of a replaced node -> the ai3 node there (with its Transposes)
        self.added: dict[str, list[onnx.NodeProto]] = {}

    def boundary(self, nodes: list) -> tuple[str, str] | None:
        """(input tensor, output tensor) of a set of nodes read as one: one
        non-constant tensor read from outside, one tensor read outside
        (or a graph output); None otherwise."""
        produced = {o for n in nodes for o in n.output if o}
        reads = {
            name for n in nodes for name in n.input if name and name not in produced and name not in self.map.constants
        }
        inside = {}
        for n in nodes:
            for name in n.input:
                if name in produced:
                    inside[name] = inside.get(name, 0) + 1
        outs = [o for o in produced if self.consumers.get(o, 0) > inside.get(o, 0)]
        if len(reads) != 1 or len(outs) != 1:
            return None
        return next(iter(reads)), outs[0]

    def replace(
        self,
        nodes: list,
        x: str,
        y: str,
        op: str,
        attrs: Any,
        weights: dict,
        algorithm: str,
        label: str,
        nhwc: bool = False,
    ) -> None:
        """The ai3 node in place of `nodes`; `nhwc`: it runs on NHWC, with a
        Transpose into NHWC before it and one back to NCHW after it (which
        _sink_transposes then moves and cancels)."""
        key = uuid.uuid4().hex
        before: list[onnx.NodeProto] = []
        after: list[onnx.NodeProto] = []
        node_x, node_y = x, y
        if nhwc:
            node_x, node_y = f"{x}/ai3_nhwc_{key[:8]}", f"{y}/ai3_nhwc"
            before.append(helper.make_node("Transpose", [x], [node_x], name=f"{label}/to_nhwc", perm=TO_NHWC))
            after.append(helper.make_node("Transpose", [node_y], [y], name=f"{label}/to_nchw", perm=TO_NCHW))
        node = self.node(node_x, node_y, op, attrs, weights, algorithm, label, key)
        firsts = [n.output[0] for n in nodes]
        self.removed.update(firsts)
        self.added[firsts[-1]] = [*before, node, *after]  # where the last of them was: every input is ready there
        self.declare(y, self.map.shapes.get(y))
        if nhwc:
            self.declare(node_x, _nhwc_shape(self.map.shapes.get(x)))
            self.declare(node_y, _nhwc_shape(self.map.shapes.get(y)))

    def node(
        self, x: str, y: str, op: str, attrs: Any, weights: dict, algorithm: str, label: str, key: str | None = None
    ) -> onnx.NodeProto:
        """An ai3 node running `op` on x into y; its W joins the initializers."""
        key = key or uuid.uuid4().hex
        packed, layout = _pack(weights)
        w_name = f"{label}/ai3_weights_{key[:8]}"
        self.model.graph.initializer.append(numpy_helper.from_array(packed, w_name))
        return helper.make_node(
            NODE_TYPE,
            [x, w_name],
            [y],
            name=label,
            domain=DOMAIN,
            op=op,
            attrs=_json(attrs),
            weights=_json(layout),
            algorithm=algorithm,
            node=label,
            node_key=key,
        )

    def nhwc_layer(self, node: onnx.NodeProto, x: str) -> tuple[onnx.NodeProto, str, set[str]] | None:
        """ai3's layer in NHWC in place of ORT's pool or batch norm `node`,
        reading NHWC x, with `node`'s attributes and weights as the mapping
        reads them, and the activation after it folded in where
        _with_activation would fold one after a conv (DenseNet's
        pre-activation BN -> ReLU: one ai3 node instead of an ai3 node and
        ORT's Relu, which cost DenseNet-121 7% of its rewritten graph). With
        the NCHW tensor it stands for: `node`'s output, or the folded
        activation's; and the first outputs of the activation's ORT nodes,
        which then go. None for a node the mapping made no such layer of."""
        unit = self.nhwc_units.get(node.output[0]) if len(node.output) == 1 else None
        if unit is None:
            return None
        group, spec = unit
        nodes, y, spec = _with_activation(self, group, spec, node.output[0], selection.DEFAULT)
        attrs = ai3_model.spec_attrs(spec, "NHWC")
        label = node.name or node.output[0]
        layer = self.node(x, f"{y}/ai3_nhwc", spec.op, attrs, spec.weights, selection.DEFAULT, label)
        return layer, y, {n.output[0] for n in nodes[1:]}

    def declare(self, name: str, shape: Sequence | None) -> None:
        """value_info for a tensor whose shape the rewrite knows (so a later
        rewrite of the result still knows it)."""
        if shape is not None and not any(v.name == name for v in self.model.graph.value_info):
            dims = [d if d is not None else "?" for d in shape]
            self.model.graph.value_info.append(helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, dims))

    def known_shapes(self) -> Callable[[str], tuple | None]:
        """A tensor's static shape, as the mapping or the rewrite's own
        value_info (the NHWC tensors, as declared so far) has it; None where
        a dim is unknown."""
        declared = {
            v.name: tuple(d.dim_value if d.HasField("dim_value") else None for d in v.type.tensor_type.shape.dim)
            for v in self.model.graph.value_info
        }

        def shape_of(name: str) -> tuple | None:
            shape = self.map.shapes.get(name)
            if shape is None:
                shape = declared.get(name) or None
            return tuple(shape) if shape is not None and all(isinstance(d, int) for d in shape) else None

        return shape_of

    def finish(self) -> onnx.ModelProto:
        g = self.model.graph
        if not self.added:
            return self.model
        nodes = []
        for n in g.node:
            first = n.output[0] if n.output else None
            if first in self.added:
                nodes.extend(self.added[first])
            elif first not in self.removed:
                nodes.append(n)
        # Nodes only the replaced ones read (folded shape arithmetic) and
        # the initializers nothing reads any more go too.
        outputs = {o.name for o in g.output}
        while True:
            read = {name for n in nodes for name in n.input} | outputs
            live = [n for n in nodes if n.domain == DOMAIN or any(o in read for o in n.output)]
            if len(live) == len(nodes):
                break
            nodes = live
        nodes = _sink_transposes(nodes, outputs, self.map.constants, self.map.shapes, self.declare, self.nhwc_layer)
        nodes = _fold_residual_adds(nodes, outputs, self.known_shapes())
        del g.node[:]
        g.node.extend(nodes)
        read = {name for n in nodes for name in n.input} | outputs
        kept = [t for t in g.initializer if t.name in read]
        del g.initializer[:]
        g.initializer.extend(kept)
        for domain in (DOMAIN, NATIVE_DOMAIN):
            used = any(n.domain == domain for n in nodes)
            if used and not any(o.domain == domain for o in self.model.opset_import):
                self.model.opset_import.append(helper.make_opsetid(domain, DOMAIN_VERSION))
        return self.model


# Transpose perms between ONNX's NCHW and ai3's NHWC (ai3.layouts.PERMS).
TO_NHWC = list(layouts.PERMS["NCHW"])
TO_NCHW = list(layouts.PERMS["NHWC"])
# The ORT nodes (NCHW only in ORT) that _sink_transposes runs as ai3's
# layer in NHWC where they read the NHWC chain, and those layers' ops.
_NHWC_NODES = ("MaxPool", "AveragePool", "GlobalAveragePool", "BatchNormalization")
_NHWC_OPS = ("maxpool2d", "avgpool2d", "adaptiveavgpool2d", "batchnorm2d")
# ONNX ops that act on each element alone (a scalar operand aside), so that
# they commute with a Transpose of their tensor inputs.
_ELEMENTWISE = frozenset(
    "Abs Add Ceil Clip Div Elu Erf Exp Floor Gelu HardSigmoid HardSwish LeakyRelu Log Max Min Mul Neg Pow "
    "Reciprocal Relu Round Selu Sigmoid Sign Softplus Softsign Sqrt Sub Sum Tanh ThresholdedRelu".split()
)
# The broadcasting binary ORT ops that _sink_transposes runs as ai3's layer
# (NATIVE_DOMAIN::MultiLayer) where both operands are rank-4 tensors of
# different shapes in the NHWC chain, and that layer's op.
_BROADCASTING = {"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div"}
# What _sink_transposes moves Transposes past: the elementwise ops, and
# Concat, whose axis it maps (every input is rank 4 there).
_LAYOUT_FREE = _ELEMENTWISE | {"Concat"}


def _nhwc_shape(shape: Sequence | None) -> tuple | None:
    return layouts.permuted_shape(shape, TO_NHWC)


def _as_native_layer(n: onnx.NodeProto, op: str) -> None:
    """Turns ORT's node `n` (its inputs and output as they are) into ai3's
    weightless `op` layer on them: a NATIVE_DOMAIN MultiLayer node."""
    label = n.name or n.output[0]
    del n.attribute[:]
    n.domain, n.op_type = NATIVE_DOMAIN, "MultiLayer"
    n.attribute.extend(
        helper.make_attribute(k, v)
        for k, v in (("op", op), ("attrs", "{}"), ("algorithm", selection.DEFAULT), ("node", label))
    )


def _sink_transposes(
    nodes: list,
    outputs: set[str],
    constants: Any,
    shapes: Any,
    declare: Callable[[str, Any], None],
    nhwc_layer: Callable[[onnx.NodeProto, str], tuple[onnx.NodeProto, str, set[str]] | None],
) -> list:
    """`nodes` (in topological order) with the NHWC ai3 nodes' Transposes
    moved past elementwise ORT nodes and cancelled where two meet, so a
    chain of NHWC layers, with the residual adds and activations between
    them, runs in NHWC between one Transpose at each end.
      - An elementwise node or a Concat (_LAYOUT_FREE, default domain) that
        reads the output of a Transpose to NCHW, and otherwise scalar
        constants or rank-4 tensors (`shapes`), reads the Transposes' inputs
        instead (the other rank-4 tensors through one new Transpose to NHWC
        each; a Concat's axis becomes NHWC's), and one Transpose to NCHW
        follows it. (ResNet's first residual add reads a max pool's NCHW
        output beside a convolution's; DenseNet's concats, a pool's and
        convolutions'.)
      - A MaxPool, AveragePool, GlobalAveragePool or inference
        BatchNormalization (_NHWC_NODES, NCHW only in ORT) of a Transpose
        to NCHW becomes ai3's layer of the Transpose's input in NHWC
        (`nhwc_layer` makes the node, with the activation after it folded
        in, whose ORT node then goes; None leaves the node as it is), then a
        Transpose to NCHW. So the max pools of ResNet, SqueezeNet and
        GoogLeNet, DenseNet's pre-activation norms (which read its concats)
        and average pools sit inside the NHWC chain, and the
        squeeze-excitation blocks of MobileNetV3 and EfficientNet pool the
        tensor that their Mul scales without a Transpose of it (ORT's
        ReduceMean over H and W of NHWC took 1.2-5x its GlobalAveragePool
        on NCHW; ai3's pool the same time as the latter).
      - A broadcasting Add, Sub, Mul or Div so moved, of two rank-4
        tensors of different shapes, runs as ai3's layer
        (NATIVE_DOMAIN::MultiLayer): a squeeze-excitation block's Mul of
        [N,H,W,C] by [N,1,1,C], which ORT's Mul ran at 2-3x its NCHW time
        (efficientnet_b0's 16 SE Muls: 1.3 ms against 0.7 at batch 1).
      - A Concat so moved that joins channels, the last NHWC axis, runs as
        ai3's (NATIVE_DOMAIN::Concat, no weights, so written there directly):
        one short row per pixel and input, which ORT's Concat copied at
        about half the speed of its NCHW one (DenseNet-121's 62 concats:
        7.7 ms against 4.0 at batch 1).
      - A Transpose whose input is the output of a Transpose with the
        inverse permutation is dropped: its readers read the first one's
        input. (Not for a graph output, whose name must stay.)
    Transposes nothing reads any more go. `declare` gets each new NHWC
    tensor's shape."""

    def perm(n: onnx.NodeProto) -> list[int] | None:
        if n.op_type != "Transpose" or n.domain not in ("", "ai.onnx"):
            return None
        return next((list(a.ints) for a in n.attribute if a.name == "perm"), None)

    def scalar(name: str) -> bool:
        c = constants.get(name) if name else None
        return name == "" or (c is not None and np.size(c) == 1)

    def rank4(name: str) -> bool:
        return name not in constants and len(shapes.get(name) or ()) == 4

    def any_scalar(n: onnx.NodeProto) -> bool:
        return any(scalar(name) for name in n.input)

    to_nhwc: dict[str, str] = {}  # an NCHW tensor -> its NHWC Transpose's output

    out: list[onnx.NodeProto] = []
    producer: dict[str, onnx.NodeProto] = {}
    renamed: dict[str, str] = {}  # a tensor -> the one its readers now read
    folded: set[str] = set()  # outputs of activations an ai3 layer took in
    for n in nodes:
        if n.output and n.output[0] in folded:
            continue
        for i, name in enumerate(n.input):
            n.input[i] = renamed.get(name, name)
        p = perm(n)
        source = producer.get(n.input[0]) if n.input else None
        if p is not None and source is not None and perm(source) is not None and n.output[0] not in outputs:
            first = perm(source)
            if [first[k] for k in p] == list(range(len(p))):  # inverse permutations
                renamed[n.output[0]] = source.input[0]
                continue
        if (
            n.domain in ("", "ai.onnx")
            and n.op_type in _NHWC_NODES
            and n.output[0] not in outputs
            and source is not None
            and perm(source) == TO_NCHW
        ):
            made = nhwc_layer(n, source.input[0])
            if made is not None:
                layer, y, gone = made
                folded |= gone
                declare(layer.output[0], _nhwc_shape(shapes.get(y)))
                back = helper.make_node("Transpose", [layer.output[0]], [y], name=f"{y}/to_nchw", perm=TO_NCHW)
                out += [layer, back]
                producer[layer.output[0]], producer[y] = layer, back
                continue
        if n.domain in ("", "ai.onnx") and n.op_type in _LAYOUT_FREE and n.output[0] not in outputs:
            ins = [producer.get(name) for name in n.input]
            moved = [k for k, m in enumerate(ins) if m is not None and perm(m) == TO_NCHW]
            others = [k for k, name in enumerate(n.input) if k not in moved and not scalar(name)]
            if moved and all(rank4(n.input[k]) for k in others):
                nchw_inputs = list(n.input)
                for k in moved:
                    n.input[k] = ins[k].input[0]
                for k in others:  # an NCHW operand of the same rank: transposed to meet the others
                    name = n.input[k]
                    if name not in to_nhwc:
                        to_nhwc[name] = f"{name}/ai3_nhwc"
                        t = helper.make_node("Transpose", [name], [to_nhwc[name]], name=f"{name}/to_nhwc", perm=TO_NHWC)
                        declare(to_nhwc[name], _nhwc_shape(shapes.get(name)))
                        out.append(t)
                        producer[to_nhwc[name]] = t
                    n.input[k] = to_nhwc[name]
                if n.op_type in _BROADCASTING and len(n.input) == 2 and not any_scalar(n):
                    a_shape, b_shape = (shapes.get(name) for name in nchw_inputs)
                    if len(a_shape or ()) == len(b_shape or ()) == 4 and tuple(a_shape) != tuple(b_shape):
                        _as_native_layer(n, _BROADCASTING[n.op_type])
                if n.op_type == "Concat":  # the same axis, where NHWC has it
                    axis = next(a for a in n.attribute if a.name == "axis")
                    axis.i = TO_NHWC.index(axis.i % 4)
                    if axis.i == 3:  # the channels: many short rows, ai3's concat's case
                        n.domain = NATIVE_DOMAIN
                y = n.output[0]
                n.output[0] = f"{y}/ai3_nhwc"
                declare(n.output[0], _nhwc_shape(shapes.get(y)))
                back = helper.make_node("Transpose", [n.output[0]], [y], name=f"{y}/to_nchw", perm=TO_NCHW)
                out += [n, back]
                producer[n.output[0]], producer[y] = n, back
                continue
        out.append(n)
        for o in n.output:
            producer[o] = n
    # Transposes read by nothing (their readers moved past them).
    while True:
        read = {name for n in out for name in n.input} | outputs
        live = [n for n in out if perm(n) is None or n.output[0] in read]
        if len(live) == len(out):
            return out
        out = live


def _fold_residual_adds(nodes: list, outputs: set[str], shape_of: Callable[[str], tuple | None]) -> list:
    """`nodes` (in topological order) with each residual Add folded into the
    ai3 node that feeds it, as ai3.Model fuses a ResNet block's tail:
      - an ORT Add of two tensors of one known shape (no broadcasting), one
        of them the result of a single-layer ai3 node that nothing else
        reads, becomes one ResidualLayer node: that node's X and W, and the
        Add's other input as R (where both inputs are such results, the
        later node's, since the other is ready where it runs);
      - a Relu that alone reads the Add's result goes in too (after="relu").
    The node runs where the Add (or its Relu) ran, when X and R are both
    ready, and writes that node's output. ai3's native op runs a "guess"
    conv2d there as one kernel that adds into R (ResNet-50's rewritten graph
    spent 11% of its time in ORT's Adds and Relus); every other layer, as
    the layer and one pass adding R (ai3.onnx.session)."""
    reads: dict[str, list[onnx.NodeProto]] = {}
    for n in nodes:
        for name in n.input:
            reads.setdefault(name, []).append(n)
    producer = {o: n for n in nodes for o in n.output}
    order = {id(n): i for i, n in enumerate(nodes)}

    def only_reader(name: str) -> onnx.NodeProto | None:
        found = reads.get(name, [])
        return found[0] if len(found) == 1 and name not in outputs else None

    def foldable(name: str) -> bool:
        p = producer.get(name)
        return (
            p is not None
            and p.domain == DOMAIN
            and p.op_type == NODE_TYPE
            and node_attr(p, "op") != REGION
            and only_reader(name) is not None
        )

    gone: set[int] = set()
    placed: dict[int, onnx.NodeProto] = {}  # id of the node whose place the fused node takes -> it
    for n in nodes:
        if n.domain not in ("", "ai.onnx") or n.op_type != "Add" or len(n.input) != 2 or n.input[0] == n.input[1]:
            continue
        shape = shape_of(n.input[0])
        fed = [k for k in (0, 1) if foldable(n.input[k])]
        if shape is None or shape != shape_of(n.input[1]) or not fed:
            continue
        k = max(fed, key=lambda k: order[id(producer[n.input[k]])])
        layer = producer[n.input[k]]
        last, after = n, ""
        relu = only_reader(n.output[0])
        if relu is not None and relu.domain in ("", "ai.onnx") and relu.op_type == "Relu":
            last, after = relu, "relu"
            gone.add(id(n))
        fused = helper.make_node(
            RESIDUAL_NODE_TYPE,
            [layer.input[0], layer.input[1], n.input[1 - k]],
            [last.output[0]],
            name=layer.name,
            domain=DOMAIN,
            after=after,
        )
        fused.attribute.extend(layer.attribute)
        gone.add(id(layer))
        placed[id(last)] = fused
    return [placed.get(id(n), n) for n in nodes if id(n) not in gone]


def node_attr(node: onnx.NodeProto, name: str) -> str:
    """A string attribute of an ai3 node."""
    return next(a.s.decode() for a in node.attribute if a.name == name)


def _known_ops() -> list[str]:
    return sorted({s["op"] for s in _core.op_schemas()})


def swap_operation(
    op: str,
    model: ModelLike,
    algos: Selector | None = None,
    sample_input_shape: Sequence[int] | None = None,
    layout: str = "NHWC",
) -> onnx.ModelProto:
    """A copy of `model` in which every group of nodes the mapping turns into
    one `op` layer (see the module doc) is one ai3 node running the
    selected algorithm; "torch"/"keep" leaves it. A callable selector gets
    the onnx.NodeProto (a MatMul for its MatMul + Add) and, when it takes
    two arguments, its input shape (ONNX shape inference, with
    sample_input_shape or the model's static input shape). Sequence
    selectors index the candidates in graph order.

    `layout`: what an op with a layout (conv2d, the pools) runs on, for a
    rank-4 input. "NHWC", ai3's faster one on CPU (mobilenet_v2's convs
    swapped, 2 threads: 4.3 ms against 6.2 in NCHW, ORT 3.7): each such node
    gets a Transpose into NHWC before it and one back after it, and the
    rewrite moves those past elementwise ORT nodes (residual adds,
    activations) and concats and cancels the pairs that meet, so a chain of
    them runs in NHWC with one Transpose at each end; a pool or batch norm
    reading the chain becomes ai3's, in NHWC (_sink_transposes). "NCHW":
    ORT's own, no Transposes. "auto" selection times each layer in the
    layout it runs in."""
    if op not in _known_ops() or op in ai3_model.GRAPH_OPS:
        raise errors.UnsupportedOperation(
            f"swap_operation: unknown op {op!r}; ai3.onnx swaps single-input layers of {_known_ops()}"
        )
    if layout not in ("NCHW", "NHWC"):
        raise errors.InvalidArgument(f"swap_operation: layout must be 'NCHW' or 'NHWC', got {layout!r}")
    has_layout = any(a["name"] == "layout" for a in layers.schema(op)["attrs"])
    rewrite = _Rewrite(_copy(model), sample_input_shape)
    specs = rewrite.map.specs
    units = []
    for g in rewrite.map.groups:
        if len(g.specs) != 1 or specs[g.specs[0]].op != op or len(specs[g.specs[0]].inputs) != 1:
            continue
        ends = rewrite.boundary(g.nodes)
        if ends is not None:
            units.append((g, specs[g.specs[0]], ends))

    def runs_nhwc(spec: LayerSpec) -> bool:
        shape = spec.input_shape
        return layout == "NHWC" and has_layout and shape is not None and len(shape) == 4

    candidates = [
        selection.spec_candidate(
            dataclasses.replace(s, input_shape=_nhwc_shape(s.input_shape)) if runs_nhwc(s) else s,
            ai3_model.make_layer,
            np.float32,
            "NHWC" if runs_nhwc(s) else "NCHW",
        )
        for _, s, _ in units
    ]
    chosen = selection.select(op, algos, candidates, allow_keep=True)
    for (g, spec, (x, y)), algorithm in zip(units, chosen):
        if algorithm not in selection.KEEP_NAMES:
            nhwc = runs_nhwc(spec)
            nodes, y, spec = _with_activation(rewrite, g, spec, y, algorithm)
            attrs = ai3_model.spec_attrs(spec, "NHWC" if nhwc else "NCHW")
            rewrite.replace(nodes, x, y, op, attrs, spec.weights, algorithm, spec.name, nhwc=nhwc)
    return rewrite.finish()


def _with_activation(
    rewrite: _Rewrite, group: graph.Group, spec: LayerSpec, y: str, algorithm: str
) -> tuple[list, str, LayerSpec]:
    """The nodes, output and spec of an ai3 node with the activation after
    it folded in, where ai3.fusion.fuse_activations (the rule swap_backend
    follows) would fold it: a conv2d's ReLU / Clip / SiLU ... read by
    nothing else becomes the layer's epilogue, so the pair is one crossing
    into ai3 and one pass over memory instead of an ai3 node and an ORT
    node. Otherwise the group as it is."""
    nm = rewrite.map
    s = nm.tensors.get(y)
    readers = [k for k, g in enumerate(nm.groups) if len(g.specs) == 1 and nm.specs[g.specs[0]].inputs == [s]]
    if s is None or len(readers) != 1:
        return group.nodes, y, spec
    after = nm.groups[readers[0]]
    # Every read of y is the activation's (a written-out SiLU, x * sigmoid(x), reads it twice).
    if rewrite.consumers.get(y, 0) != sum(list(n.input).count(y) for n in after.nodes):
        return group.nodes, y, spec
    nodes = group.nodes + after.nodes
    ends = rewrite.boundary(nodes)
    if ends is None:
        return group.nodes, y, spec
    # The pair as a two-spec model: spec 0 reads the model input, the activation reads it and is the output.
    pair = [
        dataclasses.replace(spec, inputs=[MODEL_INPUT], attrs=dict(spec.attrs)),
        dataclasses.replace(nm.specs[after.specs[0]], inputs=[0]),
    ]
    fused, _, _ = fusion.fuse_activations(pair, 1, {0: algorithm})
    if len(fused) != 1:
        return group.nodes, y, spec
    return nodes, ends[1], dataclasses.replace(spec, attrs=fused[0].attrs)


def _regions(nm: graph.NodeMap) -> list[list[int]]:
    """The groups (indices) of each connected region of mapped specs."""
    owner = {s: k for k, g in enumerate(nm.groups) for s in g.specs}
    parent = list(range(len(nm.groups)))

    def find(k: int) -> int:
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    for k, g in enumerate(nm.groups):
        for s in g.specs:
            for j in nm.specs[s].inputs:
                if j in owner:
                    parent[find(k)] = find(owner[j])
    regions: dict[int, list[int]] = {}
    for k in range(len(nm.groups)):
        regions.setdefault(find(k), []).append(k)
    return list(regions.values())


def _region_selector(algos: Any) -> str:
    """The selector a region node stores (JSON): names, per-op names."""
    try:
        text = _json(algos)
    except TypeError:
        raise errors.InvalidSelector(
            "ai3.onnx.partition stores the selector in the model: give names ('auto', 'default', ...) or a "
            f"mapping op -> name, not {type(algos).__name__} with callables"
        ) from None
    if isinstance(algos, (list, tuple)) or (
        isinstance(algos, dict) and any(isinstance(v, (list, tuple)) for v in algos.values())
    ):
        raise errors.InvalidSelector("ai3.onnx.partition takes one name per op; a list would span regions")
    return text


def partition(model: ModelLike, algos: Any = None, sample_input_shape: Sequence[int] | None = None) -> onnx.ModelProto:
    """A copy of `model` whose every maximal region of nodes ai3's mapping
    takes (one input, one output) is one ai3 node running an ai3.Model of
    that region, as ai3.onnx.swap_backend would build it; the rest stays
    ORT's. `algos` is swap_backend's, by name ("auto", a dict op ->
    name): it is stored in the node and resolved when the session builds
    the region."""
    selector = _region_selector(algos)
    rewrite = _Rewrite(_copy(model), sample_input_shape)
    nm = rewrite.map
    for region in _regions(nm):
        groups = [nm.groups[k] for k in region]
        nodes = [n for g in groups for n in g.nodes]
        ends = rewrite.boundary(nodes)
        if ends is None:
            continue
        x, y = ends
        index = {s: i for i, s in enumerate(sorted(s for g in groups for s in g.specs))}
        out = index[nm.tensors[y]]
        specs, weights = [], {}
        for s, i in index.items():
            spec = nm.specs[s]
            entry = _spec_json(spec)
            entry["inputs"] = [index.get(j, -1) for j in spec.inputs]  # -1: the region's input
            specs.append(entry)
            weights.update({f"{i}/{k}": w for k, w in spec.weights.items()})
        label = f"ai3_region_{nm.specs[min(index)].name}"
        rewrite.replace(nodes, x, y, REGION, {"specs": specs, "output": out}, weights, selector, label)
    return rewrite.finish()


def region_model(attrs: dict, weights: dict, algos: Any) -> Any:
    """The ai3.Model of a region node (its `attrs` JSON decoded, its W
    unpacked): the same pipeline as ai3.onnx.swap_backend."""
    specs = []
    for i, entry in enumerate(attrs["specs"]):
        own = {k.split("/", 1)[1]: w for k, w in weights.items() if k.split("/", 1)[0] == str(i)}
        shape = entry["input_shape"]
        specs.append(
            LayerSpec(
                entry["name"],
                entry["op"],
                list(entry["inputs"]),
                dict(entry["attrs"]),
                own,
                None,
                None if shape is None else tuple(shape),
            )
        )
    # The region's input shape (recorded on the first spec reading it), so
    # that "auto" also times the whole-model candidates (layout plans,
    # conv2d "default", fusion) as ai3.onnx.swap_backend does. Without it
    # the layout pass kept every conv of a region in NCHW: mobilenet_v2 as
    # one region at batch 1 ran 12 ms in ORT against swap_backend's 5.7.
    sample = next(
        (tuple(e["input_shape"]) for e in attrs["specs"] if e["inputs"][:1] == [-1] and e["input_shape"]),
        None,
    )
    return frontend.build_model(
        specs, attrs["output"], algos, dtype=np.float32, layout="NCHW", sample_input_shape=sample
    )


def _swapper(op: str) -> Callable[..., onnx.ModelProto]:
    def swap(
        model: ModelLike,
        algos: Selector | None = None,
        sample_input_shape: Sequence[int] | None = None,
        layout: str = "NHWC",
    ) -> onnx.ModelProto:
        return swap_operation(op, model, algos, sample_input_shape, layout)

    swap.__name__ = swap.__qualname__ = f"swap_{op}"
    swap.__doc__ = f'swap_operation("{op}", ...): every node group ai3 maps onto one {op} layer.'
    return swap


swap_conv2d = _swapper("conv2d")
swap_linear = _swapper("linear")
swap_relu = _swapper("relu")
swap_maxpool2d = _swapper("maxpool2d")
swap_avgpool2d = _swapper("avgpool2d")
swap_adaptiveavgpool2d = _swapper("adaptiveavgpool2d")
swap_flatten = _swapper("flatten")

# What ai3.onnx re-exports from here (its __all__ is made from this).
ROUTES = ("partition", "swap_operation", *(f"swap_{op}" for op in frontend.SWAP_SHORTHANDS))

__all__ = ["DOMAIN", "NATIVE_DOMAIN", "NODE_TYPE", "RESIDUAL_NODE_TYPE", *ROUTES]
