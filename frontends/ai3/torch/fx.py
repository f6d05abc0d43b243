"""PyTorch model -> LayerSpecs, through torch.fx.

The model is traced (ai3.torch.tracing): with a sample input shape, by a
tracer that also runs it on two batch sizes, so every node carries its
values, shapes resolve to ints and the batch-dependent dimensions are known;
without one, by plain symbolic tracing, enough for networks without shape
arithmetic. The nodes are then mapped one by one onto the core's ops (see
core/ops/README.md for the op interface); an operation the core lacks is an
ai3.UnsupportedOperation naming the fx node, its target and the module
path: never a silent fallback.

Nodes whose values are not tensors (sizes and the integer arithmetic on
them) produce no layer: the reshape that uses them is written from its
output shapes at both batch sizes (ai3.torch.shapes). Tensors that do not
depend on the input (parameters read in forward, layer scales, position
embeddings, masks) are constants: the weights["other"] of a one-input binary
op, a linear's or layer norm's weights.
"""

from __future__ import annotations

import operator
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import fx, nn
from torch.nn.utils import parametrize

from ai3 import errors
from ai3.spec import (
    END,
    OUTPUTS,
    LayerSpec,
    constant_left_matmul_steps,
    einsum_plan,
    index_slices,
    model_input,
    prune_dead,
)
from ai3.torch import mapping, params, rnn, shapes, tracing
from ai3.torch.nodes import UnsupportedNodes, normalized, unsupported
from ai3.torch.tracing import values as _values


def trace(module: nn.Module, sample_input_shape: Sequence[int] | None = None) -> fx.GraphModule:
    try:
        samples = None if sample_input_shape is None else tracing.sample_inputs(module, sample_input_shape)
        gm, _ = tracing.trace(module, samples, maps_as_module)
    except errors.Error:
        raise
    except Exception as e:
        if (
            sample_input_shape is not None
            and isinstance(e, (RuntimeError, ValueError, IndexError))
            and "fx" not in type(e).__module__
        ):
            raise errors.ShapeError(f"the model cannot run on {_described(sample_input_shape)}: {e}") from e
        hint = "" if sample_input_shape is not None else "; passing sample_input_shape lets ai3 trace shape arithmetic"
        raise errors.UnsupportedOperation(
            f"torch.fx could not trace {type(module).__name__} ({type(e).__name__}: {e}); "
            f"swap_backend needs a model torch.fx can trace (the in-place swap_<op> functions do not){hint}"
        ) from e
    return gm


def maps_as_module(m: nn.Module) -> bool:
    """Whether ai3 maps torch.nn module `m` as a whole (so the tracer keeps
    it a leaf); any other is traced through (tracing.trace)."""
    return isinstance(m, _MAPPED_MODULES) or rnn.is_recurrent(m) or mapping.lookup(m) is not None


def _described(sample_input_shape: Any) -> str:
    """A sample_input_shape in an error: its shapes (an example tensor's
    with its dtype)."""

    def shape(s: Any) -> str:
        if isinstance(s, torch.Tensor):
            return f"{tuple(s.shape)} ({str(s.dtype).removeprefix('torch.')})"
        return str(tuple(s))

    if tracing.is_several_shapes(sample_input_shape):
        return "inputs of shapes " + ", ".join(shape(s) for s in sample_input_shape)
    return f"an input of shape {shape(sample_input_shape)}"


def _bound(value: Any, default: float, node: fx.Node, what: str) -> float:
    """A clamp bound: a number, or None for an open side."""
    if value is None:
        return default
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    raise unsupported(
        node, f"clamp's {what} must be a number, not {type(value).__name__} (tensor bounds are not supported)"
    )


def _tensor_shape(node: fx.Node) -> tuple[int, ...] | None:
    """The shape of the tensor `node` computes, on the first sample."""
    vals = _values(node)
    if vals is not None and isinstance(vals[0], torch.Tensor):
        return tuple(vals[0].shape)
    meta = node.meta.get("tensor_meta")
    return tuple(meta.shape) if meta is not None and hasattr(meta, "shape") else None


def _input_shape(node: fx.Node) -> tuple[int, ...] | None:
    for arg in node.all_input_nodes:
        shape = _tensor_shape(arg)
        if shape is not None:
            return shape
    return None


def _rank(node: fx.Node) -> int | None:
    shape = _input_shape(node)
    return None if shape is None else len(shape)


# 1-D pools (_Mapper.pool1d): the module classes, their kinds, and the
# functions' kinds and signatures.
_POOLS_1D = (nn.MaxPool1d, nn.AvgPool1d, nn.AdaptiveAvgPool1d, nn.AdaptiveMaxPool1d)
# The torch.nn modules _Mapper.module maps by class, besides the entries of
# ai3.torch.mapping (and the recurrent ones, ai3.torch.rnn).
_MAPPED_MODULES = (nn.MultiheadAttention, nn.Embedding, nn.Unfold, nn.ConstantPad2d, nn.Conv1d, *_POOLS_1D)
_POOL_1D_KIND = {nn.MaxPool1d: "max", nn.AvgPool1d: "avg", nn.AdaptiveAvgPool1d: "adaptive_avg",
                 nn.AdaptiveMaxPool1d: "adaptive_max"}  # fmt: skip
_POOL_1D_FUNCTIONS = {F.max_pool1d: "max", F.avg_pool1d: "avg", F.adaptive_avg_pool1d: "adaptive_avg",
                      F.adaptive_max_pool1d: "adaptive_max"}  # fmt: skip
_POOL_1D_SIGNATURES = {
    "max": lambda input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False: None,
    "avg": lambda input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True: None,
    "adaptive_avg": lambda input, output_size: None,
    "adaptive_max": lambda input, output_size, return_indices=False: None,
}


def _pool_arguments(m: nn.Module) -> dict[str, Any]:
    """A 1-D pool module's arguments, as its function names them."""
    if isinstance(m, nn.MaxPool1d):
        return dict(kernel_size=m.kernel_size, stride=m.stride, padding=m.padding, dilation=m.dilation,
                    ceil_mode=m.ceil_mode, return_indices=m.return_indices)  # fmt: skip
    if isinstance(m, nn.AvgPool1d):
        return dict(kernel_size=m.kernel_size, stride=m.stride, padding=m.padding, ceil_mode=m.ceil_mode,
                    count_include_pad=m.count_include_pad)  # fmt: skip
    return dict(output_size=m.output_size, return_indices=getattr(m, "return_indices", False))


def _softmax_axis(node: fx.Node, dim: Any) -> int:
    """softmax's dim as an int; dim=None is PyTorch's legacy implicit dim
    (0 for ranks 0, 1 and 3, else 1), which needs the input's rank."""
    if dim is None:
        rank = _rank(node)
        if rank is None:
            raise unsupported(node, "softmax without dim needs the input's rank: pass dim, or a sample input shape")
        return params.legacy_softmax_dim(rank)
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise unsupported(node, f"softmax's dim must be an int, got {dim!r}")
    return dim


def _torch_pads(node: fx.Node, pad: Any, mode: str, value: Any, rank: int | None = None) -> dict[str, Any]:
    """pad2d attrs of an F.pad call (ai3.torch.params.pad2d), on a rank-4
    input (`rank`: the padded view's, if not the node's input's)."""
    try:
        attrs = params.pad2d(pad, mode, value, node.name)
    except errors.UnsupportedOperation as e:
        raise unsupported(node, str(e).split(": ", 1)[1]) from None
    rank = _rank(node) if rank is None else rank
    if rank is not None and rank != 4:
        raise unsupported(node, f"pad2d takes a rank-4 tensor, this one has rank {rank}")
    return attrs


def _is_tensor_valued(node: fx.Node) -> bool:
    """False for nodes computing sizes and other non-tensors (they make no
    layer); True when unknown (traced without sample inputs)."""
    vals = _values(node)
    if vals is None:
        return True
    first = vals[0]
    if isinstance(first, (tuple, list)):
        return any(isinstance(v, torch.Tensor) for v in first)
    return isinstance(first, torch.Tensor)


# Canonical names of the calls the mapper handles: functions by identity,
# tensor methods by name. Method calls put the tensor first, as the
# functions do, so one handler serves both forms.
_FUNCTIONS: dict[Any, str] = {
    operator.add: "add", operator.iadd: "add", torch.add: "add",
    operator.sub: "sub", operator.isub: "sub", torch.sub: "sub", torch.subtract: "sub",
    operator.mul: "mul", operator.imul: "mul", torch.mul: "mul", torch.multiply: "mul",
    operator.truediv: "div", operator.itruediv: "div", torch.div: "div", torch.true_divide: "div", torch.divide: "div",
    operator.matmul: "matmul", torch.matmul: "matmul", torch.bmm: "matmul",
    operator.getitem: "getitem",
    torch.cat: "cat", torch.concat: "cat", torch.concatenate: "cat",
    torch.flatten: "flatten",
    torch.reshape: "reshape", torch.squeeze: "reshape", torch.unsqueeze: "reshape",
    torch.permute: "permute", torch.transpose: "transpose", torch.swapaxes: "transpose", torch.swapdims: "transpose",
    torch.chunk: "chunk", torch.split: "split", torch.unbind: "unbind", torch.stack: "stack", F.normalize: "normalize",
    torch.tensor_split: "tensor_split",
    torch.repeat_interleave: "repeat_interleave", torch.addcmul: "addcmul",
    torch.roll: "roll", torch.mean: "mean", torch.einsum: "einsum",
    F.relu: "relu", torch.relu: "relu", torch.relu_: "relu",
    F.gelu: "gelu", F.hardswish: "hardswish", F.hardsigmoid: "hardsigmoid", F.silu: "silu",
    torch.sigmoid: "sigmoid", F.sigmoid: "sigmoid", torch.tanh: "tanh", F.tanh: "tanh",
    F.leaky_relu: "leaky_relu",
    F.relu6: "relu6", F.hardtanh: "hardtanh", torch.clamp: "clamp", torch.clip: "clamp",
    F.softmax: "softmax", torch.softmax: "softmax", F.log_softmax: "log_softmax", torch.log_softmax: "log_softmax",
    F.layer_norm: "layer_norm", F.linear: "linear", F.pad: "pad",
    F.conv2d: "conv2d", F.unfold: "unfold", **dict.fromkeys(_POOL_1D_FUNCTIONS, "pool1d"), F.conv1d: "conv1d", F.conv3d: "conv3d", F.batch_norm: "batch_norm", F.embedding: "embedding",
    F.adaptive_avg_pool2d: "adaptive_avg_pool2d", F.adaptive_max_pool2d: "adaptive_max_pool2d",
    F.avg_pool2d: "avg_pool2d", F.max_pool2d: "max_pool2d", F.avg_pool3d: "avg_pool3d", F.max_pool3d: "max_pool3d",
    F.dropout: "dropout", F.dropout1d: "dropout", F.dropout2d: "dropout", F.dropout3d: "dropout", F.alpha_dropout: "dropout",
    F.scaled_dot_product_attention: "attention",
    # issue 17 (helper N2)
    F.interpolate: "interpolate", F.upsample: "interpolate", F.conv_transpose2d: "conv_transpose2d",
    F.group_norm: "group_norm", F.instance_norm: "instance_norm", F.rms_norm: "rms_norm",
    F.local_response_norm: "local_response_norm",
    F.pixel_shuffle: "pixel_shuffle", torch.pixel_shuffle: "pixel_shuffle",
    F.pixel_unshuffle: "pixel_unshuffle", torch.pixel_unshuffle: "pixel_unshuffle",
}  # fmt: skip


# torchvision is not imported here: a model holding torchvision layers has
# imported it already, and importing it for models that don't would load
# its native library into processes that never asked for it (and, in some
# environments, crash them; see requirements.txt's note on triton).
def _torchvision_ops() -> Any:
    return sys.modules.get("torchvision.ops")


def _torchvision_function(target: Any) -> str | None:
    tv = _torchvision_ops()
    return "stochastic_depth" if tv is not None and target is getattr(tv, "stochastic_depth", None) else None


_METHODS: dict[str, str] = {
    "add": "add", "add_": "add", "__add__": "add", "__radd__": "add", "__iadd__": "add",
    "sub": "sub", "sub_": "sub", "__sub__": "sub",
    "mul": "mul", "mul_": "mul", "__mul__": "mul", "__rmul__": "mul", "__imul__": "mul",
    "div": "div", "div_": "div", "__truediv__": "div",
    "matmul": "matmul", "bmm": "matmul", "__matmul__": "matmul",
    "__getitem__": "getitem", "flatten": "flatten",
    "view": "reshape", "reshape": "reshape", "squeeze": "reshape", "unsqueeze": "reshape", "view_as": "reshape", "reshape_as": "reshape",
    "permute": "permute", "transpose": "transpose", "swapaxes": "transpose", "swapdims": "transpose",
    "contiguous": "identity", "clone": "identity", "detach": "identity",
    "chunk": "chunk", "split": "split", "tensor_split": "tensor_split", "unbind": "unbind", "expand": "expand", "expand_as": "expand",
    "repeat_interleave": "repeat_interleave", "addcmul": "addcmul",
    "roll": "roll", "mean": "mean", "new_zeros": "zeros", "baddbmm": "baddbmm",
    "relu": "relu", "relu_": "relu", "sigmoid": "sigmoid", "sigmoid_": "sigmoid", "tanh": "tanh", "tanh_": "tanh",
    "clamp": "clamp", "clamp_": "clamp", "clip": "clamp", "clip_": "clamp",
    "softmax": "softmax", "log_softmax": "log_softmax",
}  # fmt: skip

# Binary ops: (reversible?) — sub and div with a constant on the left are
# `other - x`, `other / x` (the interface's `reverse`); add and mul commute.
_BINARY = ("add", "sub", "mul", "div")

# Issue 17: the unary math functions and activations (core/ops/unary), pow,
# maximum, minimum and prelu (core/ops/binary), the reductions over dims
# (core/ops/mean) and tile (core/ops/tile); x.expand of a computed tensor
# is the expand op (_expand).
_UNARY = (
    "exp",
    "log",
    "sqrt",
    "neg",
    "abs",
    "erf",
    "reciprocal",
    "floor",
    "ceil",
    "sign",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "sinh",
    "cosh",
    "asinh",
    "acosh",
    "atanh",
    "softsign",
    "mish",
    "selu",
)
# The trigonometric ones, which torch also names arc* (torch.arcsin, x.arcsin_()).
_TRIG = ("tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh")
_BINARY = _BINARY + ("pow", "maximum", "minimum", "prelu", "remainder", "fmod")
# torch's reduction -> the core op
_REDUCTIONS = {
    "sum": "reduce_sum", "prod": "reduce_prod", "amax": "reduce_max", "amin": "reduce_min", "logsumexp": "reduce_log_sum_exp",
}  # fmt: skip
_FUNCTIONS.update({
    torch.exp: "exp", torch.log: "log", torch.sqrt: "sqrt", torch.neg: "neg", torch.negative: "neg", operator.neg: "neg",
    torch.abs: "abs", torch.absolute: "abs", operator.abs: "abs", torch.erf: "erf", torch.special.erf: "erf",
    torch.reciprocal: "reciprocal", torch.floor: "floor", torch.ceil: "ceil", torch.sign: "sign", torch.sin: "sin", torch.cos: "cos",
    F.softsign: "softsign", F.mish: "mish", F.selu: "selu", torch.selu: "selu",
    F.elu: "elu", F.celu: "celu", torch.celu: "celu", F.softplus: "softplus",
    torch.pow: "pow", operator.pow: "pow", torch.maximum: "maximum", torch.minimum: "minimum", F.prelu: "prelu", torch.prelu: "prelu",
    torch.remainder: "remainder", operator.mod: "remainder", torch.fmod: "fmod",
    torch.sum: "sum", torch.prod: "prod", torch.amax: "amax", torch.amin: "amin", torch.logsumexp: "logsumexp",
    torch.tile: "tile", torch.addmm: "addmm", torch.baddbmm: "baddbmm", torch.rsqrt: "rsqrt", torch.arange: "arange", torch.zeros: "zeros", torch.zeros_like: "zeros",
    **{getattr(torch, name): name for name in _TRIG},
    **{getattr(torch, "arc" + name[1:]): name for name in _TRIG if name.startswith("a")},
})  # fmt: skip
_METHODS.update({
    **{name: name for name in _UNARY if name not in ("softsign", "mish", "selu")},
    **{name + "_": name for name in ("exp", "log", "sqrt", "neg", "abs", "erf", "reciprocal", "floor", "ceil", "sign", "sin", "cos", *_TRIG)},
    **{"arc" + name[1:] + end: name for name in _TRIG if name.startswith("a") for end in ("", "_")},
    "__neg__": "neg", "negative": "neg", "__abs__": "abs", "absolute": "abs",
    "pow": "pow", "pow_": "pow", "__pow__": "pow", "__rpow__": "pow", "maximum": "maximum", "minimum": "minimum",
    "remainder": "remainder", "remainder_": "remainder", "__mod__": "remainder", "__rmod__": "remainder",
    "fmod": "fmod", "fmod_": "fmod",
    "sum": "sum", "prod": "prod", "amax": "amax", "amin": "amin", "logsumexp": "logsumexp",
    "tile": "tile", "repeat": "repeat", "addmm": "addmm", "rsqrt": "rsqrt",
})  # fmt: skip


