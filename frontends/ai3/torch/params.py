"""The core's attributes of PyTorch layers, from modules or functional
calls: one place that knows PyTorch's conventions (padding="same", stride
None meaning the kernel, ...), shared by swap_backend and the in-place swaps.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, Union

import torch
from torch import nn

from ai3 import errors

IntOrPair = Union[int, Sequence[int]]


def pair(value: IntOrPair) -> tuple[int, int]:
    if isinstance(value, int):
        return value, value
    first, second = value
    return int(first), int(second)


def padding4(padding: Union[str, IntOrPair], kernel: tuple[int, int], dilation: tuple[int, int]) -> tuple[int, int, int, int]:
    """PyTorch padding (int, pair, "valid", "same") as (top, bottom, left,
    right); "same" puts the odd extra row/column at the bottom/right, as
    F.conv2d does."""
    if padding == "valid":
        return 0, 0, 0, 0
    if padding == "same":
        th, tw = dilation[0] * (kernel[0] - 1), dilation[1] * (kernel[1] - 1)
        return th // 2, th - th // 2, tw // 2, tw - tw // 2
    ph, pw = pair(padding)
    return ph, ph, pw, pw


def conv2d(module: nn.Conv2d, name: str) -> dict[str, Any]:
    if module.padding_mode != "zeros":
        raise errors.UnsupportedOperation(
            f"conv2d layer '{name}': padding_mode={module.padding_mode!r} is not supported (only 'zeros')"
        )
    kernel = pair(module.kernel_size)
    dilation = pair(module.dilation)
    return dict(
        stride=pair(module.stride),
        padding=padding4(module.padding, kernel, dilation),
        dilation=dilation,
        groups=module.groups,
    )


def maxpool2d(kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False, *, name: str) -> dict[str, Any]:
    if return_indices:
        raise errors.UnsupportedOperation(f"maxpool2d layer '{name}': return_indices=True is not supported")
    kernel = pair(kernel_size)
    return dict(
        kernel=kernel,
        stride=kernel if stride is None or stride == [] else pair(stride),
        padding=padding4(padding, kernel, (1, 1)),
        dilation=pair(dilation),
        ceil_mode=bool(ceil_mode),
    )


def avgpool2d(
    kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None, *, name: str
) -> dict[str, Any]:
    kernel = pair(kernel_size)
    return dict(
        kernel=kernel,
        stride=kernel if stride is None or stride == [] else pair(stride),
        padding=padding4(padding, kernel, (1, 1)),
        ceil_mode=bool(ceil_mode),
        count_include_pad=bool(count_include_pad),
        divisor_override=divisor_override,
    )


def adaptive_output_size(output_size, input_shape: Optional[Sequence[int]], name: str) -> tuple[int, int]:
    """(h, w), with PyTorch's None entries ("keep the input's size")
    resolved from the input shape."""
    oh, ow = (output_size, output_size) if not isinstance(output_size, (tuple, list)) else output_size
    if oh is None or ow is None:
        if input_shape is None:
            raise errors.UnsupportedOperation(
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
    as_array = lambda t: None if t is None else (numpy_weight(t) if isinstance(t, torch.Tensor) else t)  # noqa: E731
    return {"axes": len(shape), "eps": float(eps)}, {"weight": as_array(weight), "bias": as_array(bias)}
