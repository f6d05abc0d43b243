"""Single core layers, callable on NumPy arrays and CPU torch tensors.

These are the core's layer objects with framework-style arguments::

    conv = ai3.layers.Conv2d(weight, bias, stride=1, padding=1, algorithm="smm")
    y = conv(x)          # x: np.ndarray or torch.Tensor, NCHW

Weights are copied into the layer once; inputs are read in place and each
call returns a new array (or tensor, for a tensor input).

On a CUDA build, layers built inside ``with ai3.cuda.layer_device("cuda"):``
run on the GPU, on CUDA torch tensors, which stay there (see ai3.cuda).
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, Union

import numpy as np

from ai3 import _arrays, _core, cuda, errors

IntOrPair = Union[int, Sequence[int]]
Padding = Union[int, str, Sequence[int]]


def _pair(value: IntOrPair, what: str, layer: str) -> tuple[int, int]:
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return int(value), int(value)
    if isinstance(value, Sequence) and len(value) == 2:
        return int(value[0]), int(value[1])
    raise errors.InvalidArgument(
        f"layer '{layer}': {what} must be an int or a pair, got {value!r}"
    )


def _padding(
    value: Padding,
    kernel: tuple[int, int],
    dilation: tuple[int, int],
    layer: str,
) -> tuple[int, int, int, int]:
    """(top, bottom, left, right) from an int, a pair (PyTorch), a 4-tuple,
    or "valid"/"same" (for stride 1; extra padding goes bottom/right as in
    PyTorch and TensorFlow)."""
    if isinstance(value, str):
        if value == "valid":
            return 0, 0, 0, 0
        if value == "same":
            th = dilation[0] * (kernel[0] - 1)
            tw = dilation[1] * (kernel[1] - 1)
            return th // 2, th - th // 2, tw // 2, tw - tw // 2
        raise errors.InvalidArgument(
            f"layer '{layer}': padding must be 'valid', 'same' or ints, got {value!r}"
        )
    if isinstance(value, Sequence) and len(value) == 4:
        top, bottom, left, right = (int(v) for v in value)
        return top, bottom, left, right
    ph, pw = _pair(value, "padding", layer)
    return ph, ph, pw, pw


Activation = Union[None, str, Sequence[float]]
# Activations a conv2d / linear layer can fuse into its epilogue, as the
# (min, max) clamp the core applies (see core/math/epilogue.h).
ACTIVATIONS = {"relu": (0.0, float("inf")), "relu6": (0.0, 6.0)}


def _activation(value: Activation, layer: str) -> Optional[tuple[float, float]]:
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


class _Layer:
    """Shared behaviour: calling on arrays/tensors, names, algorithm."""

    _core_layer: Any

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

    def output_shape(self, input_shape: Sequence[Any], dtype: str = "float32"):
        """The output shape for one input shape, or (multi-input layers) a
        list of input shapes."""
        if len(input_shape) and not isinstance(input_shape[0], (int, np.integer)):
            return tuple(self._core_layer.output_shape([list(s) for s in input_shape], dtype))
        return tuple(self._core_layer.output_shape(list(input_shape), dtype))

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


class Conv2d(_Layer):
    def __init__(
        self,
        weight: Any,
        bias: Optional[Any] = None,
        stride: IntOrPair = 1,
        padding: Padding = 0,
        dilation: IntOrPair = 1,
        groups: int = 1,
        *,
        algorithm: str = "default",
        layout: str = "NCHW",
        name: str = "conv2d",
        activation: Activation = None,
    ):
        w = _weight(weight, f"weight of layer '{name}'")
        kernel = tuple(w.shape[2:4]) if w.ndim == 4 else (1, 1)
        dil = _pair(dilation, "dilation", name)
        self._core_layer = _core.Conv2d(
            weight=w,
            bias=None if bias is None else _weight(bias, f"bias of layer '{name}'"),
            stride=_pair(stride, "stride", name),
            padding=_padding(padding, kernel, dil, name),
            dilation=dil,
            groups=int(groups),
            layout=layout,
            algorithm=algorithm,
            name=name,
            activation=_activation(activation, name),
        )


class Linear(_Layer):
    def __init__(
        self,
        weight: Any,
        bias: Optional[Any] = None,
        *,
        algorithm: str = "default",
        name: str = "linear",
        activation: Activation = None,
    ):
        self._core_layer = _core.Linear(
            weight=_weight(weight, f"weight of layer '{name}'"),
            bias=None if bias is None else _weight(bias, f"bias of layer '{name}'"),
            algorithm=algorithm,
            name=name,
            activation=_activation(activation, name),
        )


class ReLU(_Layer):
    def __init__(self, *, algorithm: str = "default", name: str = "relu"):
        self._core_layer = _core.ReLU(algorithm=algorithm, name=name)


class MaxPool2d(_Layer):
    def __init__(
        self,
        kernel_size: IntOrPair,
        stride: Optional[IntOrPair] = None,
        padding: Padding = 0,
        dilation: IntOrPair = 1,
        ceil_mode: bool = False,
        *,
        algorithm: str = "default",
        layout: str = "NCHW",
        name: str = "maxpool2d",
    ):
        kernel = _pair(kernel_size, "kernel_size", name)
        dil = _pair(dilation, "dilation", name)
        self._core_layer = _core.MaxPool2d(
            kernel=kernel,
            stride=kernel if stride is None else _pair(stride, "stride", name),
            padding=_padding(padding, kernel, dil, name),
            dilation=dil,
            ceil_mode=bool(ceil_mode),
            layout=layout,
            algorithm=algorithm,
            name=name,
        )


class AvgPool2d(_Layer):
    def __init__(
        self,
        kernel_size: IntOrPair,
        stride: Optional[IntOrPair] = None,
        padding: Padding = 0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
        divisor_override: Optional[int] = None,
        *,
        algorithm: str = "default",
        layout: str = "NCHW",
        name: str = "avgpool2d",
    ):
        kernel = _pair(kernel_size, "kernel_size", name)
        self._core_layer = _core.AvgPool2d(
            kernel=kernel,
            stride=kernel if stride is None else _pair(stride, "stride", name),
            padding=_padding(padding, kernel, (1, 1), name),
            ceil_mode=bool(ceil_mode),
            count_include_pad=bool(count_include_pad),
            divisor_override=int(divisor_override or 0),
            layout=layout,
            algorithm=algorithm,
            name=name,
        )


class AdaptiveAvgPool2d(_Layer):
    def __init__(
        self,
        output_size: IntOrPair,
        *,
        algorithm: str = "default",
        layout: str = "NCHW",
        name: str = "adaptiveavgpool2d",
    ):
        self._core_layer = _core.AdaptiveAvgPool2d(
            output_size=_pair(output_size, "output_size", name),
            layout=layout,
            algorithm=algorithm,
            name=name,
        )


class Flatten(_Layer):
    def __init__(
        self,
        start_dim: int = 1,
        end_dim: int = -1,
        *,
        algorithm: str = "default",
        name: str = "flatten",
    ):
        self._core_layer = _core.Flatten(
            start_dim=int(start_dim), end_dim=int(end_dim), algorithm=algorithm, name=name
        )


class BatchNorm2d(_Layer):
    """Inference batch normalisation (nn.BatchNorm2d in eval mode):
    (x - running_mean) / sqrt(running_var + eps) * weight + bias per channel.
    weight / bias of None (affine=False) mean ones / zeros."""

    def __init__(
        self,
        weight: Optional[Any],
        bias: Optional[Any],
        running_mean: Any,
        running_var: Any,
        eps: float = 1e-5,
        *,
        algorithm: str = "default",
        layout: str = "NCHW",
        name: str = "batchnorm2d",
    ):
        mean = _weight(running_mean, f"running_mean of layer '{name}'")
        var = _weight(running_var, f"running_var of layer '{name}'")
        self._core_layer = _core.BatchNorm2d(
            weight=np.ones_like(mean) if weight is None else _weight(weight, f"weight of layer '{name}'"),
            bias=np.zeros_like(mean) if bias is None else _weight(bias, f"bias of layer '{name}'"),
            running_mean=mean,
            running_var=var,
            eps=float(eps),
            layout=layout,
            algorithm=algorithm,
            name=name,
        )


class Clamp(_Layer):
    """y = min(max(x, min), max) elementwise, NaN passing through, as
    torch.clamp: nn.ReLU6 is Clamp(0, 6), nn.Hardtanh(a, b) is Clamp(a, b).
    A bound of None leaves that side open."""

    def __init__(
        self,
        min: Optional[float] = None,
        max: Optional[float] = None,
        *,
        algorithm: str = "default",
        name: str = "clamp",
    ):
        self._core_layer = _core.Clamp(
            min=float("-inf") if min is None else float(min),
            max=float("inf") if max is None else float(max),
            algorithm=algorithm,
            name=name,
        )


class Sigmoid(_Layer):
    """y = 1 / (1 + exp(-x)) elementwise."""

    def __init__(self, *, algorithm: str = "default", name: str = "sigmoid"):
        self._core_layer = _core.Sigmoid(algorithm=algorithm, name=name)


class SiLU(_Layer):
    """y = x * sigmoid(x) elementwise (swish)."""

    def __init__(self, *, algorithm: str = "default", name: str = "silu"):
        self._core_layer = _core.SiLU(algorithm=algorithm, name=name)


class Tanh(_Layer):
    """y = tanh(x) elementwise."""

    def __init__(self, *, algorithm: str = "default", name: str = "tanh"):
        self._core_layer = _core.Tanh(algorithm=algorithm, name=name)


class Softmax(_Layer):
    """Numerically stable softmax along `axis` (memory order; negative
    counts from the end), as F.softmax(x, dim=axis)."""

    def __init__(self, axis: int = -1, *, algorithm: str = "default", name: str = "softmax"):
        if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
            raise errors.InvalidArgument(f"layer '{name}': axis must be an int, got {axis!r}")
        self._core_layer = _core.Softmax(axis=int(axis), algorithm=algorithm, name=name)


class _Binary(_Layer):
    """An elementwise op of two operands with NumPy broadcasting: called on
    two inputs, layer(x, y), or, given a constant `other`, on one:
    layer(x) = x op other (other op x with reverse=True)."""

    _core_class = ""

    def __init__(self, other: Optional[Any] = None, *, reverse: bool = False, algorithm: str = "default", name: str = ""):
        name = name or self._core_class.lower()
        self._core_layer = getattr(_core, self._core_class)(
            other=None if other is None else np.ascontiguousarray(_weight(other, f"constant of layer '{name}'")),
            reverse=bool(reverse),
            algorithm=algorithm,
            name=name,
        )


class Matmul(_Layer):
    """x @ y as torch.matmul (batched, broadcast batch dims, 1-D operands),
    or, given a constant `other`, x @ other."""

    def __init__(self, other: Optional[Any] = None, *, algorithm: str = "default", name: str = "matmul"):
        self._core_layer = _core.Matmul(
            other=None if other is None else np.ascontiguousarray(_weight(other, f"constant of layer '{name}'")),
            algorithm=algorithm,
            name=name,
        )


def _ints(value: Any, what: str, layer: str) -> list[int]:
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return [int(value)]
    if isinstance(value, Sequence) and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in value):
        return [int(v) for v in value]
    raise errors.InvalidArgument(f"layer '{layer}': {what} must be an int or a list of ints, got {value!r}")


class Reshape(_Layer):
    """The elements in order under `shape` (batch included): -1 is inferred
    (once), 0 copies the input's dimension at that position (ONNX)."""

    def __init__(self, shape: Sequence[int], *, algorithm: str = "default", name: str = "reshape"):
        self._core_layer = _core.Reshape(shape=_ints(shape, "shape", name), algorithm=algorithm, name=name)