# Integer tensors (issue 17): token ids, masks and their arithmetic. The
# comparisons and logical ops give bool (core/ops/compare); `x != y` is
# logical_not(equal); `&`, `|`, `^`, `~` are logical only on bools.
_COMPARISONS = ("equal", "less", "greater", "less_equal", "greater_equal", "logical_and", "logical_or", "logical_xor")
# A comparison with its constant on the left, as the core's x op other.
_FLIPPED = {"less": "greater", "greater": "less", "less_equal": "greater_equal", "greater_equal": "less_equal"}
_BITWISE = {"__and__": "logical_and", "__or__": "logical_or", "__xor__": "logical_xor", "__invert__": "logical_not"}
_FUNCTIONS.update({
    torch.eq: "equal", operator.eq: "equal", torch.ne: "not_equal", torch.not_equal: "not_equal", operator.ne: "not_equal",
    torch.lt: "less", torch.less: "less", operator.lt: "less", torch.gt: "greater", torch.greater: "greater", operator.gt: "greater",
    torch.le: "less_equal", torch.less_equal: "less_equal", operator.le: "less_equal",
    torch.ge: "greater_equal", torch.greater_equal: "greater_equal", operator.ge: "greater_equal",
    torch.logical_and: "logical_and", torch.logical_or: "logical_or", torch.logical_xor: "logical_xor", torch.logical_not: "logical_not",
    operator.and_: "__and__", operator.or_: "__or__", operator.xor: "__xor__", operator.invert: "__invert__",
    torch.where: "where", torch.masked_fill: "masked_fill", torch.index_select: "index_select",
    torch.cumsum: "cumsum", torch.gather: "gather", F.grid_sample: "grid_sample",
    torch.argmax: "argmax", torch.argmin: "argmin", torch.triu: "triu", torch.tril: "tril",
    torch.topk: "topk", getattr: "getattr", torch.scatter: "scatter", torch.scatter_add: "scatter_add",
    torch.scatter_reduce: "scatter_reduce", torch.flip: "flip", torch.fliplr: "fliplr", torch.flipud: "flipud",
    F.glu: "glu", F.softmin: "softmin", F.lp_pool2d: "lp_pool2d",
})  # fmt: skip
_METHODS.update({
    "eq": "equal", "__eq__": "equal", "ne": "not_equal", "__ne__": "not_equal", "lt": "less", "__lt__": "less",
    "gt": "greater", "__gt__": "greater", "le": "less_equal", "__le__": "less_equal", "ge": "greater_equal", "__ge__": "greater_equal",
    "logical_and": "logical_and", "logical_or": "logical_or", "logical_xor": "logical_xor", "logical_not": "logical_not",
    "__and__": "__and__", "__or__": "__or__", "__xor__": "__xor__", "__invert__": "__invert__", "bitwise_not": "__invert__",
    "masked_fill": "masked_fill", "masked_fill_": "masked_fill", "index_select": "index_select",
    "to": "to", "type": "to", "float": "float", "double": "double", "long": "long", "bool": "bool", "type_as": "type_as",
    "int": "int", "cumsum": "cumsum", "gather": "gather",
    "argmax": "argmax", "argmin": "argmin", "triu": "triu", "triu_": "triu", "tril": "tril", "tril_": "tril",
    "topk": "topk", "scatter": "scatter", "scatter_": "scatter", "scatter_add": "scatter_add",
    "scatter_add_": "scatter_add", "scatter_reduce": "scatter_reduce", "scatter_reduce_": "scatter_reduce",
    "flip": "flip", "fliplr": "fliplr", "flipud": "flipud",
})  # fmt: skip
# torch's scatter reductions as the core's (scatter's `reduce` and
# scatter_reduce's; "mean" has no core equivalent).
_SCATTER_REDUCTIONS = {None: "none", "add": "add", "multiply": "mul", "sum": "add", "prod": "mul", "amax": "max",
                       "amin": "min"}  # fmt: skip
# The fields of torch's (values, indices) results (torch.return_types:
# topk, max / min along a dim, sort), by name.
_RESULT_FIELDS = {"values": 0, "indices": 1}
# torch dtypes the core has, by the core's names (core/tensor.h).
_CORE_DTYPES = {torch.float32: "float32", torch.float64: "float64", torch.int64: "int64", torch.bool: "bool"}
# Inside a model ai3 keeps integers in int64: an int32 tensor (RoBERTa's
# `mask.int()`, its cumsum `.type_as(mask)`) is computed as int64, whose
# values agree with int32's while they fit in it (positions, counts, ids).
_COMPUTED_AS = {torch.int32: torch.int64}


