"""Single core layers, callable on NumPy arrays and CPU torch tensors.

Any op's layer is one class, `Layer`, made from the op's declaration in the
core (`ai3._core.op_schemas()`, core/op_schema.h)::

    conv = ai3.layers.Layer("conv2d", {"stride": 1, "padding": 1},
                            {"weight": w, "bias": b}, algorithm="smm")

and the classes below are its framework-style forms, generated from one
table (`_form`)::

    conv = ai3.layers.Conv2d(weight, bias, stride=1, padding=1, algorithm="smm")
    y = conv(x)          # x: np.ndarray or torch.Tensor, NCHW

Weights are copied into the layer once; inputs are read in place and each
call returns a new array (or tensor, for a tensor input).

On a CUDA build, layers built inside ``with ai3.cuda.layer_device("cuda"):``
run on the GPU, on CUDA torch tensors, which stay there (see ai3.cuda).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ai3 import _arrays, _core, cuda, errors

IntOrPair = int | Sequence[int]
Padding = int | str | Sequence[int]
Weights = None | Mapping[str, Any] | Sequence[Any]


@functools.cache
def _schemas() -> dict[str, dict[str, Any]]:
    return {s["op"]: s for s in _core.op_schemas()}


def schema(op: str) -> dict[str, Any]:
    """The core's declaration of `op` (see ai3._core.op_schemas)."""
    if op not in _schemas():
        raise errors.UnsupportedOperation(f"ai3's core has no op '{op}'; it has: {', '.join(sorted(_schemas()))}")
    return _schemas()[op]


BACKWARD = "_backward_"


def backward_ops(op: str) -> dict[str, str]:
    """`op`'s gradient ops, {target: gradient op}: each ``<op>_backward_<target>``
    the core declares, target "data" (the gradient w.r.t. the input) or one
    of `op`'s weight names. Found by name among the declared ops, so a new
    gradient op needs no frontend edit; empty for an op without gradients.
    A gradient op takes `op`'s attrs and weights and the inputs
    [grad_output, x, y], and returns the gradient, shaped like its target."""
    targets = {"data", *(w["name"] for w in schema(op)["weights"])}
    prefix = op + BACKWARD
    return {o[len(prefix) :]: o for o in sorted(_schemas()) if o.startswith(prefix) and o[len(prefix) :] in targets}


def output_shape(
    op: str,
    attrs: Mapping[str, Any] | None,
    weight_shapes: Weights,
    input_shapes: Sequence[Sequence[int]],
    dtype: str = "float32",
    name: str = "",
) -> tuple[int, ...]:
    """The output shape of a layer of `op` for inputs of these shapes, from
    the core's shape rule, without building the layer."""
    shapes = weight_shapes
    if isinstance(weight_shapes, Mapping):
        shapes = {k: None if s is None else list(s) for k, s in weight_shapes.items()}
    elif weight_shapes is not None:
        shapes = [None if s is None else list(s) for s in weight_shapes]
    return tuple(_core.output_shape(op, dict(attrs or {}), shapes, [list(s) for s in input_shapes], dtype, name))


def _pair(value: IntOrPair, what: str, layer: str) -> tuple[int, int]:
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return int(value), int(value)
    if isinstance(value, Sequence) and len(value) == 2:
        return int(value[0]), int(value[1])
    raise errors.InvalidArgument(f"layer '{layer}': {what} must be an int or a pair, got {value!r}")


def _named_padding(
    value: str, kernel: tuple[int, int], dilation: tuple[int, int], layer: str
) -> tuple[int, int, int, int]:
    """(top, bottom, left, right) for "valid" or "same" (stride 1; the extra
    padding goes bottom/right as in PyTorch and TensorFlow). Ints, pairs and
    4-tuples go to the core as they are."""
    if value == "valid":
        return 0, 0, 0, 0
    if value == "same":
        th = dilation[0] * (kernel[0] - 1)
        tw = dilation[1] * (kernel[1] - 1)
        return th // 2, th - th // 2, tw // 2, tw - tw // 2
    raise errors.InvalidArgument(f"layer '{layer}': padding must be 'valid', 'same' or ints, got {value!r}")


