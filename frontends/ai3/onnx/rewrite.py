"""In-graph swaps for ONNX models: matching nodes become nodes of the "ai3"
domain that ONNX Runtime runs through ai3's core (see ai3.onnx.session).

    model = ai3.onnx.swap_conv2d("resnet18.onnx", "gemm")   # -> new ModelProto
    sess = ai3.onnx.InferenceSession(model)

The input model is never modified: the result is a copy. Each swapped node
keeps its name, inputs and outputs, and carries
  - `algorithm`: the selected algorithm ("default" allowed),
  - `node`: the original node's name (for error messages),
  - `node_key`: a unique id given at rewrite time (the custom op's cache key,
    since ONNX Runtime tells a Python custom op nothing about its node),
  - every original attribute, lists (pads, strides, dilations, kernel_shape)
    as comma-separated strings ("1,1,1,1", "" when absent), since
    onnxruntime-extensions' Python ops take scalar and string attributes only.
A Conv or Gemm without a bias gets a zero bias initializer (the custom ops
have a fixed number of inputs). For "linear", a MatMul by a 2-D initializer
whose only consumer is an Add of a 1-D initializer (the export of nn.Linear
on inputs of rank > 2) becomes one Linear node (attribute matmul=1) named
after the MatMul, producing the Add's output; the Add is removed. Nodes ai3 cannot run as they are (3-D
convolutions, Gemm with transA/alpha/beta, MaxPool with an Indices output,
Flatten with axis != 1, ...) are not candidates: they stay, and a sequence
selector does not count them.
"""

from __future__ import annotations

import os
import uuid
from typing import Any, Callable, Optional, Sequence, Union

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ai3 import errors, selection
from ai3.onnx import autotune
from ai3.selection import Selector

DOMAIN = "ai3"
DOMAIN_VERSION = 1

# ai3 op -> (ONNX op type matched, ai3 domain op type)
OPS: dict[str, tuple[str, str]] = {
    "conv2d": ("Conv", "Conv2D"),
    "linear": ("Gemm", "Linear"),
    "relu": ("Relu", "ReLU"),
    "maxpool2d": ("MaxPool", "MaxPool2D"),
    "avgpool2d": ("AveragePool", "AvgPool2D"),
    "adaptiveavgpool2d": ("GlobalAveragePool", "GlobalAvgPool2D"),
    "flatten": ("Flatten", "Flatten"),
}

# ai3 domain op type -> (string attributes, int attributes, float attributes),
# the attributes every node of that type carries (all of them, always).
COMMON_STRING_ATTRS = ("algorithm", "node", "node_key")
ATTRS: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {
    "Conv2D": (COMMON_STRING_ATTRS + ("auto_pad", "dilations", "kernel_shape", "pads", "strides"), ("group",), ()),
    "Linear": (COMMON_STRING_ATTRS, ("matmul", "transA", "transB"), ("alpha", "beta")),
    "ReLU": (COMMON_STRING_ATTRS, (), ()),
    "MaxPool2D": (
        COMMON_STRING_ATTRS + ("auto_pad", "dilations", "kernel_shape", "pads", "strides"),
        ("ceil_mode", "storage_order"),
        (),
    ),
    "AvgPool2D": (
        COMMON_STRING_ATTRS + ("auto_pad", "dilations", "kernel_shape", "pads", "strides"),
        ("ceil_mode", "count_include_pad"),
        (),
    ),
    "GlobalAvgPool2D": (COMMON_STRING_ATTRS, (), ()),
    "Flatten": (COMMON_STRING_ATTRS, ("axis",), ()),
}
_INPUTS = {"Conv2D": 3, "Linear": 3}  # the others take one input

ModelLike = Union[onnx.ModelProto, str, os.PathLike, bytes]