class Permute(_Layer):
    """Output dimension d is input dimension dims[d] (a full permutation,
    batch included; negative entries count from the end)."""

    def __init__(self, dims: Sequence[int], *, algorithm: str = "default", name: str = "permute"):
        self._core_layer = _core.Permute(dims=_ints(dims, "dims", name), algorithm=algorithm, name=name)


_INT64_MAX, _INT64_MIN = 2**63 - 1, -(2**63)


class Slice(_Layer):
    """x[..., start:stop:step, ...] along `axis`, with Python's semantics
    (negative bounds from the end, clamped; None for an open end)."""

    def __init__(
        self,
        axis: int,
        start: Optional[int] = None,
        stop: Optional[int] = None,
        step: int = 1,
        *,
        algorithm: str = "default",
        name: str = "slice",
    ):
        step = int(step)
        if start is None:
            start = 0 if step > 0 else _INT64_MAX
        if stop is None:
            stop = _INT64_MAX if step > 0 else _INT64_MIN
        clamp = lambda v: max(_INT64_MIN, min(_INT64_MAX, int(v)))  # noqa: E731
        self._core_layer = _core.Slice(
            axis=int(axis), start=clamp(start), stop=clamp(stop), step=step, algorithm=algorithm, name=name
        )


class LogSoftmax(_Layer):
    """log(softmax(x)) along `axis`, computed stably (F.log_softmax)."""

    def __init__(self, axis: int = -1, *, algorithm: str = "default", name: str = "log_softmax"):
        if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
            raise errors.InvalidArgument(f"layer '{name}': axis must be an int, got {axis!r}")
        self._core_layer = _core.LogSoftmax(axis=int(axis), algorithm=algorithm, name=name)