Activation = None | str | Sequence[float]
# Activations a conv2d / linear layer can fuse into its epilogue, as the
# (min, max) clamp the core applies (see core/math/epilogue.h).
ACTIVATIONS = {"relu": (0.0, float("inf")), "relu6": (0.0, 6.0)}


def _activation(value: Activation, layer: str) -> tuple[float, float] | None:
    """None, "relu", "relu6" or a (min, max) pair -> the core's clamp bounds."""
    if value is None:
        return None
    if isinstance(value, str):
        if value in ACTIVATIONS:
            return ACTIVATIONS[value]
    elif isinstance(value, Sequence) and len(value) == 2:
        lo, hi = float(value[0]), float(value[1])
        if lo <= hi:  # also False for NaN
            return lo, hi
    raise errors.InvalidArgument(
        f"layer '{layer}': activation must be None, 'relu', 'relu6' or (min, max) with min <= max, got {value!r}"
    )


def _weight(x: Any, what: str) -> np.ndarray:
    if cuda.is_cuda_tensor(x):
        # Weights are copied into the layer once anyway; a CUDA layer then
        # uploads them to its GPU (see ai3.cuda.layer_device).
        x = x.detach().cpu()
    array, _ = _arrays.to_array(x, what)
    return array


def _weights(weights: Weights, layer: str) -> Weights:
    """Framework tensors as C-contiguous NumPy arrays (None stays None)."""
    if weights is None:
        return None
    if isinstance(weights, Mapping):
        return {k: None if v is None else _weight(v, f"{k} of layer '{layer}'") for k, v in weights.items()}
    return [None if v is None else _weight(v, f"weight {k} of layer '{layer}'") for k, v in enumerate(weights)]


class Layer:
    """A core layer of any op: `op` with `attrs` and `weights` (a dict by
    name, or a list in the declared order) as the core declares them
    (ai3._core.op_schemas()). Errors name the op and the layer."""

    _core_layer: Any

    def __init__(
        self,
        op: str,
        attrs: Mapping[str, Any] | None = None,
        weights: Weights = None,
        *,
        algorithm: str = "default",
        name: str | None = None,
    ):
        name = op if name is None else name
        self._core_layer = _core.make_layer(op, dict(attrs or {}), _weights(weights, name), algorithm, name)

    def __call__(self, x: Any, *more: Any) -> Any:
        """layer(x), or layer(x, y, ...) for a multi-input layer; the result
        has x's kind (NumPy or torch)."""
        if cuda.is_cuda_tensor(x):  # stays on its GPU (ai3.cuda)
            return cuda.call_layer(self._core_layer, x, f"input of layer '{self.name}'", *more)
        array, kind = _arrays.to_array(x, f"input of layer '{self.name}'")
        if not more:
            return _arrays.from_array(self._core_layer(array), kind)
        arrays = [array] + [_arrays.to_array(m, f"input {k + 1} of layer '{self.name}'")[0] for k, m in enumerate(more)]
        return _arrays.from_array(self._core_layer(*arrays), kind)

    def output_shape(self, input_shape: Sequence[Any], dtype: str = "float32") -> tuple[int, ...]:
        """The output shape for one input shape, or (multi-input layers) a
        list of input shapes."""
        if len(input_shape) and not isinstance(input_shape[0], (int, np.integer)):
            return tuple(self._core_layer.output_shape([list(s) for s in input_shape], dtype))
        return tuple(self._core_layer.output_shape(list(input_shape), dtype))

    def workspace_bytes(self, input_shape: Sequence[Any], dtype: str = "float32") -> int:
        """Scratch bytes a call with an input of this shape (or, multi-input
        layers, inputs of these shapes) uses, kept by the layer between
        calls, besides the inputs and the output."""
        if len(input_shape) and not isinstance(input_shape[0], (int, np.integer)):
            return int(self._core_layer.workspace_bytes([list(s) for s in input_shape], dtype))
        return int(self._core_layer.workspace_bytes(list(input_shape), dtype))

    @property
    def algorithm(self) -> str:
        """The algorithm actually running ("default" resolved)."""
        return self._core_layer.algorithm

    @property
    def name(self) -> str:
        return self._core_layer.name

    @property
    def op(self) -> str:
        return self._core_layer.op

    def __repr__(self) -> str:
        return f"ai3.layers.{type(self).__name__}(name={self.name!r}, algorithm={self.algorithm!r})"