def _load(model: ModelLike) -> onnx.ModelProto:
    """ai3.onnx.graph.load when it exists (validates, raises ai3 errors);
    otherwise a local equivalent. Always returns a private copy."""
    try:
        from ai3.onnx.graph import load as graph_load  # type: ignore
    except ImportError:
        graph_load = None
    if graph_load is not None:
        model = graph_load(model)
    if isinstance(model, onnx.ModelProto):
        copy = onnx.ModelProto()
        copy.CopyFrom(model)
        return copy
    try:
        if isinstance(model, (bytes, bytearray)):
            return onnx.load_model_from_string(bytes(model))
        if isinstance(model, (str, os.PathLike)):
            if not os.path.exists(model):
                raise errors.InvalidArgument(f"no ONNX model at {os.fspath(model)!r}")
            return onnx.load(os.fspath(model))
    except errors.Error:
        raise
    except Exception as e:
        raise errors.InvalidArgument(f"could not read an ONNX model from {model!r:.80}: {e}") from e
    raise errors.InvalidArgument(
        f"expected an onnx.ModelProto, a path or serialized bytes, got {type(model).__name__}"
    )


def _attrs(node: onnx.NodeProto) -> dict[str, Any]:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _ints(values: Any) -> str:
    return ",".join(str(int(v)) for v in values) if values is not None else ""


def _initializers(model: onnx.ModelProto) -> dict[str, onnx.TensorProto]:
    return {t.name: t for t in model.graph.initializer}


def _weight_shape(name: str, inits: dict[str, onnx.TensorProto]) -> Optional[tuple[int, ...]]:
    t = inits.get(name)
    return tuple(int(d) for d in t.dims) if t is not None else None


def _applicable(node: onnx.NodeProto, inits: dict[str, onnx.TensorProto]) -> bool:
    """Whether ai3's layer for this node can compute exactly what it does."""
    a = _attrs(node)
    t = node.op_type
    if len(node.output) != 1:
        return False
    if t == "Conv":
        w = _weight_shape(node.input[1], inits) if len(node.input) > 1 else None
        if w is None or len(w) != 4:
            return False
        ks = a.get("kernel_shape")
        return ks is None or len(ks) == 2
    if t == "Gemm":
        if a.get("transA", 0) != 0 or a.get("alpha", 1.0) != 1.0 or a.get("beta", 1.0) != 1.0:
            return False
        w = _weight_shape(node.input[1], inits)
        if w is None or len(w) != 2:
            return False
        if len(node.input) > 2 and node.input[2]:
            c = _weight_shape(node.input[2], inits)
            n = w[0] if a.get("transB", 0) else w[1]
            return c is not None and int(np.prod(c)) == n and len(c) in (1, 2) and (len(c) == 1 or c[0] == 1)
        return True
    if t in ("MaxPool", "AveragePool"):
        ks = a.get("kernel_shape")
        if ks is None or len(ks) != 2:
            return False
        if t == "MaxPool" and a.get("storage_order", 0) != 0:
            return False
        if t == "AveragePool" and any(d != 1 for d in a.get("dilations", [1, 1])):
            return False
        return True
    if t == "Flatten":
        return a.get("axis", 1) == 1
    return t in ("Relu", "GlobalAveragePool")


