"""ONNX model -> LayerSpecs -> an ai3.Model run entirely by the core.

    model = ai3.onnx.graph.swap_backend("resnet18.onnx", {"conv2d": "direct"})
    y = model(x_nchw)            # NumPy (or torch) in, same kind out

The graph's nodes (default domain, opsets 11 to 28; a model at opset 7
to 10 is converted to 13 by ONNX's version converter) are visited in the
order ONNX stores them (topological). Shapes come from
onnx.shape_inference with sample_input_shape (if given) bound to the
input. First every node computable from constants is folded
(ai3.onnx.fold: shape arithmetic, masks, Cast/Sqrt of sizes, with ONNX's
reference implementation); then initializers and folded values are the
weights, and every other tensor is the output of a spec. Everything runs
NCHW. A node the core cannot run is an ai3.UnsupportedOperation naming the
node, its op_type and its domain, never a silent fallback.

ONNX op -> spec (see `_Mapper.node`):
  Conv (2-D)                conv2d; pads [t,l,b,r] -> (t,b,l,r); auto_pad
                            SAME_UPPER/SAME_LOWER/VALID from the input size
  Conv (3-D, rank 5)        conv3d, pads likewise per dim
  Conv, ConvTranspose,      (1-D, of (N, C, L)) the 2-D layer over
  MaxPool, AveragePool      (N, C, 1, L) between two reshapes
  Gemm                      linear (transB 0/1; alpha, beta folded in);
                            transA: a permute before; a C other than one
                            value per output: an add after
  MatMul                    constant 2-D B: linear (a following Add of a
                            1-D constant is its bias), else matmul by B;
                            two tensors: matmul
  Einsum                    batched-matmul equations: permutes + matmul;
                            one operand: reduce_sum + permute
  Add, Sub, Mul, Div        add/sub/mul/div: two tensors (broadcasting) or a
                            tensor and a constant (weights["other"],
                            reverse when the constant is on the left)
  Sum                       adds of two tensors, left to right
  Relu, Sigmoid, Tanh       relu, sigmoid, tanh
  HardSwish, HardSigmoid    hardswish, hardsigmoid(alpha, beta)
  LeakyRelu                 leaky_relu(alpha, ONNX's default 0.01)
  Gelu (20+), and the erf   gelu ("none" / "tanh"); the exporters'
  chain x*0.5*(1+erf(x/√2)) five-node form is found by ai3.onnx.patterns
  Clip                      clamp (bounds: attributes before opset 11,
                            constant inputs from 11)
  Softmax, LogSoftmax       softmax / log_softmax(axis) (before opset 13,
                            which coerces to 2-D: only where axis is last)
  LayerNormalization        layernorm(axes = trailing dims from axis); its
                            Mean / InvStdDev outputs by reductions and
                            elementwise ops (layernorm_statistics); the
                            written-out form before 17 (ReduceMean, Sub,
                            Pow, ReduceMean, Add, Sqrt, Div, Mul, Add) too
  MaxPool                   maxpool2d (no indices output, storage_order 0);
                            maxpool3d on rank 5
  AveragePool               avgpool2d (count_include_pad, ceil_mode);
                            avgpool3d on rank 5
  GlobalAveragePool         adaptiveavgpool2d (1, 1); rank 3 and 5: mean
  GlobalMaxPool             maxpool2d over the whole (known) map
  ReduceMean                mean(axes, keepdim)
  Flatten                   flatten(1, -1) for axis 1, else reshape
  Reshape (constant shape)  flatten where it flattens to (N, -1), identity
                            where it keeps the shape, else reshape (0, -1)
  Squeeze, Unsqueeze        reshape to the inferred shape
  Transpose                 permute(perm)
  Slice, Split              slice per sliced axis / per output
  Gather (constant indices) slice (+ reshape dropping the axis for a
                            scalar index, as x[:, 0])
  BatchNormalization        batchnorm2d (inference; folded into a preceding
                            conv2d by spec.fold_batchnorm)
  Concat                    concat(axis); constants at either end (ViT's
                            class token) as a zero pad of the tensors plus
                            the constants, exactly
  Pad (constant mode)       pad2d on H/W (a zero pad feeding only a conv2d is
                            folded into its padding); other axes through a
                            reshape to put the axis where pad2d pads
  Cast (to a float type)    identity (ai3 computes in the model's dtype);
                            to int32: to int64 (ai3's one integer dtype)
  CumSum                    cumsum(axis, exclusive, reverse)
  ArgMax, ArgMin            argmax / argmin(axis, keepdims, select_last_index)
  TopK (constant K)         topk(k, axis, largest) for Indices, and
                            gather_elements of the input by them for Values
  ScatterElements, Scatter, scatter_elements(axis, reduction) / scatter_nd
  ScatterND                 (reduction), the indices computed or constant
  Trilu                     trilu(upper, k: a constant second input)
  GatherElements            gather_elements(axis) of a computed or constant
                            data tensor
  CastLike                  Cast to its second input's type; of a constant,
                            a constant
  Attention (23+)           attention (4-D q, k, v; 3-D ones reshaped and
                            permuted to heads and back; grouped-query k, v
                            repeated per head by reshape + expand); a bool
                            mask as 0 / -inf, a float one as given; past_key
                            / past_value concatenated before, present_key /
                            present_value the concatenations; a softcap, a
                            sliding window, a causal mask over a KV cache or
                            the qk_matmul_output output: its function body
  Mod                       remainder (fmod=0) / fmod (fmod=1)
  GridSample                grid_sample (2-D and 3-D; opset 16's and 20's
                            mode names)
  ConvTranspose             conv_transpose2d (pads from auto_pad /
                            output_shape as the spec computes them)
  Resize                    resize (nearest / linear, by constant scales or
                            sizes of H and W)
  GroupNormalization,       groupnorm (InstanceNormalization: one group per
  InstanceNormalization     channel); RMSNormalization: rmsnorm; LRN: lrn
  DepthToSpace, SpaceToDepth  depth_to_space / space_to_depth (DCR, CRD)
  Pad (reflect, edge, wrap) pad2d in those modes on H/W
  LpNormalization           x / clamp(reduce_l1 or reduce_l2(axis, keepdim))
  LpPool, GlobalLpPool      pow(sum of pow(abs(x), p), 1/p): the window's sum
                            an avgpool2d with divisor 1; the global one a
                            reduce_sum over the spatial dims
  Hardmax                   cast(equal(argmax(axis, keepdim), the axis'
                            indices)); before opset 13 on the last dim
  OneHot (constant depth,   equal of the indices (reshaped) to the
  values)                   positions and to them minus depth, or'ed, cast
                            and scaled to the values
  LSTM, GRU, RNN            the cell unrolled over the (fixed) steps: one
                            linear of the whole input, then per step a
                            linear of H, slices, add / mul, sigmoid / tanh /
                            relu (ai3.recurrent)
  Dropout, Identity         identity (dropped)
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ai3 import errors, frontend, padding, recurrent, selection
from ai3 import model as ai3_model
from ai3.onnx import fold, patterns
from ai3.spec import (
    MODEL_INPUT,
    OUTPUTS,
    LayerSpec,
    constant_left_matmul_steps,
    einsum_plan,
    fold_zero_padding,
    model_input,
    prune_dead,
    repeat_heads_steps,
)

MIN_OPSET = 11
MAX_OPSET = 28
# The opset an older model (7 to 10) is converted to: 13, not MIN_OPSET,
# because the converter writes Softmax's old 2-D coercion (a rank-4
# classifier output's softmax over C*H*W, in the classic zoo's squeezenet)
# out as Flatten, Softmax, Reshape at 13, which ai3 maps; at 11 it stays a
# coerced Softmax ai3 maps only on the last axis.
CONVERTED_OPSET = 13
_DOMAINS = ("", "ai.onnx")

# What the mapper reads after constant folding (ai3.onnx.fold): every
# node on constants only (shape arithmetic, masks) is folded away first.
SUPPORTED_OPS = (
    "Add",
    "Attention",
    "AveragePool",
    "BatchNormalization",
    "Cast",
    "CastLike",
    "Clip",
    "Concat",
    "Constant",
    "Conv",
    "ConvTranspose",
    "CumSum",
    "DepthToSpace",
    "Div",
    "Dropout",
    "Einsum",
    "Erf",
    "Flatten",
    "Gather",
    "GatherElements",
    "GridSample",
    "Gelu",
    "Gemm",
    "GlobalAveragePool",
    "GlobalMaxPool",
    "GroupNormalization",
    "HardSigmoid",
    "HardSwish",
    "Identity",
    "InstanceNormalization",
    "LRN",
    "LayerNormalization",
    "LeakyRelu",
    "LogSoftmax",
    "MatMul",
    "MaxPool",
    "Mul",
    "Pad",
    "Pow",
    "RMSNormalization",
    "ReduceMean",
    "Relu",
    "Reshape",
    "Resize",
    "Sigmoid",
    "Slice",
    "Softmax",
    "SpaceToDepth",
    "Split",
    "Sqrt",
    "Squeeze",
    "Sub",
    "Sum",
    "Tanh",
    "Transpose",
    "Unsqueeze",
)
_BINARY = {"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div"}
# ONNX Pad's modes as pad2d's.
_PAD_MODES = {"constant": "constant", "reflect": "reflect", "edge": "replicate", "wrap": "circular"}

# Issue 17: unary math and activations (core/ops/unary), Pow / Max / Min /
# Mean / PRelu (core/ops/binary; the variadic ones as chains of two-operand
# ops, as Sum), the reductions (core/ops/mean), Expand and Tile
# (core/ops/tile).
_UNARY = {
    "Exp": "exp", "Log": "log", "Sqrt": "sqrt", "Neg": "neg", "Abs": "abs", "Erf": "erf", "Reciprocal": "reciprocal",
    "Floor": "floor", "Ceil": "ceil", "Sign": "sign", "Sin": "sin", "Cos": "cos", "Softsign": "softsign", "Mish": "mish",
    "Tan": "tan", "Asin": "asin", "Acos": "acos", "Atan": "atan", "Sinh": "sinh", "Cosh": "cosh", "Asinh": "asinh",
    "Acosh": "acosh", "Atanh": "atanh",
}  # fmt: skip
_VARIADIC = {"Sum": "add", "Mean": "add", "Max": "maximum", "Min": "minimum"}
_REDUCTIONS = {
    "ReduceMean": "mean", "ReduceSum": "reduce_sum", "ReduceProd": "reduce_prod", "ReduceMax": "reduce_max",
    "ReduceMin": "reduce_min", "ReduceL1": "reduce_l1", "ReduceL2": "reduce_l2", "ReduceSumSquare": "reduce_sum_square",
    "ReduceLogSumExp": "reduce_log_sum_exp",
}  # fmt: skip
_BINARY["Pow"] = "pow"
SUPPORTED_OPS = tuple(sorted({
    *SUPPORTED_OPS, *_UNARY, *_VARIADIC, *_REDUCTIONS, "Pow", "Elu", "Selu", "Celu", "Softplus", "ThresholdedRelu", "PRelu",
    "Expand", "Tile", "Mod", "LpNormalization", "Hardmax", "OneHot", "LSTM", "GRU", "RNN", "LpPool", "GlobalLpPool",
}))  # fmt: skip
# Integer tensors (issue 17): comparisons and logical ops (core/ops/compare,
# bool results), Where, Gather by computed int64 indices (core/ops/gather)
# and Cast to / from int64 and bool (core/ops/cast).
_COMPARE = {
    "Equal": "equal", "Less": "less", "Greater": "greater", "LessOrEqual": "less_equal",
    "GreaterOrEqual": "greater_equal", "And": "logical_and", "Or": "logical_or", "Xor": "logical_xor",
}  # fmt: skip
_FLIPPED = {"less": "greater", "greater": "less", "less_equal": "greater_equal", "greater_equal": "less_equal"}
SUPPORTED_OPS = tuple(sorted({
    *SUPPORTED_OPS, *_COMPARE, "Not", "Where", "IsNaN", "ArgMax", "ArgMin", "Trilu", "TopK", "ScatterElements", "Scatter",
    "ScatterND",
}))  # fmt: skip
# Ops that move their first input's elements, so keep its dtype (an int64
# mask unsqueezed is still int64).
_MOVES = (
    "Identity", "Dropout", "Reshape", "Squeeze", "Unsqueeze", "Flatten", "Transpose", "Slice", "Expand", "Tile",
    "Gather", "Split", "Concat", "Trilu",
)  # fmt: skip

# The op of a spec standing for a tensor ai3 does not compute (a graph input,
# or an output of a node ORT keeps) in map_nodes' specs.
EXTERNAL = "external"


class _Downstream(Exception):
    """A node reads the output of a refused node (a strict walk lists only
    the refused one)."""


@dataclass
class Group:
    """Nodes of the graph and the specs the mapping made of them (one node,
    a written-out GELU / layer norm, a MatMul with its bias Add)."""

    nodes: list
    specs: list[int]


def _onnx():
    import onnx

    return onnx


# -- loading --------------------------------------------------------------
def load(model_or_path: Any) -> Any:
    """An onnx.ModelProto from a ModelProto, a path (str / os.PathLike) or
    the serialized bytes, checked with onnx.checker. Anything that is not a
    valid ONNX model raises ai3.InvalidArgument."""
    onnx = _onnx()
    if isinstance(model_or_path, onnx.ModelProto):
        model = model_or_path
    elif isinstance(model_or_path, (bytes, bytearray, memoryview)):
        model = onnx.ModelProto()
        try:
            model.ParseFromString(bytes(model_or_path))
        except Exception as e:
            raise errors.InvalidArgument(
                f"not a valid ONNX model: the bytes do not parse ({type(e).__name__}: {e})"
            ) from e
    elif isinstance(model_or_path, (str, os.PathLike)):
        path = os.fspath(model_or_path)
        if not os.path.isfile(path):
            raise errors.InvalidArgument(f"not a valid ONNX model: no file {path!r}")
        try:
            model = onnx.load(path)
        except Exception as e:
            raise errors.InvalidArgument(
                f"not a valid ONNX model: {path!r} does not parse ({type(e).__name__}: {e})"
            ) from e
    else:
        raise errors.InvalidArgument(
            f"expected an onnx.ModelProto, a path or bytes, got {type(model_or_path).__name__}"
        )
    if not model.HasField("graph") or len(model.graph.node) == 0:
        raise errors.InvalidArgument("not a valid ONNX model: it has no graph (or an empty one)")
    try:
        # A path lets the checker handle models over 2 GB / external data.
        if isinstance(model_or_path, (str, os.PathLike)):
            onnx.checker.check_model(os.fspath(model_or_path))
        else:
            onnx.checker.check_model(model)
    except Exception as e:
        raise errors.InvalidArgument(f"not a valid ONNX model: {type(e).__name__}: {e}") from e
    return _expand_functions(_readable_opset(model))


# The domain a node calling an ONNX function body is moved to while ONNX's
# inliner expands it (_expand_functions).
_EXPANDED_DOMAIN = "ai3.expanded"
# Functions whose bodies hold other functions (SoftmaxCrossEntropyLoss's
# holds NegativeLogLikelihoodLoss) are expanded this many levels deep.
_EXPANSION_DEPTH = 4


def _function_body(onnx: Any, node: Any, opset: int, types: dict[str, Any]) -> Any | None:
    """The FunctionProto by which ONNX defines `node`'s op at `opset` (for a
    context-dependent one, given its inputs' types), or None when ONNX
    defines it by no function."""
    try:
        schema = onnx.defs.get_schema(node.op_type, opset, "")
    except Exception:  # noqa: BLE001 - an op ONNX does not know: the mapping refuses it
        return None
    body = onnx.FunctionProto()
    version = _function_version(schema.function_opset_versions, opset)
    if version is not None:
        body.ParseFromString(schema.get_function_with_opset_version(version))
        return body
    version = _function_version(schema.context_dependent_function_opset_versions, opset)
    if version is None or any(name and name not in types for name in node.input):
        return None
    input_types = [
        types[name].SerializeToString() if name else onnx.TypeProto().SerializeToString() for name in node.input
    ]
    try:
        text = schema.get_context_dependent_function_with_opset_version(version, node.SerializeToString(), input_types)
    except Exception:  # noqa: BLE001 - ONNX builds no body for these inputs
        return None
    body.ParseFromString(text)
    return body


def _function_version(versions: Sequence[int], opset: int) -> int | None:
    """The body to expand of those written against `versions`: the newest
    one at most the model's opset, else the oldest (Shrink, an op since
    opset 9, has its body written in opset 18's ops; the inliner converts
    it to the model's opset)."""
    if not versions:
        return None
    older = [v for v in versions if v <= opset]
    return max(older) if older else min(versions)


def _is_function(onnx: Any, op_type: str, opset: int) -> bool:
    try:
        schema = onnx.defs.get_schema(op_type, opset, "")
    except Exception:  # noqa: BLE001 - not an ONNX op
        return False
    return bool(schema.has_function or schema.has_context_dependent_function)


def _attention_refusal(node: Any, a: dict[str, Any]) -> str | None:
    """Why the core's attention cannot run this Attention node, from its
    attributes and which inputs and outputs it has (None: it can): a score
    cap, a sliding window, a static KV cache, a causal mask offset by a KV
    cache (ONNX aligns it bottom-right, the core top-left), the
    qk_matmul_output output. Such a node runs through its ONNX function body
    instead (_expand_functions)."""
    names = list(node.input) + [""] * (7 - len(node.input))
    past_k, past_v, nonpad = names[4:7]
    if float(a.get("softcap", 0.0)) != 0.0:
        return f"softcap={a['softcap']}; ai3's attention has no score cap"
    if int(a.get("left_window_size", -1)) != -1 or int(a.get("right_window_size", -1)) != -1:
        return "a sliding window; ai3's attention masks by causal and mask only"
    if nonpad:
        return "nonpad_kv_seqlen (a static KV cache); ai3 takes past_key / past_value only"
    if bool(past_k) != bool(past_v):
        return "past_key without past_value or the reverse"
    if bool(int(a.get("is_causal", 0))) and past_k:
        return "is_causal with a KV cache: ONNX aligns that mask bottom-right, ai3's attention top-left"
    if len(node.output) > 3 and node.output[3]:
        return "its qk_matmul_output output; ai3's attention returns the attention's output only"
    return None


# Ops ai3 maps natively in most forms, with what refuses a node's form;
# _expand_functions runs a refused one through its ONNX function body.
_FORM_REFUSALS = {"Attention": _attention_refusal}