# ---- the framework-style forms ---------------------------------------------
#
# Each is Layer with its op's arguments in the order and with the defaults
# PyTorch users know: the positional-or-keyword `params`, the keyword-only
# `keywords` (besides algorithm and name), and a `convert` hook for what the
# core's declaration does not take as it is ("same" padding, activation
# names, torch's kernel_size). An argument that names one of the op's
# weights is passed as that weight; every other one as the attribute of
# that name.

_REQUIRED = inspect.Parameter.empty
Convert = Callable[[dict[str, Any], str], None]


def _form(
    class_name: str,
    op: str,
    params: Sequence[tuple[str, Any]] = (),
    keywords: Sequence[tuple[str, Any]] = (),
    convert: Convert | None = None,
) -> type[Layer]:
    P = inspect.Parameter
    own = [P(n, P.POSITIONAL_OR_KEYWORD, default=d) for n, d in params]
    own += [P(n, P.KEYWORD_ONLY, default=d) for n, d in (*keywords, ("algorithm", "default"), ("name", None))]
    signature = inspect.Signature(own)

    def __init__(self: Layer, *args: Any, **kwargs: Any) -> None:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        values = dict(bound.arguments)
        algorithm, name = values.pop("algorithm"), values.pop("name") or op
        if convert is not None:
            convert(values, name)
        weight_names = {w["name"] for w in schema(op)["weights"]}
        weights = {k: values.pop(k) for k in list(values) if k in weight_names}
        Layer.__init__(self, op, values, weights, algorithm=algorithm, name=name)

    __init__.__signature__ = signature.replace(parameters=[P("self", P.POSITIONAL_OR_KEYWORD), *own])  # type: ignore[attr-defined]
    return type(class_name, (Layer,), {"__init__": __init__, "__doc__": schema(op)["doc"], "__module__": __name__})


def _conv2d(values: dict[str, Any], layer: str) -> None:
    if isinstance(values["padding"], str):
        shape = tuple(np.shape(values["weight"]))
        kernel = (int(shape[2]), int(shape[3])) if len(shape) == 4 else (1, 1)
        values["padding"] = _named_padding(
            values["padding"], kernel, _pair(values["dilation"], "dilation", layer), layer
        )
    values["activation"] = _activation(values["activation"], layer)


def _linear(values: dict[str, Any], layer: str) -> None:
    values["activation"] = _activation(values["activation"], layer)


def _window(values: dict[str, Any], layer: str) -> None:
    """torch's kernel_size is the core's kernel; named padding as conv2d's."""
    values["kernel"] = values.pop("kernel_size")
    if isinstance(values["padding"], str):
        kernel = _pair(values["kernel"], "kernel_size", layer)
        dilation = _pair(values.get("dilation", 1), "dilation", layer)
        values["padding"] = _named_padding(values["padding"], kernel, dilation, layer)


def _batchnorm2d(values: dict[str, Any], layer: str) -> None:
    """weight / bias of None (affine=False) mean ones / zeros."""
    mean = _weight(values["running_mean"], f"running_mean of layer '{layer}'")
    values["running_mean"] = mean
    if values["weight"] is None:
        values["weight"] = np.ones_like(mean)
    if values["bias"] is None:
        values["bias"] = np.zeros_like(mean)