class LayerNorm(_Layer):
    """Normalisation over the last `axes` dims (nn.LayerNorm): weight and
    bias optional, shaped like those dims; `axes` defaults to the weight's
    rank (1 without weights)."""

    def __init__(
        self,
        weight: Optional[Any] = None,
        bias: Optional[Any] = None,
        axes: Optional[int] = None,
        eps: float = 1e-5,
        *,
        algorithm: str = "default",
        name: str = "layernorm",
    ):
        w = None if weight is None else np.ascontiguousarray(_weight(weight, f"weight of layer '{name}'"))
        b = None if bias is None else np.ascontiguousarray(_weight(bias, f"bias of layer '{name}'"))
        if axes is None:
            axes = (w if w is not None else b).ndim if (w is not None or b is not None) else 1
        self._core_layer = _core.LayerNorm(weight=w, bias=b, axes=int(axes), eps=float(eps), algorithm=algorithm, name=name)


class GELU(_Layer):
    """x * Phi(x) elementwise; approximate="tanh" for the tanh form."""

    def __init__(self, approximate: str = "none", *, algorithm: str = "default", name: str = "gelu"):
        self._core_layer = _core.GELU(approximate=str(approximate), algorithm=algorithm, name=name)


class Hardswish(_Layer):
    """x * relu6(x + 3) / 6 elementwise."""

    def __init__(self, *, algorithm: str = "default", name: str = "hardswish"):
        self._core_layer = _core.Hardswish(algorithm=algorithm, name=name)