def _shape_map(model: onnx.ModelProto, sample_input_shape: Optional[Sequence[int]]) -> dict[str, tuple[int, ...]]:
    """Value name -> static shape, from onnx.shape_inference (with the first
    graph input's shape set to sample_input_shape when given)."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    init_names = {t.name for t in m.graph.initializer}
    inputs = [i for i in m.graph.input if i.name not in init_names]
    if sample_input_shape is not None:
        if not inputs:
            raise errors.InvalidArgument("sample_input_shape given but the model has no graph input")
        dims = inputs[0].type.tensor_type.shape.dim
        if len(dims) and len(dims) != len(sample_input_shape):
            raise errors.ShapeError(
                f"sample_input_shape {tuple(sample_input_shape)} has rank {len(sample_input_shape)} but the "
                f"model's input '{inputs[0].name}' has rank {len(dims)}"
            )
        inputs[0].type.tensor_type.shape.Clear()
        for d in sample_input_shape:
            inputs[0].type.tensor_type.shape.dim.add().dim_value = int(d)
    try:
        inferred = onnx.shape_inference.infer_shapes(m)
    except Exception as e:
        raise errors.InvalidArgument(f"ONNX shape inference failed: {e}") from e
    shapes: dict[str, tuple[int, ...]] = {}
    for vi in list(inferred.graph.value_info) + list(inferred.graph.input) + list(inferred.graph.output):
        tt = vi.type.tensor_type
        if not tt.HasField("shape"):
            continue
        dims = tt.shape.dim
        if all(d.HasField("dim_value") for d in dims):
            shapes[vi.name] = tuple(int(d.dim_value) for d in dims)
    return shapes


def _matmul_add(
    graph: onnx.GraphProto, node: onnx.NodeProto, inits: dict[str, onnx.TensorProto]
) -> Optional[tuple[int, onnx.NodeProto, str]]:
    """For a MatMul(A, W) followed only by Add(., b) with W [K, N] and b [N]
    initializers: (index of the Add, the Add, b's name); else None."""
    if len(node.input) != 2 or len(node.output) != 1:
        return None
    w = _weight_shape(node.input[1], inits)
    if w is None or len(w) != 2:
        return None
    out = node.output[0]
    if any(o.name == out for o in graph.output):
        return None
    users = [(i, n) for i, n in enumerate(graph.node) if out in n.input]
    if len(users) != 1:
        return None
    i, add = users[0]
    if add.op_type != "Add" or add.domain not in ("", "ai.onnx") or len(add.input) != 2:
        return None
    bias = add.input[1] if add.input[0] == out else add.input[0]
    if bias == out:
        return None
    b = _weight_shape(bias, inits)
    if b is None or b != (w[1],):
        return None
    return i, add, bias


def _node_label(node: onnx.NodeProto, index: int) -> str:
    return node.name or (node.output[0] if node.output else f"{node.op_type}_{index}")


def _new_node(
    op: str, node: onnx.NodeProto, algorithm: str, label: str, inits: dict, model: onnx.ModelProto
) -> onnx.NodeProto:
    onnx_type, ai3_type = OPS[op]
    a = _attrs(node)
    attrs: dict[str, Any] = {"algorithm": algorithm, "node": label, "node_key": uuid.uuid4().hex}
    inputs = list(node.input)
    if ai3_type in ("Conv2D", "MaxPool2D", "AvgPool2D"):
        auto_pad = a.get("auto_pad", b"NOTSET")
        attrs["auto_pad"] = auto_pad.decode() if isinstance(auto_pad, bytes) else str(auto_pad)
        attrs["dilations"] = _ints(a.get("dilations"))
        attrs["kernel_shape"] = _ints(a.get("kernel_shape"))
        attrs["pads"] = _ints(a.get("pads"))
        attrs["strides"] = _ints(a.get("strides"))
    if ai3_type == "Conv2D":
        attrs["group"] = int(a.get("group", 1))
        if len(inputs) < 3 or not inputs[2]:
            out_channels = _weight_shape(inputs[1], inits)[0]
            zero = f"{label}__ai3_zero_bias_{attrs['node_key'][:8]}"
            model.graph.initializer.append(numpy_helper.from_array(np.zeros((out_channels,), np.float32), zero))
            inputs = inputs[:2] + [zero]
    elif ai3_type == "Linear":
        attrs["matmul"] = 0
        attrs["transA"] = int(a.get("transA", 0))
        attrs["transB"] = int(a.get("transB", 0))
        attrs["alpha"] = float(a.get("alpha", 1.0))
        attrs["beta"] = float(a.get("beta", 1.0))
        if len(inputs) < 3 or not inputs[2]:
            w = _weight_shape(inputs[1], inits)
            n = w[0] if attrs["transB"] else w[1]
            zero = f"{label}__ai3_zero_bias_{attrs['node_key'][:8]}"
            model.graph.initializer.append(numpy_helper.from_array(np.zeros((n,), np.float32), zero))
            inputs = inputs[:2] + [zero]
    elif ai3_type == "MaxPool2D":
        attrs["ceil_mode"] = int(a.get("ceil_mode", 0))
        attrs["storage_order"] = int(a.get("storage_order", 0))
    elif ai3_type == "AvgPool2D":
        attrs["ceil_mode"] = int(a.get("ceil_mode", 0))
        attrs["count_include_pad"] = int(a.get("count_include_pad", 0))
    elif ai3_type == "Flatten":
        attrs["axis"] = int(a.get("axis", 1))
    return helper.make_node(ai3_type, inputs, list(node.output), name=node.name, domain=DOMAIN, **attrs)


def swap_operation(
    op: str,
    model: ModelLike,
    algos: Optional[Selector] = None,
    sample_input_shape: Optional[Sequence[int]] = None,
) -> onnx.ModelProto:
    """A copy of `model` in which every `op` node ai3 can run (e.g. each 2-D
    Conv for "conv2d") is an "ai3"-domain node running the selected
    algorithm; "torch"/"keep" leaves a node. A callable selector gets the
    onnx.NodeProto (and its input shape, when it takes two arguments: from
    ONNX shape inference, with sample_input_shape or the model's static
    input shape). Sequence selectors index the candidate nodes in graph
    order (nodes of the main graph only; subgraphs are left alone)."""
    if op not in OPS:
        raise errors.UnsupportedOperation(f"swap_operation: unknown op {op!r}; ai3.onnx swaps {sorted(OPS)}")
    result = _load(model)
    onnx_type, _ = OPS[op]
    inits = _initializers(result)
    targets = [
        (i, n)
        for i, n in enumerate(result.graph.node)
        if n.domain in ("", "ai.onnx") and n.op_type == onnx_type and _applicable(n, inits)
    ]
    matmuls: dict[int, tuple[int, onnx.NodeProto, str]] = {}
    if op == "linear":
        for i, n in enumerate(result.graph.node):
            if n.domain in ("", "ai.onnx") and n.op_type == "MatMul":
                found = _matmul_add(result.graph, n, inits)
                if found is not None:
                    matmuls[i] = found
        targets = sorted(targets + [(i, result.graph.node[i]) for i in matmuls])
    shapes: dict[str, tuple[int, ...]] = {}
    if targets and selection.wants_shapes(algos, sample_input_shape is not None):
        shapes = _shape_map(result, sample_input_shape)
    candidates = autotune.candidates(op, result, targets, matmuls, shapes, _node_label)
    chosen = selection.select(op, algos, candidates, allow_keep=True)
    swapped = 0
    removed: set[int] = set()
    for (i, n), algorithm, c in zip(targets, chosen, candidates):
        if algorithm in selection.KEEP_NAMES:
            continue
        if i in matmuls:
            add_index, add, bias = matmuls[i]
            new = helper.make_node(
                "Linear", [n.input[0], n.input[1], bias], list(add.output), name=n.name, domain=DOMAIN,
                algorithm=algorithm, node=c.name, node_key=uuid.uuid4().hex,
                matmul=1, transA=0, transB=0, alpha=1.0, beta=1.0,
            )
            removed.add(add_index)
        else:
            new = _new_node(op, n, algorithm, c.name, inits, result)
        result.graph.node[i].CopyFrom(new)
        swapped += 1
    if removed:
        kept = [n for i, n in enumerate(result.graph.node) if i not in removed]
        del result.graph.node[:]
        result.graph.node.extend(kept)
    if swapped and not any(o.domain == DOMAIN for o in result.opset_import):
        result.opset_import.append(helper.make_opsetid(DOMAIN, DOMAIN_VERSION))
    return result


def _swapper(op: str) -> Callable[..., onnx.ModelProto]:
    def swap(
        model: ModelLike, algos: Optional[Selector] = None, sample_input_shape: Optional[Sequence[int]] = None
    ) -> onnx.ModelProto:
        return swap_operation(op, model, algos, sample_input_shape)

    swap.__name__ = swap.__qualname__ = f"swap_{op}"
    swap.__doc__ = f'swap_operation("{op}", ...): every {OPS[op][0]} node ai3 can run.'
    return swap


swap_conv2d = _swapper("conv2d")
swap_linear = _swapper("linear")
swap_relu = _swapper("relu")
swap_maxpool2d = _swapper("maxpool2d")
swap_avgpool2d = _swapper("avgpool2d")
swap_adaptiveavgpool2d = _swapper("adaptiveavgpool2d")
swap_flatten = _swapper("flatten")

__all__ = [
    "swap_operation",
    "swap_conv2d",
    "swap_linear",
    "swap_relu",
    "swap_maxpool2d",
    "swap_avgpool2d",
    "swap_adaptiveavgpool2d",
    "swap_flatten",
]