def _native(onnx: Any, node: Any, supported: set[str]) -> bool:
    """Whether ai3 maps `node` itself rather than through its function body:
    an op it lists, in a form it takes."""
    if node.op_type not in supported:
        return False
    refusal = _FORM_REFUSALS.get(node.op_type)
    if refusal is None:
        return True
    attrs = {}
    for attr in node.attribute:
        v = onnx.helper.get_attribute_value(attr)
        attrs[attr.name] = v.decode() if isinstance(v, bytes) else v
    return refusal(node, attrs) is None


def _expand_functions(model: Any) -> Any:
    """Nodes of ops ai3 does not list that ONNX defines as functions of
    other ops (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss, Swish,
    Shrink, ...), and of ops it lists in forms it does not take (an
    Attention with a softcap, a sliding window or its qk_matmul_output:
    _FORM_REFUSALS), replaced by their function bodies at the model's opset, by
    ONNX's own inliner: each such node becomes a call of a model-local copy
    of its body (the schema's attribute defaults filled in, as ONNX's own
    expanded test cases do), which inline_local_functions expands. Nested
    functions are expanded in turn. A body that uses an op ai3 does not
    list and that is no function either is left unexpanded, so that a
    refusal names the op the model itself uses."""
    import onnx.inliner  # (a submodule `import onnx` leaves out)

    opset = opset_of(model)
    supported = set(SUPPORTED_OPS) | {"Constant", "Identity", "Shape", "Size", "ConstantOfShape", "Range"}
    for _ in range(_EXPANSION_DEPTH):
        candidates = [n for n in model.graph.node if n.domain in _DOMAINS and not _native(onnx, n, supported)]
        if not candidates:
            return model
        try:
            inferred = onnx.shape_inference.infer_shapes(model)
        except Exception:  # noqa: BLE001 - shapes are inferred again, and errors reported, when mapping
            inferred = model
        graph = inferred.graph
        types = {v.name: v.type for v in (*graph.input, *graph.value_info, *graph.output)}
        for init in graph.initializer:
            types.setdefault(init.name, onnx.helper.make_tensor_type_proto(init.data_type, list(init.dims)))
        # The inferred copy: converting a body to the model's opset needs
        # the types of the tensors around it.
        expanded = onnx.ModelProto()
        expanded.CopyFrom(inferred)
        count = 0
        for node in expanded.graph.node:
            if node.domain not in _DOMAINS or _native(onnx, node, supported):
                continue
            body = _function_body(onnx, node, opset, types)
            if body is None or not all(
                n.op_type in supported or _is_function(onnx, n.op_type, opset)
                for n in body.node
                if n.domain in _DOMAINS
            ):
                continue
            schema = onnx.defs.get_schema(node.op_type, opset, "")
            given = {a.name for a in node.attribute}
            for name, attr in schema.attributes.items():
                if name not in given and attr.default_value.name:
                    node.attribute.append(attr.default_value)
            body.name, body.domain = f"{node.op_type}_{count}", _EXPANDED_DOMAIN
            node.op_type, node.domain = body.name, _EXPANDED_DOMAIN
            expanded.functions.append(body)
            count += 1
        if count == 0:
            return model
        expanded.opset_import.append(onnx.helper.make_opsetid(_EXPANDED_DOMAIN, 1))
        try:
            expanded = onnx.inliner.inline_local_functions(expanded, convert_version=True)
        except Exception:  # noqa: BLE001 - left as it is: the mapping refuses the op by name
            return model
        kept = [o for o in expanded.opset_import if o.domain != _EXPANDED_DOMAIN]
        del expanded.opset_import[:]
        expanded.opset_import.extend(kept)
        model = _cast_like_as_cast(onnx, expanded)
    return model


def _cast_like_as_cast(onnx: Any, model: Any) -> Any:
    """Function bodies cast their constants to the input's type with
    CastLike(constant, x); each whose target type shape inference knows
    becomes Cast(constant, to=that type), which constant folding then
    folds (a CastLike of a computed x it cannot)."""
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # noqa: BLE001 - left as it is
        return model
    g = inferred.graph
    elem = {v.name: v.type.tensor_type.elem_type for v in (*g.input, *g.value_info, *g.output)}
    elem.update({t.name: t.data_type for t in g.initializer})
    for node in model.graph.node:
        if node.domain in _DOMAINS and node.op_type == "CastLike" and elem.get(node.input[1]):
            to = elem[node.input[1]]
            node.op_type = "Cast"
            del node.input[1:]
            kept = [a for a in node.attribute if a.name == "saturate"]
            del node.attribute[:]
            node.attribute.extend([onnx.helper.make_attribute("to", to), *kept])
    return model


def _readable_opset(model: Any) -> Any:
    """The model at an opset ai3 reads: one older than MIN_OPSET (the
    classic model zoo's 7 to 9) converted up to CONVERTED_OPSET by ONNX's
    own version converter, which knows each operator's changes between
    opsets; anything else as it is (to_specs refuses a newer opset)."""
    onnx = _onnx()
    opset = opset_of(model)
    if opset >= MIN_OPSET:
        return model
    try:
        converted = onnx.version_converter.convert_version(model, CONVERTED_OPSET)
        # The converter may turn inputs into initializers, which IR 3 (the
        # opset-6 era) still requires among the graph inputs; IR 4 does not.
        converted.ir_version = max(converted.ir_version, 4)
        onnx.checker.check_model(converted)
    except Exception as e:
        raise errors.UnsupportedOperation(
            f"the model uses opset {opset}; ai3 reads opsets {MIN_OPSET} to {MAX_OPSET}, and ONNX's version converter "
            f"could not convert it to opset {CONVERTED_OPSET}: {type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"
        ) from e
    return converted


def opset_of(model: Any) -> int:
    for entry in model.opset_import:
        if entry.domain in _DOMAINS:
            return int(entry.version)
    raise errors.UnsupportedOperation("the model imports no opset of the default ONNX domain")


def describe_node(node: Any) -> str:
    return f"node '{node.name or '<unnamed>'}' (op_type {node.op_type}, domain '{node.domain or 'ai.onnx'}')"


class UnsupportedNodes(errors.UnsupportedOperation):
    """The nodes of a model that ai3 cannot run, each with why: `nodes`
    holds (node, why) pairs in graph order. One node reads as
    "node 'n' (op_type T, domain 'd'): why"; several are listed grouped by
    op type, with counts, so one refusal shows all that a model lacks."""

    def __init__(self, nodes: Sequence[tuple[Any, str]]):
        self.nodes = list(nodes)
        super().__init__(_list_unsupported(self.nodes))

    def op_types(self) -> list[str]:
        """The refused nodes' op types, each once, in graph order."""
        return list(dict.fromkeys(node.op_type for node, _ in self.nodes))


_LISTED_NAMES = 8  # node names shown per op type and reason before "... and N more"


def _list_unsupported(nodes: Sequence[tuple[Any, str]]) -> str:
    if len(nodes) == 1:
        node, why = nodes[0]
        return f"{describe_node(node)}: {why}"
    groups: dict[tuple[str, str], dict[str, list[str]]] = {}
    for node, why in nodes:
        key = (node.op_type, node.domain or "ai.onnx")
        groups.setdefault(key, {}).setdefault(why, []).append(node.name or "<unnamed>")
    lines = [f"{len(nodes)} nodes of the model ai3 cannot run ({len(groups)} op type{'s' if len(groups) > 1 else ''}):"]
    for (op_type, domain), whys in groups.items():
        count = sum(len(names) for names in whys.values())
        lines.append(f"  {op_type} (domain '{domain}'): {count} node{'s' if count > 1 else ''}")
        for why, names in whys.items():
            shown = ", ".join(f"'{n}'" for n in names[:_LISTED_NAMES])
            more = f" and {len(names) - _LISTED_NAMES} more" if len(names) > _LISTED_NAMES else ""
            lines.append(f"    {shown}{more}: {why}")
    return "\n".join(lines)


def _unsupported(node: Any, why: str) -> UnsupportedNodes:
    return UnsupportedNodes([(node, why)])


def graph_inputs(model: Any) -> list[Any]:
    """The model's (non-initializer) inputs, in order: an ai3.Model takes
    them all, by position or by name."""
    inits = {t.name for t in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in inits]
    if not inputs:
        raise errors.UnsupportedOperation("the model has no (non-initializer) input")
    return inputs


def _bound_inputs(model: Any, sample_input_shape: Any) -> list[tuple[Any, tuple[int, ...] | None]]:
    """(input, its sample shape or None) per graph input; several inputs
    take one shape each (or None), in order or as a mapping from the graph
    inputs' names (as ONNX Runtime's feeds). An example array or tensor
    stands for its shape."""
    from ai3.torch.tracing import is_several_shapes

    inputs = graph_inputs(model)
    if sample_input_shape is None:
        shapes: list[Any] = [None] * len(inputs)
    elif isinstance(sample_input_shape, Mapping):
        names = [i.name for i in inputs]
        unknown = [repr(k) for k in sample_input_shape if k not in names]
        missing = [repr(n) for n in names if n not in sample_input_shape]
        if unknown or missing:
            problem = f"names no input {', '.join(unknown)}" if unknown else f"leaves out {', '.join(missing)}"
            raise errors.ShapeError(
                f"sample_input_shape {problem}; the model's inputs are {', '.join(repr(n) for n in names)}"
            )
        shapes = [sample_input_shape[n] for n in names]
    elif hasattr(sample_input_shape, "shape"):  # one example array
        shapes = [sample_input_shape]
    elif is_several_shapes(sample_input_shape) or (
        isinstance(sample_input_shape, (list, tuple)) and sample_input_shape and hasattr(sample_input_shape[0], "shape")
    ):
        shapes = list(sample_input_shape)
    else:
        shapes = [sample_input_shape]
    shapes = [tuple(s.shape) if hasattr(s, "shape") else s for s in shapes]
    if len(shapes) != len(inputs):
        names = ", ".join(f"'{i.name}'" for i in inputs)
        raise errors.ShapeError(
            f"sample_input_shape gives {len(shapes)} shape(s); the model has {len(inputs)} inputs ({names})"
        )
    bound = []
    for inp, shape in zip(inputs, shapes):
        shape = selection.sample_shape(shape, batched=False)
        expected = _dims(inp)
        if (
            shape is not None
            and expected is not None
            and (len(expected) != len(shape) or any(e is not None and e != d for e, d in zip(expected, shape)))
        ):
            shown = tuple("?" if e is None else e for e in expected)
            raise errors.ShapeError(
                f"sample_input_shape {shape} does not match the shape {shown} of the model's input '{inp.name}'"
            )
        bound.append((inp, shape))
    return bound


def graph_input(model: Any) -> Any:
    """The model's one input (ai3.Model takes one tensor and returns one);
    several inputs or outputs are refused by name."""
    graph = model.graph
    inits = {t.name for t in graph.initializer}
    inputs = [i for i in graph.input if i.name not in inits]
    if len(inputs) != 1:
        names = ", ".join(f"'{i.name}'" for i in inputs)
        extra = (
            f"; the inputs after the first ({', '.join(repr(i.name) for i in inputs[1:])}) have no way in"
            if len(inputs) > 1
            else ""
        )
        raise errors.UnsupportedOperation(
            f"the model has {len(inputs)} (non-initializer) inputs ({names}); ai3 models take one{extra}"
        )
    if len(graph.output) != 1:
        names = ", ".join(f"'{o.name}'" for o in graph.output)
        raise errors.UnsupportedOperation(f"the model has {len(graph.output)} outputs ({names}); ai3 models return one")
    return inputs[0]


def _dims(value_info: Any) -> tuple | None:
    t = value_info.type
    if not t.HasField("tensor_type") or not t.tensor_type.HasField("shape"):
        return None
    return tuple(d.dim_value if d.HasField("dim_value") else None for d in t.tensor_type.shape.dim)


# ONNX element types of the integer tensors ai3 takes (core/tensor.h).
_INT_ELEMS = {7: np.int64, 9: np.bool_}  # TensorProto.INT64, TensorProto.BOOL
# Element types of graph inputs and outputs that ai3 keeps in a wider type
# (ai3.Model.narrow_inputs): the narrower integers in int64, whose values
# agree while they fit (a cast back to the declared type wraps as the
# narrower arithmetic would), and float16 in float32. UINT64 has values
# int64 cannot hold and stays refused.
_NARROW_INTS = {2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16, 6: np.int32, 12: np.uint32}
_FLOAT16 = 10


def _input_int_dtype(value_info: Any) -> np.dtype | None:
    """The integer dtype (int64 or bool) ai3 keeps graph input or output
    `value_info` in; None for a float or any other type."""
    t = value_info.type
    elem = t.tensor_type.elem_type if t.WhichOneof("value") == "tensor_type" else None
    if elem in _INT_ELEMS:
        return np.dtype(_INT_ELEMS[elem])
    return np.dtype(np.int64) if elem in _NARROW_INTS else None


def _narrow_dtype(value_info: Any) -> np.dtype | None:
    """The declared NumPy type of a graph input or output that ai3 keeps
    in a wider one (int32, float16, ...), else None."""
    t = value_info.type
    elem = t.tensor_type.elem_type if t.WhichOneof("value") == "tensor_type" else None
    if elem in _NARROW_INTS:
        return np.dtype(_NARROW_INTS[elem])
    return np.dtype(np.float16) if elem == _FLOAT16 else None


def _declare_narrow(built: Any, proto: Any) -> Any:
    """`built` told which of its inputs and outputs the graph declares
    narrower than the core keeps them (ai3.Model.narrow_inputs)."""
    inputs = graph_inputs(proto)
    built.narrow_inputs = {i: d for i, v in enumerate(inputs) if (d := _narrow_dtype(v)) is not None}
    built.narrow_outputs = {i: d for i, v in enumerate(proto.graph.output) if (d := _narrow_dtype(v)) is not None}
    return built


def model_dtype(model: Any, dtype: Any | None = None) -> np.dtype:
    """float32 / float64 from the input's element type (or `dtype`): the
    first float input's; a model of int64 token ids (and bool masks) only
    computes in its float initializers' dtype, float32 if none."""
    onnx = _onnx()
    inputs = graph_inputs(model)
    if dtype is None and all(_input_int_dtype(i) is not None for i in inputs):
        floats = [t.data_type for t in model.graph.initializer if t.data_type in (1, 11)]
        return np.dtype(np.float64 if floats and floats[0] == 11 else np.float32)
    if dtype is None:
        inp = next(
            (i for i in inputs if _input_int_dtype(i) is None),
            inputs[0],
        )
        kind = inp.type.WhichOneof("value")
        if kind != "tensor_type":
            raise errors.DTypeError(
                f"ai3 models take a tensor; the model's input '{inp.name}' is a {kind or 'value of no type'}"
            )
        elem = inp.type.tensor_type.elem_type
        # float16 computes in float32 (_NARROW_INTS' comment).
        table = {onnx.TensorProto.FLOAT: np.float32, onnx.TensorProto.DOUBLE: np.float64, _FLOAT16: np.float32}
        if elem not in table:
            name = onnx.TensorProto.DataType.Name(elem) if elem in onnx.TensorProto.DataType.values() else elem
            raise errors.DTypeError(
                f"ai3 models run in float32 or float64 (float16 in float32); the model's input '{inp.name}' is {name}"
            )
        return np.dtype(table[elem])
    try:
        dtype = np.dtype(getattr(dtype, "name", dtype))
    except TypeError as e:
        raise errors.DTypeError(f"ai3 models run in float32 or float64, not {dtype}") from e
    if dtype not in (np.float32, np.float64):
        raise errors.DTypeError(f"ai3 models run in float32 or float64, not {dtype}")
    return dtype


_OTHER_DOMAIN = "ai3 runs operators of the default ONNX domain only"


def _foreign_domains(model: Any) -> dict[int, str]:
    """Node index -> why, for every node of another domain than ONNX's."""
    return {i: _OTHER_DOMAIN for i, node in enumerate(model.graph.node) if node.domain not in _DOMAINS}


def _unsupported_ops(model: Any) -> dict[int, str]:
    """Node index -> why, for every node whose op ai3 does not map at all
    (the mapper then skips them and refuses the others it cannot take, so
    that one error lists them all)."""
    refused = _foreign_domains(model)
    for i, node in enumerate(model.graph.node):
        if i in refused:
            continue
        if node.op_type in ("Shape", "Size"):
            refused[i] = (
                "it reads the shape of a tensor whose shape is not fully known (a dynamic batch?); pass "
                "sample_input_shape so that the shape arithmetic folds to constants"
            )
        elif node.op_type not in SUPPORTED_OPS:
            refused[i] = "ai3's core has no equivalent of this operator (after folding the constant subgraphs)"
    return refused


_LARGE = 4096  # elements: an initializer this big is a weight, not shape data