_INT64_MAX, _INT64_MIN = 2**63 - 1, -(2**63)


def _slice(values: dict[str, Any], layer: str) -> None:
    """Python bounds beyond int64 clamp (slicing clamps them anyway)."""
    for bound in ("start", "stop"):
        if isinstance(values[bound], (int, np.integer)) and not isinstance(values[bound], bool):
            values[bound] = max(_INT64_MIN, min(_INT64_MAX, int(values[bound])))


_LAYOUT = (("layout", "NCHW"),)
_POOL = (("kernel_size", _REQUIRED), ("stride", None), ("padding", 0))
_OTHER = (("other", None),)

Conv2d = _form(
    "Conv2d",
    "conv2d",
    (("weight", _REQUIRED), ("bias", None), ("stride", 1), ("padding", 0), ("dilation", 1), ("groups", 1)),
    (*_LAYOUT, ("activation", None)),
    _conv2d,
)
Linear = _form("Linear", "linear", (("weight", _REQUIRED), ("bias", None)), (("activation", None),), _linear)
MaxPool2d = _form("MaxPool2d", "maxpool2d", (*_POOL, ("dilation", 1), ("ceil_mode", False)), _LAYOUT, _window)
AvgPool2d = _form(
    "AvgPool2d",
    "avgpool2d",
    (*_POOL, ("ceil_mode", False), ("count_include_pad", True), ("divisor_override", None)),
    _LAYOUT,
    _window,
)
AdaptiveAvgPool2d = _form("AdaptiveAvgPool2d", "adaptiveavgpool2d", (("output_size", _REQUIRED),), _LAYOUT)
AdaptiveMaxPool2d = _form("AdaptiveMaxPool2d", "adaptivemaxpool2d", (("output_size", _REQUIRED),), _LAYOUT)
Flatten = _form("Flatten", "flatten", (("start_dim", 1), ("end_dim", -1)))
BatchNorm2d = _form(
    "BatchNorm2d",
    "batchnorm2d",
    (
        ("weight", _REQUIRED),
        ("bias", _REQUIRED),
        ("running_mean", _REQUIRED),
        ("running_var", _REQUIRED),
        ("eps", 1e-5),
    ),
    _LAYOUT,
    _batchnorm2d,
)
Pad2d = _form("Pad2d", "pad2d", (("padding", _REQUIRED), ("value", 0.0), ("mode", "constant")), _LAYOUT)
ReLU = _form("ReLU", "relu")
Sigmoid = _form("Sigmoid", "sigmoid")
SiLU = _form("SiLU", "silu")
Tanh = _form("Tanh", "tanh")
Hardswish = _form("Hardswish", "hardswish")
Hardsigmoid = _form("Hardsigmoid", "hardsigmoid", (("alpha", 1.0 / 6.0), ("beta", 0.5)))
GELU = _form("GELU", "gelu", (("approximate", "none"),))
Clamp = _form("Clamp", "clamp", (("min", None), ("max", None)))  # None: that side open
Softmax = _form("Softmax", "softmax", (("axis", -1),))
LogSoftmax = _form("LogSoftmax", "log_softmax", (("axis", -1),))
Add = _form("Add", "add", _OTHER, (("reverse", False),))
Sub = _form("Sub", "sub", _OTHER, (("reverse", False),))
Mul = _form("Mul", "mul", _OTHER, (("reverse", False),))
Div = _form("Div", "div", _OTHER, (("reverse", False),))
Matmul = _form("Matmul", "matmul", _OTHER)
Reshape = _form("Reshape", "reshape", (("shape", _REQUIRED),))
Permute = _form("Permute", "permute", (("dims", _REQUIRED),))
Slice = _form("Slice", "slice", (("axis", _REQUIRED), ("start", None), ("stop", None), ("step", 1)), (), _slice)
LayerNorm = _form("LayerNorm", "layernorm", (("weight", None), ("bias", None), ("axes", None), ("eps", 1e-5)))
Mean = _form("Mean", "mean", (("axes", None), ("keepdim", False)))
Roll = _form("Roll", "roll", (("shifts", _REQUIRED), ("axes", _REQUIRED)))