class _Mapper:
    def __init__(self, gm: fx.GraphModule):
        self.gm = gm
        self.modules = dict(gm.named_modules())
        self.specs: list[LayerSpec] = []
        self.index: dict[fx.Node, int] = {}  # tensor node -> spec index (or MODEL_INPUT)
        self.pieces: dict[fx.Node, list[Any]] = {}  # tuple-valued node -> each element's spec (or tuple of them)
        self.consts: dict[fx.Node, torch.Tensor] = {}  # get_attr nodes
        self.expanded: dict[fx.Node, torch.Tensor] = {}  # a constant expanded along the batch, awaiting a concat
        self.aranges: set[fx.Node] = set()  # torch.arange of a batch-dependent size, kept only as an index
        self.zeros: set[fx.Node] = set()  # torch.zeros of a batch-dependent size, kept only as a zero state
        # The model's own float dtype: its float parameters' and buffers'.
        self.float_dtype = next((t.dtype for t in (*gm.parameters(), *gm.buffers()) if t.is_floating_point()), None)

    # -- building blocks -------------------------------------------------
    def add(self, node: fx.Node, op: str, name: str, inputs: list[int], layer: Any, attrs=None, weights=None) -> int:
        spec = LayerSpec(name, op, inputs, attrs or {}, weights or {}, layer, _input_shape(node))
        self.index[node] = len(self.specs)
        self.specs.append(spec)
        return self.index[node]

    def emit(
        self, node: fx.Node, op: str, name: str, inputs: list[int], attrs=None, weights=None, input_shape=None
    ) -> int:
        """A helper layer of a node that maps to several (slices of a chunk,
        the permutes around an einsum), not yet the node's own result."""
        self.specs.append(LayerSpec(name, op, inputs, attrs or {}, weights or {}, node, input_shape))
        return len(self.specs) - 1

    def alias(self, node: fx.Node, source: fx.Node) -> None:
        if isinstance(source, fx.Node) and source in self.expanded:  # (dropout of XLNet's position table)
            self.expanded[node] = self.expanded[source]
            return
        self.index[node] = self.tensor(node, source)

    def values(self, node: fx.Node, of: fx.Node) -> tuple[Any, Any]:
        vals = _values(of)
        if vals is None:
            raise unsupported(node, "needs the tensors' shapes: pass sample_input_shape to swap_backend")
        return vals

    def shapes(self, node: fx.Node, of: fx.Node) -> tuple[tuple[int, ...], tuple[int, ...]]:
        a, b = self.values(node, of)
        return tuple(a.shape), tuple(b.shape)

    def tensor(self, node: fx.Node, a: Any) -> int:
        """The spec index of tensor argument `a` of `node`."""
        if isinstance(a, fx.Node) and a in self.index:
            return self.index[a]
        if isinstance(a, fx.Node) and (a in self.consts or a in self.expanded):
            raise unsupported(node, f"takes the constant tensor '{a.name}' where ai3 needs a computed one")
        if isinstance(a, fx.Node) and a in self.zeros:
            raise unsupported(
                node,
                f"takes '{a.name}', a torch.zeros of a batch-dependent size; ai3 takes one only as a recurrent "
                "layer's initial state",
            )
        if isinstance(a, fx.Node) and a in self.aranges:
            raise unsupported(
                node,
                f"takes '{a.name}', a torch.arange of a batch-dependent size; ai3 folds one only where it "
                "indexes a tensor in order (x[arange(B), ...])",
            )
        raise unsupported(node, f"takes a non-tensor argument {a!r} where ai3 needs a tensor")

    def inputs_of(self, node: fx.Node, args: Sequence[Any]) -> list[int]:
        found = []
        for a in args:
            if isinstance(a, (list, tuple)):
                found += [self.tensor(node, x) for x in a]
            else:
                found.append(self.tensor(node, a))
        return found

    def constant(self, node: fx.Node, a: Any) -> np.ndarray | None:
        """`a` as a constant array (a number, or a tensor read from the
        model), or None when it is a computed tensor."""
        if isinstance(a, bool) or a is None:
            raise unsupported(node, f"takes {a!r} where ai3 needs a tensor or a number")
        if isinstance(a, (int, float)):
            return np.asarray(a, dtype=np.float64)
        if isinstance(a, torch.Tensor):
            return a.detach().cpu().numpy()
        if isinstance(a, fx.Node) and a in self.consts:
            return self.consts[a].detach().cpu().numpy()
        if isinstance(a, fx.Node) and a not in self.index and a not in self.expanded:
            raise unsupported(node, f"takes '{a.name}', a value that depends on the batch size, as an operand")
        return None

    def constant_or_row(self, node: fx.Node, a: Any) -> np.ndarray | None:
        """constant(), or the row of a constant expanded along the batch
        (which broadcasts over the batch where it is used)."""
        if isinstance(a, fx.Node) and a in self.expanded:
            return self.expanded[a].detach().cpu().numpy()
        return self.constant(node, a)

    # -- per node ------------------------------------------------------------
    def map(self, node: fx.Node) -> None:
        if tracing.is_item_assignment(node.op, node.target):
            return self.setitem(node)
        if not _is_tensor_valued(node):
            return  # sizes and their arithmetic: consumed through the values
        if _values(node) is None and node.target in ("size", "dim", "numel", getattr):
            raise unsupported(
                node, "shape arithmetic needs the tensors' shapes: pass sample_input_shape to swap_backend"
            )
        if self.fold(node) or self.fold_batch_rows(node):
            return
        if node.op == "call_module":
            self.module(node)
        elif node.op == "call_function":
            kind = _FUNCTIONS.get(node.target) or _torchvision_function(node.target)
            if kind is None:
                hint = (
                    ""
                    if _values(node) is not None
                    else " (traced without sample_input_shape, which would trace through torch.fx.wrap'ed helpers)"
                )
                raise unsupported(node, f"ai3's core has no equivalent of this function{hint}")
            self.call(node, kind)
        else:
            kind = _METHODS.get(node.target)
            if kind is None:
                raise unsupported(node, f"ai3's core has no equivalent of the tensor method '{node.target}'")
            self.call(node, kind)
        self.alias_in_place(node)

    def alias_in_place(self, node: fx.Node) -> None:
        """An in-place call (x.add_(y), F.relu(x, inplace=True)) changes x
        itself: the nodes after it that read x read its result, which is
        what they see in PyTorch (MViT's positional encoding returns the
        tensor it added to in place, not add_'s result)."""
        in_place = _is_in_place(node)
        x = node.args[0] if node.args else None
        if in_place and isinstance(x, fx.Node) and x in self.index and node in self.index:
            self.index[x] = self.index[node]

    def reads_input(self, node: fx.Node) -> bool:
        """Whether node's value depends on a model input (a placeholder),
        directly or through other nodes; one that does not (torch.arange(5),
        a constant mask built from parameters) is folded into a constant."""
        memo = self.__dict__.setdefault("_reads_input", {})
        if node not in memo:
            memo[node] = node.op == "placeholder" or any(self.reads_input(n) for n in node.all_input_nodes)
        return memo[node]

    def fold(self, node: fx.Node) -> bool:
        """Keeps a call that reads no model input (a position embedding of
        torch.arange positions), or only constants and the same value on
        both traced runs (a slice of Funnel's `ones.type_as(x)`), as the
        constant its traced value is; False when it cannot be (no traced
        value)."""
        if node.op not in ("call_function", "call_method", "call_module"):
            return False
        vals = _values(node)
        if vals is None or not isinstance(vals[0], torch.Tensor):
            return False
        if self.reads_input(node):
            tensors = [n for n in node.all_input_nodes if _is_tensor_valued(n)]
            if not tensors or not all(n in self.consts for n in tensors):
                return False
            if not (isinstance(vals[1], torch.Tensor) and vals[0].shape == vals[1].shape and torch.equal(*vals)):
                return False
        self.consts[node] = vals[0]
        return True

    def reads_input_values(self, node: fx.Node) -> bool:
        """Whether node's value depends on a model input's values, not only
        on its shape (x.size(0) reads the shape alone)."""
        memo = self.__dict__.setdefault("_reads_values", {})
        if node not in memo:
            shape_only = (node.op == "call_method" and node.target in ("size", "dim", "numel")) or (
                node.op == "call_function" and node.target is getattr and node.args[1:2] == ("shape",)
            )
            # x.type_as(y) reads y's dtype only (Funnel's ones.type_as(x)).
            read = node.all_input_nodes
            if node.op == "call_method" and node.target == "type_as" and isinstance(node.args[0], fx.Node):
                read = [node.args[0]]
            memo[node] = node.op == "placeholder" or (not shape_only and any(self.reads_input_values(n) for n in read))
        return memo[node]

    def fold_batch_rows(self, node: fx.Node) -> bool:
        """Keeps a call that reads the model input's shape but none of its
        values, and whose every row along dim 0 is the same, as that row (a
        constant that broadcasts over the batch where it is used, as
        self.expanded holds them): the position ids a decoder builds as
        arange(S) expanded to the batch, and what it computes from them
        alone (Llama's check for packed sequences, torch.diff and cumsum of
        the ids, indexed per batch row by arange(B); the causal mask). The
        traced values at the two sample batch sizes decide it: both such
        rows, with the same first row. A call of one batch size's values
        alone is a constant."""
        if node.op not in ("call_function", "call_method", "call_module") or self.reads_input_values(node):
            return False
        vals = _values(node)
        if vals is None or not all(isinstance(v, torch.Tensor) and v.dim() >= 1 for v in vals):
            return False
        a, b = vals
        if a.shape == b.shape and torch.equal(a, b):
            self.consts[node] = a
            return True
        if a.shape[1:] != b.shape[1:] or a.shape[0] == 0 or b.shape[0] == 0:
            return False
        if not (
            torch.equal(a[:1], b[:1]) and torch.equal(a, a[:1].expand_as(a)) and torch.equal(b, b[:1].expand_as(b))
        ):
            return False
        self.expanded[node] = a[:1]
        return True

    def torch_dtype(self, node: fx.Node, a: Any) -> torch.dtype | None:
        """The dtype of tensor argument `a` of `node` as traced (None when
        traced without sample inputs)."""
        if isinstance(a, fx.Node) and a in self.consts:
            dtype = self.consts[a].dtype
        else:
            vals = _values(a) if isinstance(a, fx.Node) else None
            dtype = vals[0].dtype if vals is not None and isinstance(vals[0], torch.Tensor) else None
        return _COMPUTED_AS.get(dtype, dtype)

    def island_dtype(self, node: fx.Node, a: Any) -> str | None:
        """The core dtype of tensor argument `a` of `node` where it is a float
        island, a float tensor of another dtype than the model's own (T5's
        layer norm takes its variance in float32 even in a float64 model),
        else None. ai3.Model runs float constants in the model's dtype; an
        island's stay in the island's (LayerSpec attr "weights_dtype")."""
        dtype = self.torch_dtype(node, a)
        if dtype is None or not dtype.is_floating_point or self.float_dtype in (None, dtype):
            return None
        return _CORE_DTYPES.get(dtype)

    def promoted(self, node: fx.Node, name: str, operands: Sequence[Any]) -> list[int]:
        """The spec indices of tensor operands `operands` of an elementwise
        `node`, those of a narrower float dtype than another cast to the
        wider one first, as PyTorch's type promotion does (a float64 tensor
        times a float32 one is float64)."""
        dtypes = [self.torch_dtype(node, a) for a in operands]
        indices = [self.tensor(node, a) for a in operands]
        if any(d is None or not d.is_floating_point for d in dtypes) or len(set(dtypes)) == 1:
            return indices
        wide = dtypes[0]
        for d in dtypes[1:]:
            wide = torch.promote_types(wide, d)
        to = _CORE_DTYPES.get(wide)
        if to is None:  # a half-precision result, which the core lacks: its dtype check names it
            return indices
        return [
            i if d == wide else self.emit(node, "cast", f"{name}.{k}.to_{to}", [i], {"to": to}, None, _tensor_shape(a))
            for k, (i, d, a) in enumerate(zip(indices, dtypes, operands))
        ]

    def constant_like(self, node: fx.Node, value: Any, like: Any, row: bool = False) -> np.ndarray | None:
        """constant(value) in the dtype of tensor argument `like` (a number
        beside int64 ids is an int64 constant); None when value is computed.
        With `row`, a constant expanded along the batch gives its row
        (constant_or_row)."""
        c = self.constant_or_row(node, value) if row else self.constant(node, value)
        dtype = self.torch_dtype(node, like)
        if c is None or dtype is None:
            return c
        if dtype not in _CORE_DTYPES:
            raise unsupported(node, f"reads a {dtype} tensor; ai3 takes float32, float64, int64 and bool")
        return np.asarray(c, dtype=_CORE_DTYPES[dtype])

    def name_of(self, node: fx.Node) -> str:
        if node.op == "call_module":
            return node.target
        return f"{node.meta.get('ai3_module_path') or ''}.{node.name}".lstrip(".")

    # -- call_module ---------------------------------------------------
    # (The module classes this dispatches on besides mapping.lookup's are
    # _MAPPED_MODULES, which maps_as_module reads.)
    def module(self, node: fx.Node) -> None:
        m = self.modules[node.target]
        name = node.target
        if isinstance(m, nn.MultiheadAttention):
            return self.attention(node, m)
        if rnn.is_recurrent(m):
            return rnn.map_module(self, node, m)
        if isinstance(m, nn.Embedding) and len(node.args) == 1 and not node.kwargs:
            return self.embedding(node, name, node.args[0], m.weight, m.max_norm)
        if len(node.args) != 1 or node.kwargs or not isinstance(node.args[0], fx.Node):
            raise unsupported(node, "a module called with more than one tensor input")
        x = node.args[0]
        if isinstance(m, nn.Unfold):
            return self.unfold(node, name, x, m.kernel_size, m.dilation, m.padding, m.stride)
        if isinstance(m, _POOLS_1D):
            return self.pool1d(node, name, x, _POOL_1D_KIND[type(m)], _pool_arguments(m))
        if isinstance(m, nn.ConstantPad2d) and any(p < 0 for p in m.padding):  # (ZeroPad2d too)
            return self.pad_cropping(node, name, {"input": x, "mode": "constant", "value": m.value}, tuple(m.padding))
        # (A parametrized conv, weight_norm's in wav2vec 2.0 and HuBERT, is a
        # subclass whose forward reads its computed weight: the conv's.)
        if type(m) is nn.Conv1d or (isinstance(m, nn.Conv1d) and parametrize.is_parametrized(m)):
            if m.padding_mode != "zeros":
                raise unsupported(node, f"nn.Conv1d with padding_mode={m.padding_mode!r}; ai3 maps 'zeros'")
            return self.conv1d(node, name, x, m.weight, m.bias, m.stride, m.padding, m.dilation, m.groups)
        entry = mapping.lookup(m)  # any subclass maps as its class: fx traced it as a leaf
        if entry is None:
            raise unsupported(node, f"ai3's core has no equivalent of {type(m).__module__}.{type(m).__name__}")
        if entry.op == "identity":
            return self.alias(node, x)
        if isinstance(m, nn.Conv2d) and m.padding_mode != "zeros":
            return self.conv2d_pads_by_mode(node, m, x)
        attrs, weights = entry.read(m, name)
        if entry.resolve is not None:
            attrs = entry.resolve(attrs, _input_shape(node), name)
        weights = {k: params.numpy_weight(t) for k, t in weights.items()}
        self.add(node, entry.op, name, [self.tensor(node, x)], m, attrs, weights)

    def conv2d_pads_by_mode(self, node: fx.Node, m: nn.Conv2d, x: fx.Node) -> None:
        """nn.Conv2d with padding_mode 'reflect' / 'replicate' / 'circular'
        (issue 17): a pad2d of that mode, then the conv unpadded, as its
        forward runs F.pad then the convolution."""
        name = node.target
        try:
            attrs = params.conv2d(m, name, padding_mode=True)
        except errors.UnsupportedOperation as e:
            raise unsupported(node, str(e).split(": ", 1)[1]) from None
        pads = attrs.pop("pad_by_mode")
        padded = self.emit(
            node,
            "pad2d",
            f"{name}.pad",
            [self.tensor(node, x)],
            {"padding": pads, "mode": m.padding_mode},
            input_shape=_input_shape(node),
        )
        weights = {"weight": params.numpy_weight(m.weight), "bias": params.numpy_weight(m.bias)}
        self.add(node, "conv2d", name, [padded], m, attrs, weights)

    def attention(self, node: fx.Node, module: nn.Module | None = None) -> None:
        """nn.MultiheadAttention and F.scaled_dot_product_attention live in
        ai3.torch.attention, which registers the node's spec(s) here."""
        try:
            from ai3.torch import attention
        except ImportError as e:
            raise unsupported(node, "this build of ai3 has no attention mapping") from e
        if module is not None:
            attention.map_module(self, node, module)
        else:
            attention.map_function(self, node)

    # -- call_function / call_method -------------------------------------
    def call(self, node: fx.Node, kind: str) -> None:
        name = self.name_of(node)
        args = node.args
        if kind in _BINARY:
            return self.binary(node, kind, name)
        if kind in _COMPARISONS:
            return self.comparison(node, kind, name)
        if kind in _BITWISE:
            return self.bitwise(node, kind, name)
        handler = getattr(self, f"_{kind}", None)
        if handler is not None:
            return handler(node, name)
        if kind in ("relu", "sigmoid", "tanh", "silu", "hardswish"):
            a = normalized(node, lambda input, inplace=False: None)
            return self.add(node, kind, name, [self.tensor(node, a["input"])], node)
        if kind in _UNARY:
            a = normalized(node, lambda input, inplace=False: None)
            return self.add(node, kind, name, [self.tensor(node, a["input"])], node)
        if kind in _REDUCTIONS:
            return self.reduction(node, name, _REDUCTIONS[kind])
        if kind == "identity":
            return self.alias(node, args[0])
        if kind in ("dropout", "stochastic_depth"):
            if kind == "dropout":
                a = normalized(node, lambda input, p=0.5, training=True, inplace=False: None)
            else:
                a = normalized(node, lambda input, p, mode, training=True: None)
            if a["training"] is not False and a["p"] != 0:
                raise unsupported(node, f"{kind} in training mode (ai3 runs inference)")
            return self.alias(node, a["input"])
        raise unsupported(node, f"no mapping for '{kind}'")

    def binary(self, node: fx.Node, op: str, name: str) -> None:
        if len(node.args) != 2 or any(k not in ("alpha", "rounding_mode") for k in node.kwargs):
            raise unsupported(node, f"{op} takes two operands")
        if node.kwargs.get("alpha", 1) != 1 or node.kwargs.get("rounding_mode") is not None:
            raise unsupported(node, f"{op} with alpha or rounding_mode is not supported")
        x, y = node.args
        if node.op == "call_method" and node.target in ("__radd__", "__rmul__", "__rpow__", "__rmod__"):
            x, y = y, x
        cx, cy = self.constant(node, x), self.constant(node, y)
        if cx is None and cy is None and (x in self.expanded) != (y in self.expanded):
            # A constant expanded along the batch (BERT's default token
            # types' embeddings) beside a tensor of the result's shape: its
            # unexpanded source broadcasts to the same result.
            computed = y if x in self.expanded else x
            if self.shapes(node, computed) != self.shapes(node, node):
                raise unsupported(node, "a constant expanded along the batch beside a smaller operand")
            expanded = self.expanded[x if x in self.expanded else y].detach().cpu().numpy()
            cx, cy = (expanded, None) if x in self.expanded else (None, expanded)
        if cx is None and cy is None:
            if x in self.expanded or y in self.expanded:
                raise unsupported(node, "two constants expanded along the batch as operands")
            self.add(node, op, name, self.promoted(node, name, [x, y]), node)
        elif cx is None or cy is None:
            tensor, other, reverse = (x, cy, False) if cy is not None else (y, cx, True)
            raw = y if cy is not None else x
            index = self.tensor(node, tensor)
            tensor_dtype = self.torch_dtype(node, tensor)
            if tensor_dtype == torch.int64 and self.integral(node, raw):
                other = np.asarray(other).astype(np.int64)  # int op int stays int, as in PyTorch
            elif tensor_dtype in (torch.int64, torch.bool):
                # An integer tensor and a float constant give a float result,
                # as PyTorch promotes (Bloom's ALiBi: positions * slopes): the
                # tensor cast to the result's dtype first.
                to = _CORE_DTYPES.get(self.torch_dtype(node, node))
                if to is None:
                    raise unsupported(node, f"{op} of a {tensor_dtype} tensor and a float constant")
                index = self.emit(node, "cast", f"{name}.to_{to}", [index], {"to": to}, None, _tensor_shape(tensor))
                tensor = node  # (its dtype now the result's: an island's, where it is one)
            attrs: dict[str, Any] = {"reverse": reverse}
            island = self.island_dtype(node, tensor)
            if island is not None and np.issubdtype(np.asarray(other).dtype, np.floating):
                attrs["weights_dtype"] = island  # a number beside it takes its dtype, as in PyTorch
            self.add(node, op, name, [index], node, attrs, {"other": other})
        else:
            raise unsupported(node, f"{op} of two constants (expected to be folded while tracing)")

    def integral(self, node: fx.Node, a: Any) -> bool:
        """Whether constant argument `a` is an integer (a Python int, or an
        integer tensor) rather than a float or bool."""
        if isinstance(a, bool):
            return False
        if isinstance(a, int):
            return True
        dtype = a.dtype if isinstance(a, torch.Tensor) else self.torch_dtype(node, a)
        return dtype is not None and not dtype.is_floating_point and dtype != torch.bool

    def _matmul(self, node: fx.Node, name: str) -> None:
        x, y = node.args[:2]
        left = self.constant_or_row(node, x)  # (a row broadcasts over the batch as its expansion did)
        if left is not None:
            right = _tensor_shape(y)
            if right is None or self.constant(node, y) is not None:
                raise unsupported(node, "a constant left operand needs a computed right one of known shape")
            steps = constant_left_matmul_steps(left, len(right))
            index = self.tensor(node, y)
            for step, (op, attrs, weights) in enumerate(steps[:-1]):
                index = self.emit(node, op, f"{name}.step{step}", [index], attrs, weights)
            op, attrs, weights = steps[-1]
            self.add(node, op, name, [index], node, attrs, weights)
            return
        other = self.constant(node, y)
        if other is None:
            self.add(node, "matmul", name, [self.tensor(node, x), self.tensor(node, y)], node)
        else:
            self.add(node, "matmul", name, [self.tensor(node, x)], node, {}, {"other": other})

    def weights(self, node: fx.Node, a: dict[str, Any], names: Sequence[str]) -> dict[str, np.ndarray | None]:
        """The call's weight arguments `names` (None where not given) as
        arrays: they must be the model's own parameters or buffers (get_attr
        nodes) or constants; a weight computed in forward has no place in a
        core layer, which copies its weights once."""
        found: dict[str, np.ndarray | None] = {}
        for k in names:
            found[k] = None if a[k] is None else self.constant(node, a[k])
            if a[k] is not None and found[k] is None:
                source = a[k].name if isinstance(a[k], fx.Node) else repr(a[k])
                raise unsupported(
                    node,
                    f"its {k} is '{source}', a tensor computed in forward; ai3 takes only the model's own parameters and buffers as weights",
                )
        return found

    def _linear(self, node: fx.Node, name: str) -> None:
        a = normalized(node, lambda input, weight, bias=None: None)
        self.add(
            node, "linear", name, [self.tensor(node, a["input"])], node, {}, self.weights(node, a, ("weight", "bias"))
        )

    def _addmm(self, node: fx.Node, name: str) -> None:
        """torch.addmm(bias, x, weight): GPT-2's Conv1D (`x @ weight + bias`,
        its weight stored (in, out)), as the linear layer it is, the weight
        transposed to linear's (out, in) once here."""
        a = normalized(node, lambda input, mat1, mat2, beta=1, alpha=1: None)
        if a["beta"] != 1 or a["alpha"] != 1:
            raise unsupported(
                node, f"torch.addmm with beta={a['beta']}, alpha={a['alpha']} (ai3 maps beta = alpha = 1)"
            )
        w = self.weights(node, {"weight": a["mat2"], "bias": a["input"]}, ("weight", "bias"))
        weight, bias = w["weight"], w["bias"]
        if weight.ndim != 2 or bias.size not in (1, weight.shape[1]) or bias.ndim > 1:
            raise unsupported(
                node, f"torch.addmm of a {weight.shape} weight and a {bias.shape} bias (ai3 maps a per-column bias)"
            )
        bias = np.broadcast_to(bias.reshape(-1), (weight.shape[1],))
        weights = {"weight": np.ascontiguousarray(weight.T), "bias": np.ascontiguousarray(bias)}
        self.add(node, "linear", name, [self.tensor(node, a["mat1"])], node, {}, weights)

    def _baddbmm(self, node: fx.Node, name: str) -> None:
        """torch.baddbmm(input, batch1, batch2, beta, alpha) = beta * input +
        alpha * (batch1 @ batch2) (Bloom's attention scores over its ALiBi
        bias): a matmul of the two batches, the scales as multiplies by
        constants where they are not 1, and the add (beta 0 ignores input,
        as torch does)."""
        a = normalized(node, lambda input, batch1, batch2, beta=1, alpha=1: None)
        beta, alpha = a["beta"], a["alpha"]
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (beta, alpha)):
            raise unsupported(node, "torch.baddbmm with computed beta or alpha (ai3 maps numbers)")
        shape = _tensor_shape(node)
        product = self.emit(
            node, "matmul", f"{name}.bmm", [self.tensor(node, a["batch1"]), self.tensor(node, a["batch2"])],
            input_shape=_tensor_shape(a["batch1"]),
        )  # fmt: skip
        if alpha != 1:
            scale = {"other": np.asarray(alpha, dtype=np.float64)}
            product = self.emit(node, "mul", f"{name}.alpha", [product], {"reverse": False}, scale, shape)
        if beta == 0:
            return self.add(node, "identity", name, [product], node)
        bias = (
            self.constant(node, a["input"])
            if not isinstance(a["input"], fx.Node) or a["input"] in self.consts
            else None
        )
        if bias is not None:
            other = {"other": np.asarray(bias, dtype=np.float64) * beta}
            return self.add(node, "add", name, [product], node, {"reverse": False}, other)
        term = self.tensor(node, a["input"])
        if beta != 1:
            scale = {"other": np.asarray(beta, dtype=np.float64)}
            term = self.emit(node, "mul", f"{name}.beta", [term], {"reverse": False}, scale, _tensor_shape(a["input"]))
        self.add(node, "add", name, [product, term], node)

    def _rsqrt(self, node: fx.Node, name: str) -> None:
        """1 / sqrt(x) (T5's RMS norm), as a sqrt and a reciprocal: the core
        has both, and the two roundings stay within float32's tolerance."""
        x = normalized(node, lambda input: None)["input"]
        root = self.emit(node, "sqrt", f"{name}.sqrt", [self.tensor(node, x)], input_shape=_input_shape(node))
        self.add(node, "reciprocal", name, [root], node)

    def _conv2d(self, node: fx.Node, name: str) -> None:
        a = normalized(node, lambda input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1: None)
        weights = self.weights(node, a, ("weight", "bias"))
        if weights["weight"].ndim != 4:
            raise unsupported(node, f"F.conv2d's weight must have rank 4, this one has shape {weights['weight'].shape}")
        kernel = tuple(int(k) for k in weights["weight"].shape[2:])
        try:
            attrs = params.conv2d_call(kernel, a["stride"], a["padding"], a["dilation"], a["groups"], name)
        except errors.Error as e:
            raise unsupported(node, str(e)) from None
        self.add(node, "conv2d", name, [self.tensor(node, a["input"])], node, attrs, weights)

    def _pool1d(self, node: fx.Node, name: str) -> None:
        """F.max_pool1d, F.avg_pool1d, F.adaptive_avg_pool1d and
        F.adaptive_max_pool1d (see pool1d)."""
        kind = _POOL_1D_FUNCTIONS[node.target]
        a = normalized(node, _POOL_1D_SIGNATURES[kind])
        self.pool1d(node, name, a.pop("input"), kind, a)

    def pool1d(self, node: fx.Node, name: str, x: Any, kind: str, a: dict[str, Any]) -> None:
        """A 1-D pool over (N, C, L) (audio and text CNNs, Swin's pooler):
        the 2-D pool of a (N, C, 1, L) view with a (1, k) window, viewed back
        to (N, C, L'), as conv1d is mapped. `kind` is max, avg, adaptive_avg
        or adaptive_max; `a`, the pool's arguments as torch names them."""
        (i1, _) = self.shapes(node, x)
        if len(i1) != 3:
            raise unsupported(node, f"a 1-D pool of a rank-{len(i1)} input; ai3 maps (N, C, L)")
        layer = f"{kind}_pool1d '{name}'"
        try:
            if kind == "max":
                one = params.maxpool2d(
                    a["kernel_size"], a["stride"], a["padding"], a["dilation"], a["ceil_mode"], a["return_indices"],
                    name=name, dims=1,
                )  # fmt: skip
                attrs = {**one, "dilation": (1, *one["dilation"])}
            elif kind == "avg":
                one = params.avgpool2d(
                    a["kernel_size"],
                    a["stride"],
                    a["padding"],
                    a["ceil_mode"],
                    a["count_include_pad"],
                    name=name,
                    dims=1,
                )
                attrs = dict(one)
            else:
                if a.get("return_indices"):
                    raise errors.UnsupportedOperation(f"{layer}: return_indices=True is not supported")
                size = a["output_size"]
                size = size[0] if isinstance(size, (tuple, list)) else size
                attrs = {"output_size": (1, int(i1[2]) if size is None else int(size))}
        except errors.Error as e:
            raise unsupported(node, str(e).split(": ", 1)[-1]) from None
        if kind in ("max", "avg"):
            attrs.update(kernel=(1, *attrs["kernel"]), stride=(1, *attrs["stride"]), padding=(0, 0, *attrs["padding"]))
        op = {"max": "maxpool2d", "avg": "avgpool2d"}.get(kind, f"{kind.replace('_', '')}pool2d")
        self.lifted_1d(node, name, x, op, attrs, None)

    def lifted_1d(self, node: fx.Node, name: str, x: Any, op: str, attrs: dict, weights: dict | None) -> None:
        """A 2-D conv or pool `op` over (N, C, L) as over a (N, C, 1, L) view,
        its result viewed back to (N, C', L'): conv1d's and the 1-D pools'
        form."""
        (i1, i2), (o1, o2) = self.shapes(node, x), self.shapes(node, node)
        v1, v2 = (s[:2] + (1,) + s[2:] for s in (i1, i2))
        u1, u2 = (s[:2] + (1,) + s[2:] for s in (o1, o2))
        try:
            into, back = shapes.reshape_target(i1, i2, v1, v2), shapes.reshape_target(u1, u2, o1, o2)
        except ValueError as e:
            raise unsupported(node, str(e)) from e
        view = self.emit(node, "reshape", f"{name}.view", [self.tensor(node, x)], {"shape": into}, input_shape=i1)
        result = self.emit(node, op, f"{name}.{op}", [view], attrs, weights, input_shape=v1)
        self.add(node, "reshape", name, [result], node, {"shape": back})

    def _unfold(self, node: fx.Node, name: str) -> None:
        a = normalized(node, lambda input, kernel_size, dilation=1, padding=0, stride=1: None)
        self.unfold(node, name, a["input"], a["kernel_size"], a["dilation"], a["padding"], a["stride"])

    def unfold(self, node: fx.Node, name: str, x: Any, kernel_size, dilation, padding, stride) -> None:
        """F.unfold / nn.Unfold (im2col): (N, C, H, W) -> (N, C*kh*kw, L),
        channel c*kh*kw + i*kw + j holding tap (i, j) of channel c at each of
        the L output positions. That is a grouped conv2d (one group per
        channel) whose kh*kw filters per channel are one-hot on their tap,
        viewed as (N, C*kh*kw, L): each output is one input value times 1
        plus zeros, so exactly the copy im2col makes (up to rounding where
        winograd, whose transforms round, is chosen for it)."""
        (i1, _) = self.shapes(node, x)
        if len(i1) != 4:
            raise unsupported(node, f"unfold of a rank-{len(i1)} input; ai3 maps batched images (N, C, H, W)")
        channels = int(i1[1])
        try:
            attrs = params.conv2d_call(kernel_size, stride, padding, dilation, channels, name)
        except errors.Error as e:
            raise unsupported(node, str(e)) from None
        kh, kw = params.pair(kernel_size, "kernel_size", f"unfold '{name}'")
        taps = np.eye(kh * kw, dtype=np.float64).reshape(kh * kw, 1, kh, kw)
        weights = {"weight": np.tile(taps, (channels, 1, 1, 1)), "bias": None}
        conv = self.emit(node, "conv2d", f"{name}.conv2d", [self.tensor(node, x)], attrs, weights, input_shape=i1)
        self.add(node, "reshape", name, [conv], node, {"shape": [0, channels * kh * kw, -1]})

    def _conv3d(self, node: fx.Node, name: str) -> None:
        a = normalized(node, lambda input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1: None)
        weights = self.weights(node, a, ("weight", "bias"))
        if weights["weight"].ndim != 5:
            raise unsupported(node, f"F.conv3d's weight must have rank 5, this one has shape {weights['weight'].shape}")
        kernel = tuple(int(k) for k in weights["weight"].shape[2:])
        try:
            attrs = params.conv3d_call(kernel, a["stride"], a["padding"], a["dilation"], a["groups"], name)
        except errors.Error as e:
            raise unsupported(node, str(e)) from None
        self.add(node, "conv3d", name, [self.tensor(node, a["input"])], node, attrs, weights)

    def _conv1d(self, node: fx.Node, name: str) -> None:
        a = normalized(node, lambda input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1: None)
        self.conv1d(
            node, name, a["input"], a["weight"], a["bias"], a["stride"], a["padding"], a["dilation"], a["groups"]
        )

    def conv1d(
        self, node: fx.Node, name: str, x: Any, weight: Any, bias: Any, stride, padding, dilation, groups
    ) -> None:
        """nn.Conv1d / F.conv1d on (N, C, L): the conv2d of a (N, C, 1, L)
        view with the (O, C / groups, 1, k) kernel (ECA's channel attention,
        audio front ends), viewed back to (N, O, L')."""
        weights = self.weights(node, {"weight": weight, "bias": bias}, ("weight", "bias"))
        w = weights["weight"]
        if w.ndim != 3:
            raise unsupported(node, f"a conv1d weight must have rank 3, this one has shape {w.shape}")
        weights["weight"] = w.reshape(w.shape[0], w.shape[1], 1, w.shape[2])

        def one(v: Any, what: str) -> int:
            v = v[0] if isinstance(v, (tuple, list)) and len(v) == 1 else v
            if not isinstance(v, int) or isinstance(v, bool):
                raise unsupported(node, f"conv1d's {what} must be an int or a 1-tuple, got {v!r}")
            return v

        pad = padding if isinstance(padding, str) else (0, one(padding, "padding"))
        try:
            attrs = params.conv2d_call(
                (1, int(w.shape[2])), (1, one(stride, "stride")), pad, (1, one(dilation, "dilation")), groups, name
            )
        except errors.Error as e:
            raise unsupported(node, str(e)) from None
        (i1, _) = self.shapes(node, x)
        if len(i1) != 3:
            raise unsupported(node, f"conv1d of a rank-{len(i1)} input; ai3 maps (N, C, L)")
        self.lifted_1d(node, name, x, "conv2d", attrs, weights)

    def _batch_norm(self, node: fx.Node, name: str) -> None:
        a = normalized(
            node,
            lambda input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5: (
                None
            ),
        )
        if a["training"] is not False:
            raise unsupported(
                node,
                "F.batch_norm with training=True (batch statistics); ai3 runs inference with the running statistics",
            )
        if a["running_mean"] is None or a["running_var"] is None:
            raise unsupported(node, "F.batch_norm without running statistics (ai3 runs inference with them)")
        w = self.weights(node, a, ("running_mean", "running_var", "weight", "bias"))
        attrs, weights = params.batchnorm(w["running_mean"], w["running_var"], w["weight"], w["bias"], a["eps"])
        self.add(node, "batchnorm2d", name, [self.tensor(node, a["input"])], node, attrs, weights)

    def _embedding(self, node: fx.Node, name: str) -> None:
        a = normalized(
            node,
            lambda input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False: (
                None
            ),
        )
        self.embedding(node, name, a["input"], a["weight"], a["max_norm"])

    def embedding(self, node: fx.Node, name: str, ids: Any, weight: Any, max_norm: Any) -> None:
        """nn.Embedding / F.embedding: a gather of the table's rows by the
        int64 ids (padding_idx only matters to training)."""
        if max_norm is not None:
            raise unsupported(
                node,
                "nn.Embedding / F.embedding with max_norm renormalises its table in forward; ai3 has no equivalent",
            )
        table = self.weights(node, {"weight": weight}, ("weight",))["weight"]
        if isinstance(ids, fx.Node) and ids in self.expanded:
            # Constant ids expanded along the batch (BERT's default token
            # types): the rows they pick, expanded the same way.
            rows = torch.as_tensor(table)[self.expanded[ids].detach().cpu().long()]
            self.expanded[node] = rows
            return
        self.add(node, "gather", name, [self.tensor(node, ids)], node, {"axis": 0}, {"other": table})

    def _index_select(self, node: fx.Node, name: str) -> None:
        a = normalized(node, lambda input, dim, index: None)
        data = self.constant(node, a["input"])
        picked = self.constant(node, a["index"])
        if picked is not None and data is None:
            return self.select_constant_indices(node, name, a["input"], a["dim"], picked)
        if picked is not None:
            raise unsupported(node, "index_select of a constant by constant indices (expected to be folded)")
        if data is None:
            inputs = [self.tensor(node, a["input"]), self.tensor(node, a["index"])]
            return self.add(node, "gather", name, inputs, node, {"axis": a["dim"]})
        self.add(node, "gather", name, [self.tensor(node, a["index"])], node, {"axis": a["dim"]}, {"other": data})

    # The most slices select_constant_indices concatenates for indices that
    # are not evenly spaced.
    SELECTED_SLICES = 64

    def select_constant_indices(self, node: fx.Node, name: str, x: fx.Node, dim: Any, indices: np.ndarray) -> None:
        """index_select of a computed tensor by constant indices (XLNet's
        relative shift, by arange(klen)): one slice where they are evenly
        spaced, else a concat of one slice per index (a few)."""
        (i1, i2) = self.shapes(node, x)
        if not isinstance(dim, int) or np.ndim(indices) != 1:
            raise unsupported(node, "index_select by constant indices needs an int dim and 1-D indices")
        axis = dim % len(i1)
        size = int(i1[axis])
        if i1[axis] != i2[axis]:
            raise unsupported(node, "index_select along a dimension that depends on the batch size")
        taken = [int(v) % size if -size <= int(v) < size else None for v in indices]
        if None in taken or not taken:
            raise unsupported(node, f"index_select indices {indices.tolist()} out of range for a dim of size {size}")
        source = self.tensor(node, x)

        def cut(start: int, count: int, step: int, suffix: str) -> int:
            stop = start + step * count
            attrs = {"axis": axis, "start": start, "stop": stop if stop >= 0 else -END, "step": step}
            return self.emit(node, "slice", f"{name}{suffix}", [source], attrs, None, tuple(i1))

        step = taken[1] - taken[0] if len(taken) > 1 else 1
        if step != 0 and taken == [taken[0] + step * k for k in range(len(taken))]:
            self.index[node] = cut(taken[0], len(taken), step, "")
            return
        if len(taken) > self.SELECTED_SLICES:
            raise unsupported(node, f"index_select by {len(taken)} constant indices that are not evenly spaced")
        parts = [cut(t, 1, 1, f".{k}") for k, t in enumerate(taken)]
        self.add(node, "concat", name, parts, node, {"axis": axis})

    def comparison(self, node: fx.Node, op: str, name: str) -> None:
        """x op y with broadcasting, bool; a constant operand becomes the
        layer's `other` in the tensor's dtype (a constant on the left flips
        the comparison)."""
        if len(node.args) != 2 or node.kwargs:
            raise unsupported(node, f"{op} takes two operands")
        x, y = node.args
        cx, cy = self.constant_like(node, x, y), self.constant_like(node, y, x)
        if cx is None and cy is None:
            return self.add(node, op, name, [self.tensor(node, x), self.tensor(node, y)], node)
        if cx is not None and cy is not None:
            raise unsupported(node, f"{op} of two constants (expected to be folded while tracing)")
        if cy is None:  # the constant on the left: c < x is x > c
            x, cy, op = y, cx, _FLIPPED.get(op, op)
        self.add(node, op, name, [self.tensor(node, x)], node, {}, {"other": cy})

    def _not_equal(self, node: fx.Node, name: str) -> None:
        self.comparison(node, "equal", name + ".equal")
        equal = self.index.pop(node)
        self.add(node, "logical_not", name, [equal], node)

    def _logical_not(self, node: fx.Node, name: str) -> None:
        self.add(node, "logical_not", name, [self.tensor(node, node.args[0])], node)

    def bitwise(self, node: fx.Node, kind: str, name: str) -> None:
        """&, |, ^, ~: logical ops on bool tensors (bitwise ones on integers
        have no ai3 equivalent)."""
        dtypes = {self.torch_dtype(node, a) for a in node.args if isinstance(a, fx.Node)}
        if dtypes != {torch.bool}:
            raise unsupported(
                node,
                f"{kind.strip('_')} of {', '.join(sorted(map(str, dtypes)))} tensors; ai3 has it for bool ones only",
            )
        op = _BITWISE[kind]
        if op == "logical_not":
            return self._logical_not(node, name)
        self.comparison(node, op, name)

    def _where(self, node: fx.Node, name: str) -> None:
        if len(node.args) != 3 or node.kwargs:
            raise unsupported(node, "torch.where(cond) (the indices form); ai3 maps torch.where(cond, x, y)")
        cond, x, y = node.args
        self.select(node, name, cond, x, y)

    def _masked_fill(self, node: fx.Node, name: str) -> None:
        a = normalized(node, lambda input, mask, value: None)
        self.select(node, name, a["mask"], a["value"], a["input"])

    def select(self, node: fx.Node, name: str, cond: Any, x: Any, y: Any) -> None:
        """where(cond, x, y): at most one branch constant (in the other's
        dtype); a constant condition beside a computed branch (a causal
        mask, Funnel's token-type matrix expanded along the batch) made a
        computed one first (computed_condition)."""
        # (A constant expanded along the batch is its row, which broadcasts.)
        cx, cy = self.constant_like(node, x, y, row=True), self.constant_like(node, y, x, row=True)
        c = self.constant_or_row(node, cond)
        if c is not None and cx is not None and cy is not None:
            raise unsupported(node, "a where of constants only (expected to be folded while tracing)")
        if c is not None:
            inputs = [self.computed_condition(node, name, np.asarray(c, bool), x if cx is None else y)]
        else:
            inputs = [self.tensor(node, cond)]
        if cx is None and cy is None:
            return self.add(node, "where", name, inputs + [self.tensor(node, x), self.tensor(node, y)], node)
        if cx is not None and cy is not None:
            return self.select_constants(node, name, cond, cx, cy)
        other_is_x = cx is not None
        branch = y if other_is_x else x
        self.add(
            node, "where", name, inputs + [self.tensor(node, branch)], node,
            {"other_is_x": other_is_x}, {"other": cx if other_is_x else cy},
        )  # fmt: skip

    def computed_condition(self, node: fx.Node, name: str, c: np.ndarray, branch: fx.Node) -> int:
        """The constant condition `c` as a computed bool tensor, which the
        core's where reads: equal(b, b) of the computed branch b, or'ed with
        True (all True, even where b is NaN), and'ed with c (exactly its
        values, broadcast with b), as ai3.onnx maps a Where of a constant
        condition."""
        b, shape = self.tensor(node, branch), _input_shape(node)
        same = self.emit(node, "equal", f"{name}.same", [b, b], {}, None, shape)
        true = self.emit(node, "logical_or", f"{name}.true", [same], {}, {"other": np.asarray(True)}, shape)
        return self.emit(node, "logical_and", f"{name}.condition", [true], {}, {"other": c}, shape)

    def select_constants(self, node: fx.Node, name: str, cond: Any, cx: np.ndarray, cy: np.ndarray) -> None:
        """where(cond, x, y) with both branches constant (T5's
        `where(mask, position_bias, finfo.min)`, the bias folded from
        parameters): the core's where takes one constant branch, so y is
        made a computed tensor first, float(cond) * 0 + y (exactly y, even
        at -inf, shaped like cond broadcast with y), and x stays the
        constant."""
        dtype = _CORE_DTYPES.get(self.torch_dtype(node, node))  # the result's, as traced
        if dtype not in ("float32", "float64"):
            raise unsupported(node, f"where with two constant {dtype} branches (ai3 maps float ones)")
        cx, cy = np.asarray(cx, dtype), np.asarray(cy, dtype)
        shape = tuple(_values(cond)[0].shape)
        cast = self.emit(node, "cast", f"{name}.cast", [self.tensor(node, cond)], {"to": dtype}, input_shape=shape)
        zero = self.emit(
            node,
            "mul",
            f"{name}.zero",
            [cast],
            {"reverse": False},
            {"other": np.zeros((), cy.dtype)},
            input_shape=shape,
        )
        branch = self.emit(node, "add", f"{name}.other", [zero], {"reverse": False}, {"other": cy}, input_shape=shape)
        inputs = [self.tensor(node, cond), branch]
        self.add(node, "where", name, inputs, node, {"other_is_x": True}, {"other": cx})

    def cast(self, node: fx.Node, name: str, dtype: Any) -> None:
        """A cast of node.args[0] to `dtype`; of a constant (Funnel's
        `ones.type_as(x)`, which reads x for its dtype only), the constant
        cast, and of one expanded along the batch, its row cast."""
        x = node.args[0]
        if isinstance(x, fx.Node) and (x in self.consts or x in self.expanded):
            table = self.consts if x in self.consts else self.expanded
            table[node] = table[x].to(dtype)
            return
        dtype = _COMPUTED_AS.get(dtype, dtype)
        if dtype not in _CORE_DTYPES:
            raise unsupported(node, f"a cast to {dtype}; ai3 has float32, float64, int64 and bool tensors")
        if self.torch_dtype(node, x) == dtype:
            return self.alias(node, x)
        self.add(node, "cast", name, [self.tensor(node, x)], node, {"to": _CORE_DTYPES[dtype]})

    def _to(self, node: fx.Node, name: str) -> None:
        """x.to(dtype) / x.to(device) / x.type(dtype): a cast, or nothing
        (a device move: ai3 runs where the model is)."""
        dtypes = [a for a in list(node.args[1:]) + list(node.kwargs.values()) if isinstance(a, torch.dtype)]
        if not dtypes:
            return self.alias(node, node.args[0])
        self.cast(node, name, dtypes[0])

    def _float(self, node: fx.Node, name: str) -> None:
        self.cast(node, name, torch.float32)

    def _double(self, node: fx.Node, name: str) -> None:
        self.cast(node, name, torch.float64)

    def _long(self, node: fx.Node, name: str) -> None:
        self.cast(node, name, torch.int64)

    def _bool(self, node: fx.Node, name: str) -> None:
        self.cast(node, name, torch.bool)

    def _int(self, node: fx.Node, name: str) -> None:
        self.cast(node, name, torch.int32)

    def _cumsum(self, node: fx.Node, name: str) -> None:
        """torch.cumsum(input, dim, dtype=None): of a bool or integer input
        an int64 sum, as torch gives; with dtype, of the input cast to it."""
        a = normalized(node, lambda input, dim, *, dtype=None: None)
        x = self.tensor(node, a["input"])
        source = self.torch_dtype(node, a["input"])
        to = a["dtype"] or (torch.int64 if source is not None and not source.is_floating_point else None)
        to = _COMPUTED_AS.get(to, to)
        if to is not None and to != source:
            if to not in _CORE_DTYPES:
                raise unsupported(node, f"a cumsum in {to}; ai3 has float32, float64 and int64 sums")
            x = self.emit(node, "cast", f"{name}.to_{_CORE_DTYPES[to]}", [x], {"to": _CORE_DTYPES[to]})
        self.add(node, "cumsum", name, [x], node, {"axis": a["dim"]})

    def _argmax(self, node: fx.Node, name: str, op: str = "argmax") -> None:
        """torch.argmax / argmin(input, dim=None, keepdim=False): along dim,
        or over the flattened input without one (keepdim then keeps every
        dim as size 1, as torch)."""
        a = normalized(node, lambda input, dim=None, keepdim=False: None)
        x = self.tensor(node, a["input"])
        if a["dim"] is not None:
            self.add(node, op, name, [x], node, {"axis": int(a["dim"]), "keepdim": bool(a["keepdim"])})
            return
        rank = _rank(node)
        if rank is None:
            raise unsupported(node, f"{op} without a dim needs the input's rank: pass sample_input_shape")
        flat = self.emit(node, "reshape", f"{name}.flat", [x], {"shape": [-1]}, input_shape=_input_shape(node))
        if not a["keepdim"]:
            self.add(node, op, name, [flat], node, {"axis": 0})
            return
        found = self.emit(node, op, f"{name}.{op}", [flat], {"axis": 0, "keepdim": True})
        self.add(node, "reshape", name, [found], node, {"shape": [1] * rank})

    def _argmin(self, node: fx.Node, name: str) -> None:
        self._argmax(node, name, "argmin")

    def _topk(self, node: fx.Node, name: str) -> None:
        """torch.topk(input, k, dim=-1, largest=True, sorted=True): topk
        (the indices, best first, ties by index: an order sorted=False
        allows too) and gather_elements of the input by them; the result
        is (values, indices)."""
        a = normalized(node, lambda input, k, dim=-1, largest=True, sorted=True: None)
        if _values(node) is None:
            raise unsupported(node, "torch.topk needs the tensors' shapes: pass sample_input_shape to swap_backend")
        if not isinstance(a["k"], int) or not isinstance(a["dim"], int):
            raise unsupported(node, f"a k or dim that is not a constant int ({a['k']!r}, {a['dim']!r})")
        (i1, i2) = self.shapes(node, a["input"])
        dim = a["dim"] % max(len(i1), 1)
        if i1[dim] != i2[dim]:
            raise unsupported(node, "a top-k along a dimension that depends on the batch size")
        x = self.tensor(node, a["input"])
        attrs = {"k": a["k"], "axis": dim, "largest": bool(a["largest"])}
        indices = self.emit(node, "topk", f"{name}.indices", [x], attrs, input_shape=tuple(i1))
        values = self.emit(
            node, "gather_elements", f"{name}.values", [x, indices], {"axis": dim}, input_shape=tuple(i1)
        )
        self.pieces[node] = [values, indices]

    def _getattr(self, node: fx.Node, name: str) -> None:
        """`.values` / `.indices` of a (values, indices) result (torch.topk's):
        that element, as result[0] / result[1]."""
        source, field = node.args
        if field not in _RESULT_FIELDS or not self.element(node, source, _RESULT_FIELDS[field]):
            raise unsupported(node, f"the attribute '{field}' of '{getattr(source, 'name', source)}'")

    def _triu(self, node: fx.Node, name: str, upper: bool = True) -> None:
        """torch.triu / tril(input, diagonal=0), and their in-place forms."""
        a = normalized(node, lambda input, diagonal=0: None)
        if not isinstance(a["diagonal"], int):
            raise unsupported(node, f"a diagonal that is not a constant int ({a['diagonal']!r})")
        attrs = {"upper": upper, "k": int(a["diagonal"])}
        self.add(node, "trilu", name, [self.tensor(node, a["input"])], node, attrs)

    def _tril(self, node: fx.Node, name: str) -> None:
        self._triu(node, name, upper=False)

    def _gather(self, node: fx.Node, name: str) -> None:
        """torch.gather(input, dim, index): gather_elements of a computed or
        constant input. A constant row expanded along the batch (RoBERTa's
        buffered token types, gathered by position) is an embedding-like
        gather of that row: out[b, j] = row[index[b, j]]."""
        a = normalized(node, lambda input, dim, index, *, sparse_grad=False: None)
        data, index = a["input"], a["index"]
        if isinstance(data, fx.Node) and data in self.expanded:
            row = self.expanded[data]
            if row.dim() != 2 or row.shape[0] != 1 or a["dim"] not in (1, -1):
                raise unsupported(
                    node, "gather along the batch-expanded constant's rows (ai3 gathers from a (1, N) row along dim 1)"
                )
            table = row[0].detach().cpu().numpy()
            return self.add(node, "gather", name, [self.tensor(node, index)], node, {"axis": 0}, {"other": table})
        constant = self.constant(node, data)
        if constant is None:
            inputs = [self.tensor(node, data), self.tensor(node, index)]
            return self.add(node, "gather_elements", name, inputs, node, {"axis": a["dim"]})
        inputs = [self.tensor(node, index)]
        self.add(node, "gather_elements", name, inputs, node, {"axis": a["dim"]}, {"other": constant})

    def _scatter(self, node: fx.Node, name: str, reduce: Any = "given") -> None:
        """torch.scatter(input, dim, index, src, reduce=None), scatter_add
        and scatter_reduce(..., reduce, include_self=True), and their
        in-place forms: scatter_elements of the input with src (cut to the
        index's shape, as torch reads it) at the index, computed or
        constant. A number for src, reduce="mean" and include_self=False
        are refused."""
        a = normalized(node, lambda input, dim, index, src=None, reduce=None, *, value=None, include_self=True: None)
        reduce = a["reduce"] if reduce == "given" else reduce
        if reduce not in _SCATTER_REDUCTIONS or not a["include_self"]:
            raise unsupported(node, f"a scatter with reduce={reduce!r}, include_self={a['include_self']}")
        src = a["src"]
        if not isinstance(src, fx.Node) or self.constant(node, src) is not None:
            raise unsupported(node, "a scatter of a number or a constant; ai3 scatters a tensor computed in forward")
        index, dim = a["index"], a["dim"]
        if not isinstance(dim, int):
            raise unsupported(node, f"a scatter along dim {dim!r}, not a constant int")
        table = self.constant(node, index)
        (s1, s2) = self.shapes(node, src)
        (j1, j2) = (table.shape, table.shape) if table is not None else self.shapes(node, index)
        updates = self.tensor(node, src)
        for axis, (p, q, m, n) in enumerate(zip(s1, s2, j1, j2)):
            if (p, q) == (m, n):
                continue
            if m != n:
                raise unsupported(node, "a scatter whose src is cut to the index along the batch")
            attrs = {"axis": axis, "start": 0, "stop": int(m), "step": 1}
            updates = self.emit(node, "slice", f"{name}.src{axis}", [updates], attrs)
        attrs = {"axis": dim, "reduction": _SCATTER_REDUCTIONS[reduce]}
        if table is None:
            inputs = [self.tensor(node, a["input"]), self.tensor(node, index), updates]
            return self.add(node, "scatter_elements", name, inputs, node, attrs)
        inputs = [self.tensor(node, a["input"]), updates]
        self.add(node, "scatter_elements", name, inputs, node, attrs, {"indices": table.astype(np.int64)})

    def _scatter_add(self, node: fx.Node, name: str) -> None:
        self._scatter(node, name, "add")

    def _scatter_reduce(self, node: fx.Node, name: str) -> None:
        self._scatter(node, name)

    def _grid_sample(self, node: fx.Node, name: str) -> None:
        """F.grid_sample(input, grid, mode, padding_mode, align_corners):
        grid_sample of the input at the grid's points (both computed: a
        spatial transformer's affine grid, a flow added to a base grid)."""
        a = normalized(node, lambda input, grid, mode="bilinear", padding_mode="zeros", align_corners=None: None)
        if a["mode"] not in ("bilinear", "nearest", "bicubic"):
            raise unsupported(node, f"grid_sample mode {a['mode']!r}")
        if a["padding_mode"] not in ("zeros", "border", "reflection"):
            raise unsupported(node, f"grid_sample padding_mode {a['padding_mode']!r}")
        attrs = {"mode": a["mode"], "padding_mode": a["padding_mode"], "align_corners": bool(a["align_corners"])}
        inputs = [self.tensor(node, a["input"]), self.tensor(node, a["grid"])]
        self.add(node, "grid_sample", name, inputs, node, attrs)

    def _type_as(self, node: fx.Node, name: str) -> None:
        self.cast(node, name, self.torch_dtype(node, node.args[1]))

    def _layer_norm(self, node: fx.Node, name: str) -> None:
        a = normalized(node, lambda input, normalized_shape, weight=None, bias=None, eps=1e-5: None)
        w = self.weights(node, a, ("weight", "bias"))
        attrs, weights = params.layernorm(a["normalized_shape"], w["weight"], w["bias"], a["eps"])
        self.add(node, "layernorm", name, [self.tensor(node, a["input"])], node, attrs, weights)

    # -- issue 17 (helper N2): deconvolution, resampling, norms, shuffles --
    def _weights(self, node: fx.Node, a: dict[str, Any], names: tuple[str, ...]) -> list[Any]:
        """The model's own tensors named `names` in a (None where absent);
        a computed one is refused."""
        out = []
        for k in names:
            w = None if a[k] is None else self.constant(node, a[k])
            if a[k] is not None and w is None:
                raise unsupported(node, f"a computed {k} (only the model's own tensors)")
            out.append(w)
        return out

    def _interpolate(self, node: fx.Node, name: str) -> None:
        a = normalized(
            node,
            lambda input, size=None, scale_factor=None, mode="nearest", align_corners=None, recompute_scale_factor=None, antialias=False: (
                None
            ),
        )
        if a.get("antialias"):
            raise unsupported(node, "antialias=True is not supported")
        try:
            attrs = params.interpolate(
                a["size"],
                a["scale_factor"],
                a["mode"],
                a["align_corners"],
                a["recompute_scale_factor"],
                _input_shape(node),
                name,
            )
        except errors.UnsupportedOperation as e:
            raise unsupported(node, str(e).split(": ", 1)[1]) from None
        self.add(node, "resize", name, [self.tensor(node, a["input"])], node, attrs)

    def _conv_transpose2d(self, node: fx.Node, name: str) -> None:
        a = normalized(
            node, lambda input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1: None
        )
        weight, bias = self._weights(node, a, ("weight", "bias"))
        attrs = params.conv_transpose2d_attrs(
            a["stride"],
            a["padding"],
            a["output_padding"],
            a["groups"],
            a["dilation"],
            f"conv_transpose2d layer '{name}'",
        )
        self.add(
            node,
            "conv_transpose2d",
            name,
            [self.tensor(node, a["input"])],
            node,
            attrs,
            {"weight": weight, "bias": bias},
        )

    def _group_norm(self, node: fx.Node, name: str) -> None:
        a = normalized(node, lambda input, num_groups, weight=None, bias=None, eps=1e-5: None)
        w, b = self._weights(node, a, ("weight", "bias"))
        attrs, weights = params.groupnorm(a["num_groups"], a["eps"], w, b)
        self.add(node, "groupnorm", name, [self.tensor(node, a["input"])], node, attrs, weights)

    def _instance_norm(self, node: fx.Node, name: str) -> None:
        a = normalized(
            node,
            lambda input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True, momentum=0.1, eps=1e-5: (
                None
            ),
        )
        if not a["use_input_stats"]:
            raise unsupported(node, "instance_norm by running statistics (use_input_stats=False) is not supported")
        w, b = self._weights(node, a, ("weight", "bias"))
        attrs, weights = params.groupnorm(0, a["eps"], w, b)
        self.add(node, "groupnorm", name, [self.tensor(node, a["input"])], node, attrs, weights)

    def _rms_norm(self, node: fx.Node, name: str) -> None:
        a = normalized(node, lambda input, normalized_shape, weight=None, eps=None: None)
        (w,) = self._weights(node, a, ("weight",))
        attrs, weights = params.rmsnorm(a["normalized_shape"], w, a["eps"])
        self.add(node, "rmsnorm", name, [self.tensor(node, a["input"])], node, attrs, weights)

    def _local_response_norm(self, node: fx.Node, name: str) -> None:
        a = normalized(node, lambda input, size, alpha=1e-4, beta=0.75, k=1.0: None)
        self.add(
            node,
            "lrn",
            name,
            [self.tensor(node, a["input"])],
            node,
            params.lrn(a["size"], a["alpha"], a["beta"], a["k"]),
        )

    def _pixel_shuffle(self, node: fx.Node, name: str) -> None:
        a = normalized(node, lambda input, upscale_factor: None)
        self.add(
            node,
            "depth_to_space",
            name,
            [self.tensor(node, a["input"])],
            node,
            {"blocksize": int(a["upscale_factor"]), "mode": "CRD"},
        )

    def _pixel_unshuffle(self, node: fx.Node, name: str) -> None:
        a = normalized(node, lambda input, downscale_factor: None)
        self.add(
            node,
            "space_to_depth",
            name,
            [self.tensor(node, a["input"])],
            node,
            {"blocksize": int(a["downscale_factor"]), "mode": "CRD"},
        )

    def _gelu(self, node: fx.Node, name: str) -> None:
        a = normalized(node, lambda input, approximate="none": None)
        self.add(node, "gelu", name, [self.tensor(node, a["input"])], node, {"approximate": a["approximate"]})

    def _leaky_relu(self, node: fx.Node, name: str) -> None:
        a = normalized(node, lambda input, negative_slope=0.01, inplace=False: None)
        self.add(node, "leaky_relu", name, [self.tensor(node, a["input"])], node, {"alpha": float(a["negative_slope"])})

    def _hardsigmoid(self, node: fx.Node, name: str) -> None:
        a = normalized(node, lambda input, inplace=False: None)
        self.add(node, "hardsigmoid", name, [self.tensor(node, a["input"])], node, params.TORCH_HARDSIGMOID)

    def _flatten(self, node: fx.Node, name: str) -> None:
        a = normalized(node, lambda input, start_dim=0, end_dim=-1: None)
        self.add(
            node,
            "flatten",
            name,
            [self.tensor(node, a["input"])],
            node,
            {"start_dim": a["start_dim"], "end_dim": a["end_dim"]},
        )

    def _cat(self, node: fx.Node, name: str) -> None:
        a = normalized(node, lambda tensors, dim=0, axis=None: None)
        dim = a["dim"] if a["axis"] is None else a["axis"]
        items = list(a["tensors"])
        is_const = [isinstance(t, fx.Node) and (t in self.expanded or t in self.consts) for t in items]
        if not any(is_const):
            self.add(node, "concat", name, self.inputs_of(node, items), node, {"axis": int(dim)})
            return
        self.cat_with_constants(node, name, items, is_const, int(dim))

    def cat_with_constants(self, node: fx.Node, name: str, items: list, is_const: list[bool], dim: int) -> None:
        """A concat with constants at either end (ViT's class token, a
        parameter expanded along the batch): the computed tensors' concat,
        zero-padded along the axis where the constants go, plus the
        constants over zeros: exact (x + 0 = x, 0 + c = c), and no op has
        to make a tensor of the batch's size from nothing."""
        if all(is_const):
            raise unsupported(node, "concatenates constants only")
        first = is_const.index(False)
        last = len(items) - is_const[::-1].index(False)
        if any(is_const[first:last]):
            raise unsupported(
                node, "a constant between computed tensors; ai3 concatenates constants at either end only"
            )
        (o1, o2) = self.shapes(node, node)
        axis = dim % len(o1)
        if o1[axis] != o2[axis] or any(o1[i] != o2[i] for i in range(len(o1)) if i not in (0, axis)):
            raise unsupported(node, "a concat with constants along, or of tensors with, batch-dependent dimensions")
        middle = [self.tensor(node, t) for t in items[first:last]]
        x = middle[0] if len(middle) == 1 else self.emit(node, "concat", f"{name}.tensors", middle, {"axis": axis})
        # Each constant with its batch dim at 1 (it repeats over the batch).
        consts = []
        for t in items[:first] + items[last:]:
            value = self.expanded[t] if t in self.expanded else self.consts[t]
            if value.dim() != len(o1) or value.shape[0] != 1:
                raise unsupported(
                    node, f"the constant '{t.name}' of shape {tuple(value.shape)} does not repeat over the batch"
                )
            length = self.values(node, t)[0].shape[axis] if t in self.expanded else value.shape[axis]
            target = (1,) + tuple(o1[1:axis]) + (int(length),) + tuple(o1[axis + 1 :])
            consts.append(np.broadcast_to(value.detach().cpu().numpy(), target))
        before = sum(c.shape[axis] for c in consts[:first])
        after = sum(c.shape[axis] for c in consts[first:])
        rows = int(o1[axis]) - before - after
        zeros_shape = (1,) + tuple(o1[1:axis]) + (rows,) + tuple(o1[axis + 1 :])
        other = np.concatenate(
            consts[:first] + [np.zeros(zeros_shape, dtype=consts[0].dtype)] + consts[first:], axis=axis
        )
        padded = self.pad_axis(node, name, x, tuple(o1[:axis]) + (rows,) + tuple(o1[axis + 1 :]), axis, before, after)
        self.add(node, "add", name, [padded], node, {"reverse": False}, {"other": other})

    def pad_axis(
        self, node: fx.Node, name: str, x: int, shape: tuple[int, ...], axis: int, before: int, after: int
    ) -> int:
        """Spec `x` (of `shape` at the sample batch) zero-padded along one
        non-batch axis: pad2d on H or W of a rank-4 tensor directly, else a
        pad2d of the H axis of a (N, prod(dims before), dims[axis],
        prod(dims after)) view of it."""
        if len(shape) == 4 and axis in (2, 3):
            padding = (before, after, 0, 0) if axis == 2 else (0, 0, before, after)
            return self.emit(node, "pad2d", f"{name}.pad", [x], {"padding": padding, "value": 0.0}, input_shape=shape)
        if axis == 0:
            raise unsupported(node, "a concat with constants along the batch axis")
        outer = int(np.prod(shape[1:axis], dtype=np.int64))
        inner = int(np.prod(shape[axis + 1 :], dtype=np.int64))
        view = (shape[0], outer, shape[axis], inner)
        r = self.emit(
            node, "reshape", f"{name}.pad_in", [x], {"shape": [0, outer, int(shape[axis]), inner]}, input_shape=shape
        )
        p = self.emit(
            node, "pad2d", f"{name}.pad", [r], {"padding": (before, after, 0, 0), "value": 0.0}, input_shape=view
        )
        back = [0, *shape[1:axis], shape[axis] + before + after, *shape[axis + 1 :]]
        padded_view = (shape[0], outer, shape[axis] + before + after, inner)
        return self.emit(
            node, "reshape", f"{name}.pad_out", [p], {"shape": [int(d) for d in back]}, input_shape=padded_view
        )

    def _expand(self, node: fx.Node, name: str) -> None:
        source = node.args[0]
        (o1, o2) = self.shapes(node, node)
        if source in self.consts:
            self.expanded[node] = self.consts[source]  # broadcasts over the batch where it is used
            return
        (i1, i2) = self.shapes(node, source)
        if (i1, i2) == (o1, o2):
            return self.alias(node, source)
        # The core's expand (issue 17): the target shape, -1 (the input's
        # size) where it follows the batch.
        lead = len(o1) - len(i1)
        if any(o1[d] != o2[d] and (d < lead or i1[d - lead] != o1[d]) for d in range(len(o1))):
            raise unsupported(node, "expand to a batch-dependent size the input does not have")
        target = [-1 if o1[d] != o2[d] else int(o1[d]) for d in range(len(o1))]
        self.add(node, "expand", name, [self.tensor(node, source)], node, {"shape": target})

    def _reshape(self, node: fx.Node, name: str) -> None:
        x = node.args[0]
        src = self.tensor(node, x)
        if _values(node) is None:
            # Traced without samples: only literal shapes can be mapped.
            dims = node.args[1:] if node.target not in (torch.reshape,) else node.args[1]
            dims = list(dims[0]) if len(dims) == 1 and isinstance(dims[0], (list, tuple)) else list(dims)
            if node.target not in ("view", "reshape", torch.reshape) or not all(
                isinstance(d, int) and d != 0 for d in dims
            ):
                raise unsupported(node, "needs the tensors' shapes: pass sample_input_shape to swap_backend")
            self.add(node, "reshape", name, [src], node, {"shape": dims})
            return
        self.reshape_as_traced(node, name, x)

    def reshape_as_traced(self, node: fx.Node, name: str, source: fx.Node) -> None:
        """`node` as a reshape of `source`, its target read from the two
        traced samples (-1 where it follows the batch); an alias where the
        shapes agree."""
        (i1, i2), (o1, o2) = self.shapes(node, source), self.shapes(node, node)
        if (i1, i2) == (o1, o2):
            return self.alias(node, source)
        try:
            target = shapes.reshape_target(i1, i2, o1, o2)
        except ValueError as e:
            raise unsupported(node, str(e)) from e
        self.add(node, "reshape", name, [self.tensor(node, source)], node, {"shape": target})

    def dims_arg(self, node: fx.Node) -> list[int]:
        dims = node.args[1:] if "dims" not in node.kwargs else (node.kwargs["dims"],)
        if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
            dims = dims[0]
        if not all(isinstance(d, int) for d in dims):
            raise unsupported(node, f"permutation must be ints, got {dims!r}")
        return list(dims)

    def _permute(self, node: fx.Node, name: str) -> None:
        x = node.args[0]
        rank = len(self.shapes(node, x)[0]) if _values(x) is not None else len(self.dims_arg(node))
        try:
            perm = shapes.permutation(rank, self.dims_arg(node))
        except ValueError as e:
            raise unsupported(node, str(e)) from e
        self.permute(node, name, x, perm)

    def permute(self, node: fx.Node, name: str, x: fx.Node, perm: list[int]) -> None:
        if shapes.is_identity(perm):
            self.alias(node, x)
        else:
            self.add(node, "permute", name, [self.tensor(node, x)], node, {"dims": perm})

    def _transpose(self, node: fx.Node, name: str) -> None:
        x, a, b = (
            node.args[0],
            node.args[1] if len(node.args) > 1 else node.kwargs.get("dim0"),
            node.args[2] if len(node.args) > 2 else node.kwargs.get("dim1"),
        )
        rank = _tensor_shape(x)
        if rank is None:
            raise unsupported(node, "needs the tensors' shapes: pass sample_input_shape to swap_backend")
        self.permute(node, name, x, shapes.transposition(len(rank), int(a), int(b)))

    def element(self, node: fx.Node, source: Any, index: Any) -> bool:
        """`node` as element `index` of `source`, a call whose result is a
        tuple of mapped pieces (or a refused call); False for any other
        source."""
        if self.index.get(source) == _REFUSED:
            # An element of a refused call's tuple: the refusal is that call's.
            self.index[node] = _REFUSED
            return True
        if source not in self.pieces:
            return False
        piece = self.pieces[source][index]
        if piece is None:
            raise unsupported(node, f"element {index} of '{source.name}' has no ai3 equivalent")
        if isinstance(piece, tuple):  # a tuple inside the tuple (an LSTM's (h_n, c_n))
            self.pieces[node] = list(piece)
        else:
            self.index[node] = piece
        return True

    def _getitem(self, node: fx.Node, name: str) -> None:
        source, index = node.args
        if self.element(node, source, index):
            return
        if source in self.aranges:  # arange(B)[:, None, None]: still an index, still no spec
            self.aranges.add(node)
            return
        if isinstance(index, fx.Node) or (isinstance(index, tuple) and any(isinstance(i, fx.Node) for i in index)):
            return self.tensor_index(node, name, source, index if isinstance(index, tuple) else (index,))
        (i1, i2), (o1, o2) = self.shapes(node, source), self.shapes(node, node)
        try:
            slices, reshape = index_slices(index, i1, i2)
        except ValueError as e:
            raise unsupported(node, str(e)) from e
        current, c1, c2 = self.tensor(node, source), list(i1), list(i2)
        for n, (axis, start, stop, step) in enumerate(slices):
            attrs = {"axis": axis, "start": start, "stop": stop, "step": step}
            current = self.emit(node, "slice", f"{name}.slice{n}", [current], attrs, input_shape=tuple(c1))
            for c in (c1, c2):
                c[axis] = len(range(*slice(start, stop, step).indices(c[axis])))
        if reshape and (tuple(c1), tuple(c2)) != (o1, o2):
            target = shapes.reshape_target(c1, c2, o1, o2)
            current = self.emit(node, "reshape", name, [current], {"shape": target}, input_shape=tuple(c1))
        self.index[node] = current

    def setitem(self, node: fx.Node) -> None:
        """x[index] = value, index basic (ints and step-1 slices, or ...),
        value a computed tensor that broadcasts to x[index]: x is rebuilt
        around the region by a concat along each sliced axis (the innermost
        first, each on x's band along the axes before it), and the nodes
        after this one read that result for x (as for an in-place call,
        alias_in_place). Refused where another tensor shares x's storage
        and is read later (a view of x, or x a view of it), whose change
        the rebuilt copy would not carry."""
        x, index, value = node.args
        name = self.name_of(node)
        if not isinstance(x, fx.Node) or x in self.consts:
            raise unsupported(node, "an item assignment into a constant tensor (made in forward from no input)")
        if not isinstance(value, fx.Node):
            raise unsupported(node, f"assigning {value!r}; ai3 maps assigning a tensor computed in forward")
        if _values(node) is None:
            raise unsupported(
                node, "item assignment needs the tensors' shapes: pass sample_input_shape to swap_backend"
            )
        self.check_unshared(node, x)
        (i1, i2) = self.shapes(node, x)
        items = list(index) if isinstance(index, tuple) else [index]
        if any(it is None for it in items):
            raise unsupported(node, "an item assignment indexed with None")
        try:
            slices, dropped = index_slices(index, i1, i2)
        except ValueError as e:
            raise unsupported(node, str(e)) from e
        bounds: list[tuple[int, int, int]] = []  # (axis, start, stop), END to the end
        for axis, start, stop, step in slices:
            (s1, e1), (s2, e2) = (slice(start, stop).indices(d)[:2] for d in (i1[axis], i2[axis]))
            to_end = e1 == i1[axis] and e2 == i2[axis]
            if step != 1 or s1 != s2 or not (to_end or e1 == e2):
                raise unsupported(node, f"an item assignment along axis {axis} that is not a fixed step-1 slice")
            bounds.append((axis, s1, END if to_end else e1))
        region = [list(i1), list(i2)]
        for axis, start, stop in bounds:
            for r, i in zip(region, (i1, i2)):
                r[axis] = min(stop, i[axis]) - start
        # The value, broadcast to x[index] (torch's view) and then shaped as
        # the region, the axes of int indices kept.
        (w1, w2) = (tuple(torch.empty(i, device="meta")[index].shape) for i in (i1, i2))
        current = self.value_as(node, name, value, w1, w2, self.torch_dtype(node, x))
        if dropped:
            target = shapes.reshape_target(w1, w2, region[0], region[1])
            current = self.emit(node, "reshape", f"{name}.region", [current], {"shape": target}, input_shape=w1)
        source = self.tensor(node, x)

        def band(k: int) -> int:  # x along the bounds of the first k sliced axes
            out = source
            for n, (axis, start, stop) in enumerate(bounds[:k]):
                attrs = {"axis": axis, "start": start, "stop": stop, "step": 1}
                out = self.emit(node, "slice", f"{name}.band{k}.{n}", [out], attrs)
            return out

        for k in reversed(range(len(bounds))):
            axis, start, stop = bounds[k]
            base = band(k)
            parts = []
            if start > 0:
                attrs = {"axis": axis, "start": 0, "stop": start, "step": 1}
                parts.append(self.emit(node, "slice", f"{name}.before{k}", [base], attrs))
            parts.append(current)
            if stop != END and stop < i1[axis]:
                attrs = {"axis": axis, "start": stop, "stop": END, "step": 1}
                parts.append(self.emit(node, "slice", f"{name}.after{k}", [base], attrs))
            if len(parts) > 1:
                current = self.emit(node, "concat", f"{name}.concat{k}", parts, {"axis": axis})
        self.index[node] = current
        self.index[x] = current  # what the nodes after this one read for x

    def check_unshared(self, node: fx.Node, x: fx.Node) -> None:
        """Refuses an assignment into x (`node`) where another node's value
        shares x's storage and a node after this one reads it."""
        first = _values(x)[0] if _values(x) is not None else None
        if not isinstance(first, torch.Tensor):
            raise unsupported(node, f"an item assignment into '{x.name}', which is not a tensor")
        storage = first.untyped_storage().data_ptr()
        order = {n: i for i, n in enumerate(self.gm.graph.nodes)}
        for other in self.gm.graph.nodes:
            if other is node:
                break
            vals = _values(other)
            t = vals[0] if vals is not None else None
            if other is x or not isinstance(t, torch.Tensor) or t.untyped_storage().data_ptr() != storage:
                continue
            if any(order[u] > order[node] for u in other.users):
                raise unsupported(
                    node,
                    f"an item assignment into '{x.name}', whose storage '{other.name}' shares and a later node reads;"
                    " ai3 assigns into a copy",
                )

    def value_as(
        self, node: fx.Node, name: str, value: fx.Node, w1: tuple, w2: tuple, dtype: torch.dtype | None
    ) -> int:
        """The spec of `value` broadcast to shapes (w1, w2) and cast to
        `dtype` (torch casts an assigned value to the target's dtype)."""
        (v1, v2) = self.shapes(node, value)
        current = self.tensor(node, value)
        if dtype is not None and dtype != self.torch_dtype(node, value):
            if dtype not in _CORE_DTYPES:
                raise unsupported(node, f"an item assignment into a {dtype} tensor")
            current = self.emit(node, "cast", f"{name}.cast", [current], {"to": _CORE_DTYPES[dtype]})
        if (tuple(v1), tuple(v2)) == (w1, w2):
            return current
        lead = len(w1) - len(v1)
        if lead < 0:
            raise unsupported(node, f"a value of shape {tuple(v1)} assigned to a region of shape {w1}")
        u1, u2 = (1,) * lead + tuple(v1), (1,) * lead + tuple(v2)
        target = []
        for p, q, s, t in zip(u1, u2, w1, w2):
            if (p, q) == (s, t):
                target.append(-1)
            elif p == q == 1 and s == t:
                target.append(int(s))
            else:
                raise unsupported(node, f"a value of shape {tuple(v1)} that does not broadcast to the region {w1}")
        return self.emit(node, "expand", f"{name}.expand", [current], {"shape": target}, input_shape=tuple(v1))

    def _zeros(self, node: fx.Node, name: str) -> None:
        """torch.zeros (zeros_like, new_zeros) of a batch-dependent size (a
        constant one was folded in fold()): the zero initial state a model gives its nn.LSTM / nn.GRU
        (ai3.torch.rnn), which no core layer needs to compute."""
        self.zeros.add(node)

    def _arange(self, node: fx.Node, name: str) -> None:
        """torch.arange of a batch-dependent size (a constant one was folded
        in fold()). Hugging Face's masks index the padding mask with it,
        `mask[arange(B)[:, None, None, None], arange(S)[None, None, None, :]]`,
        which only reorders the mask's dims: tensor_index turns that into a
        reshape. No core op computes the arange itself."""
        self.aranges.add(node)

    def index_value(self, node: fx.Node, i: Any, k: int) -> torch.Tensor:
        """Index tensor `i` of `node` as it was on sample k."""
        if isinstance(i, torch.Tensor):
            return i
        if isinstance(i, fx.Node) and i in self.consts:
            return self.consts[i]
        vals = _values(i) if isinstance(i, fx.Node) else None
        if vals is None or not isinstance(vals[k], torch.Tensor):
            raise unsupported(node, f"indexing with {i!r}, which is not a tensor ai3 knows the values of")
        return vals[k]

    def tensor_index(self, node: fx.Node, name: str, source: fx.Node, index: tuple[Any, ...]) -> None:
        """x[i0, i1, ...] with one int64 index tensor per dim of x. ai3 has
        no general advanced indexing; it maps the case where, on both traced
        samples, each index i_d is arange(x.shape[d]) along one axis of the
        broadcast result, those axes in increasing order (or all zeros on a
        dim of size 1): then x[i0, i1, ...] is x with size-1 axes inserted,
        a reshape. Since the two samples differ in the batch size, an index
        built from the batch (arange(B)) is checked at two sizes."""
        if any(not isinstance(i, (fx.Node, torch.Tensor)) for i in index):
            raise unsupported(node, "indexing that mixes tensors with slices or None is not supported")
        if source not in self.index or _values(source) is None:
            raise unsupported(node, "indexing by tensors is mapped only on a computed tensor traced with sample inputs")
        if any(i not in self.aranges and i not in self.consts for i in index if isinstance(i, fx.Node)):
            raise unsupported(node, "indexing by computed tensors is not supported (only by aranges and constants)")
        for k in range(2):
            x = _values(source)[k]
            idx = [self.index_value(node, i, k) for i in index]
            if len(idx) != x.dim() or any(t.dtype != torch.int64 for t in idx):
                raise unsupported(
                    node, f"indexing a rank-{x.dim()} tensor by {len(idx)} int64 tensors is not supported"
                )
            out = torch.broadcast_shapes(*(t.shape for t in idx))
            last = -1
            for d, t in enumerate(idx):
                t = t.expand(out)
                if x.shape[d] == 1 and not t.any():
                    continue  # a dim of size 1 indexed by zeros: broadcast
                axes = [a for a in range(len(out)) if out[a] > 1 and not (t == t.select(a, 0).unsqueeze(a)).all()]
                along = axes[0] if len(axes) == 1 else None
                if along is None or along <= last or out[along] != x.shape[d]:
                    raise unsupported(node, "indexing by tensors that do not take each dim in order is not supported")
                ramp = torch.arange(x.shape[d]).reshape([-1 if a == along else 1 for a in range(len(out))])
                if not (t == ramp).all():
                    raise unsupported(node, "indexing by tensors that do not take each dim in order is not supported")
                last = along
        self.reshape_as_traced(node, name, source)

    def split_into(self, node: fx.Node, name: str, x: fx.Node, dim: int, bounds: list[tuple[int, int]]) -> None:
        (i1, _) = self.shapes(node, x)
        src = self.tensor(node, x)
        axis = dim % len(i1)
        self.pieces[node] = [
            self.emit(
                node,
                "slice",
                f"{name}.{n}",
                [src],
                {"axis": axis, "start": s, "stop": e, "step": 1},
                input_shape=tuple(i1),
            )
            for n, (s, e) in enumerate(bounds)
        ]

    def split_dim(self, node: fx.Node, x: fx.Node, dim: int) -> int:
        (i1, i2) = self.shapes(node, x)
        if i1[dim] != i2[dim]:
            raise unsupported(node, "splitting the batch dimension is not supported")
        return int(i1[dim])

    def _chunk(self, node: fx.Node, name: str) -> None:
        a = normalized(node, lambda input, chunks, dim=0: None)
        size = self.split_dim(node, a["input"], a["dim"])
        self.split_into(node, name, a["input"], a["dim"], shapes.chunk_bounds(size, a["chunks"]))

    def _split(self, node: fx.Node, name: str) -> None:
        a = normalized(node, lambda input, split_size_or_sections, dim=0: None)
        size = self.split_dim(node, a["input"], a["dim"])
        try:
            bounds = shapes.split_bounds(size, a["split_size_or_sections"])
        except ValueError as e:
            raise unsupported(node, str(e)) from e
        self.split_into(node, name, a["input"], a["dim"], bounds)

    def _tensor_split(self, node: fx.Node, name: str) -> None:
        """torch.tensor_split(x, indices_or_sections, dim): slices, as split
        (torchvision's MViT keeps the class token apart from the pooled
        tokens with tensor_split(x, (1,), dim=2))."""
        # (its overloads name the second argument indices_or_sections,
        # indices or sections)
        a = normalized(node, lambda input, indices_or_sections=None, dim=0, indices=None, sections=None: None)
        size = self.split_dim(node, a["input"], a["dim"])
        how = next((a[k] for k in ("indices_or_sections", "indices", "sections") if a[k] is not None), None)
        if not (isinstance(how, int) and not isinstance(how, bool)) and not (
            isinstance(how, (list, tuple)) and all(isinstance(i, int) for i in how)
        ):
            raise unsupported(node, f"tensor_split by {how!r}; ai3 maps a number of sections or a list of indices")
        try:
            bounds = shapes.tensor_split_bounds(size, how)
        except ValueError as e:
            raise unsupported(node, str(e)) from e
        self.split_into(node, name, a["input"], a["dim"], bounds)

    def _unbind(self, node: fx.Node, name: str) -> None:
        """x.unbind(dim): a slice of size 1 per index along dim, reshaped
        without that dim (timm's attention: q, k, v = qkv.unbind(0))."""
        a = normalized(node, lambda input, dim=0: None)
        x, dim = a["input"], a["dim"]
        size = self.split_dim(node, x, dim)
        self.split_into(node, name, x, dim, [(i, i + 1) for i in range(size)])
        (i1, i2) = self.shapes(node, x)
        axis = dim % len(i1)
        c1, c2 = (tuple(1 if d == axis else n for d, n in enumerate(s)) for s in (i1, i2))
        o1, o2 = (tuple(n for d, n in enumerate(s) if d != axis) for s in (i1, i2))
        try:
            target = shapes.reshape_target(c1, c2, o1, o2)
        except ValueError as e:
            raise unsupported(node, str(e)) from e
        self.pieces[node] = [
            self.emit(node, "reshape", f"{name}.{n}.squeeze", [piece], {"shape": target}, input_shape=c1)
            for n, piece in enumerate(self.pieces[node])
        ]

    def _repeat_interleave(self, node: fx.Node, name: str) -> None:
        """x.repeat_interleave(repeats, dim) with an int `repeats`: each
        element repeated in place along dim ([a, a, b, b]), as a reshape
        adding a unit axis after dim, an expand along it and a reshape
        merging it back (GCViT's global queries)."""
        a = normalized(node, lambda input, repeats, dim=None, output_size=None: None)
        r, dim = a["repeats"], a["dim"]
        if not isinstance(r, int) or isinstance(r, bool) or dim is None:
            what = f"'{r.name}', computed in forward" if isinstance(r, fx.Node) else repr(r)
            raise unsupported(node, f"repeat_interleave with repeats {what}, dim={dim!r}; ai3 maps an int along a dim")
        (i1, i2), (o1, o2) = self.shapes(node, a["input"]), self.shapes(node, node)
        axis = dim % len(i1)
        if i1[axis] != i2[axis]:
            raise unsupported(node, "repeat_interleave along the batch dimension")
        u1, u2 = (tuple(s[: axis + 1]) + (1,) + tuple(s[axis + 1 :]) for s in (i1, i2))
        e1, e2 = (u[: axis + 1] + (r,) + u[axis + 2 :] for u in (u1, u2))
        try:
            into, back = shapes.reshape_target(i1, i2, u1, u2), shapes.reshape_target(e1, e2, o1, o2)
        except ValueError as e:
            raise unsupported(node, str(e)) from e
        x = self.emit(
            node, "reshape", f"{name}.unsqueeze", [self.tensor(node, a["input"])], {"shape": into}, input_shape=i1
        )
        spread = [-1] * (axis + 1) + [r] + [-1] * (len(i1) - axis - 1)
        x = self.emit(node, "expand", f"{name}.expand", [x], {"shape": spread}, input_shape=u1)
        self.add(node, "reshape", name, [x], node, {"shape": back})

    def _addcmul(self, node: fx.Node, name: str) -> None:
        """torch.addcmul(input, tensor1, tensor2, value=1): input + value *
        tensor1 * tensor2, each operand computed or a constant (ResMLP's
        affine: addcmul(beta, alpha, x))."""
        a = normalized(node, lambda input, tensor1, tensor2, *, value=1: None)
        value = a["value"]
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise unsupported(node, f"addcmul's value must be a number, got {value!r}")
        c1, c2 = self.constant(node, a["tensor1"]), self.constant(node, a["tensor2"])
        if c1 is not None and c2 is not None:  # a constant product beside a computed input
            if self.constant(node, a["input"]) is not None:
                raise unsupported(node, "addcmul of three constants (expected to be folded while tracing)")
            other = np.asarray(c1 * c2 * value)
            self.add(node, "add", name, [self.tensor(node, a["input"])], node, {"reverse": False}, {"other": other})
            return
        if c1 is None and c2 is None:
            prod = self.emit(
                node, "mul", f"{name}.mul", [self.tensor(node, a["tensor1"]), self.tensor(node, a["tensor2"])]
            )
            if value != 1:
                prod = self.emit(node, "mul", f"{name}.value", [prod], {"reverse": False}, {"other": np.asarray(value)})
        else:
            computed, const = (a["tensor2"], c1) if c1 is not None else (a["tensor1"], c2)
            other = np.asarray(const * value)
            prod = self.emit(
                node, "mul", f"{name}.mul", [self.tensor(node, computed)], {"reverse": False}, {"other": other}
            )
        base = self.constant(node, a["input"])
        if base is None:
            self.add(node, "add", name, [self.tensor(node, a["input"]), prod], node)
        else:
            self.add(node, "add", name, [prod], node, {"reverse": False}, {"other": base})

    def _stack(self, node: fx.Node, name: str) -> None:
        """torch.stack(tensors, dim): each tensor with a dim of size 1 at
        dim (a reshape), concatenated along it."""
        a = normalized(node, lambda tensors, dim=0: None)
        items = list(a["tensors"])
        (o1, o2) = self.shapes(node, node)
        axis = a["dim"] % len(o1)
        inputs = []
        for n, t in enumerate(items):
            (i1, i2) = self.shapes(node, t)
            u1, u2 = (tuple(s[:axis]) + (1,) + tuple(s[axis:]) for s in (i1, i2))
            try:
                target = shapes.reshape_target(i1, i2, u1, u2)
            except ValueError as e:
                raise unsupported(node, str(e)) from e
            src = self.tensor(node, t)
            inputs.append(self.emit(node, "reshape", f"{name}.{n}.unsqueeze", [src], {"shape": target}, input_shape=i1))
        self.add(node, "concat", name, inputs, node, {"axis": axis})

    def _roll(self, node: fx.Node, name: str) -> None:
        a = normalized(node, lambda input, shifts, dims=None: None)
        if a["dims"] is None:
            raise unsupported(node, "roll without dims (over the flattened tensor) is not supported")
        shifts = [a["shifts"]] if isinstance(a["shifts"], int) else list(a["shifts"])
        dims = [a["dims"]] if isinstance(a["dims"], int) else list(a["dims"])
        if len(shifts) != len(dims) or not all(isinstance(v, int) for v in shifts + dims):
            raise unsupported(
                node, f"roll's shifts {a['shifts']!r} and dims {a['dims']!r} must be ints, as many of each"
            )
        self.add(node, "roll", name, [self.tensor(node, a["input"])], node, {"shifts": shifts, "axes": dims})

    def _mean(self, node: fx.Node, name: str) -> None:
        a = normalized(node, lambda input, dim=None, keepdim=False, dtype=None: None)
        if a["dtype"] is not None:
            raise unsupported(node, "mean with a dtype argument (a cast) is not supported")
        dim = a["dim"]
        if dim is None:
            rank = _tensor_shape(a["input"])
            if rank is None:
                raise unsupported(node, "needs the tensors' shapes: pass sample_input_shape to swap_backend")
            dim = list(range(len(rank)))
        axes = [dim] if isinstance(dim, int) else list(dim)
        self.add(
            node, "mean", name, [self.tensor(node, a["input"])], node, {"axes": axes, "keepdim": bool(a["keepdim"])}
        )

    # -- issue 17: activations with arguments, reductions, tile ------------
    def _elu(self, node: fx.Node, name: str, op: str = "elu") -> None:
        a = normalized(node, lambda input, alpha=1.0, inplace=False: None)
        self.add(node, op, name, [self.tensor(node, a["input"])], node, {"alpha": float(a["alpha"])})

    def _celu(self, node: fx.Node, name: str) -> None:
        self._elu(node, name, "celu")

    def _softplus(self, node: fx.Node, name: str) -> None:
        a = normalized(node, lambda input, beta=1.0, threshold=20.0: None)
        self.add(
            node,
            "softplus",
            name,
            [self.tensor(node, a["input"])],
            node,
            {"beta": float(a["beta"]), "threshold": float(a["threshold"])},
        )

    def reduction(self, node: fx.Node, name: str, op: str) -> None:
        """torch.sum / prod / amax / amin / logsumexp over dims (all without
        one, where torch allows it), keepdim as torch."""
        a = normalized(node, lambda input, dim=None, keepdim=False, dtype=None: None)
        if a.get("dtype") is not None:
            raise unsupported(node, f"{node.target} with a dtype argument (a cast) is not supported")
        dim = a["dim"]
        if dim is None or (isinstance(dim, (list, tuple)) and not dim):
            dim = []  # every axis (the core's empty axes)
        axes = [dim] if isinstance(dim, int) else [int(d) for d in dim]
        self.add(node, op, name, [self.tensor(node, a["input"])], node, {"axes": axes, "keepdim": bool(a["keepdim"])})

    def _tile(self, node: fx.Node, name: str) -> None:
        if node.op == "call_method":
            reps = node.args[1:] if "dims" not in node.kwargs else (node.kwargs["dims"],)
        else:
            reps = (normalized(node, lambda input, dims: None)["dims"],)
        reps = list(reps[0]) if len(reps) == 1 and isinstance(reps[0], (list, tuple)) else list(reps)
        if any(isinstance(r, fx.Node) for r in reps):
            raise unsupported(node, f"repeats {reps!r} that depend on the batch size; ai3 tiles by constant counts")
        if not all(isinstance(r, int) and not isinstance(r, bool) for r in reps):
            raise unsupported(node, f"tile's repeats must be ints, got {reps!r}")
        self.add(node, "tile", name, [self.tensor(node, node.args[0])], node, {"repeats": reps})

    def _repeat(self, node: fx.Node, name: str) -> None:
        """x.repeat(*sizes): np.tile's rule, except that sizes may not be
        fewer than x's dims (torch refuses that itself)."""
        self._tile(node, name)

    def _einsum(self, node: fx.Node, name: str) -> None:
        """A two-operand einsum as one batched matmul (ai3.spec.einsum_plan):
        permutes and reshapes around it; a constant right operand (a
        parameter, XLNet's 'ibh,hnd->ibnd') is arranged once, here."""
        equation, *operands = node.args
        if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
            operands = list(operands[0])
        if len(operands) != 2:
            raise unsupported(node, "only two-operand einsum is supported")

        def sizes(operand: Any) -> list[int | None]:
            c = self.constant(node, operand) if not isinstance(operand, fx.Node) or operand in self.consts else None
            if c is not None:
                return list(np.shape(c))
            s1, s2 = self.shapes(node, operand)
            return [d1 if d1 == d2 else None for d1, d2 in zip(s1, s2)]

        try:
            plan = einsum_plan(equation, sizes(operands[0]), sizes(operands[1]))
        except ValueError as e:
            raise unsupported(node, str(e)) from e
        steps = ((plan.a_perm, plan.a_shape), (plan.b_perm, plan.b_shape))
        inputs, other = [], None
        for n, (operand, (perm, target)) in enumerate(zip(operands, steps)):
            constant = self.constant(node, operand) if n == 1 and operand in self.consts else None
            if constant is not None:  # arranged now
                other = plan.right_constant(constant)
                continue
            src = self.tensor(node, operand)
            if perm is not None:
                src = self.emit(node, "permute", f"{name}.operand{n}", [src], {"dims": perm}, None, None)
            if target is not None:
                src = self.emit(node, "reshape", f"{name}.operand{n}_matrix", [src], {"shape": target}, None, None)
            inputs.append(src)
        weights = {} if other is None else {"other": other}
        if plan.product_shape is None and plan.out_perm is None:
            self.add(node, "matmul", name, inputs, node, {}, weights)
            return
        y = self.emit(node, "matmul", f"{name}.matmul", inputs, {}, weights)
        if plan.product_shape is not None:
            last = plan.out_perm is None
            y = self.emit(node, "reshape", name if last else f"{name}.unmatrix", [y], {"shape": plan.product_shape})
        if plan.out_perm is not None:
            y = self.emit(node, "permute", name, [y], {"dims": plan.out_perm})
        self.index[node] = y

    def _relu6(self, node: fx.Node, name: str) -> None:
        a = normalized(node, lambda input, inplace=False: None)
        self.add(node, "clamp", name, [self.tensor(node, a["input"])], node, {"min": 0.0, "max": 6.0})

    def _hardtanh(self, node: fx.Node, name: str) -> None:
        a = normalized(node, lambda input, min_val=-1.0, max_val=1.0, inplace=False: None)
        attrs = {"min": _bound(a["min_val"], -1.0, node, "min"), "max": _bound(a["max_val"], 1.0, node, "max")}
        self.add(node, "clamp", name, [self.tensor(node, a["input"])], node, attrs)

    def _clamp(self, node: fx.Node, name: str) -> None:
        a = normalized(node, lambda input, min=None, max=None: None)
        if a["min"] is None and a["max"] is None:
            raise unsupported(node, "clamp needs min or max")
        attrs = {
            "min": _bound(a["min"], float("-inf"), node, "min"),
            "max": _bound(a["max"], float("inf"), node, "max"),
        }
        self.add(node, "clamp", name, [self.tensor(node, a["input"])], node, attrs)

    def _normalize(self, node: fx.Node, name: str) -> None:
        """F.normalize(input, p, dim, eps): input / max(||input||_p, eps)
        along dim, the norm a reduce_l2 (or reduce_l1) kept as size 1."""
        a = normalized(node, lambda input, p=2.0, dim=1, eps=1e-12, out=None: None)
        norms = {2: "reduce_l2", 1: "reduce_l1"}
        if a["out"] is not None or a["p"] not in norms:
            raise unsupported(node, f"F.normalize with p={a['p']!r}; ai3 maps p=1 and p=2")
        x = self.tensor(node, a["input"])
        shape = _input_shape(node)
        norm = self.emit(
            node, norms[a["p"]], f"{name}.norm", [x], {"axes": [int(a["dim"])], "keepdim": True}, None, shape
        )
        floor = self.emit(node, "clamp", f"{name}.clamp", [norm], {"min": float(a["eps"]), "max": float("inf")})
        self.add(node, "div", name, [x, floor], node)

    def _softmax(self, node: fx.Node, name: str, op: str = "softmax") -> None:
        if node.op == "call_method":
            a = normalized(node, lambda input, dim=None, dtype=None: None)
        else:
            a = normalized(node, lambda input, dim=None, _stacklevel=3, dtype=None: None)
        x = self.tensor(node, a["input"])
        dtype = a["dtype"]
        if dtype is not None and dtype != self.torch_dtype(node, a["input"]):
            # The input cast to `dtype` first, as torch does (Bloom's
            # softmax(..., dtype=torch.float32), a float32 island in a
            # float64 model).
            to = _CORE_DTYPES.get(dtype)
            if to is None or not dtype.is_floating_point:
                raise unsupported(node, f"softmax with dtype={dtype}; ai3 computes float32 and float64")
            x = self.emit(node, "cast", f"{name}.to_{to}", [x], {"to": to}, None, _input_shape(node))
        self.add(node, op, name, [x], node, {"axis": _softmax_axis(node, a["dim"])})

    def _log_softmax(self, node: fx.Node, name: str) -> None:
        self._softmax(node, name, "log_softmax")

    def _softmin(self, node: fx.Node, name: str) -> None:
        """F.softmin(input, dim, dtype=None): softmax of -input."""
        a = normalized(node, lambda input, dim=None, _stacklevel=3, dtype=None: None)
        if a["dtype"] is not None and a["dtype"] != self.torch_dtype(node, a["input"]):
            raise unsupported(node, f"softmin with dtype={a['dtype']}")
        negated = self.emit(node, "neg", f"{name}.neg", [self.tensor(node, a["input"])], {}, None, _input_shape(node))
        self.add(node, "softmax", name, [negated], node, {"axis": _softmax_axis(node, a["dim"])})

    def _glu(self, node: fx.Node, name: str) -> None:
        """F.glu(input, dim=-1): a * sigmoid(b), a and b the halves of dim."""
        a = normalized(node, lambda input, dim=-1: None)
        (i1, i2) = self.shapes(node, a["input"])
        if not isinstance(a["dim"], int):
            raise unsupported(node, f"glu along dim {a['dim']!r}, not a constant int")
        axis = a["dim"] % len(i1)
        if i1[axis] != i2[axis] or i1[axis] % 2:
            raise unsupported(node, f"glu along dim {axis} of size {i1[axis]}: ai3 halves a fixed, even dim")
        x, half = self.tensor(node, a["input"]), i1[axis] // 2
        first, second = (
            self.emit(node, "slice", f"{name}.{k}", [x], {"axis": axis, "start": s, "stop": e, "step": 1}, None, i1)
            for k, (s, e) in enumerate(((0, half), (half, 2 * half)))
        )
        gate = self.emit(node, "sigmoid", f"{name}.gate", [second])
        self.add(node, "mul", name, [first, gate], node)

    def _lp_pool2d(self, node: fx.Node, name: str) -> None:
        """F.lp_pool2d(input, norm_type, kernel_size, stride=None,
        ceil_mode=False) (nn.LPPool2d) as torch computes it: (kh * kw *
        avg_pool2d(input^p))^(1/p), the average counting a window's
        in-bounds taps (so with ceil_mode an overhanging window is scaled
        as torch scales it), no abs (a negative sum's root is NaN, as
        torch's)."""
        a = normalized(node, lambda input, norm_type, kernel_size, stride=None, ceil_mode=False: None)
        if _rank(node) != 4:
            raise unsupported(node, "lp_pool2d of an input that is not rank 4 (N, C, H, W)")
        if not isinstance(a["norm_type"], (int, float)) or isinstance(a["norm_type"], bool):
            raise unsupported(node, f"lp_pool2d norm_type {a['norm_type']!r}, not a constant number")
        p = float(a["norm_type"])
        attrs = params.avgpool2d(a["kernel_size"], a["stride"], ceil_mode=a["ceil_mode"], name=name)
        kh, kw = attrs["kernel"]
        shape = _input_shape(node)

        def power(x: int, e: float, suffix: str) -> int:
            return self.emit(node, "pow", f"{name}.{suffix}", [x], {"reverse": False}, {"other": np.asarray(e)})

        powered = power(self.tensor(node, a["input"]), p, "pow")
        pooled = self.emit(node, "avgpool2d", f"{name}.avg", [powered], attrs, None, shape)
        scaled = self.emit(
            node, "mul", f"{name}.sum", [pooled], {"reverse": False}, {"other": np.asarray(float(kh * kw))}
        )
        self.add(node, "pow", name, [scaled], node, {"reverse": False}, {"other": np.asarray(1.0 / p)})

    def _flip(self, node: fx.Node, name: str, dims: Any = None) -> None:
        """torch.flip(input, dims) (fliplr: dim 1, flipud: dim 0): a slice
        of step -1 along each dim, from the last element to the first."""
        if dims is None:
            a = normalized(node, lambda input, *dims: None)
            given = a["dims"][0] if len(a["dims"]) == 1 and isinstance(a["dims"][0], (list, tuple)) else a["dims"]
        else:
            a, given = normalized(node, lambda input: None), dims
        if not all(isinstance(d, int) for d in given):
            raise unsupported(node, f"flip dims {given!r}, not constant ints")
        current = self.tensor(node, a["input"])
        for n, d in enumerate(given):
            attrs = {"axis": d, "start": -1, "stop": -END, "step": -1}
            current = self.emit(node, "slice", f"{name}.{n}", [current], attrs, None, _input_shape(node))
        self.index[node] = current if given else self.tensor(node, a["input"])

    def _fliplr(self, node: fx.Node, name: str) -> None:
        self._flip(node, name, (1,))

    def _flipud(self, node: fx.Node, name: str) -> None:
        self._flip(node, name, (0,))

    def _pad(self, node: fx.Node, name: str) -> None:
        a = normalized(node, lambda input, pad, mode="constant", value=None: None)
        pad = a["pad"]
        if isinstance(pad, (list, tuple)) and all(p == 0 for p in pad) and a["mode"] == "constant":
            return self.alias(node, a["input"])  # swin pads by (W % window) and the like: often nothing
        if isinstance(pad, (list, tuple)) and len(pad) > 4 and all(p == 0 for p in pad[4:]):
            pad = tuple(pad[:4])
        if isinstance(pad, (list, tuple)) and len(pad) == 6 and pad[:2] == (0, 0) and _rank(node) == 4:
            return self.pad_channels_last(node, name, a, tuple(pad[2:]))
        rank = _rank(node)
        if isinstance(pad, (list, tuple)) and len(pad) in (2, 4) and rank == 4 and any(p < 0 for p in pad):
            return self.pad_cropping(node, name, a, tuple(pad))
        if isinstance(pad, (list, tuple)) and len(pad) in (2, 4) and rank is not None and (rank != 4 or len(pad) == 2):
            return self.pad_last_dims(node, name, a, tuple(pad), rank)
        self.add(
            node, "pad2d", name, [self.tensor(node, a["input"])], node, _torch_pads(node, pad, a["mode"], a["value"])
        )

    def pad_cropping(self, node: fx.Node, name: str, a: dict[str, Any], pad: tuple) -> None:
        """F.pad of a rank-4 tensor with negative pads, which crop (NASNet
        shifts a path by one pixel with (-1, 1, -1, 1)): each negative side
        a slice, then the positive ones a pad2d."""
        if a["mode"] != "constant":
            raise unsupported(node, f"negative pads (cropping) in mode '{a['mode']}'; torch crops in constant mode")
        shape = list(_input_shape(node))
        x = self.tensor(node, a["input"])
        four = pad + (0, 0) * (2 - len(pad) // 2)  # (left, right, top, bottom)
        for axis, (before, after) in ((3, four[:2]), (2, four[2:])):
            if before >= 0 and after >= 0:
                continue
            start, stop = max(-before, 0), shape[axis] + after if after < 0 else shape[axis]
            attrs = {"axis": axis, "start": start, "stop": stop, "step": 1}
            x = self.emit(node, "slice", f"{name}.crop{axis}", [x], attrs, input_shape=tuple(shape))
            shape[axis] = max(stop - start, 0)
        positive = tuple(max(p, 0) for p in four)
        if any(positive):
            attrs = _torch_pads(node, positive, a["mode"], a["value"])
            x = self.emit(node, "pad2d", name, [x], attrs, input_shape=tuple(shape))
        self.index[node] = x

    def pad_last_dims(self, node: fx.Node, name: str, a: dict[str, Any], pad: tuple, rank: int) -> None:
        """F.pad of the last one or two dims (pad pairs from the last dim
        back) of a tensor of any rank >= 2: pad2d on a rank-4 view of it,
        (N, the dims between, H or 1, W), and the result viewed back."""
        dims = len(pad) // 2
        if rank < dims + 1:
            raise unsupported(node, f"F.pad of {dims} dims of a rank-{rank} tensor pads its batch dim")
        (i1, i2) = self.shapes(node, a["input"])
        (o1, o2) = self.shapes(node, node)
        four = tuple(pad) + (0, 0) * (2 - dims)
        attrs = _torch_pads(node, four, a["mode"], a["value"], rank=4)

        def view(s: tuple) -> tuple:
            last = tuple(s[rank - dims :])
            middle = int(np.prod(s[1 : rank - dims], dtype=np.int64))
            return (s[0], middle, *((1,) * (2 - dims)), *last)

        try:
            into = shapes.reshape_target(i1, i2, view(i1), view(i2))
            back = shapes.reshape_target(view(o1), view(o2), o1, o2)
        except ValueError as e:
            raise unsupported(node, str(e)) from e
        x = self.emit(node, "reshape", f"{name}.view", [self.tensor(node, a["input"])], {"shape": into}, input_shape=i1)
        padded = self.emit(node, "pad2d", f"{name}.pad2d", [x], attrs, input_shape=view(i1))
        self.add(node, "reshape", name, [padded], node, {"shape": back})

    def pad_channels_last(self, node: fx.Node, name: str, a: dict[str, Any], pad: tuple[int, ...]) -> None:
        """F.pad of dims 1 and 2 of a (B, H, W, C) tensor (swin pads its
        windows so): pad2d pads the last two dims, so the channels move in
        front for it and back after."""
        attrs = _torch_pads(node, pad, a["mode"], a["value"])
        shape = _tensor_shape(a["input"])
        first = self.emit(
            node,
            "permute",
            f"{name}.to_nchw",
            [self.tensor(node, a["input"])],
            {"dims": [0, 3, 1, 2]},
            input_shape=shape,
        )
        nchw = None if shape is None else (shape[0], shape[3], shape[1], shape[2])
        padded = self.emit(node, "pad2d", f"{name}.pad2d", [first], attrs, input_shape=nchw)
        self.index[node] = self.emit(node, "permute", name, [padded], {"dims": [0, 2, 3, 1]})

    def _adaptive_avg_pool2d(self, node: fx.Node, name: str) -> None:
        a = normalized(node, lambda input, output_size: None)
        size = params.adaptive_output_size(a["output_size"], _input_shape(node), name)
        self.add(node, "adaptiveavgpool2d", name, [self.tensor(node, a["input"])], node, {"output_size": size})

    def _adaptive_max_pool2d(self, node: fx.Node, name: str) -> None:
        a = normalized(node, lambda input, output_size, return_indices=False: None)
        if a["return_indices"]:
            raise unsupported(node, "adaptive_max_pool2d with return_indices=True")
        size = params.adaptive_output_size(a["output_size"], _input_shape(node), name)
        self.add(node, "adaptivemaxpool2d", name, [self.tensor(node, a["input"])], node, {"output_size": size})

    def _avg_pool2d(self, node: fx.Node, name: str, dims: int = 2) -> None:
        a = normalized(
            node,
            lambda input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None: (
                None
            ),
        )
        x = a.pop("input")
        attrs = params.avgpool2d(**a, name=name, dims=dims)
        self.add(node, f"avgpool{dims}d", name, [self.tensor(node, x)], node, attrs)

    def _max_pool2d(self, node: fx.Node, name: str, dims: int = 2) -> None:
        a = normalized(
            node,
            lambda input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False: None,
        )
        x = a.pop("input")
        attrs = params.maxpool2d(**a, name=name, dims=dims)
        self.add(node, f"maxpool{dims}d", name, [self.tensor(node, x)], node, attrs)

    def _avg_pool3d(self, node: fx.Node, name: str) -> None:
        self._avg_pool2d(node, name, dims=3)

    def _max_pool3d(self, node: fx.Node, name: str) -> None:
        self._max_pool2d(node, name, dims=3)

    def _attention(self, node: fx.Node, name: str) -> None:
        self.attention(node)


# The stand-in index of a refused node's result (never built: the mapping
# that meets one raises UnsupportedNodes).
_REFUSED = -(1 << 30)


class Traced(tuple):
    """to_specs' (specs, output index, GraphModule), with the names of the
    model's inputs (forward's arguments) and, when forward returns a dict,
    of its outputs."""

    input_names: list[str]
    output_names: list[str] | None
    input_dtypes: list[np.dtype]  # per input, as traced (int64 token ids...)
    output_type: type | None  # the dict subclass forward returned (tracing.output_type)

    @property
    def input_count(self) -> int:
        return len(self.input_names)


def to_specs(module: nn.Module, sample_input_shape: Sequence[Any] | None = None) -> Traced:
    """The model's LayerSpecs in execution order and the index of its output
    spec. With sample_input_shape, every spec also gets its input shape,
    and shape arithmetic in the model is resolved (see module docstring).
    sample_input_shape may be one shape per input of a model of several;
    a forward returning a tuple, list or dict of tensors gives a model of
    several outputs (an OUTPUTS spec, ai3.spec)."""
    training = [
        n for n, m in module.named_modules() if m.training and isinstance(m, (nn.BatchNorm2d, nn.Dropout, nn.Dropout2d))
    ]
    if training:
        raise errors.InvalidArgument(
            f"ai3 runs inference, but module '{training[0] or type(module).__name__}' is in training mode; call model.eval() first"
        )
    gm = trace(module, sample_input_shape)
    return specs_of(gm, sample_input_shape is not None)


def specs_of(gm: fx.GraphModule, with_values: bool, keep_values: bool = False) -> Traced:
    """to_specs of a traced GraphModule. Every node that does not map is
    recorded and the mapping goes on (its result stands in as an unknown
    input), so the refusal, an UnsupportedNodes, lists them all."""
    mapper = _Mapper(gm)
    output: int | None = None
    input_names: list[str] = []
    input_dtypes: list[torch.dtype | None] = []
    output_names: list[str] | None = None
    refused: list[tuple[fx.Node, str]] = []
    live = _live_nodes(gm)
    for node in gm.graph.nodes:
        if node not in live:
            continue  # computes nothing the output reads (an unused pooler): neither mapped nor refused
        try:
            if node.op == "placeholder":
                if node.meta.get(tracing.DEFAULTED):
                    continue  # an argument left at its default (traced as a constant)
                mapper.index[node] = model_input(len(input_names))
                input_names.append(str(node.target).lstrip("*"))
                input_dtypes.append(mapper.torch_dtype(node, node))
            elif node.op == "get_attr":
                mapper.consts[node] = tracing._get_attr(gm, node.target)
            elif node.op == "output":
                if not refused:
                    output, output_names = _outputs(mapper, node, node.args[0])
            else:
                mapper.map(node)
        except UnsupportedNodes as e:
            refused += e.nodes
        except errors.UnsupportedOperation as e:
            refused.append((node, str(e)))
            mapper.index[node] = _REFUSED  # its readers map on; they only need it to be a tensor
    if not keep_values:
        for node in gm.graph.nodes:
            node.meta.pop(tracing.VALUES, None)  # the sample activations: not needed any more
    if refused:
        raise UnsupportedNodes(refused)
    assert output is not None
    specs, output = prune_dead(mapper.specs, output)
    traced = Traced((specs, output, gm))
    traced.input_names, traced.output_names = input_names, output_names
    traced.output_type = gm.meta.get(tracing.OUTPUT_TYPES)
    traced.input_dtypes = [np.dtype(_CORE_DTYPES[d]) if d in _CORE_DTYPES else None for d in input_dtypes]
    return traced


def _is_in_place(node: fx.Node) -> bool:
    """Whether `node` changes its first argument (x.add_(y), F.relu(x,
    inplace=True))."""
    return (
        node.op == "call_method"
        and isinstance(node.target, str)
        and node.target.endswith("_")
        and not node.target.startswith("__")
    ) or node.kwargs.get("inplace") is True


def _live_nodes(gm: fx.GraphModule) -> set[fx.Node]:
    """The nodes the output depends on, with every placeholder and every
    in-place call (whose change to its input later nodes read, see
    _Mapper.alias_in_place) kept too. fx's own eliminate_dead_code would
    drop an unused x.add_(y), whose effect is not a graph edge."""
    live: set[fx.Node] = set()
    for node in reversed(gm.graph.nodes):
        in_place = _is_in_place(node) or tracing.is_item_assignment(node.op, node.target)
        impure = node.op in ("placeholder", "output") or (node.op == "call_function" and node.is_impure())
        if impure or in_place or any(user in live for user in node.users):
            live.add(node)
    return live


def _outputs(mapper: _Mapper, node: fx.Node, result: Any) -> tuple[int, list[str] | None]:
    """The output spec of forward's result: the one tensor's, or an OUTPUTS
    spec reading each tensor of a tuple / list / dict (with the dict's keys)."""
    if isinstance(result, fx.Node) and result not in mapper.pieces:
        return mapper.tensor(node, result), None
    names: list[str] | None = None
    if isinstance(result, dict):
        names, items = [str(k) for k in result], list(result.values())
    elif isinstance(result, (tuple, list)):
        items = list(result)
    elif isinstance(result, fx.Node):  # a tuple-valued node (chunk, split)
        items = mapper.pieces[result]
        if any(p is None for p in items):
            raise unsupported(node, "an element of the returned tuple has no ai3 equivalent")
        if any(isinstance(p, tuple) for p in items):  # nn.LSTM's (output, (h_n, c_n))
            raise unsupported(node, "ai3 models return a flat tuple of tensors; this one nests a tuple in it")
        mapper.specs.append(LayerSpec("outputs", OUTPUTS, list(items)))
        return len(mapper.specs) - 1, None
    else:
        raise unsupported(
            node, f"ai3 models return tensors, a tuple / list / dict of them; this one returns {type(result).__name__}"
        )
    if not items or not all(isinstance(t, fx.Node) for t in items):
        raise unsupported(
            node, "ai3 models return tensors; this result holds something else (None, a number, a nested structure)"
        )
    inputs = [mapper.tensor(node, t) for t in items]
    if len(inputs) == 1 and names is None:
        return inputs[0], None
    mapper.specs.append(LayerSpec("outputs", OUTPUTS, inputs))
    return len(mapper.specs) - 1, names


def model_dtype(module: nn.Module, dtype: Any | None) -> np.dtype:
    if dtype is None:
        dtype = tracing.float_dtype(module)
    if isinstance(dtype, torch.dtype):
        dtype = {torch.float32: np.float32, torch.float64: np.float64}.get(dtype)
        if dtype is None:
            raise errors.DTypeError("ai3 models run in float32 or float64")
    dtype = np.dtype(dtype)
    if dtype not in (np.float32, np.float64):
        raise errors.DTypeError(f"ai3 models run in float32 or float64, not {dtype}")
    return dtype