def _light_copy(model: Any) -> Any:
    """The model for shape inference: its large initializers (weights)
    declared as inputs of their shape instead of carried (serializing
    hundreds of MB for each inference costs seconds); the small ones,
    which shape inference may read (Reshape targets), kept."""
    onnx = _onnx()
    light = onnx.ModelProto()
    light.ir_version = model.ir_version
    light.opset_import.extend(model.opset_import)
    light.functions.extend(model.functions)
    g, src = light.graph, model.graph
    g.name = src.name
    g.node.extend(src.node)
    g.input.extend(src.input)
    g.output.extend(src.output)
    # (The shapes of ai3 nodes' outputs in a rewritten model: inference cannot see through them.)
    g.value_info.extend(src.value_info)
    declared = {i.name for i in src.input}
    for t in src.initializer:
        if int(np.prod(t.dims, dtype=np.int64)) <= _LARGE:
            g.initializer.append(t)
        elif t.name not in declared:
            g.input.append(onnx.helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
    return light


def infer_shapes(model: Any, sample_input_shape: Any) -> dict[str, tuple]:
    """Tensor name -> shape (None for unknown dims) by onnx.shape_inference,
    the input bound to sample_input_shape if given (a model of several
    inputs: a dict input name -> shape or None)."""
    onnx = _onnx()
    light = _light_copy(model)
    bindings = (
        sample_input_shape
        if isinstance(sample_input_shape, dict)
        else {graph_inputs(model)[0].name: sample_input_shape}  # (the one input; outputs may be several)
    )
    for name, dims in bindings.items():
        if dims is None:
            continue
        (light_inp,) = [i for i in light.graph.input if i.name == name]
        shape = light_inp.type.tensor_type.shape
        shape.ClearField("dim")
        for d in dims:
            shape.dim.add().dim_value = int(d)
    try:
        inferred = onnx.shape_inference.infer_shapes(light, strict_mode=True)
    except Exception as e:
        raise errors.ShapeError(f"ONNX shape inference failed (input shape {sample_input_shape}): {e}") from e
    g = inferred.graph
    shapes: dict[str, tuple] = {}
    for vi in [*g.input, *g.value_info, *g.output]:
        dims = _dims(vi)
        if dims is not None:
            shapes[vi.name] = dims
    for t in model.graph.initializer:
        shapes[t.name] = tuple(t.dims)
    for name, dims in bindings.items():
        if dims is not None:
            shapes[name] = tuple(dims)
    return shapes


def _float(value: np.ndarray) -> np.ndarray:
    """A constant operand as floating point (integer ones from folded shape
    arithmetic become float64; float ones keep their dtype, cast once by
    ai3.model.make_layer)."""
    return value if value.dtype.kind == "f" else value.astype(np.float64)


def _pads_for(node: Any, auto_pad: str, size: int | None, kernel: int, stride: int, dilation: int) -> tuple[int, int]:
    """ONNX auto_pad along one axis as (before, after)."""
    if auto_pad == "VALID":
        return (0, 0)
    if size is None:
        raise _unsupported(
            node,
            f"auto_pad={auto_pad} depends on the input's height and width, which are unknown; pass sample_input_shape",
        )
    return padding.same_1d(size, kernel, stride, dilation, lower=auto_pad == "SAME_LOWER")


def _positions_along(axis: int, rank: int, size: int) -> np.ndarray:
    """0..size-1 (int64) along `axis` of a rank-`rank` constant, size 1 on
    every other axis: compared with a tensor, it broadcasts along the rest
    (Hardmax's and OneHot's "is this the position" test)."""
    return np.arange(size, dtype=np.int64).reshape([-1 if d == axis else 1 for d in range(rank)])


class _Mapper:
    def __init__(self, model: Any, shapes: dict[str, tuple], opset: int):
        onnx = _onnx()
        self.onnx = onnx
        self.model = model
        self.shapes = shapes
        self.opset = opset
        self.specs: list[LayerSpec] = []
        self.names: dict[str, int] = {}
        self.constants: dict[str, np.ndarray] = {}
        self.tensors: dict[str, int] = {}  # tensor name -> spec index
        self.groups: list[Group] = []  # (tolerant walks) nodes -> the specs they made
        # (Strict walks) outputs of refused nodes: the nodes reading them are
        # not refused again, only the cause is listed.
        self.refused_tensors: set[str] = set()
        self.uses: dict[str, int] = {}
        for node in model.graph.node:
            for name in node.input:
                self.uses[name] = self.uses.get(name, 0) + 1
        for out in model.graph.output:
            self.uses[out.name] = self.uses.get(out.name, 0) + 1
        for t in model.graph.initializer:
            self.constants[t.name] = onnx.numpy_helper.to_array(t)
        # Tensors that are not float (the model's float dtype is every other
        # one's): int64 / bool graph inputs and what the integer ops give.
        self.int_dtypes: dict[str, np.dtype] = {}
        try:
            self.float_dtype = model_dtype(model)
        except errors.DTypeError:
            self.float_dtype = np.dtype(np.float32)  # (refused where it matters: swap_backend)
        for inp in model.graph.input:
            integer = _input_int_dtype(inp)
            if integer is not None:
                self.int_dtypes[inp.name] = integer
        # Node index -> the written-out GELU or layer norm it belongs to
        # (ai3.onnx.patterns); the chain's last node emits one spec.
        self.fused: dict[int, Any] = {}
        nodes = list(model.graph.node)
        rank = lambda name: None if self.shapes.get(name) is None else len(self.shapes[name])  # noqa: E731
        found = [
            *patterns.find_gelus(nodes, self.constants.get, self.uses),
            *patterns.find_layernorms(nodes, self.constants.get, self.uses, opset),
            *patterns.find_attentions(nodes, self.constants.get, self.uses, rank, opset),
            *patterns.find_silus(nodes, self.uses),
        ]
        for g in found:
            if not any(i in self.fused for i in g.nodes):  # (chains never overlap; be sure)
                self.fused.update((i, g) for i in g.nodes)

    # -- bookkeeping ----------------------------------------------------
    def unique(self, name: str) -> str:
        count = self.names.get(name, 0)
        self.names[name] = count + 1
        return name if count == 0 else f"{name}#{count}"

    def add(
        self, op: str, node: Any, inputs: list[int], attrs=None, weights=None, suffix: str = "", shape: Any = "node"
    ) -> int:
        """A spec for `node` (its input_shape: the node's first input's,
        unless `shape` says otherwise, as for the inner steps of a chain)."""
        if isinstance(shape, str):
            shape = self.shapes.get(node.input[0]) if node.input else None
        name = (node.name or f"{node.op_type}_{len(self.specs)}") + suffix
        self.specs.append(LayerSpec(self.unique(name), op, inputs, attrs or {}, weights or {}, node, shape))
        return len(self.specs) - 1

    def attrs(self, node: Any) -> dict[str, Any]:
        out = {}
        for a in node.attribute:
            v = self.onnx.helper.get_attribute_value(a)
            out[a.name] = v.decode() if isinstance(v, bytes) else v
        return out

    def const(self, node: Any, name: str, what: str) -> np.ndarray:
        if name in self.refused_tensors:
            raise _Downstream()
        if name not in self.constants:
            raise _unsupported(
                node,
                f"its {what} ('{name}') is computed in the graph; ai3 needs it constant (an initializer or Constant)",
            )
        return self.constants[name]

    def opt_const(self, node: Any, index: int, what: str) -> np.ndarray | None:
        if len(node.input) <= index or not node.input[index]:
            return None
        return self.const(node, node.input[index], what)

    def tensor(self, node: Any, name: str) -> int:
        if name in self.refused_tensors:
            raise _Downstream()
        if name in self.tensors:
            return self.tensors[name]
        if name in self.constants:
            raise _unsupported(node, f"its input '{name}' is a constant; ai3 runs operators on the model's activations")
        raise _unsupported(node, f"its input '{name}' is not produced by an earlier node")

    def shape(self, name: str) -> tuple | None:
        return self.shapes.get(name)

    def rank4(self, node: Any) -> tuple:
        s = self.shape(node.input[0])
        if s is None or len(s) != 4:
            raise _unsupported(
                node,
                f"takes a {'rank-' + str(len(s)) if s else 'rank-unknown'} input; ai3 runs it on NCHW (rank-4) tensors",
            )
        return s

    def walk(self, input_name: Any, tolerant: bool = False, refused: dict[int, str] | None = None) -> int:
        """Maps every node. `tolerant` (the in-graph rewrites, see
        map_nodes): a node the mapping cannot take leaves no spec; its
        outputs become EXTERNAL specs (tensors ORT computes), every graph
        input is one too, and `groups` records which nodes made which specs.
        Otherwise every node the mapping cannot take, and those of
        `refused` (node index -> why, not mapped), are raised together as
        one UnsupportedNodes."""
        refused = dict(refused or {})
        found: list[tuple[int, Any, str]] = []
        if tolerant:
            inits = {t.name for t in self.model.graph.initializer}
            for inp in self.model.graph.input:
                if inp.name not in inits:
                    self.tensors[inp.name] = self.add(
                        EXTERNAL, inp, [], {"tensor": inp.name}, shape=self.shape(inp.name)
                    )
        else:  # one input's name, or a list of them (a model of several)
            for k, name in enumerate([input_name] if isinstance(input_name, str) else input_name):
                self.tensors[name] = model_input(k)
        nodes = list(self.model.graph.node)
        for i, node in enumerate(nodes):
            if i in self.fused and i != self.fused[i].last:
                continue
            start = len(self.specs)
            try:
                if i in refused:
                    raise _unsupported(node, refused[i])
                if i in self.fused:
                    self.output(node, self.pattern(node, self.fused[i]))
                else:
                    self.node(node)
            except (UnsupportedNodes, _Downstream) as e:
                if tolerant:
                    self.foreign(node, start)
                    continue
                del self.specs[start:]
                members = [nodes[k] for k in self.fused[i].nodes] if i in self.fused else [node]
                self.refused_tensors.update(o for m in members for o in m.output if o)
                if isinstance(e, UnsupportedNodes):
                    found.extend((i, n, why) for n, why in e.nodes)
                continue
            except Exception:  # noqa: BLE001 -- tolerant: ORT runs what ai3 cannot map
                if not tolerant:
                    raise
                self.foreign(node, start)
                continue
            if tolerant:
                members = [nodes[k] for k in self.fused[i].nodes] if i in self.fused else [node]
                self.group(members, start)
        if tolerant:
            return MODEL_INPUT
        if found:
            raise UnsupportedNodes([(n, why) for _, n, why in sorted(found, key=lambda f: f[0])])
        outs = [o.name for o in self.model.graph.output]
        missing = [o for o in outs if o not in self.tensors]
        if missing:
            raise errors.UnsupportedOperation(f"the model's output '{missing[0]}' is not computed from its input")
        if len(outs) == 1:
            return self.tensors[outs[0]]
        self.specs.append(LayerSpec("outputs", OUTPUTS, [self.tensors[o] for o in outs]))
        return len(self.specs) - 1

    def foreign(self, node: Any, start: int) -> None:
        """Undoes what a node the mapping refused made; its outputs become
        EXTERNAL specs."""
        del self.specs[start:]
        self.tensors = {k: v for k, v in self.tensors.items() if v < start}
        for o in node.output:
            if o:
                self.tensors[o] = self.add(EXTERNAL, node, [], {"tensor": o}, shape=self.shape(o))

    def group(self, members: list, start: int) -> None:
        """Records that `members` made specs[start:]; a node that made none
        but aliases an earlier spec (the Add that became a linear's bias)
        joins that spec's group."""
        made = list(range(start, len(self.specs)))
        if made:
            self.groups.append(Group(members, made))
            return
        aliased = {self.tensors.get(o) for node in members for o in node.output if o in self.tensors}
        for g in self.groups:
            if aliased & set(g.specs):
                g.nodes.extend(members)
                return

    def pattern(self, node: Any, g: Any) -> int:
        """The one spec standing for a written-out GELU or layer norm."""
        if isinstance(g, patterns.Attention):
            ins = [self.tensor(node, t) for t in (g.q, g.k, g.v)]
            return self.add("attention", node, ins, {"causal": False, "scale": g.scale}, shape=self.shape(g.q))
        x = self.tensor(node, g.x)
        shape = self.shape(g.x)
        if isinstance(g, patterns.Gelu):
            return self.add("gelu", node, [x], {"approximate": "none"}, shape=shape)
        if isinstance(g, patterns.Silu):
            return self.add("silu", node, [x], shape=shape)
        if shape is None:
            raise _unsupported(node, "a layer norm of a tensor of unknown rank")
        rank = len(shape)
        axes = sorted(a + rank if a < 0 else a for a in g.axes)
        if not axes or axes != list(range(rank - len(axes), rank)) or axes[0] == 0 or None in shape[axes[0] :]:
            raise _unsupported(
                node, f"a layer norm over axes {g.axes} of a {shape} tensor; ai3 normalizes known trailing axes"
            )
        trailing = tuple(shape[axes[0] :])
        weights = {}
        for key, value, default in (("weight", g.weight, 1.0), ("bias", g.bias, 0.0)):
            value = np.full(1, default) if value is None else np.asarray(value)
            while value.ndim > len(trailing) and value.shape[0] == 1:
                value = value.reshape(value.shape[1:])
            try:
                weights[key] = np.broadcast_to(value, trailing)
            except ValueError:
                raise _unsupported(
                    node, f"a layer norm whose {key} {value.shape} varies outside the normalized axes {trailing}"
                ) from None
        return self.add("layernorm", node, [x], {"axes": len(axes), "eps": g.eps}, weights, shape=shape)

    def output(self, node: Any, index: int) -> None:
        # (Extra outputs a handler maps itself, as LayerNormalization's Mean
        # and InvStdDev, are in self.tensors already.)
        outs = [o for o in node.output[1:] if o and self.uses.get(o, 0) and o not in self.tensors]
        if outs:
            raise _unsupported(node, f"its extra outputs {outs} are used; ai3 layers return one tensor")
        self.tensors[node.output[0]] = index
        if node.op_type in _MOVES and node.input and node.input[0] in self.int_dtypes:
            self.int_dtypes.setdefault(node.output[0], self.int_dtypes[node.input[0]])

    # -- nodes ------------------------------------------------------------
    def node(self, node: Any) -> None:
        op = node.op_type
        a = self.attrs(node)
        if op == "Constant":
            self.constants[node.output[0]] = self.constant(node, a)
            return
        if op in ("Identity", "Dropout"):
            if op == "Dropout":
                mode = self.opt_const(node, 2, "training_mode")
                if mode is not None and bool(np.asarray(mode).reshape(-1)[0]):
                    raise _unsupported(node, "training_mode=True; ai3 runs inference")
            if node.input[0] in self.constants:
                self.constants[node.output[0]] = self.constants[node.input[0]]
                return
            return self.output(node, self.add("identity", node, [self.tensor(node, node.input[0])]))
        if op in _BINARY:
            return self.output(node, self.binary(node, _BINARY[op]))
        if op == "Mod":  # fmod=1: C's fmod (the dividend's sign), else the divisor's
            return self.output(node, self.binary(node, "fmod" if int(a.get("fmod", 0)) else "remainder"))
        if op in _VARIADIC:
            return self.output(node, self.variadic(node, _VARIADIC[op], mean=op == "Mean"))
        if op == "MatMul" and node.input[0] not in self.constants and node.input[1] not in self.constants:
            ins = [self.tensor(node, n) for n in node.input[:2]]
            return self.output(node, self.add("matmul", node, ins))
        if op == "Einsum":
            return self.output(node, self.einsum(node, a))
        if op == "Split":
            return self.split(node, a, self.tensor(node, node.input[0]))
        if op == "Concat":
            return self.output(node, self.concat(node, a))
        if op in _COMPARE:
            return self.output(node, self.compare(node, _COMPARE[op]))
        if op == "Where" and node.input[0] in self.constants:
            return self.where_constant_condition(node)
        if op == "Where":
            return self.output(node, self.where(node))
        if op == "Gather" and node.input[1] not in self.constants:
            return self.output(node, self.gather_by_tensor(node, a))
        if op == "CastLike":
            return self.cast_like(node)
        if op == "GatherElements":
            return self.output(node, self.gather_elements(node, a))
        if op == "TopK":
            return self.topk(node, a, self.tensor(node, node.input[0]))
        if op in ("ScatterElements", "Scatter", "ScatterND"):
            return self.output(node, self.scatter(node, a))
        if op == "GridSample":
            return self.output(node, self.grid_sample(node, a))
        if op == "Attention":
            return self.output(node, self.attention(node, a))
        if op == "MatMul" and node.input[0] in self.constants:
            return self.output(node, self.constant_left_matmul(node))
        x = self.tensor(node, node.input[0])
        if op in _UNARY:
            return self.output(node, self.add(_UNARY[op], node, [x]))
        if op in _REDUCTIONS:
            return self.output(node, self.reduction(node, a, x))
        handler = getattr(self, "op_" + op)
        self.output(node, handler(node, a, x))

    def constant(self, node: Any, a: dict) -> np.ndarray:  # (folded models have none left)
        numpy_helper = self.onnx.numpy_helper
        if "value" in a:
            return numpy_helper.to_array(a["value"])
        for key, kind in (
            ("value_float", np.float32),
            ("value_floats", np.float32),
            ("value_int", np.int64),
            ("value_ints", np.int64),
        ):
            if key in a:
                return np.asarray(a[key], dtype=kind)
        raise _unsupported(node, f"a Constant of kind {sorted(a)}; ai3 reads tensors, floats and ints")

    def binary(self, node: Any, op: str) -> int:
        """Add/Sub/Mul/Div: of two tensors (NumPy broadcasting), or of a
        tensor and a constant (weights["other"], `reverse` when the constant
        is the left operand). A constant added to a MatMul's output that is
        read nowhere else becomes that linear layer's bias."""
        names = list(node.input)
        if len(names) != 2 or not all(names):
            raise _unsupported(node, f"takes {len(names)} inputs")
        consts = [n in self.constants for n in names]
        if all(consts):
            raise _unsupported(node, "combines two constants")  # (folded before mapping, unless it failed)
        # Integer operands (position and mask arithmetic) give an integer
        # result, and an integer constant stays one beside them.
        integer = next((self.int_dtypes[n] for n in names if n in self.int_dtypes), None)
        if integer is not None:
            self.int_dtypes[node.output[0]] = integer
        if not any(consts):
            return self.add(op, node, [self.tensor(node, n) for n in names])
        k = consts.index(True)
        other_name, x_name = names[k], names[1 - k]
        other = self.constants[other_name]
        if other.dtype.kind not in "fiu":
            raise _unsupported(node, f"a constant of type {other.dtype}; ai3 computes in floating point")
        x = self.tensor(node, x_name)
        if integer is not None:
            weights = {"other": np.asarray(other, dtype=integer)}
            return self.add(op, node, [x], {"reverse": k == 0}, weights, shape=self.shape(x_name))
        if op == "add" and x != MODEL_INPUT and self.uses.get(x_name) == 1:
            spec = self.specs[x]
            out = spec.weights["weight"].shape[0] if spec.op == "linear" else None
            if (
                spec.op == "linear"
                and spec.weights.get("bias") is None
                and other.size in (1, out)
                and other.ndim <= 2
                and spec.attrs.get("from_matmul")
            ):
                spec.weights["bias"] = np.broadcast_to(other.reshape(-1), (out,)).astype(np.float64)
                return x
        return self.add(op, node, [x], {"reverse": k == 0}, {"other": _float(other)}, shape=self.shape(x_name))

    def variadic(self, node: Any, op: str, mean: bool = False) -> int:
        """Sum (the classic zoo's residual add), Max, Min, Mean of any
        number of inputs: one two-operand op (ONNX's broadcasting) per extra
        input, the tensors left to right, then the constants (one-input form
        with weights["other"]; the ops commute); Mean is the sum times 1/n."""
        names = [n for n in node.input if n]
        tensors = [n for n in names if n not in self.constants]
        consts = [_float(self.constants[n]) for n in names if n in self.constants]
        if not tensors:
            raise _unsupported(node, "combines constants only")  # (folded before mapping, unless it failed)
        steps = len(tensors) - 1 + len(consts) + (1 if mean and len(names) > 1 else 0)
        if steps == 0:
            return self.add("identity", node, [self.tensor(node, tensors[0])])
        acc, k = self.tensor(node, tensors[0]), 0

        def step(inputs: list, attrs: dict | None = None, weights: dict | None = None, which: str = op) -> int:
            nonlocal k
            k += 1
            return self.add(which, node, inputs, attrs, weights, suffix="" if k == steps else f"/{k}")

        for name in tensors[1:]:
            acc = step([acc, self.tensor(node, name)])
        for c in consts:
            acc = step([acc], {"reverse": False}, {"other": c})
        if mean and len(names) > 1:
            acc = step([acc], {"reverse": False}, {"other": np.asarray(1.0 / len(names))}, "mul")
        return acc

    def concat(self, node: Any, a: dict) -> int:
        """Concat of tensors; constants at either end (ViT's class token)
        become a zero pad of the tensors' concat along the axis plus the
        constants added into the padded rows, which is exact (x + 0 = x,
        0 + c = c)."""
        names = [n for n in node.input if n]
        out_shape = self.shape(node.output[0])
        rank = len(out_shape) if out_shape is not None else None
        axis = int(a["axis"])
        if axis < 0 and rank:
            axis += rank
        is_const = [n in self.constants for n in names]
        first = is_const.index(False) if False in is_const else len(names)
        last = len(names) - is_const[::-1].index(False) if False in is_const else 0
        if first == len(names):
            raise _unsupported(node, "concatenates constants only")
        if any(is_const[first:last]):
            raise _unsupported(node, "a constant between tensors; ai3 concatenates constants at either end only")
        ins = [self.tensor(node, n) for n in names[first:last]]
        if len(ins) == 1:
            x = self.add("identity", node, ins, suffix="/tensors" if first or last < len(names) else "")
        else:
            x = self.add("concat", node, ins, {"axis": axis}, suffix="/tensors" if first or last < len(names) else "")
        if first == 0 and last == len(names):
            return x
        if out_shape is None or None in out_shape[1:]:
            raise _unsupported(node, f"a concat with constants into a tensor of unknown shape {out_shape}")
        consts = [_float(self.constants[n]) if c else None for n, c in zip(names, is_const)]
        before = sum(c.shape[axis] for c in consts[:first])
        after = sum(c.shape[axis] for c in consts[last:])
        middle = out_shape[axis] - before - after
        tensor_shape = tuple(out_shape[:axis]) + (middle,) + tuple(out_shape[axis + 1 :])
        padded = self.pad_axis(node, x, tensor_shape, axis, before, after, 0.0)
        # The added constant: the constants, zeros over the tensors' rows;
        # its batch dim kept at 1 where the constant repeats over it (an Expand).
        full = [
            np.broadcast_to(c, c.shape[:axis] + c.shape[axis : axis + 1] + tuple(out_shape[axis + 1 :]))
            for c in consts
            if c is not None
        ]
        zeros_shape = list(full[0].shape)
        zeros_shape[axis] = middle
        mask = np.concatenate(full[:first] + [np.zeros(zeros_shape)] + full[last:], axis=axis)
        if axis > 0 and mask.shape[0] > 1 and np.all(mask == mask[:1]):
            mask = mask[:1]
        return self.add("add", node, [padded], {"reverse": False}, {"other": mask}, shape=tuple(out_shape))

    def pad_axis(self, node: Any, x: int, shape: tuple, axis: int, before: int, after: int, value: float) -> int:
        """x padded with `value` along one (non-batch) axis: pad2d directly on
        H or W of a rank-4 tensor, else a pad2d of its H axis after a
        reshape to (N, prod(dims before), dims[axis], prod(dims after))."""
        rank = len(shape)
        if rank == 4 and axis in (2, 3):
            padding = (before, after, 0, 0) if axis == 2 else (0, 0, before, after)
            return self.add("pad2d", node, [x], {"padding": padding, "value": value}, suffix=f"/pad{axis}", shape=shape)
        if axis == 0 or None in shape[1:]:
            raise _unsupported(node, f"a pad along axis {axis} of a tensor of shape {shape}")
        mid = int(np.prod(shape[1:axis], dtype=np.int64))
        rest = int(np.prod(shape[axis + 1 :], dtype=np.int64))
        r = self.add(
            "reshape", node, [x], {"shape": [0, mid, int(shape[axis]), rest]}, suffix=f"/pad{axis}_in", shape=shape
        )
        p = self.add(
            "pad2d",
            node,
            [r],
            {"padding": (before, after, 0, 0), "value": value},
            suffix=f"/pad{axis}",
            shape=(shape[0], mid, shape[axis], rest),
        )
        target = [0, *shape[1:axis], shape[axis] + before + after, *shape[axis + 1 :]]
        return self.add(
            "reshape",
            node,
            [p],
            {"shape": [int(d) for d in target]},
            suffix=f"/pad{axis}_out",
            shape=(shape[0], mid, shape[axis] + before + after, rest),
        )

    def split(self, node: Any, a: dict, x: int) -> None:
        """Split into slices along one axis (sizes from the `split` input,
        the attribute before opset 13, or equal parts)."""
        shape = self.shape(node.input[0])
        axis = int(a.get("axis", 0))
        if shape is None or shape[axis] is None:
            raise _unsupported(node, "a split of a tensor of unknown size along its axis")
        axis = axis + len(shape) if axis < 0 else axis
        sizes = a.get("split") if self.opset < 13 else self.opt_const(node, 1, "split")
        n = len(node.output)
        if sizes is None:
            size = shape[axis]
            chunk = -(-size // n)  # ONNX (and torch.chunk): ceil-sized parts, the last smaller
            sizes = [min(chunk, size - k * chunk) for k in range(n)]
        sizes = [int(v) for v in np.asarray(sizes).reshape(-1)]
        start = 0
        for k, (out, size) in enumerate(zip(node.output, sizes)):
            if out:
                attrs = {"axis": axis, "start": start, "stop": start + size, "step": 1}
                self.tensors[out] = self.add("slice", node, [x], attrs, suffix=f"/{k}")
            start += size

    def einsum(self, node: Any, a: dict) -> int:
        """A one-operand Einsum (einsum_one), or a two-operand one as one
        batched matmul ("bhid,bhjd->bhij", "ibh,hnd->ibnd", any letters,
        any number of batch, free and contracted indices): permutes and
        reshapes around it (ai3.spec.einsum_plan); a constant right operand
        is arranged once, here."""
        eq = str(a.get("equation", "")).replace(" ", "")
        if "->" not in eq or "..." in eq or len(node.input) not in (1, 2):
            raise _unsupported(
                node,
                f"equation {eq!r}; ai3 maps one-operand and two-operand (batched matmul) equations written out in full",
            )
        lhs, out = eq.split("->")
        if len(node.input) == 1:
            return self.einsum_one(node, eq, lhs, out)

        def sizes(name: str) -> list:
            if name in self.constants:
                return list(np.shape(self.constants[name]))
            shape = self.shape(name)
            if shape is None:
                raise _unsupported(node, f"an operand '{name}' of unknown rank")
            return [d if isinstance(d, int) else None for d in shape]

        try:
            plan = einsum_plan(eq, sizes(node.input[0]), sizes(node.input[1]))
        except ValueError as e:
            raise _unsupported(node, str(e)) from None
        inputs, other = [], None
        steps = ((plan.a_perm, plan.a_shape), (plan.b_perm, plan.b_shape))
        for n, (name, (perm, target)) in enumerate(zip(node.input, steps)):
            if n == 1 and name in self.constants:  # arranged now
                other = plan.right_constant(_float(np.asarray(self.constants[name])))
                continue
            x = self.tensor(node, name)
            if perm is not None:
                x = self.add("permute", node, [x], {"dims": perm}, suffix=f"/operand{n}", shape=self.shape(name))
            if target is not None:
                x = self.add("reshape", node, [x], {"shape": target}, suffix=f"/operand{n}_matrix", shape=None)
            inputs.append(x)
        weights = {} if other is None else {"other": other}
        if plan.product_shape is None and plan.out_perm is None:
            return self.add("matmul", node, inputs, {}, weights, shape=None)
        y = self.add("matmul", node, inputs, {}, weights, suffix="/matmul", shape=None)
        if plan.product_shape is not None:
            suffix = "" if plan.out_perm is None else "/unmatrix"
            y = self.add("reshape", node, [y], {"shape": plan.product_shape}, suffix=suffix, shape=None)
        if plan.out_perm is not None:
            y = self.add("permute", node, [y], {"dims": plan.out_perm}, shape=None)
        return y

    def einsum_one(self, node: Any, eq: str, letters: str, out: str) -> int:
        """A one-operand Einsum of distinct letters ("ij->ji", "bij->bj"):
        a sum over the letters the output drops, then a permute into the
        output's order (a repeated letter, a diagonal, is refused)."""
        if len(set(letters)) != len(letters) or len(set(out)) != len(out) or not set(out) <= set(letters):
            raise _unsupported(node, f"equation {eq!r}; ai3 maps one-operand sums and transposes of distinct letters")
        x = self.tensor(node, node.input[0])
        summed = [i for i, c in enumerate(letters) if c not in out]
        kept = [c for c in letters if c in out]
        dims = [kept.index(c) for c in out]
        moved = dims != list(range(len(dims)))
        if summed:
            x = self.add("reduce_sum", node, [x], {"axes": summed, "keepdim": False}, suffix="/sum" if moved else "")
        if moved:
            return self.add("permute", node, [x], {"dims": dims}, shape=None if summed else "node")
        return x if summed else self.add("identity", node, [x])

    # single-input ops: op_<OpType>(node, attrs, x) -> spec index
    def op_Relu(self, node, a, x):
        return self.add("relu", node, [x])

    def op_Sigmoid(self, node, a, x):
        return self.add("sigmoid", node, [x])

    def op_Tanh(self, node, a, x):
        return self.add("tanh", node, [x])

    def op_Clip(self, node, a, x):
        if self.opset < 11:
            lo, hi = a.get("min"), a.get("max")
        else:
            lo, hi = self.opt_const(node, 1, "min"), self.opt_const(node, 2, "max")
        lo = None if lo is None else float(np.asarray(lo).reshape(()))
        hi = None if hi is None else float(np.asarray(hi).reshape(()))
        return self.add("clamp", node, [x], {"min": lo, "max": hi})

    def op_LogSoftmax(self, node, a, x):
        return self.op_Softmax(node, a, x, "log_softmax")

    def op_Softmax(self, node, a, x, op="softmax"):
        shape = self.shape(node.input[0])
        rank = None if shape is None else len(shape)
        if self.opset < 13:
            # Coerced to 2-D (prod(d[:axis]), prod(d[axis:])): the same as
            # softmax over one axis only when that is the last one.
            axis = int(a.get("axis", 1))
            if rank is not None and axis < 0:
                axis += rank
            if rank is None or axis != rank - 1:
                raise _unsupported(
                    node,
                    f"Softmax before opset 13 (axis {a.get('axis', 1)}) on a rank-{rank} input coerces it to 2-D; "
                    "ai3 maps it where axis is the last one (rank-2 inputs with axis 1)",
                )
            return self.add(op, node, [x], {"axis": axis})
        axis = int(a.get("axis", -1))
        return self.add(op, node, [x], {"axis": axis})

    def conv_pads(self, node, a, shape, kernel, strides, dilations) -> tuple[int, ...]:
        """The window's padding in the core's order: (before, after) per
        spatial dim, (top, bottom, left, right) for 2-D."""
        n = len(kernel)
        auto = a.get("auto_pad", "NOTSET")
        if auto in ("NOTSET", ""):
            p = [int(v) for v in a.get("pads", [0] * (2 * n))]
            if len(p) != 2 * n:
                raise _unsupported(node, f"pads {p} for a {n}-D window")
            if any(v < 0 for v in p):
                raise _unsupported(node, f"negative pads {p}")
            return padding.from_onnx_nd(p)
        if auto not in ("SAME_UPPER", "SAME_LOWER", "VALID"):
            raise _unsupported(node, f"auto_pad={auto!r}")
        return tuple(
            v for d in range(n) for v in _pads_for(node, auto, shape[2 + d], kernel[d], strides[d], dilations[d])
        )

    def lifted_1d(self, node: Any, a: dict, x: int, handler: Any) -> int | None:
        """A 1-D Conv / ConvTranspose / MaxPool / AveragePool of an (N, C, L) tensor as
        the 2-D one over (N, C, 1, L), between two reshapes: the kernel,
        strides, dilations and pads of a height-1 window, the weight
        (O, C/g, k) as (O, C/g, 1, k). None where the input is not rank 3."""
        shape = self.shape(node.input[0])
        if shape is None or len(shape) != 3 or shape[1] is None:
            return None
        onnx = self.onnx
        lifted = onnx.NodeProto()
        lifted.CopyFrom(node)
        del lifted.attribute[:]
        for key, value in a.items():
            if key in ("kernel_shape", "strides", "dilations", "output_shape"):
                value = [1, *value]
            elif key == "output_padding":
                value = [0, *value]
            elif key == "pads":
                value = [0, value[0], 0, value[1]] if len(value) == 2 else value
            lifted.attribute.append(onnx.helper.make_attribute(key, value))
        lifted.input[0] = node.input[0] + "/2d"
        shape4 = (shape[0], shape[1], 1, shape[2])
        self.shapes[lifted.input[0]] = shape4
        if node.op_type in ("Conv", "ConvTranspose"):  # (weights (O, C/g, k) / (C, O/g, k))
            weight = self.const(node, node.input[1], "weight")
            if weight.ndim != 3:
                return None
            lifted.input[1] = node.input[1] + "/2d"
            self.constants[lifted.input[1]] = weight[:, :, None, :]
        x4 = self.add("reshape", node, [x], {"shape": [0, int(shape[1]), 1, -1]}, suffix="/2d")
        y4 = handler(lifted, self.attrs(lifted), x4)
        self.specs[y4].layer = node  # (selectors see the model's own node)
        out = self.shape(node.output[0])
        channels = out[1] if out is not None and out[1] is not None else -1
        return self.add("reshape", node, [y4], {"shape": [0, int(channels), -1]}, suffix="/1d", shape=None)

    def op_Conv(self, node, a, x):
        lifted = self.lifted_1d(node, a, x, self.op_Conv)
        if lifted is not None:
            return lifted
        shape = self.shape(node.input[0])
        if shape is None or len(shape) not in (4, 5):
            raise _unsupported(
                node,
                f"takes a {'rank-' + str(len(shape)) if shape else 'rank-unknown'} input; ai3 runs 1-, 2- and 3-D "
                "convolutions (rank 3 to 5)",
            )
        weight = self.const(node, node.input[1], "weight")
        if weight.ndim != len(shape):
            raise _unsupported(node, f"a weight of shape {weight.shape} for a rank-{len(shape)} input")
        bias = self.opt_const(node, 2, "bias")
        dims = len(shape) - 2
        kernel = tuple(int(k) for k in a.get("kernel_shape", weight.shape[2:]))
        if kernel != tuple(weight.shape[2:]):
            raise _unsupported(node, f"kernel_shape {kernel} differs from the weight's {weight.shape[2:]}")
        strides = tuple(int(s) for s in a.get("strides", (1,) * dims))
        dilations = tuple(int(d) for d in a.get("dilations", (1,) * dims))
        attrs = {
            "stride": strides,
            "padding": self.conv_pads(node, a, shape, kernel, strides, dilations),
            "dilation": dilations,
            "groups": int(a.get("group", 1)),
        }
        op = "conv2d" if dims == 2 else "conv3d"
        return self.add(op, node, [x], attrs, {"weight": weight, "bias": bias})

    def op_ConvTranspose(self, node, a, x):
        """conv_transpose2d; pads from auto_pad or output_shape as the ONNX
        spec computes them (the extra odd row at the end for SAME_UPPER and
        an output_shape, at the start for SAME_LOWER). A 1-D one: lifted_1d."""
        lifted = self.lifted_1d(node, a, x, self.op_ConvTranspose)
        if lifted is not None:
            return lifted
        shape = self.rank4(node)
        weight = self.const(node, node.input[1], "weight")
        if weight.ndim != 4:
            raise _unsupported(node, f"a {weight.ndim - 2}-D transposed convolution; ai3 runs 2-D ones")
        bias = self.opt_const(node, 2, "bias")
        kernel = tuple(int(k) for k in a.get("kernel_shape", weight.shape[2:]))
        if kernel != tuple(weight.shape[2:]):
            raise _unsupported(node, f"kernel_shape {kernel} differs from the weight's {weight.shape[2:]}")
        strides = tuple(int(v) for v in a.get("strides", (1, 1)))
        dilations = tuple(int(v) for v in a.get("dilations", (1, 1)))
        out_pad = [int(v) for v in a.get("output_padding", (0, 0))]
        auto = a.get("auto_pad", "NOTSET") or "NOTSET"
        out_shape = [int(v) for v in a.get("output_shape", ())][-2:]
        if auto not in ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"):
            raise _unsupported(node, f"auto_pad={auto!r}")
        if out_shape or auto in ("SAME_UPPER", "SAME_LOWER"):
            if shape[2] is None or shape[3] is None:
                raise _unsupported(node, "output_shape / auto_pad SAME_* of an input of unknown size")
            want = out_shape or [shape[2] * strides[0], shape[3] * strides[1]]
            pads = []
            for i in range(2):
                total = strides[i] * (shape[2 + i] - 1) + out_pad[i] + (kernel[i] - 1) * dilations[i] + 1 - want[i]
                if total < 0:
                    # More rows than the kernel reaches: as output_padding.
                    out_pad[i] -= total
                    total = 0
                small, large = total // 2, total - total // 2
                pads += [small, large] if auto == "SAME_UPPER" else [large, small]
            padding = (pads[0], pads[1], pads[2], pads[3])
        elif auto == "VALID":
            padding = (0, 0, 0, 0)
        else:
            p = [int(v) for v in a.get("pads", (0, 0, 0, 0))]
            if len(p) != 4 or any(v < 0 for v in p):
                raise _unsupported(node, f"pads {p} for a 2-D window")
            padding = (p[0], p[2], p[1], p[3])
        attrs = {
            "stride": strides,
            "padding": padding,
            "output_padding": tuple(out_pad),
            "dilation": dilations,
            "groups": int(a.get("group", 1)),
        }
        return self.add("conv_transpose2d", node, [x], attrs, {"weight": weight, "bias": bias})

    # -- issue 17 (helper N2): norms, resampling, block shuffles ----------
    def channel_weights(self, node, values, channels, what) -> np.ndarray:
        """A per-channel weight (C,) from a constant broadcastable to it."""
        v = np.asarray(values)
        if v.size not in (1, channels):
            raise _unsupported(node, f"its {what} has {v.size} values for {channels} channels")
        return np.ascontiguousarray(np.broadcast_to(v.reshape(-1), (channels,)))

    def op_InstanceNormalization(self, node, a, x):
        """groupnorm with one group per channel (groups 0)."""
        shape = self.shape(node.input[0])
        if shape is None or len(shape) < 3 or shape[1] is None:
            raise _unsupported(node, "an instance norm needs a (N, C, ...) input of known channels")
        c = int(shape[1])
        weights = {
            "weight": self.channel_weights(node, self.const(node, node.input[1], "scale"), c, "scale"),
            "bias": self.channel_weights(node, self.const(node, node.input[2], "B"), c, "B"),
        }
        return self.add("groupnorm", node, [x], {"groups": 0, "eps": float(a.get("epsilon", 1e-5))}, weights)

    def op_GroupNormalization(self, node, a, x):
        """groupnorm; opset 18's scale and bias are per group (each group's
        value repeated over its channels), 21's per channel."""
        shape = self.shape(node.input[0])
        if shape is None or len(shape) < 2 or shape[1] is None:
            raise _unsupported(node, "a group norm needs a (N, C, ...) input of known channels")
        c, groups = int(shape[1]), int(a["num_groups"])
        if groups < 1 or c % groups:
            raise _unsupported(node, f"num_groups={groups} does not divide the {c} channels")
        weights = {}
        for k, key in ((1, "weight"), (2, "bias")):
            v = np.asarray(self.const(node, node.input[k], "scale" if k == 1 else "bias")).reshape(-1)
            if v.size == groups and groups != c:
                v = np.repeat(v, c // groups)
            weights[key] = self.channel_weights(node, v, c, "scale" if k == 1 else "bias")
        return self.add("groupnorm", node, [x], {"groups": groups, "eps": float(a.get("epsilon", 1e-5))}, weights)

    def op_RMSNormalization(self, node, a, x):
        shape = self.shape(node.input[0])
        if shape is None:
            raise _unsupported(node, "an RMS norm of a tensor of unknown rank")
        axis = int(a.get("axis", -1))
        axis = axis + len(shape) if axis < 0 else axis
        trailing = tuple(shape[axis:])
        if any(d is None for d in trailing):
            # (From axis 0 too: the weight fixes the batch's size, as for LayerNormalization.)
            raise _unsupported(node, f"normalises axes {trailing} from axis {axis}, not all of known size")
        scale = np.ascontiguousarray(np.broadcast_to(self.const(node, node.input[1], "scale"), trailing))
        return self.add(
            "rmsnorm", node, [x], {"axes": len(trailing), "eps": float(a.get("epsilon", 1e-5))}, {"weight": scale}
        )

    def op_LRN(self, node, a, x):
        attrs = {
            "size": int(a["size"]),
            "alpha": float(a.get("alpha", 1e-4)),
            "beta": float(a.get("beta", 0.75)),
            "bias": float(a.get("bias", 1.0)),
        }
        return self.add("lrn", node, [x], attrs)

    def op_DepthToSpace(self, node, a, x):
        self.rank4(node)
        return self.add("depth_to_space", node, [x], {"blocksize": int(a["blocksize"]), "mode": a.get("mode", "DCR")})

    def op_SpaceToDepth(self, node, a, x):
        self.rank4(node)
        return self.add("space_to_depth", node, [x], {"blocksize": int(a["blocksize"]), "mode": a.get("mode", "DCR")})

    def op_Resize(self, node, a, x):
        """resize of H and W (N and C kept) by constant scales or sizes:
        nearest (any nearest_mode), linear or cubic (cubic_coeff_a,
        exclude_outside), coordinate modes half_pixel,
        pytorch_half_pixel, align_corners, asymmetric, half_pixel_symmetric;
        from opset 18, scales / sizes of `axes` (opset 10's, which
        has no such attribute, is asymmetric + floor)."""
        shape = self.rank4(node)
        mode = a.get("mode", "nearest")
        if mode not in ("nearest", "linear", "cubic"):
            raise _unsupported(node, f"mode={mode!r}; ai3 resizes by nearest, linear or cubic")
        if self.opset < 11:
            coords, rounding = "asymmetric", "floor"
            scales, sizes = self.opt_const(node, 1, "scales"), None
        else:
            coords = a.get("coordinate_transformation_mode", "half_pixel")
            rounding = a.get("nearest_mode", "round_prefer_floor")
            scales, sizes = self.opt_const(node, 2, "scales"), self.opt_const(node, 3, "sizes")
        if coords not in ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "half_pixel_symmetric"):
            raise _unsupported(node, f"coordinate_transformation_mode={coords!r}")
        if int(a.get("antialias", 0)):
            raise _unsupported(node, "antialias=1")
        if a.get("keep_aspect_ratio_policy", "stretch") != "stretch":
            raise _unsupported(node, "keep_aspect_ratio_policy (ai3 takes the sizes of each dim as given)")
        axes = a.get("axes")
        if axes is not None:  # (opset 18: scales / sizes of these axes only; the others keep theirs)
            scales, sizes = self.resize_axes(node, axes, scales, 1.0), self.resize_axes(node, axes, sizes, shape)
        attrs = {"mode": mode, "coordinate_transformation_mode": coords, "nearest_mode": rounding}
        if mode == "cubic":
            attrs["cubic_coeff_a"] = float(a.get("cubic_coeff_a", -0.75))
            attrs["exclude_outside"] = bool(int(a.get("exclude_outside", 0)))
        if sizes is not None and sizes.size:
            sizes = [int(v) for v in sizes.reshape(-1)]
            if len(sizes) != 4 or any(shape[i] is not None and sizes[i] != shape[i] for i in (0, 1)):
                raise _unsupported(node, f"sizes {sizes}; ai3 resizes H and W of (N, C, H, W)")
            attrs["size"] = (sizes[2], sizes[3])
        elif scales is not None and scales.size:
            sc = [float(v) for v in scales.reshape(-1)]
            if len(sc) != 4 or sc[0] != 1 or sc[1] != 1:
                raise _unsupported(node, f"scales {sc}; ai3 resizes H and W of (N, C, H, W)")
            attrs["scale"] = (sc[2], sc[3])
        else:
            raise _unsupported(node, "neither scales nor sizes given")
        return self.add("resize", node, [x], attrs)

    def resize_axes(self, node, axes: list, given: np.ndarray | None, kept: Any) -> np.ndarray | None:
        """Resize's scales or sizes of `axes` as the full rank-4 list: the
        other dims keep `kept` (scale 1, or the input's size)."""
        if given is None or not given.size:
            return given
        given = given.reshape(-1)
        axes = [int(v) + 4 if int(v) < 0 else int(v) for v in axes]
        if len(axes) != given.size or sorted(set(axes)) != sorted(axes) or not all(0 <= v < 4 for v in axes):
            raise _unsupported(node, f"axes {axes} for {given.size} scales / sizes of a rank-4 input")
        # (An unknown kept size, -1, is not checked against the input's.)
        full = np.array([-1 if d is None else d for d in kept] if isinstance(kept, tuple) else [kept] * 4, given.dtype)
        full[axes] = given
        return full

    def op_Gemm(self, node, a, x):
        """alpha A' B' + beta C: a linear layer of weight alpha B' (A' by a
        permute where transA=1) whose bias is beta C where C holds one value
        per output; any other C broadcast to (M, N) is added after it."""
        shape = self.shape(node.input[0])
        if shape is not None and len(shape) != 2:
            raise _unsupported(node, f"a rank-{len(shape)} input")
        trans_a = int(a.get("transA", 0)) != 0
        b = self.const(node, node.input[1], "B (weight)")
        weight = b if int(a.get("transB", 0)) else b.T
        alpha, beta = float(a.get("alpha", 1.0)), float(a.get("beta", 1.0))
        if alpha != 1.0:
            weight = weight * alpha
        c = self.opt_const(node, 2, "C (bias)")
        out = weight.shape[0]
        per_output = c is not None and c.size in (1, out) and (c.ndim < 2 or c.shape[0] == 1)
        bias = np.broadcast_to(c.reshape(-1), (out,)) * beta if per_output else None
        if trans_a:
            x = self.add("permute", node, [x], {"dims": [1, 0]}, suffix="/transpose_a")
        rows = None if shape is None else shape[::-1] if trans_a else shape
        ends = c is None or per_output
        y = self.add(
            "linear",
            node,
            [x],
            {},
            {"weight": np.ascontiguousarray(weight), "bias": None if bias is None else np.ascontiguousarray(bias)},
            suffix="" if ends else "/linear",
            shape=rows,
        )
        if ends:
            return y
        m = None if rows is None else rows[0]
        try:
            full = np.broadcast_to(_float(c), (1 if m is None else m, out)) * beta
        except ValueError:
            raise _unsupported(node, f"a bias C of shape {c.shape}, not broadcastable to ({m}, {out})") from None
        return self.add("add", node, [y], {"reverse": False}, {"other": full}, shape=(m, out))

    def op_MatMul(self, node, a, x):
        """x @ B, B constant and 2-D: a linear layer (a following constant
        Add becomes its bias); else a matmul by B. (A @ x, A constant, is
        constant_left_matmul.)"""
        shape = self.shape(node.input[0])
        b = self.const(node, node.input[1], "B (weight)")
        # The core's linear contracts the last dim of any rank (nn.Linear on (N, L, features) exports so).
        if shape is not None and len(shape) >= 2 and b.ndim == 2:
            return self.add(
                "linear", node, [x], {"from_matmul": True}, {"weight": np.ascontiguousarray(b.T), "bias": None}
            )
        return self.add("matmul", node, [x], {}, {"other": _float(b)})

    def constant_left_matmul(self, node):
        """A @ x, A constant: x's permute, a matmul by A^T, the product's
        permute (spec.constant_left_matmul_steps)."""
        right = self.shape(node.input[1])
        if right is None or node.input[1] in self.constants:
            raise _unsupported(node, "a constant left operand needs a computed right one of known rank")
        left = _float(self.const(node, node.input[0], "A"))
        steps = constant_left_matmul_steps(left, len(right))
        x = self.tensor(node, node.input[1])
        for step, (op, attrs, weights) in enumerate(steps):
            suffix = "" if step == len(steps) - 1 else f"/step{step}"
            x = self.add(op, node, [x], attrs, weights, suffix=suffix, shape=right if step == 0 else None)
        return x

    def pool_input(self, node: Any) -> tuple:
        """The shape of a pool's input: rank 4 (2-D) or 5 (3-D, video)."""
        s = self.shape(node.input[0])
        if s is None or len(s) not in (4, 5):
            raise _unsupported(
                node,
                f"takes a {'rank-' + str(len(s)) if s else 'rank-unknown'} input; ai3 pools over 1, 2 or 3 "
                "spatial dims (rank 3 to 5)",
            )
        return s

    def pool_common(self, node, a, shape):
        kernel = tuple(int(k) for k in a["kernel_shape"])
        dims = len(shape) - 2
        if len(kernel) != dims:
            raise _unsupported(node, f"a {len(kernel)}-D window over a rank-{len(shape)} input")
        strides = tuple(int(s) for s in a.get("strides", (1,) * dims))
        dilations = tuple(int(d) for d in a.get("dilations", (1,) * dims))
        pads = self.conv_pads(node, a, shape, kernel, strides, dilations)
        return kernel, strides, dilations, pads

    def op_MaxPool(self, node, a, x):
        lifted = self.lifted_1d(node, a, x, self.op_MaxPool)
        if lifted is not None:
            return lifted
        shape = self.pool_input(node)
        if len(node.output) > 1 and node.output[1]:
            raise _unsupported(node, "its indices output; ai3's max pooling returns the values only")
        if int(a.get("storage_order", 0)) != 0:
            raise _unsupported(node, "storage_order=1")
        kernel, strides, dilations, pads = self.pool_common(node, a, shape)
        ceil_mode = bool(a.get("ceil_mode", 0))
        x, pads, shape = self.wide_pads(node, x, shape, kernel, pads, ceil_mode, -np.inf)
        attrs = {"kernel": kernel, "stride": strides, "padding": pads, "dilation": dilations, "ceil_mode": ceil_mode}
        return self.add(f"maxpool{len(kernel)}d", node, [x], attrs, shape=shape)

    def wide_pads(self, node, x, shape, kernel, pads, ceil_mode, value):
        """Pool pads wider than half the window, which ONNX allows and the
        core's pools refuse: a pad2d with the value the window ignores
        (-inf for max, 0 for an average counting the pads) first, and the
        pool then unpadded, which is the same sums and maxima. (With
        ceil_mode a window starting in the right pad is dropped by the
        pools but not after an explicit pad, so that stays refused.)"""
        if len(kernel) != 2:  # (3-D: the core's pool refuses them, naming the layer)
            return x, pads, shape
        t, b, l, r = pads
        if max(t, b) <= kernel[0] // 2 and max(l, r) <= kernel[1] // 2 or ceil_mode or value is None:
            return x, pads, shape
        padded = self.add("pad2d", node, [x], {"padding": (t, b, l, r), "value": float(value)}, suffix="/pad")
        n, c, h, w = shape
        return padded, (0, 0, 0, 0), (n, c, None if h is None else h + t + b, None if w is None else w + l + r)

    def op_AveragePool(self, node, a, x):
        lifted = self.lifted_1d(node, a, x, self.op_AveragePool)
        if lifted is not None:
            return lifted
        shape = self.pool_input(node)
        kernel, strides, dilations, pads = self.pool_common(node, a, shape)
        if any(d != 1 for d in dilations):
            raise _unsupported(node, f"dilations {dilations}; ai3's average pooling has none")
        auto = a.get("auto_pad", "NOTSET")
        ceil_mode = bool(a.get("ceil_mode", 0))
        count_include_pad = bool(a.get("count_include_pad", 0)) and auto in ("NOTSET", "")
        x, pads, shape = self.wide_pads(node, x, shape, kernel, pads, ceil_mode, 0.0 if count_include_pad else None)
        attrs = {
            "kernel": kernel,
            "stride": strides,
            "padding": pads,
            "ceil_mode": ceil_mode,
            "count_include_pad": count_include_pad,
            "divisor_override": None,
        }
        return self.add(f"avgpool{len(kernel)}d", node, [x], attrs, shape=shape)

    def lp_power(self, node: Any, x: int, p: float, suffix: str = "") -> int:
        """x^p (a pow by a constant): LpPool's and GlobalLpPool's first step
        (of |x|) and last (of the sum, by 1/p)."""
        return self.add("pow", node, [x], {"reverse": False}, {"other": np.asarray(p)}, suffix=suffix, shape=None)

    def lp_abs_power(self, node: Any, x: int, p: float) -> int:
        return self.lp_power(node, self.add("abs", node, [x], suffix="/abs", shape=None), p, "/pow")

    def op_LpPool(self, node, a, x):
        """(sum over the window of |x|^p)^(1/p): abs, pow, the window's sum
        (avgpool2d with divisor 1; padding adds zeros to it, as in ONNX)
        and pow 1/p."""
        lifted = self.lifted_1d(node, a, x, self.op_LpPool)
        if lifted is not None:
            return lifted
        shape = self.pool_input(node)
        kernel, strides, dilations, pads = self.pool_common(node, a, shape)
        if len(kernel) != 2 or any(d != 1 for d in dilations):
            raise _unsupported(
                node, f"a {len(kernel)}-D window with dilations {dilations}; ai3 sums 2-D undilated ones"
            )
        p = float(a.get("p", 2))
        powered = self.lp_abs_power(node, x, p)
        ceil_mode = bool(a.get("ceil_mode", 0))
        powered, pads, pooled_shape = self.wide_pads(node, powered, shape, kernel, pads, ceil_mode, 0.0)
        attrs = {"kernel": kernel, "stride": strides, "padding": pads, "ceil_mode": ceil_mode,
                 "count_include_pad": True, "divisor_override": 1}  # fmt: skip
        summed = self.add("avgpool2d", node, [powered], attrs, suffix="/sum", shape=pooled_shape)
        return self.lp_power(node, summed, 1.0 / p)

    def op_GlobalLpPool(self, node, a, x):
        """(sum over every spatial dim of |x|^p)^(1/p), kept as size 1."""
        shape = self.shape(node.input[0])
        if shape is None or len(shape) < 3:
            raise _unsupported(node, "an input of unknown rank, or without spatial dims")
        p = float(a.get("p", 2))
        attrs = {"axes": list(range(2, len(shape))), "keepdim": True}
        summed = self.add("reduce_sum", node, [self.lp_abs_power(node, x, p)], attrs, suffix="/sum", shape=None)
        return self.lp_power(node, summed, 1.0 / p)

    def op_GlobalAveragePool(self, node, a, x):
        shape = self.shape(node.input[0])
        if shape is not None and len(shape) in (3, 5):  # 1-D and 3-D (video) maps: the mean over them
            return self.add("mean", node, [x], {"axes": list(range(2, len(shape))), "keepdim": True})
        self.rank4(node)
        return self.add("adaptiveavgpool2d", node, [x], {"output_size": (1, 1)})

    def op_GlobalMaxPool(self, node, a, x):
        _, _, h, w = self.rank4(node)
        if h is None or w is None:
            raise _unsupported(node, "global max pooling over an unknown height and width; pass sample_input_shape")
        attrs = {"kernel": (h, w), "stride": (h, w), "padding": (0, 0, 0, 0), "dilation": (1, 1), "ceil_mode": False}
        return self.add("maxpool2d", node, [x], attrs)

    def op_Flatten(self, node, a, x):
        axis = int(a.get("axis", 1))
        shape = self.shape(node.input[0])
        rank = None if shape is None else len(shape)
        if rank is not None and axis < 0:
            axis += rank
        if axis == 1 and rank != 1:  # (a rank-1 tensor flattens to (n, 1), below)
            return self.add("flatten", node, [x], {"start_dim": 1, "end_dim": -1})
        if rank is None or None in shape[axis:] or (axis > 1 and None in shape[1:axis]):
            raise _unsupported(node, f"Flatten(axis={a.get('axis', 1)}) of a tensor of unknown shape {shape}")
        inner = int(np.prod(shape[axis:], dtype=np.int64))
        return self.add("reshape", node, [x], {"shape": [-1, inner]})

    def op_Reshape(self, node, a, x):
        target = [int(v) for v in self.const(node, node.input[1], "shape").reshape(-1)]
        shape = self.shape(node.input[0])
        out = self.shape(node.output[0])
        if shape is None:
            raise _unsupported(node, "a reshape of a tensor of unknown rank")
        if out is not None and tuple(out) == tuple(shape) and None not in shape[1:]:
            return self.add("identity", node, [x])
        rest = shape[1:]
        size = None if None in rest else int(np.prod(rest))
        flattens = len(target) == 2 and (
            (target[0] == 0 and (target[1] == -1 or (size is not None and target[1] == size)))
            or (target[0] == -1 and size is not None and target[1] == size)
            or (
                shape[0] is not None
                and target[0] == shape[0]
                and (target[1] == -1 or (size is not None and target[1] == size))
            )
        )
        if flattens:
            return self.add("flatten", node, [x], {"start_dim": 1, "end_dim": -1})
        if int(a.get("allowzero", 0)) and 0 in target:
            raise _unsupported(node, f"allowzero=1 with a 0 in the shape {target} (an empty tensor)")
        return self.add("reshape", node, [x], {"shape": target})

    def reshape_to(self, node, x, what: str):
        """A reshape to the node's inferred output shape (Squeeze,
        Unsqueeze): an unknown leading (batch) dim copied from the input
        (0), one other unknown dim inferred (-1)."""
        shape, out = self.shape(node.input[0]), self.shape(node.output[0])
        if shape is None or out is None:
            raise _unsupported(node, f"{what} of a tensor of unknown rank")
        target = [d for d in out]
        if target and target[0] is None and shape[0] is None:
            target[0] = 0
        if target.count(None) > 1:
            raise _unsupported(node, f"{what} to {out}: more than one unknown dimension")
        return self.add("reshape", node, [x], {"shape": [-1 if d is None else int(d) for d in target]})

    def op_Squeeze(self, node, a, x):
        return self.reshape_to(node, x, "Squeeze")

    def op_Unsqueeze(self, node, a, x):
        return self.reshape_to(node, x, "Unsqueeze")

    def op_Transpose(self, node, a, x):
        shape = self.shape(node.input[0])
        perm = a.get("perm")
        if perm is None:
            if shape is None:
                raise _unsupported(node, "a Transpose without perm of a tensor of unknown rank")
            perm = list(range(len(shape)))[::-1]
        return self.add("permute", node, [x], {"dims": [int(p) for p in perm]})

    def op_Slice(self, node, a, x):
        """Slice -> one slice spec per sliced axis, ends clamped to the
        axis (Python slice semantics, as ONNX's)."""
        shape = self.shape(node.input[0])
        if self.opset < 10:
            starts, ends, axes, steps = a["starts"], a["ends"], a.get("axes"), None
        else:
            starts = self.const(node, node.input[1], "starts")
            ends = self.const(node, node.input[2], "ends")
            axes, steps = self.opt_const(node, 3, "axes"), self.opt_const(node, 4, "steps")
        starts = [int(v) for v in np.asarray(starts).reshape(-1)]
        ends = [int(v) for v in np.asarray(ends).reshape(-1)]
        axes = list(range(len(starts))) if axes is None else [int(v) for v in np.asarray(axes).reshape(-1)]
        steps = [1] * len(starts) if steps is None else [int(v) for v in np.asarray(steps).reshape(-1)]
        if shape is None:
            raise _unsupported(node, "a slice of a tensor of unknown rank")
        index, cur = x, list(shape)
        for k, (axis, start, stop, step) in enumerate(zip(axes, starts, ends, steps)):
            axis = axis + len(shape) if axis < 0 else axis
            size = cur[axis]
            if size is None:
                raise _unsupported(node, f"a slice along axis {axis}, whose size is unknown")
            if step == 0:
                raise _unsupported(node, "a step of 0")
            start, stop, step = slice(start, stop, step).indices(size)
            if (start, stop, step) == (0, size, 1):
                continue
            count = len(range(start, stop, step))
            # Walking backwards past index 0 (stop -1 from indices()) is stop None.
            end = None if step < 0 and stop < 0 else stop
            last = k == len(axes) - 1
            index = self.add(
                "slice",
                node,
                [index],
                {"axis": axis, "start": start, "stop": end, "step": step},
                suffix="" if last else f"/{axis}",
                shape=tuple(cur),
            )
            cur[axis] = count
        return index if index != x else self.add("identity", node, [x])

    def op_Gather(self, node, a, x):
        """Gather of constant indices along one axis: a scalar index -> a
        slice then a reshape dropping the axis (x[:, 0]); a run of evenly
        spaced indices -> a slice."""
        shape = self.shape(node.input[0])
        idx = self.const(node, node.input[1], "indices")
        axis = int(a.get("axis", 0))
        if shape is None or shape[axis if axis >= 0 else axis + len(shape)] is None:
            raise _unsupported(node, "a gather along an axis of unknown size")
        axis = axis + len(shape) if axis < 0 else axis
        size = shape[axis]
        flat = [int(v) + size if int(v) < 0 else int(v) for v in np.asarray(idx).reshape(-1)]
        if any(not 0 <= v < size for v in flat):
            raise _unsupported(node, f"indices {flat} out of range for an axis of size {size}")
        if not flat:
            raise _unsupported(node, f"indices of shape {idx.shape}; ai3 gathers a scalar or a run of indices")
        step = flat[1] - flat[0] if len(flat) > 1 else 1
        if step <= 0 or flat != list(range(flat[0], flat[0] + step * len(flat), step)):
            raise _unsupported(node, f"indices {flat}; ai3 gathers evenly spaced, increasing indices (a slice)")
        attrs = {"axis": axis, "start": flat[0], "stop": flat[-1] + 1, "step": step}
        if idx.ndim == 1:
            return self.add("slice", node, [x], attrs)
        s = self.add("slice", node, [x], attrs, suffix="/slice")
        if idx.ndim == 0:
            return self.reshape_to_drop(node, s, shape, axis)
        # N-D indices (the export of HF's mask[arange(B)[:, None, None, None],
        # arange(S)], flattened to one run): the run, then its axis split
        # into the indices' shape.
        out = list(shape[:axis]) + list(idx.shape) + list(shape[axis + 1 :])
        if out.count(None) > 1:
            raise _unsupported(node, f"a gather from {shape}: more than one unknown dimension")
        sliced = tuple(shape[:axis]) + (len(flat),) + tuple(shape[axis + 1 :])
        return self.add("reshape", node, [s], {"shape": [-1 if d is None else int(d) for d in out]}, shape=sliced)

    def reshape_to_drop(self, node, x, shape, axis):
        """Drops a size-1 axis (a scalar Gather's)."""
        out = list(shape[:axis]) + list(shape[axis + 1 :])
        if out and out[0] is None and axis != 0:
            out[0] = 0
        if out.count(None) > 1:
            raise _unsupported(node, f"a gather from {shape}: more than one unknown dimension")
        shape1 = tuple(shape[:axis]) + (1,) + tuple(shape[axis + 1 :])
        return self.add("reshape", node, [x], {"shape": [-1 if d is None else int(d) for d in out]}, shape=shape1)

    def op_LayerNormalization(self, node, a, x):
        shape = self.shape(node.input[0])
        if shape is None:
            raise _unsupported(node, "a layer norm of a tensor of unknown rank")
        axis = int(a.get("axis", -1))
        axis = axis + len(shape) if axis < 0 else axis
        trailing = tuple(shape[axis:])
        if any(d is None for d in trailing):
            # (The weights are shaped like the normalised dims: from axis 0,
            # the batch's size is fixed by them, and the core refuses another.)
            raise _unsupported(node, f"normalizes axes {trailing} from axis {axis}, not all of known size")
        eps = float(a.get("epsilon", 1e-5))
        if any(o and self.uses.get(o, 0) for o in node.output[1:]):
            self.layernorm_statistics(node, x, shape, axis, eps)
        scale = self.const(node, node.input[1], "Scale")
        bias = self.opt_const(node, 2, "B")
        weights = {"weight": np.broadcast_to(scale, trailing).astype(np.float64)}
        if bias is not None:
            weights["bias"] = np.broadcast_to(bias, trailing).astype(np.float64)
        return self.add("layernorm", node, [x], {"axes": len(trailing), "eps": eps}, weights)

    def layernorm_statistics(self, node, x: int, shape: tuple, axis: int, eps: float) -> None:
        """LayerNormalization's optional outputs Mean and InvStdDev (ONNX:
        per leading index, over the axes from `axis`, kept as size-1 dims;
        InvStdDev = 1 / sqrt(biased variance + epsilon)), computed by the
        reduction, binary and unary ops as the definition writes them."""
        axes = list(range(axis, len(shape)))
        kept = tuple(shape[:axis]) + (1,) * len(axes)
        reduce = {"axes": axes, "keepdim": True}
        mean = self.add("mean", node, [x], reduce, suffix="/mean")
        centered = self.add("sub", node, [x, mean], suffix="/centered")
        square = self.add("mul", node, [centered, centered], suffix="/square", shape=shape)
        var = self.add("mean", node, [square], reduce, suffix="/variance", shape=shape)
        shifted = self.add("add", node, [var], {"reverse": False}, {"other": np.asarray(eps)}, "/plus_eps", kept)
        std = self.add("sqrt", node, [shifted], suffix="/std", shape=kept)
        outputs = [mean, self.add("reciprocal", node, [std], suffix="/inv_std_dev", shape=kept)]
        for name, index in zip(node.output[1:3], outputs):
            if name:
                self.tensors[name] = index

    def op_Gelu(self, node, a, x):
        return self.add("gelu", node, [x], {"approximate": a.get("approximate", "none")})

    def op_HardSwish(self, node, a, x):
        return self.add("hardswish", node, [x])

    def op_LeakyRelu(self, node, a, x):
        return self.add("leaky_relu", node, [x], {"alpha": float(a.get("alpha", 0.01))})

    def op_HardSigmoid(self, node, a, x):
        return self.add(
            "hardsigmoid", node, [x], {"alpha": float(a.get("alpha", 0.2)), "beta": float(a.get("beta", 0.5))}
        )

    # -- issue 17 ------------------------------------------------------------
    def reduction(self, node, a, x):
        """Reduce* over `axes`: an attribute, an input from opset 13
        (ReduceSum) or 18 (the others), which must be a constant; none
        given reduces every axis, or nothing with noop_with_empty_axes."""
        op = node.op_type
        from_input = self.opset >= (13 if op == "ReduceSum" else 18)
        axes = self.opt_const(node, 1, "axes") if from_input else a.get("axes")
        if axes is None or np.asarray(axes).size == 0:
            if int(a.get("noop_with_empty_axes", 0)):
                return self.add("identity", node, [x])
            axes = []  # the core's "every axis"
        axes = [int(v) for v in np.asarray(axes).reshape(-1)]
        return self.add(_REDUCTIONS[op], node, [x], {"axes": axes, "keepdim": bool(int(a.get("keepdims", 1)))})

    def op_LpNormalization(self, node, a, x):
        """x over its L1 or L2 norm along `axis`: the reduction (keepdim),
        a clamp and a broadcast div. A slice of zeros gives zeros, as ONNX's
        test cases expect: its norm is clamped to float32's smallest normal
        number, which any other slice's norm reaches unless all its values
        are subnormal."""
        p = int(a.get("p", 2))
        if p not in (1, 2):
            raise _unsupported(node, f"p={p}; ONNX defines LpNormalization for p 1 and 2")
        attrs = {"axes": [int(a.get("axis", -1))], "keepdim": True}
        norm = self.add(f"reduce_l{p}", node, [x], attrs, suffix="/norm")
        tiny = float(np.finfo(np.float32).tiny)
        norm = self.add("clamp", node, [norm], {"min": tiny, "max": None}, suffix="/nonzero", shape=None)
        return self.add("div", node, [x, norm])

    def op_Elu(self, node, a, x):
        return self.add("elu", node, [x], {"alpha": float(a.get("alpha", 1.0))})

    def op_Celu(self, node, a, x):
        return self.add("celu", node, [x], {"alpha": float(a.get("alpha", 1.0))})

    def op_Selu(self, node, a, x):  # ONNX's defaults: torch's constants rounded to float
        return self.add(
            "selu",
            node,
            [x],
            {
                "alpha": float(a.get("alpha", 1.67326319217681884765625)),
                "gamma": float(a.get("gamma", 1.05070102214813232421875)),
            },
        )

    def op_Softplus(self, node, a, x):  # no threshold in ONNX's
        return self.add("softplus", node, [x], {"beta": 1.0, "threshold": float("inf")})

    def op_ThresholdedRelu(self, node, a, x):
        return self.add("thresholded_relu", node, [x], {"alpha": float(a.get("alpha", 1.0))})

    def op_PRelu(self, node, a, x):
        """PRelu: the slope broadcast to X as NumPy does. The core reads a
        1-D slope along dim 1 (torch's channels), so a 1-D one of more than
        one value is written out to X's rank first (ONNX aligns it at the
        last dim)."""
        rank = None if self.shape(node.input[0]) is None else len(self.shape(node.input[0]))
        if node.input[1] not in self.constants:
            if rank is not None and rank >= 2 and len(self.shape(node.input[1]) or (0, 0)) == 1:
                raise _unsupported(node, "a computed 1-D slope; ai3 takes it as a constant or of the input's rank")
            return self.add("prelu", node, [x, self.tensor(node, node.input[1])])
        slope = _float(self.constants[node.input[1]])
        shape = self.shape(node.input[0])
        if slope.ndim == 1 and slope.size > 1:
            if rank is None:
                raise _unsupported(node, "a 1-D slope for an input of unknown rank")
            # One that cannot align at the last dim but matches dim 1 is a
            # per-channel slope, as PRelu had before opset 7 (models converted
            # from then, torch's): the core's 1-D rule, kept as it is.
            if not (rank >= 3 and shape[-1] != slope.size and shape[1] == slope.size):
                slope = slope.reshape((1,) * (rank - 1) + (slope.size,))
        return self.add("prelu", node, [x], {}, {"other": slope})

    def op_Expand(self, node, a, x):
        shape = [int(v) for v in self.const(node, node.input[1], "shape").reshape(-1)]
        return self.add("expand", node, [x], {"shape": shape})

    def op_Tile(self, node, a, x):
        repeats = [int(v) for v in self.const(node, node.input[1], "repeats").reshape(-1)]
        return self.add("tile", node, [x], {"repeats": repeats})

    def op_Cast(self, node, a, x):
        return self.cast_to(node, x, int(a["to"]))

    def cast_like(self, node: Any) -> None:
        """CastLike(x, like): Cast to like's element type. The exported
        functions' CastLike(constant, x) (a scale or an epsilon in x's type)
        stays a constant."""
        x, like = node.input[:2]
        if like in self.constants:
            target = self.constants[like].dtype
        else:
            target = self.int_dtypes.get(like, self.float_dtype)
        if x in self.constants:
            self.constants[node.output[0]] = np.asarray(self.constants[x]).astype(target)
            return
        to = self.onnx.helper.np_dtype_to_tensor_dtype(np.dtype(target))
        self.output(node, self.cast_to(node, self.tensor(node, x), to))

    def cast_to(self, node: Any, x: int, to: int) -> int:
        """To int64 / bool: a cast. To a float type: a cast of an int64 /
        bool tensor to the model's float dtype (in which ai3 computes every
        float tensor), else nothing. ai3 keeps integers in int64, so a cast
        to int32 (RoBERTa's position ids) is one to int64, whose values agree
        while they fit in int32."""
        if to == self.onnx.TensorProto.INT32:
            to = self.onnx.TensorProto.INT64
        source = self.int_dtypes.get(node.input[0])
        if to in _INT_ELEMS:
            target = np.dtype(_INT_ELEMS[to])
            self.int_dtypes[node.output[0]] = target
            if source == target:
                return self.add("identity", node, [x])
            return self.add("cast", node, [x], {"to": target.name if target != np.bool_ else "bool"})
        if to not in (self.onnx.TensorProto.FLOAT, self.onnx.TensorProto.DOUBLE, self.onnx.TensorProto.FLOAT16):
            raise _unsupported(node, "a cast to a type ai3 has no tensors of (it has float32, float64, int64, bool)")
        if source is not None:
            return self.add("cast", node, [x], {"to": self.float_dtype.name})
        return self.add("identity", node, [x])  # ai3 computes in the model's one float dtype

    def dtype_of(self, name: str) -> np.dtype:
        return self.int_dtypes.get(name, self.float_dtype)

    def compare(self, node: Any, op: str) -> int:
        """Equal / Less / ... / And / Or / Xor: of two tensors, or of a
        tensor and a constant (in the tensor's dtype; a constant on the left
        flips the comparison). The result is bool."""
        names = list(node.input)
        consts = [n in self.constants for n in names]
        self.int_dtypes[node.output[0]] = np.dtype(np.bool_)
        if all(consts):
            raise _unsupported(node, "compares two constants")  # (folded before mapping, unless it failed)
        if not any(consts):
            return self.add(op, node, [self.tensor(node, n) for n in names])
        k = consts.index(True)
        x_name = names[1 - k]
        other = np.asarray(self.constants[names[k]], dtype=self.dtype_of(x_name))
        op = op if k == 1 else _FLIPPED.get(op, op)
        return self.add(op, node, [self.tensor(node, x_name)], {}, {"other": other})

    def op_Not(self, node, a, x):
        self.int_dtypes[node.output[0]] = np.dtype(np.bool_)
        return self.add("logical_not", node, [x])

    def where_constant_condition(self, node: Any) -> None:
        """Where(cond, x, y) whose condition is a constant, which folding
        leaves where a branch is computed: the expanded Attention's guard
        for rows whose every key is masked (all False without a mask), a
        causal mask's Where(tril, scores, -inf). A condition all True is x,
        all False y, broadcast to the output's shape. One that picks from
        both is made a computed bool tensor first, as the core's where
        reads its condition: equal(b, b) of a computed branch b, or'ed with
        True (all True, even where b is NaN), and'ed with the constant
        (exactly its values, broadcast with b)."""
        cond, x, y = node.input
        c = np.asarray(self.constants[cond]).astype(bool)
        out = node.output[0]
        if c.any() and not c.all():
            b = self.tensor(node, x if x not in self.constants else y)
            shape = self.shape(x if x not in self.constants else y)
            same = self.add("equal", node, [b, b], suffix="/same", shape=shape)
            true = self.add("logical_or", node, [same], {}, {"other": np.asarray(True)}, "/true", shape)
            computed = self.add("logical_and", node, [true], {}, {"other": c}, "/condition", shape)
            return self.output(node, self.where(node, computed))
        chosen = x if c.all() else y
        shapes = [np.shape(self.constants[n]) if n in self.constants else self.shape(n) for n in (cond, x, y)]
        try:
            full = tuple(np.broadcast_shapes(*shapes))
        except (TypeError, ValueError) as e:
            raise _unsupported(node, f"needs its operands' shapes, got {shapes}") from e
        if chosen in self.constants:
            self.constants[out] = np.broadcast_to(self.constants[chosen], full).copy()
            return
        if chosen in self.int_dtypes:
            self.int_dtypes[out] = self.int_dtypes[chosen]
        src = self.tensor(node, chosen)
        if tuple(self.shape(chosen)) == full:
            return self.output(node, self.add("identity", node, [src]))
        self.output(node, self.add("expand", node, [src], {"shape": list(full)}))

    def where(self, node: Any, cond: int | None = None) -> int:
        """Where(cond, x, y) of a computed condition (`cond`: its spec, if
        not the node's first input)."""
        cond_name, x, y = node.input
        if x in self.constants and y in self.constants:
            return self.where_constants(node)
        branch = y if x in self.constants else x
        if branch in self.int_dtypes:
            self.int_dtypes[node.output[0]] = self.int_dtypes[branch]
        inputs = [self.tensor(node, cond_name) if cond is None else cond]
        if x not in self.constants and y not in self.constants:
            return self.add("where", node, inputs + [self.tensor(node, x), self.tensor(node, y)])
        const = x if x in self.constants else y
        other = np.asarray(self.constants[const], dtype=self.dtype_of(branch))
        attrs = {"other_is_x": const == x}
        return self.add("where", node, inputs + [self.tensor(node, branch)], attrs, {"other": other})

    def where_constants(self, node: Any) -> int:
        """Where(cond, x, y) with both branches constant (the sdpa export's
        Where(mask, 0, -inf), T5's Where(mask, position_bias, min)): the
        core's where takes one constant branch, so y is made a computed
        tensor first, Cast(cond) * 0 + y (exactly y, even at -inf, shaped
        like cond broadcast with y), and x stays the constant."""
        cond, x, y = node.input
        cx, cy = self.constants[x], self.constants[y]
        if cx.dtype.kind != "f" or cy.dtype.kind != "f":
            raise _unsupported(node, f"Where with two constant {cy.dtype} branches (ai3 maps float ones)")
        return self.select_constants(node, cond, cx, cy)

    def select_constants(self, node: Any, cond: str, cx: Any, cy: Any, suffix: str = "") -> int:
        """Where(cond, cx, cy) of a computed bool `cond` and two float
        constants (see where_constants), in the model's float dtype."""
        dtype = self.float_dtype
        shape = self.shapes.get(cond)
        c = self.add("cast", node, [self.tensor(node, cond)], {"to": str(np.dtype(dtype))}, suffix=f"{suffix}/cast")
        zero = self.add("mul", node, [c], {"reverse": False}, {"other": np.zeros((), dtype)}, f"{suffix}/zero", shape)
        other = self.add(
            "add", node, [zero], {"reverse": False}, {"other": np.asarray(cy, dtype)}, f"{suffix}/other", shape
        )
        inputs = [self.tensor(node, cond), other]
        attrs = {"other_is_x": True}
        return self.add("where", node, inputs, attrs, {"other": np.asarray(cx, dtype)}, suffix, shape=shape)

    def attention(self, node: Any, a: dict) -> int:
        """ONNX's Attention (opset 23): the core's attention on (B, H, L, D)
        heads. 3-D q, k, v (B, L, heads * D) are reshaped and permuted to
        heads (q_num_heads, kv_num_heads) and the output back; grouped-query
        k and v (fewer heads than q) repeat each head in place, as ONNX's
        [h0, h0, h1, h1, ...]; past_key / past_value are concatenated before
        k / v along the sequence, and present_key / present_value are those
        concatenations. What the core's attention cannot express is refused:
        softcap, sliding windows, nonpad_kv_seqlen, a causal mask offset by
        a KV cache (ONNX aligns it bottom-right, the core top-left), a mask
        shorter than the keys, and the qk_matmul_output output."""
        names = list(node.input) + [""] * (7 - len(node.input))
        q_name, k_name, v_name, mask_name, past_k, past_v, nonpad = names[:7]
        causal = bool(int(a.get("is_causal", 0)))
        refusal = _attention_refusal(node, a)
        if refusal is not None:
            raise _unsupported(node, refusal)
        q_shape = self.shape(q_name)
        rank = None if q_shape is None else len(q_shape)
        if rank not in (3, 4):
            raise _unsupported(node, f"q of shape {q_shape}; ONNX's Attention takes rank-3 or rank-4 q, k, v")

        def heads(name: str, count: Any, what: str) -> int:
            """(B, H, S, D) of a rank-4 input, or of a rank-3 (B, S, H * D) one."""
            x = self.tensor(node, name)
            if rank == 4:
                return x
            if count is None:
                raise _unsupported(node, f"rank-3 inputs without {what}_num_heads")
            split = self.add("reshape", node, [x], {"shape": [0, 0, int(count), -1]}, suffix=f"/{name}/split")
            return self.add("permute", node, [split], {"dims": [0, 2, 1, 3]}, suffix=f"/{name}/heads")

        q = heads(q_name, a.get("q_num_heads"), "q")
        k = heads(k_name, a.get("kv_num_heads"), "kv")
        v = heads(v_name, a.get("kv_num_heads"), "kv")
        if past_k:
            k = self.add("concat", node, [self.tensor(node, past_k), k], {"axis": 2}, suffix="/present_key")
            v = self.add("concat", node, [self.tensor(node, past_v), v], {"axis": 2}, suffix="/present_value")
        for index, present in ((1, k), (2, v)):
            if len(node.output) > index and node.output[index] and self.uses.get(node.output[index]):
                self.tensors[node.output[index]] = self.add("identity", node, [present], suffix=f"/output{index}")
        k_shape, v_shape = self.shape(k_name), self.shape(v_name)
        if k_shape is None or v_shape is None or len(k_shape) != rank or len(v_shape) != rank:
            raise _unsupported(node, f"k {k_shape} and v {v_shape} for a rank-{rank} q")
        q_heads = int(a["q_num_heads"]) if rank == 3 else q_shape[1]
        kv_heads = int(a["kv_num_heads"]) if rank == 3 else k_shape[1]
        if q_heads != kv_heads:
            if not q_heads or not kv_heads or q_heads % kv_heads:
                raise _unsupported(node, f"{q_heads} query heads over {kv_heads} key heads (not a multiple)")

            def repeat(x: int, shape: tuple, what: str) -> int:
                size = shape[3] if rank == 4 else (None if shape[2] is None else shape[2] // kv_heads)
                if size is None:
                    raise _unsupported(node, f"grouped-query {what} of unknown head size")
                for step, (op, attrs) in enumerate(repeat_heads_steps(4, q_heads, kv_heads, size)):
                    x = self.add(op, node, [x], attrs, suffix=f"/{what}/repeat{step}")
                return x

            k, v = repeat(k, k_shape, "k"), repeat(v, v_shape, "v")
        inputs = [q, k, v]
        if mask_name:
            seq = k_shape[2 if rank == 4 else 1]
            past = (self.shape(past_k) or (None,) * 4)[2] if past_k else 0
            keys = None if seq is None or past is None else seq + past
            inputs.append(self.attention_mask(node, mask_name, keys))
        scale = a.get("scale")
        attrs = {"causal": causal, "scale": None if scale is None else float(scale)}
        out = self.add("attention", node, inputs, attrs, suffix="/heads" if rank == 3 else "")
        if rank == 4:
            return out
        rows = self.add("permute", node, [out], {"dims": [0, 2, 1, 3]}, suffix="/rows")
        return self.add("reshape", node, [rows], {"shape": [0, 0, -1]})

    def attention_mask(self, node: Any, name: str, keys: int | None) -> int:
        """Attention's attn_mask over `keys` keys as the core's additive
        float mask: a bool mask (True: attend) as 0 / -inf, a float one as
        it is."""
        shape = self.shape(name)
        if shape is None or keys is None or shape[-1] != keys:
            raise _unsupported(
                node, f"an attn_mask of shape {shape} for {keys} keys; ai3 takes a mask as long as the keys"
            )
        if name in self.constants:
            raise _unsupported(node, "a constant attn_mask; ai3's attention takes its mask as a computed input")
        if self.int_dtypes.get(name) == np.dtype(np.bool_):
            return self.select_constants(node, name, np.zeros(()), np.asarray(-np.inf), suffix="/mask")
        if name in self.int_dtypes:
            raise _unsupported(node, f"an attn_mask of type {self.int_dtypes[name]}; ONNX's is bool or float")
        return self.tensor(node, name)

    def op_IsNaN(self, node, a, x):
        """IsNaN(x) as Not(Equal(x, x)): NaN is the one value unequal to
        itself (the sdpa export's guard after its softmax)."""
        self.int_dtypes[node.output[0]] = np.dtype(np.bool_)
        same = self.add("equal", node, [x, x], suffix="/equal")
        return self.add("logical_not", node, [same])

    def grid_sample(self, node: Any, a: dict) -> int:
        """GridSample of X at the grid's points: its modes by opset 16's
        names (bilinear, nearest, bicubic) or opset 20's (linear, nearest,
        cubic), padding_mode, align_corners; 2-D or 3-D."""
        mode = {"linear": "bilinear", "cubic": "bicubic"}.get(a.get("mode", "bilinear"), a.get("mode", "bilinear"))
        if mode not in ("bilinear", "nearest", "bicubic"):
            raise _unsupported(node, f"mode={a.get('mode')!r}")
        padding_mode = a.get("padding_mode", "zeros")
        if padding_mode not in ("zeros", "border", "reflection"):
            raise _unsupported(node, f"padding_mode={padding_mode!r}")
        attrs = {"mode": mode, "padding_mode": padding_mode, "align_corners": bool(int(a.get("align_corners", 0)))}
        return self.add(
            "grid_sample", node, [self.tensor(node, node.input[0]), self.tensor(node, node.input[1])], attrs
        )

    def gather_elements(self, node: Any, a: dict) -> int:
        """GatherElements of a computed or constant data tensor by computed
        int64 indices."""
        data, indices = node.input[:2]
        axis = int(a.get("axis", 0))
        if data in self.constants:
            table = self.constants[data]
            if table.dtype.kind in "iub":
                self.int_dtypes[node.output[0]] = np.dtype(np.bool_ if table.dtype.kind == "b" else np.int64)
            else:
                table = _float(table)
            return self.add("gather_elements", node, [self.tensor(node, indices)], {"axis": axis}, {"other": table})
        if data in self.int_dtypes:
            self.int_dtypes[node.output[0]] = self.int_dtypes[data]
        inputs = [self.tensor(node, data), self.tensor(node, indices)]
        return self.add("gather_elements", node, inputs, {"axis": axis})

    def scatter(self, node: Any, a: dict) -> int:
        """ScatterElements (Scatter before opset 11) and ScatterND:
        scatter_elements(axis, reduction) / scatter_nd(reduction) of the
        computed data and updates, at computed indices or constant ones
        (an export's fixed positions, held as the layer's weight)."""
        data, indices, updates = node.input[:3]
        reduction = str(a.get("reduction", "none"))
        if reduction not in ("none", "add", "mul", "max", "min"):
            raise _unsupported(node, f"reduction={reduction!r}")
        op = "scatter_nd" if node.op_type == "ScatterND" else "scatter_elements"
        attrs: dict[str, Any] = {"reduction": reduction}
        if op == "scatter_elements":
            attrs["axis"] = int(a.get("axis", 0))
        if data in self.int_dtypes:
            self.int_dtypes[node.output[0]] = self.int_dtypes[data]
        if indices in self.constants:
            table = np.asarray(self.constants[indices], dtype=np.int64)
            inputs = [self.tensor(node, data), self.tensor(node, updates)]
            return self.add(op, node, inputs, attrs, {"indices": table})
        return self.add(op, node, [self.tensor(node, n) for n in (data, indices, updates)], attrs)

    def topk(self, node: Any, a: dict, x: int) -> None:
        """TopK: topk (the indices, best first, ties by index, which is
        also an order sorted=0 allows) and gather_elements of the input by
        them (the values). K: an attribute before opset 10, then a constant
        input."""
        k = a.get("k") if self.opset < 10 else self.const(node, node.input[1], "K")
        k = int(np.asarray(k).reshape(-1)[0])
        axis = int(a.get("axis", -1))
        attrs = {"k": k, "axis": axis, "largest": bool(int(a.get("largest", 1)))}
        indices = self.add("topk", node, [x], attrs, suffix="/indices")
        values, positions = (list(node.output) + ["", ""])[:2]
        if positions:
            self.tensors[positions] = indices
            self.int_dtypes[positions] = np.dtype(np.int64)
        if values:
            self.tensors[values] = self.add("gather_elements", node, [x, indices], {"axis": axis}, suffix="/values")
            if node.input[0] in self.int_dtypes:
                self.int_dtypes[values] = self.int_dtypes[node.input[0]]

    def op_ArgMax(self, node, a, x, op="argmax"):
        self.int_dtypes[node.output[0]] = np.dtype(np.int64)
        attrs = {
            "axis": int(a.get("axis", 0)),
            "keepdim": bool(int(a.get("keepdims", 1))),
            "select_last_index": bool(int(a.get("select_last_index", 0))),
        }
        return self.add(op, node, [x], attrs)

    def op_Hardmax(self, node, a, x):
        """1 at the first maximum along `axis`, 0 elsewhere: argmax
        (keepdim), equal to the axis' indices (a constant broadcast along
        the other dims) and a cast to the model's float dtype. Before opset
        13 Hardmax flattens the dims from `axis` on, which is the same only
        where `axis` is the last dim."""
        shape = self.shape(node.input[0])
        if shape is None or any(not isinstance(d, int) or d < 0 for d in shape):
            raise _unsupported(node, "an input of unknown shape; ai3 needs the size of the axis")
        rank = len(shape)
        axis = int(a.get("axis", -1 if self.opset >= 13 else 1)) % rank
        if self.opset < 13 and axis != rank - 1:
            raise _unsupported(node, f"axis {axis} of a rank-{rank} input before opset 13 (coerced to 2-D)")
        first = self.add(
            "argmax", node, [x], {"axis": axis, "keepdim": True, "select_last_index": False}, suffix="/argmax"
        )
        indices = _positions_along(axis, rank, shape[axis])
        hit = self.add("equal", node, [first], {}, {"other": indices}, suffix="/equal", shape=None)
        return self.add("cast", node, [hit], {"to": self.float_dtype.name}, shape=None)

    def op_LSTM(self, node, a, x):
        return self.recurrent(node, a, x, "lstm")

    def op_GRU(self, node, a, x):
        return self.recurrent(node, a, x, "gru")

    def op_RNN(self, node, a, x):
        return self.recurrent(node, a, x, "rnn")

    def recurrent(self, node: Any, a: dict, x: int, kind: str) -> int:
        """LSTM / GRU / RNN over a sequence of known length, unrolled
        (ai3.recurrent): Y, Y_h (and Y_c) as ONNX defines them, in either
        layout. The weights, biases and peepholes must be constants; the
        initial state may be a constant or a tensor; sequence_lens, if
        given, must be the full length for every sequence."""
        shape = self.shape(node.input[0])
        layout = int(a.get("layout", 0))
        if shape is None or len(shape) != 3 or not isinstance(shape[layout], int):
            raise _unsupported(node, "an input whose sequence length is unknown; ai3 unrolls the steps")
        steps = int(shape[layout])
        w = self.const(node, node.input[1], "W")
        r = self.const(node, node.input[2], "R")
        count = w.shape[0]
        hidden = int(a.get("hidden_size", r.shape[-1]))
        gates = recurrent.GATES[kind]
        b = self.opt_const(node, 3, "B")
        b = np.zeros((count, 2 * gates * hidden)) if b is None else _float(b)
        lens = self.opt_const(node, 4, "sequence_lens")
        if lens is not None and not np.all(np.asarray(lens) == steps):
            raise _unsupported(
                node, f"sequence_lens {np.asarray(lens).tolist()}; ai3 runs every sequence's {steps} steps"
            )
        direction = a.get("direction", "forward")
        reverse = [direction == "reverse"] if direction != "bidirectional" else [False, True]
        per = len(recurrent.DEFAULT_ACTIVATIONS[kind])
        names = [(n.decode() if isinstance(n, bytes) else n).lower() for n in a.get("activations", [])] or list(
            recurrent.DEFAULT_ACTIVATIONS[kind]
        ) * count
        why = recurrent.check_activations(kind, names)
        if why:
            raise _unsupported(node, why)
        p = self.opt_const(node, 7, "P (peepholes)") if kind == "lstm" else None
        if layout:
            x = self.add("permute", node, [x], {"dims": [1, 0, 2]}, suffix="/time_major")
        states = [self.initial_state(node, k, layout, count) for k in ((5, 6) if kind == "lstm" else (5,))]
        directions = [
            recurrent.Direction(
                w=_float(w[d]),
                r=_float(r[d]),
                w_bias=b[d, : gates * hidden].copy(),
                r_bias=b[d, gates * hidden :].copy(),
                activations=names[d * per : (d + 1) * per],
                reverse=reverse[d],
                peepholes=None if p is None or not np.any(p) else _float(p[d]),
                h0=states[0][d],
                c0=states[1][d] if kind == "lstm" else None,
            )
            for d in range(count)
        ]
        clip = a.get("clip")
        cell = recurrent.Cell(
            kind,
            hidden,
            clip=None if clip is None else float(clip),
            linear_before_reset=bool(int(a.get("linear_before_reset", 0))),
            input_forget=bool(int(a.get("input_forget", 0))),
        )
        emit = lambda op, ins, at, wt, suffix, shape=None: self.add(op, node, ins, at, wt, suffix=suffix, shape=shape)  # noqa: E731
        batch = shape[1 - layout]
        done = recurrent.run(emit, x, steps, cell, directions, batch=batch if isinstance(batch, int) else None)
        y, y_h, y_c = recurrent.onnx_outputs(emit, steps, cell, done)
        if layout:  # (batch, steps, directions, hidden) and (batch, directions, hidden)
            y = self.add("permute", node, [y], {"dims": [2, 0, 1, 3]}, suffix="/Y_batch_major", shape=None)
            y_h = self.add("permute", node, [y_h], {"dims": [1, 0, 2]}, suffix="/Y_h_batch_major", shape=None)
            if y_c is not None:
                y_c = self.add("permute", node, [y_c], {"dims": [1, 0, 2]}, suffix="/Y_c_batch_major", shape=None)
        for out, index in zip(node.output[1:], (y_h, y_c)):
            if out:
                self.tensors[out] = index
        return y

    def initial_state(self, node: Any, index: int, layout: int, count: int) -> list:
        """Input `index` of a recurrent node (initial_h or initial_c, (D, N,
        H), or (N, D, H) in layout 1) per direction, as ai3.recurrent's
        Values of shape (1, N, H): None where absent or zero, an array where
        constant, else a spec slicing the tensor."""
        if len(node.input) <= index or not node.input[index]:
            return [None] * count
        name = node.input[index]
        if name in self.constants:
            value = _float(self.constants[name])
            value = value.transpose(1, 0, 2) if layout else value
            return [None if not np.any(value[d]) else value[d : d + 1] for d in range(count)]
        state = self.tensor(node, name)
        if layout:
            state = self.add("permute", node, [state], {"dims": [1, 0, 2]}, suffix=f"/state{index}", shape=None)
        emit = lambda op, ins, at, wt, suffix: self.add(op, node, ins, at, wt, suffix=suffix, shape=None)  # noqa: E731
        return recurrent.per_direction(emit, state, count, f"state{index}")

    def op_OneHot(self, node, a, x):
        """on_value where an index (a negative one counted from depth) is the
        position along the new axis, off_value elsewhere: the indices (cast
        to int64, as ONNX does float ones) reshaped with a 1 at `axis`,
        equal to the positions 0..depth-1 or to them minus depth, or'ed,
        cast, then off + hit (on - off). An index outside [-depth, depth)
        matches no position: all off_value, as ORT gives."""
        shape = self.shape(node.input[0])
        if shape is None:
            raise _unsupported(node, "indices of unknown rank")
        depth = int(np.asarray(self.const(node, node.input[1], "depth")).reshape(()))
        values = np.asarray(self.const(node, node.input[2], "values")).reshape(-1)
        if values.dtype.kind != "f" or values.size != 2:
            raise _unsupported(node, f"values {values.dtype}[{values.size}]; ai3 writes a float one-hot of 2 values")
        rank = len(shape) + 1
        axis = int(a.get("axis", -1)) % rank
        if node.input[0] not in self.int_dtypes:
            x = self.add("cast", node, [x], {"to": "int64"}, suffix="/int64")
        target = [-1 if d is None else int(d) for d in (*shape[:axis], 1, *shape[axis:])]
        if target.count(-1) > 1:
            raise _unsupported(node, f"indices of shape {shape}: more than one unknown dimension")
        positions = _positions_along(axis, rank, depth)
        u = self.add("reshape", node, [x], {"shape": target}, suffix="/unsqueeze")
        hits = [
            self.add("equal", node, [u], {}, {"other": p}, suffix=f"/equal{k}", shape=None)
            for k, p in enumerate((positions, positions - depth))
        ]
        hit = self.add("logical_or", node, hits, suffix="/or", shape=None)
        off, on = float(values[0]), float(values[1])
        if (off, on) == (0.0, 1.0):
            return self.add("cast", node, [hit], {"to": self.float_dtype.name}, shape=None)
        h = self.add("cast", node, [hit], {"to": self.float_dtype.name}, suffix="/cast", shape=None)
        h = self.add("mul", node, [h], {"reverse": False}, {"other": np.asarray(on - off)}, suffix="/scale", shape=None)
        return self.add("add", node, [h], {"reverse": False}, {"other": np.asarray(off)}, shape=None)

    def op_ArgMin(self, node, a, x):
        return self.op_ArgMax(node, a, x, "argmin")

    def op_Trilu(self, node, a, x):
        k = self.opt_const(node, 1, "diagonal k")
        attrs = {"upper": bool(int(a.get("upper", 1))), "k": 0 if k is None else int(np.asarray(k).reshape(-1)[0])}
        return self.add("trilu", node, [x], attrs)

    def op_CumSum(self, node, a, x):
        axis = int(np.asarray(self.const(node, node.input[1], "axis")).reshape(-1)[0])
        if node.input[0] in self.int_dtypes:
            if self.int_dtypes[node.input[0]] == np.bool_:
                raise _unsupported(node, "a CumSum of a bool tensor (ONNX sums numbers)")
            self.int_dtypes[node.output[0]] = self.int_dtypes[node.input[0]]
        attrs = {"axis": axis, "exclusive": bool(int(a.get("exclusive", 0))), "reverse": bool(int(a.get("reverse", 0)))}
        return self.add("cumsum", node, [x], attrs)

    def gather_by_tensor(self, node: Any, a: dict) -> int:
        """Gather by computed int64 indices: of a constant table (an
        embedding) or of a computed tensor."""
        data, indices = node.input[:2]
        axis = int(a.get("axis", 0))
        if data in self.int_dtypes:
            self.int_dtypes[node.output[0]] = self.int_dtypes[data]
        if data in self.constants:
            table = self.constants[data]
            if table.dtype.kind in "iub":
                self.int_dtypes[node.output[0]] = np.dtype(np.bool_ if table.dtype.kind == "b" else np.int64)
            return self.add("gather", node, [self.tensor(node, indices)], {"axis": axis}, {"other": table})
        return self.add("gather", node, [self.tensor(node, data), self.tensor(node, indices)], {"axis": axis})

    def op_BatchNormalization(self, node, a, x):
        s = self.shape(node.input[0])
        if s is None or len(s) not in (2, 3, 4, 5):
            # (the core's batchnorm2d takes any rank >= 2, channels at dim 1:
            # rank 2 and 3 as BatchNorm1d, LeViT's and RepViT's heads; rank 5
            # as BatchNorm3d, video models)
            raise _unsupported(
                node,
                f"takes a {'rank-' + str(len(s)) if s else 'rank-unknown'} input; ai3 runs it on (N, C, ...) tensors of rank 2 to 5",
            )
        if int(a.get("training_mode", 0)):
            raise _unsupported(node, "training_mode=1; ai3 runs inference batch norms")
        names = ["scale", "B", "mean", "var"]
        scale, bias, mean, var = (self.const(node, node.input[i + 1], names[i]) for i in range(4))
        weights = {"weight": scale, "bias": bias, "running_mean": mean, "running_var": var}
        return self.add("batchnorm2d", node, [x], {"eps": float(a.get("epsilon", 1e-5))}, weights)

    def op_Pad(self, node, a, x):
        shape = self.shape(node.input[0])
        if shape is None:
            raise _unsupported(node, "a pad of a tensor of unknown rank")
        rank = len(shape)
        mode = a.get("mode", "constant")
        if mode not in _PAD_MODES:
            raise _unsupported(node, f"mode={mode!r}; ai3 pads in modes {', '.join(_PAD_MODES)}")
        if self.opset < 11:
            pads, value = list(a.get("pads", [])), float(a.get("value", 0.0))
        else:
            pads = [int(v) for v in self.const(node, node.input[1], "pads").reshape(-1)]
            v = self.opt_const(node, 2, "constant_value")
            value = 0.0 if v is None or v.size == 0 else float(v.reshape(-1)[0])
            axes = self.opt_const(node, 3, "axes")
            if axes is not None:
                full = [0] * (2 * rank)
                for k, ax in enumerate(int(v) for v in axes.reshape(-1)):
                    ax = ax + rank if ax < 0 else ax
                    full[ax], full[ax + rank] = pads[k], pads[k + len(axes.reshape(-1))]
                pads = full
        if len(pads) != 2 * rank:
            raise _unsupported(node, f"pads {pads} for a rank-{rank} tensor")
        if pads[0] or pads[rank]:
            raise _unsupported(node, f"pads {pads}; ai3 pads non-batch dims")
        shape = list(shape)
        if any(p < 0 for p in pads):
            # Negative pads crop (NASNet's one-pixel shift, exported): a
            # slice per cropped axis first, then the positive pads.
            if mode != "constant":
                raise _unsupported(node, f"negative pads {pads} in mode {mode!r}; ONNX crops in constant mode")
            for axis in range(1, rank):
                before, after = pads[axis], pads[axis + rank]
                if before >= 0 and after >= 0:
                    continue
                if shape[axis] is None:
                    raise _unsupported(node, f"crops axis {axis} of unknown size")
                start, stop = max(-before, 0), shape[axis] + min(after, 0)
                attrs = {"axis": axis, "start": start, "stop": stop, "step": 1}
                x = self.add("slice", node, [x], attrs, suffix=f"/crop{axis}", shape=tuple(shape))
                shape[axis] = max(stop - start, 0)
            pads = [max(p, 0) for p in pads]
            if not any(pads):
                return x
        if rank == 4 and not any(pads[i] for i in (1, 5)):
            attrs = {"padding": (pads[2], pads[6], pads[3], pads[7]), "value": value}
            if mode != "constant":
                attrs = {"padding": attrs["padding"], "value": 0.0, "mode": _PAD_MODES[mode]}
            return self.add("pad2d", node, [x], attrs, shape=tuple(shape))
        if mode != "constant":
            raise _unsupported(node, f"mode={mode!r} on axes other than H and W of a rank-4 tensor; ai3 pads those")
        # Other axes: one pad per padded axis (swin pads H and W of NHWC windows).
        index, cur = x, list(shape)
        for axis in range(1, rank):
            if pads[axis] or pads[axis + rank]:
                index = self.pad_axis(node, index, tuple(cur), axis, pads[axis], pads[axis + rank], value)
                cur[axis] = None if cur[axis] is None else cur[axis] + pads[axis] + pads[axis + rank]
        return index


def to_specs(model: Any, sample_input_shape: Sequence[int] | None = None) -> tuple[list[LayerSpec], int]:
    """The model's LayerSpecs in execution order and the index of its output
    spec. `model` is anything `load` takes. Each spec's `layer` is its
    onnx.NodeProto; its input_shape is the node's input shape from shape
    inference (None for dims the model leaves unknown), for
    sample_input_shape (N, C, H, W) if given."""
    return _to_specs(load(model), sample_input_shape)


def _to_specs(model: Any, sample_input_shape: Sequence[int] | None) -> tuple[list[LayerSpec], int]:
    opset = opset_of(model)
    if not MIN_OPSET <= opset <= MAX_OPSET:
        raise errors.UnsupportedOperation(f"the model uses opset {opset}; ai3 reads opsets {MIN_OPSET} to {MAX_OPSET}")
    # (Before folding: shape inference does not know other domains' ops.)
    foreign = _foreign_domains(model)
    if foreign:
        raise UnsupportedNodes([(model.graph.node[i], why) for i, why in sorted(foreign.items())])
    bound = _bound_inputs(model, sample_input_shape)
    if len(bound) == 1:
        shape, names = bound[0][1], bound[0][0].name
    else:
        shape = {inp.name: dims for inp, dims in bound}
        names = [inp.name for inp, _ in bound]
    # Shape arithmetic and other constant subgraphs fold away for this input shape.
    model, shapes = fold.fold(model, lambda m: infer_shapes(m, shape), opset)
    mapper = _Mapper(model, shapes, opset)
    output = mapper.walk(names, refused=_unsupported_ops(model))
    specs, output = prune_dead(mapper.specs, output)
    for s in specs:
        s.attrs.pop("from_matmul", None)
    return specs, output


@dataclass
class NodeMap:
    """map_nodes' result: the folded model, its shapes and constants, and
    the mapping of its nodes."""

    model: Any
    shapes: dict
    constants: dict
    specs: list[LayerSpec]
    tensors: dict[str, int]
    groups: list[Group]


def map_nodes(model: Any, sample_input_shape: Sequence[int] | None = None) -> NodeMap:
    """The mapping of every node of `model` (a ModelProto) for the in-graph
    rewrites (ai3.onnx.rewrite): the same mapping as to_specs, but a node
    it cannot take (another domain, an op ai3 lacks, an unknown shape)
    stays ORT's: its outputs are EXTERNAL specs."""
    opset = opset_of(model)
    if not MIN_OPSET <= opset <= MAX_OPSET:
        raise errors.UnsupportedOperation(f"the model uses opset {opset}; ai3 reads opsets {MIN_OPSET} to {MAX_OPSET}")
    # The rewrite's sample shape may replace a static one of the same rank
    # (the ops it rewrites take any size).
    shape = selection.sample_shape(sample_input_shape, batched=False)
    expected = _dims(graph_input(model))
    if shape is not None and expected is not None and len(expected) != len(shape):
        raise errors.ShapeError(
            f"sample_input_shape {shape} has rank {len(shape)}; the model's input has rank {len(expected)}"
        )
    if shape is not None and expected is not None and any(e is not None and e != d for e, d in zip(expected, shape)):
        # A new input size: the output's declared (static) shape no longer holds.
        onnx = _onnx()
        model, original = onnx.ModelProto(), model
        model.CopyFrom(original)
        for out in model.graph.output:
            out.type.tensor_type.ClearField("shape")
    folded, shapes = fold.fold(model, lambda m: infer_shapes(m, shape), opset)
    mapper = _Mapper(folded, shapes, opset)
    mapper.walk(None, tolerant=True)
    for s in mapper.specs:
        s.attrs.pop("from_matmul", None)
    return NodeMap(folded, shapes, mapper.constants, mapper.specs, mapper.tensors, mapper.groups)


def swap_backend(
    model: Any,
    algos: Any = None,
    sample_input_shape: Sequence[Any] | None = None,
    *,
    dtype: Any | None = None,
    recorder: Any | None = None,
    fallback: bool = False,
):
    """The whole ONNX model (a ModelProto, a path or bytes) as an ai3.Model
    run by the core in NCHW.

    `algos` is as for ai3.swap_backend: None, one selector for conv2d, or a
    mapping op -> selector (a name, a list of names in execution order, or
    a callable taking the onnx.NodeProto, or the node and its input shape,
    which needs sample_input_shape). Batch norms that follow a convolution
    are folded into it, and so are zero pads before one; Dropout and
    Identity are dropped. dtype defaults to
    the model input's (float32 or float64).

    A model of several inputs takes one sample shape per input (in order,
    or a mapping from the graph's input names, as ONNX Runtime's feeds; an
    example array stands for its shape), and its
    ai3.Model takes them by position or by name; several outputs come back
    as a tuple in the graph's order. fallback=True: where some nodes have
    no ai3 equivalent, the supported runs of the graph run in ai3 and the
    rest in ONNX Runtime (ai3.onnx.fallback.FallbackSession, whose
    fallbacks() names them)."""
    proto = load(model)
    sample_input_shape = _sample_shapes(proto, sample_input_shape)
    if fallback:
        from ai3.onnx import fallback as partitioned

        return partitioned.swap_backend(proto, algos, sample_input_shape, dtype=dtype, recorder=recorder)
    np_dtype = model_dtype(proto, dtype)
    inputs = graph_inputs(proto)
    several = len(inputs) > 1 or len(proto.graph.output) > 1
    if several or any(_input_int_dtype(i) is not None for i in inputs):
        return _swap_backend_several(proto, algos, sample_input_shape, np_dtype, recorder)
    specs, output = _to_specs(proto, sample_input_shape)
    built = frontend.build_model(
        specs, output, algos, dtype=np_dtype, layout="NCHW", sample_input_shape=sample_input_shape, recorder=recorder
    )
    return _per_shape(_declare_narrow(built, proto), proto, algos, sample_input_shape, np_dtype)


def _sample_shapes(proto: Any, sample_input_shape: Any) -> Any:
    """A sample_input_shape given as a mapping from input names, or with
    example arrays for shapes (_bound_inputs), as the shape (one input) or
    list of shapes (several) the rest of the frontend reads."""
    if sample_input_shape is None:
        return None
    shapes = [shape for _, shape in _bound_inputs(proto, sample_input_shape)]
    return shapes[0] if len(shapes) == 1 else shapes


# Ops whose output is a tensor's shape: _to_specs folds them, and what
# follows from them, for the sample input shapes. The recurrent ops are
# unrolled over the sample's sequence length (ai3.recurrent).
_SHAPE_READERS = frozenset({"Shape", "Size", "LSTM", "GRU", "RNN"})


def _per_shape(model: Any, proto: Any, algos: Any, sample_input_shape: Any, np_dtype: np.dtype) -> Any:
    """`model`, told to run other input shapes than its sample ones in a
    model built for them (ai3.model.PerShape) where its graph reads shapes:
    those were folded into constants for the sample shapes (or, without a
    sample, the graph's own fixed dims), and at other shapes would fail, or
    broadcast (or unroll) into a wrong result. Where the graph fixes the
    dims, a call at other shapes is refused as swap_backend refuses such a
    sample."""
    if not any(n.op_type in _SHAPE_READERS for n in proto.graph.node):
        return model
    shapes = [shape for _, shape in _bound_inputs(proto, sample_input_shape)]
    if any(shape is None for shape in shapes):  # folded for the graph's own fixed dims
        shapes = [_dims(inp) for inp in graph_inputs(proto)]
        if any(shape is None or None in shape for shape in shapes):
            return model
    model.per_shape = ai3_model.PerShape(shapes, functools.partial(_rebuilt, proto, algos, np_dtype))
    return model


def _rebuilt(proto: Any, algos: Any, np_dtype: np.dtype, shapes: list[tuple[int, ...]]) -> Any:
    """PerShape's rebuild: the model for inputs of these shapes (a
    module-level function, so that a Model holding it pickles)."""
    return swap_backend(proto, algos, shapes if len(shapes) > 1 else shapes[0], dtype=np_dtype)


def _swap_backend_several(proto: Any, algos: Any, sample_input_shape: Any, np_dtype: np.dtype, recorder: Any) -> Any:
    """A model of several inputs (all float, of one dtype) or outputs: its
    ai3.Model takes them by position or by the graph's input names, and
    returns a tuple in the graph's output order."""
    onnx = _onnx()
    inputs = graph_inputs(proto)
    wanted = {np.dtype(np.float32): onnx.TensorProto.FLOAT, np.dtype(np.float64): onnx.TensorProto.DOUBLE}[np_dtype]
    input_dtypes = []
    for inp in inputs:
        elem = inp.type.tensor_type.elem_type if inp.type.WhichOneof("value") == "tensor_type" else None
        integer = _input_int_dtype(inp)
        if integer is not None:  # token ids, masks
            input_dtypes.append(integer)
            continue
        if elem != wanted and not (elem == _FLOAT16 and np_dtype == np.float32):
            name = onnx.TensorProto.DataType.Name(elem) if elem in onnx.TensorProto.DataType.values() else elem
            raise errors.DTypeError(
                f"ai3 models take float inputs of one dtype ({np_dtype}; float16 too where it is float32), integer and bool ones; the model's input '{inp.name}' is {name}"
            )
        input_dtypes.append(np_dtype)
    specs, output = _to_specs(proto, sample_input_shape)
    built = frontend.build_model(
        specs,
        output,
        algos,
        dtype=np_dtype,
        layout="NCHW",
        recorder=recorder,
        input_count=len(inputs),
        input_dtypes=input_dtypes,
    )
    built.input_names = [inp.name for inp in inputs]
    return _per_shape(_declare_narrow(built, proto), proto, algos, sample_input_shape, np_dtype)


__all__ = [
    "EXTERNAL",
    "Group",
    "NodeMap",
    "UnsupportedNodes",
    "describe_node",
    "graph_input",
    "graph_inputs",
    "fold_zero_padding",
    "load",
    "map_nodes",
    "model_dtype",
    "opset_of",
    "swap_backend",
    "to_specs",
    "SUPPORTED_OPS",
]