class Hardsigmoid(_Layer):
    """clamp(alpha * x + beta, 0, 1) elementwise; torch's defaults (ONNX
    uses alpha 0.2)."""

    def __init__(self, alpha: float = 1.0 / 6.0, beta: float = 0.5, *, algorithm: str = "default", name: str = "hardsigmoid"):
        self._core_layer = _core.Hardsigmoid(alpha=float(alpha), beta=float(beta), algorithm=algorithm, name=name)


class AdaptiveMaxPool2d(_Layer):
    def __init__(
        self,
        output_size: IntOrPair,
        *,
        algorithm: str = "default",
        layout: str = "NCHW",
        name: str = "adaptivemaxpool2d",
    ):
        self._core_layer = _core.AdaptiveMaxPool2d(
            output_size=_pair(output_size, "output_size", name), layout=layout, algorithm=algorithm, name=name
        )


class Mean(_Layer):
    """The mean over `axes` (memory order, negative from the end; empty or
    None: every axis), keeping them as size 1 with keepdim."""

    def __init__(self, axes: Optional[Sequence[int]] = None, keepdim: bool = False, *, algorithm: str = "default", name: str = "mean"):
        self._core_layer = _core.Mean(
            axes=[] if axes is None else _ints(axes, "axes", name), keepdim=bool(keepdim), algorithm=algorithm, name=name
        )


class Roll(_Layer):
    """torch.roll(x, shifts, dims) with dims given as `axes`."""

    def __init__(self, shifts: Union[int, Sequence[int]], axes: Union[int, Sequence[int]], *, algorithm: str = "default", name: str = "roll"):
        self._core_layer = _core.Roll(
            shifts=_ints(shifts, "shifts", name), axes=_ints(axes, "axes", name), algorithm=algorithm, name=name
        )


