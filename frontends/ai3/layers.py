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
        if cuda.is_cuda_tensor(x) and not more:  # stays on its GPU (ai3.cuda)
            return cuda.call_layer(self._core_layer, x, f"input of layer '{self.name}'")
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