__all__ = [
    "Layer",
    "backward_ops",
    "schema",
    "output_shape",
    "Attention",
    "MultiheadAttention",
    "scaled_dot_product_attention",
    "AdaptiveMaxPool2d",
    "GELU",
    "Hardsigmoid",
    "Hardswish",
    "LayerNorm",
    "LogSoftmax",
    "Matmul",
    "Mean",
    "Permute",
    "Reshape",
    "Roll",
    "Slice",
    "Add",
    "Div",
    "Mul",
    "Sub",
    "AdaptiveAvgPool2d",
    "BatchNorm2d",
    "AvgPool2d",
    "Clamp",
    "Conv2d",
    "Flatten",
    "Linear",
    "MaxPool2d",
    "Pad2d",
    "ReLU",
    "SiLU",
    "Sigmoid",
    "Softmax",
    "Tanh",
]


# ---- attention (core/ops/attention) ---------------------------------------


def additive_mask(mask: Any, dtype: Any, *, keep: bool, what: str) -> np.ndarray:
    """An attention mask as the core takes it: additive, in `dtype`. A
    boolean mask becomes 0 where a key takes part and -inf where it does not;
    `keep` says what True means (True = take part in torch's SDPA and ONNX,
    True = masked out in nn.MultiheadAttention's attn_mask and
    key_padding_mask). A float mask is added as it is."""
    if not isinstance(mask, np.ndarray):
        if hasattr(mask, "detach"):
            mask = mask.detach().cpu()
        mask = np.asarray(mask.numpy() if hasattr(mask, "numpy") else mask)
    if mask.dtype == np.bool_:
        take_part = mask if keep else ~mask
        return np.where(take_part, 0.0, -np.inf).astype(dtype)
    if mask.dtype.kind not in "fiu":
        raise errors.DTypeError(f"{what} has dtype {mask.dtype}; expected a boolean or float mask")
    return np.ascontiguousarray(mask, dtype=dtype)


def _dtype_of(x: Any, what: str) -> np.dtype:
    return _arrays.to_array(x, what)[0].dtype


class Attention(Layer):
    """Scaled dot-product attention, as torch's F.scaled_dot_product_attention:
    ``layer(q, k, v[, mask])`` with q (*batch, L, E), k (*batch, S, E),
    v (*batch, S, Ev) -> (*batch, L, Ev). `mask` (given iff has_mask) is
    additive (float) or boolean (True = take part), broadcastable to
    (*batch, L, S). `causal` hides key j from query i when j > i (top-left
    aligned, as torch's is_causal); `scale` defaults to 1/sqrt(E). A query
    whose keys are all masked gives zeros, as torch does. Algorithms: "naive"
    (the full score matrix), "flash" (tiled, online softmax, memory O(L + S)),
    "chunked" (query chunks, memory O(chunk * S))."""

    def __init__(
        self,
        *,
        causal: bool = False,
        scale: float | None = None,
        has_mask: bool = False,
        algorithm: str = "default",
        name: str = "attention",
    ):
        self._has_mask = bool(has_mask)
        attrs = {"causal": bool(causal), "scale": scale, "has_mask": self._has_mask}
        super().__init__("attention", attrs, algorithm=algorithm, name=name)

    def __call__(self, q: Any, k: Any, v: Any, mask: Any = None) -> Any:
        if (mask is not None) != self._has_mask:
            raise errors.InvalidArgument(
                f"attention layer '{self.name}': made with has_mask={self._has_mask} but called "
                f"{'with' if mask is not None else 'without'} a mask"
            )
        inputs = [q, k, v]
        if mask is not None:
            inputs.append(additive_mask(mask, _dtype_of(q, "q"), keep=True, what=f"mask of layer '{self.name}'"))
        return super().__call__(*inputs)