class Add(_Binary):
    """x + y with broadcasting (or x + other)."""

    _core_class = "Add"


class Sub(_Binary):
    """x - y with broadcasting (or x - other; other - x with reverse)."""

    _core_class = "Sub"


class Mul(_Binary):
    """x * y with broadcasting (or x * other)."""

    _core_class = "Mul"


class Div(_Binary):
    """x / y with broadcasting (or x / other; other / x with reverse)."""

    _core_class = "Div"


class Pad2d(_Layer):
    """Constant padding of the H and W dims of a rank-4 tensor.

    `padding` is an int (all four sides), a pair (top/bottom, left/right) or
    (top, bottom, left, right), the order of the other ai3 layers; note that
    F.pad's is (left, right, top, bottom)."""

    def __init__(
        self,
        padding: Union[int, Sequence[int]],
        value: float = 0.0,
        *,
        algorithm: str = "default",
        layout: str = "NCHW",
        name: str = "pad2d",
    ):
        if isinstance(padding, Sequence) and len(padding) == 4:
            pads = tuple(int(v) for v in padding)
        else:
            ph, pw = _pair(padding, "padding", name)
            pads = (ph, ph, pw, pw)
        self._core_layer = _core.Pad2d(
            padding=pads,
            value=float(value),
            layout=layout,
            algorithm=algorithm,
            name=name,
        )


__all__ = [
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


class _AttentionLayer(_Layer):
    def workspace_bytes(self, input_shapes: Sequence[Sequence[int]], dtype: str = "float32") -> int:
        """Scratch bytes a call with inputs of these shapes uses (kept by the
        layer between calls), besides the inputs and the output."""
        return int(self._core_layer.workspace_bytes([list(s) for s in input_shapes], dtype))


class Attention(_AttentionLayer):
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
        scale: Optional[float] = None,
        has_mask: bool = False,
        algorithm: str = "default",
        name: str = "attention",
    ):
        self._has_mask = bool(has_mask)
        self._core_layer = _core.Attention(
            causal=bool(causal),
            scale=None if scale is None else float(scale),
            has_mask=self._has_mask,
            algorithm=algorithm,
            name=name,
        )

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
    scale: Optional[float] = None,
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


class MultiheadAttention(_AttentionLayer):
    """torch.nn.MultiheadAttention at inference (need_weights=False), in its
    weight layout: in_proj_weight (3D, D), in_proj_bias (3D), out_proj_weight
    (D, D), out_proj_bias (D) (biases both or neither). ``layer(x)``
    (self-attention) or ``layer(q, k, v)`` when made with
    self_attention=False; inputs (L, B, D), (B, L, D) with batch_first, or
    unbatched (L, D). `mask` (iff has_mask): additive float, or boolean with
    nn.MultiheadAttention's meaning (True = masked out), broadcastable to
    (B, num_heads, L, S). The algorithm is the attention algorithm the heads
    run (naive, flash, chunked)."""

    def __init__(
        self,
        in_proj_weight: Any,
        in_proj_bias: Optional[Any],
        out_proj_weight: Any,
        out_proj_bias: Optional[Any],
        num_heads: int,
        *,
        batch_first: bool = False,
        causal: bool = False,
        self_attention: bool = True,
        has_mask: bool = False,
        algorithm: str = "default",
        name: str = "multihead_attention",
    ):
        self._self_attention = bool(self_attention)
        self._has_mask = bool(has_mask)

        def weight(x: Any, what: str) -> Optional[np.ndarray]:
            return None if x is None else np.ascontiguousarray(_weight(x, f"{what} of layer '{name}'"))

        self._core_layer = _core.MultiheadAttention(
            in_proj_weight=weight(in_proj_weight, "in_proj_weight"),
            in_proj_bias=weight(in_proj_bias, "in_proj_bias"),
            out_proj_weight=weight(out_proj_weight, "out_proj_weight"),
            out_proj_bias=weight(out_proj_bias, "out_proj_bias"),
            num_heads=int(num_heads),
            batch_first=bool(batch_first),
            causal=bool(causal),
            self_attention=self._self_attention,
            has_mask=self._has_mask,
            algorithm=algorithm,
            name=name,
        )

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

