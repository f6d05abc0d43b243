"""The core's attributes of PyTorch layers, from modules or functional
calls: one place that knows PyTorch's conventions (padding="same", stride
None meaning the kernel, ...), shared by swap_backend and the in-place swaps.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, Union

import numpy as np
import torch
from torch import nn

from ai3 import errors
from ai3 import padding as padding_rule

IntOrPair = Union[int, Sequence[int]]


class NeedsInputShape(errors.UnsupportedOperation):
    """An attribute that depends on the input's shape, asked for without one
    (an in-place swap then resolves it per call)."""


def _int(value: Any, what: str, layer: str) -> int:
    if isinstance(value, torch.Tensor) and value.dim() == 0 and not value.is_floating_point():
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise errors.InvalidArgument(f"{layer}: {what} must be an int or a sequence of 1 or 2 ints, got {value!r}")
    return int(value)


def pair(value: IntOrPair, what: str = "argument", layer: str = "layer") -> tuple[int, int]:
    """(h, w) from the forms PyTorch's 2-d layers take: an int, or a
    sequence of one int (used for both dims, as torch's _pair and the
    pooling functions do) or two. `layer` names the layer in the error."""
    if isinstance(value, (tuple, list, torch.Size)):
        if len(value) == 1:
            v = _int(value[0], what, layer)
            return v, v
        if len(value) == 2:
            return _int(value[0], what, layer), _int(value[1], what, layer)
        raise errors.InvalidArgument(f"{layer}: {what} must be an int or a sequence of 1 or 2 ints, got {value!r}")
    v = _int(value, what, layer)
    return v, v


def pool_stride(stride: Any, kernel: tuple[int, int], layer: str) -> tuple[int, int]:
    """A pooling stride: None or an empty sequence (both PyTorch's "default")
    means the kernel size."""
    if stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0):
        return kernel
    return pair(stride, "stride", layer)


def padding4(
    padding: Union[str, IntOrPair], kernel: tuple[int, int], dilation: tuple[int, int], layer: str = "layer"
) -> tuple[int, int, int, int]:
    """PyTorch padding (int, one or two ints, "valid", "same") as (top,
    bottom, left, right); "same" puts the odd extra row/column at the
    bottom/right, as F.conv2d does."""
    if padding == "valid":
        return 0, 0, 0, 0
    if padding == "same":  # PyTorch allows it for stride 1 only, where it does not depend on the size
        return padding_rule.same_2d((None, None), kernel, (1, 1), dilation)
    if isinstance(padding, str):
        raise errors.InvalidArgument(f"{layer}: padding must be 'valid', 'same' or ints, got {padding!r}")
    ph, pw = pair(padding, "padding", layer)
    return ph, ph, pw, pw


def conv2d(module: nn.Conv2d, name: str) -> dict[str, Any]:
    if module.padding_mode != "zeros":
        raise errors.UnsupportedOperation(
            f"conv2d layer '{name}': padding_mode={module.padding_mode!r} is not supported (only 'zeros'; "
            "the core's pad2d pads with a constant only)"
        )
    return conv2d_call(module.kernel_size, module.stride, module.padding, module.dilation, module.groups, name)


def conv2d_call(kernel_size: Any, stride: Any, padding: Any, dilation: Any, groups: Any, name: str) -> dict[str, Any]:
    """conv2d attrs from the arguments nn.Conv2d and F.conv2d share (an
    F.conv2d call's kernel size is its weight's last two dims)."""
    layer = f"conv2d layer '{name}'"
    kernel = pair(kernel_size, "kernel_size", layer)
    dilation = pair(dilation, "dilation", layer)
    stride = pair(stride, "stride", layer)
    if padding == "same" and stride != (1, 1):
        raise errors.InvalidArgument(f"{layer}: padding='same' is not supported for strided convolutions (as in PyTorch)")
    return dict(stride=stride, padding=padding4(padding, kernel, dilation, layer), dilation=dilation, groups=_int(groups, "groups", layer))


def batchnorm(running_mean: Any, running_var: Any, weight: Any, bias: Any, eps: float) -> tuple[dict[str, Any], dict[str, Any]]:
    """batchnorm2d attrs and weights of nn.BatchNorm2d / F.batch_norm at
    inference (running statistics); without an affine weight and bias the
    core's are ones and zeros."""
    weight = np.ones_like(running_mean) if weight is None else weight
    bias = np.zeros_like(running_mean) if bias is None else bias
    return {"eps": float(eps)}, {"weight": weight, "bias": bias, "running_mean": running_mean, "running_var": running_var}


def maxpool2d(kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False, *, name: str) -> dict[str, Any]:
    layer = f"maxpool2d layer '{name}'"
    if return_indices:
        raise errors.UnsupportedOperation(f"{layer}: return_indices=True is not supported")
    kernel = pair(kernel_size, "kernel_size", layer)
    return dict(
        kernel=kernel,
        stride=pool_stride(stride, kernel, layer),
        padding=padding4(padding, kernel, (1, 1), layer),
        dilation=pair(dilation, "dilation", layer),
        ceil_mode=bool(ceil_mode),
    )


def avgpool2d(
    kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None, *, name: str
) -> dict[str, Any]:
    layer = f"avgpool2d layer '{name}'"
    kernel = pair(kernel_size, "kernel_size", layer)
    return dict(
        kernel=kernel,
        stride=pool_stride(stride, kernel, layer),
        padding=padding4(padding, kernel, (1, 1), layer),
        ceil_mode=bool(ceil_mode),
        count_include_pad=bool(count_include_pad),
        divisor_override=None if divisor_override is None else _int(divisor_override, "divisor_override", layer),
    )


def adaptive_output_size(output_size, input_shape: Optional[Sequence[int]], name: str) -> tuple[int, int]:
    """(h, w), with PyTorch's None entries ("keep the input's size")
    resolved from the input shape."""
    oh, ow = (output_size, output_size) if not isinstance(output_size, (tuple, list)) else output_size
    if oh is None or ow is None:
        if input_shape is None:
            raise NeedsInputShape(
                f"adaptiveavgpool2d layer '{name}': output_size {output_size!r} keeps an input dimension; "
                "pass sample_input_shape so ai3 knows it"
            )
        oh = input_shape[-2] if oh is None else oh
        ow = input_shape[-1] if ow is None else ow
    return int(oh), int(ow)


def numpy_weight(tensor: Optional[torch.Tensor]):
    return None if tensor is None else tensor.detach().cpu().numpy()


# nn.Hardsigmoid: relu6(x + 3) / 6 = clamp(x / 6 + 1 / 2, 0, 1).
TORCH_HARDSIGMOID = {"alpha": 1.0 / 6.0, "beta": 0.5}


def layernorm(normalized_shape: Any, weight: Any, bias: Any, eps: float) -> tuple[dict[str, Any], dict[str, Any]]:
    """layernorm attrs and weights of nn.LayerNorm / F.layer_norm: the core
    normalises the input's last len(normalized_shape) dims."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    return {"axes": len(shape), "eps": float(eps)}, {"weight": weight, "bias": bias}


def legacy_softmax_dim(rank: int) -> int:
    """softmax's dim=None: PyTorch's legacy implicit dim (0 for ranks 0, 1
    and 3, else 1)."""
    return 0 if rank in (0, 1, 3) else 1


def pad2d(pad: Any, mode: str, value: Any, name: str) -> dict[str, Any]:
    """pad2d attrs from F.pad's / nn.ConstantPad2d's (left, right, top,
    bottom) on the last two dims of an NCHW tensor, constant mode."""
    layer = f"pad2d layer '{name}'"
    if mode != "constant":
        raise errors.UnsupportedOperation(f"{layer}: padding mode '{mode}' is not supported (only 'constant')")
    if not isinstance(pad, (list, tuple)) or len(pad) != 4 or not all(isinstance(p, int) for p in pad):
        raise errors.UnsupportedOperation(f"{layer}: only 4 int pads (left, right, top, bottom) of a rank-4 tensor are supported, got {pad!r}")
    if any(p < 0 for p in pad):
        raise errors.UnsupportedOperation(f"{layer}: negative pads (cropping) are not supported, got {tuple(pad)}")
    left, right, top, bottom = pad
    return {"padding": (top, bottom, left, right), "value": 0.0 if value is None else float(value)}