def scaled_dot_product_attention(
    query: Any,
    key: Any,
    value: Any,
    attn_mask: Any = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    *,
    algorithm: str = "default",
) -> Any:
    """torch.nn.functional.scaled_dot_product_attention (inference: dropout_p
    must be 0) on ai3's core, with the algorithm chosen by name."""
    if dropout_p:
        raise errors.UnsupportedOperation(
            f"scaled_dot_product_attention: dropout_p={dropout_p}; ai3 runs inference only (dropout_p=0)"
        )
    layer = Attention(
        causal=is_causal,
        scale=scale,
        has_mask=attn_mask is not None,
        algorithm=algorithm,
        name="scaled_dot_product_attention",
    )
    return layer(query, key, value, attn_mask)


class MultiheadAttention(Layer):
    """torch.nn.MultiheadAttention at inference (need_weights=False), in its
    weight layout: in_proj_weight (3D, D), in_proj_bias (3D), out_proj_weight
    (D, D), out_proj_bias (D) (biases both or neither). ``layer(x)``
    (self-attention) or ``layer(q, k, v)`` when made with
    self_attention=False; inputs (L, B, D), (B, L, D) with batch_first, or
    unbatched (L, D). `mask` (iff has_mask): additive float, or boolean with
    nn.MultiheadAttention's meaning (True = masked out), broadcastable to
    (B, num_heads, L, S). The algorithm is the attention algorithm the heads
    run (naive, flash, chunked); `in_projection` and `out_projection` are
    the linear algorithms of the projections ("default": linear's own)."""

    def __init__(
        self,
        in_proj_weight: Any,
        in_proj_bias: Any | None,
        out_proj_weight: Any,
        out_proj_bias: Any | None,
        num_heads: int,
        *,
        batch_first: bool = False,
        causal: bool = False,
        self_attention: bool = True,
        has_mask: bool = False,
        algorithm: str = "default",
        in_projection: str = "default",
        out_projection: str = "default",
        name: str = "multihead_attention",
    ):
        self._self_attention = bool(self_attention)
        self._has_mask = bool(has_mask)
        attrs = {
            "num_heads": num_heads,
            "batch_first": bool(batch_first),
            "causal": bool(causal),
            "self_attention": self._self_attention,
            "has_mask": self._has_mask,
            "in_projection": in_projection,
            "out_projection": out_projection,
        }
        weights = {
            "in_proj_weight": in_proj_weight,
            "in_proj_bias": in_proj_bias,
            "out_proj_weight": out_proj_weight,
            "out_proj_bias": out_proj_bias,
        }
        super().__init__("multihead_attention", attrs, weights, algorithm=algorithm, name=name)

    def __call__(self, *inputs: Any, mask: Any = None) -> Any:
        want = 1 if self._self_attention else 3
        if len(inputs) != want:
            raise errors.InvalidArgument(
                f"multihead_attention layer '{self.name}': takes {want} input{'s' if want > 1 else ''} "
                f"({'x' if want == 1 else 'q, k, v'}), got {len(inputs)}"
            )
        if (mask is not None) != self._has_mask:
            raise errors.InvalidArgument(
                f"multihead_attention layer '{self.name}': made with has_mask={self._has_mask} but called "
                f"{'with' if mask is not None else 'without'} a mask"
            )
        all_inputs = list(inputs)
        if mask is not None:
            dtype = _dtype_of(inputs[0], "input")
            all_inputs.append(additive_mask(mask, dtype, keep=False, what=f"mask of layer '{self.name}'"))
        return super().__call__(*all_inputs)
