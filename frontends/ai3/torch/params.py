"""The core's attributes of PyTorch layers, from modules or functional
calls: one place that knows PyTorch's conventions (padding="same", stride
None meaning the kernel, ...), shared by swap_backend and the in-place swaps.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from ai3 import errors
from ai3 import padding as padding_rule

IntOrPair = int | Sequence[int]


class NeedsInputShape(errors.UnsupportedOperation):
    """An attribute that depends on the input's shape, asked for without one
    (an in-place swap then resolves it per call)."""


def _int(value: Any, what: str, layer: str, count: int = 2) -> int:
    if isinstance(value, torch.Tensor) and value.dim() == 0 and not value.is_floating_point():
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise errors.InvalidArgument(
            f"{layer}: {what} must be an int or a sequence of 1 or {count} ints, got {value!r}"
        )
    return int(value)


def ints(value: Any, count: int, what: str = "argument", layer: str = "layer") -> tuple[int, ...]:
    """`count` ints (one per spatial dim) from the forms PyTorch's n-d
    layers take: an int, or a sequence of one int (used for every dim, as
    torch's _ntuple and the pooling functions do) or `count`. `layer` names
    the layer in the error."""
    if isinstance(value, (tuple, list, torch.Size)):
        if len(value) == 1:
            return (_int(value[0], what, layer, count),) * count
        if len(value) == count:
            return tuple(_int(v, what, layer, count) for v in value)
        raise errors.InvalidArgument(
            f"{layer}: {what} must be an int or a sequence of 1 or {count} ints, got {value!r}"
        )
    return (_int(value, what, layer, count),) * count


def pair(value: IntOrPair, what: str = "argument", layer: str = "layer") -> tuple[int, int]:
    """(h, w) from the forms PyTorch's 2-d layers take (ints)."""
    h, w = ints(value, 2, what, layer)
    return h, w


def pool_stride(stride: Any, kernel: tuple[int, ...], layer: str) -> tuple[int, ...]:
    """A pooling stride: None or an empty sequence (both PyTorch's "default")
    means the kernel size."""
    if stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0):
        return kernel
    return ints(stride, len(kernel), "stride", layer)


def padding4(
    padding: str | IntOrPair, kernel: tuple[int, int], dilation: tuple[int, int], layer: str = "layer"
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


def conv2d(module: nn.Conv2d, name: str, padding_mode: bool = False) -> dict[str, Any]:
    """conv2d attrs of an nn.Conv2d; with `padding_mode` (swap_backend,
    which puts a pad2d of that mode before the conv: conv2d_pads_by_mode)
    the padding of a non-'zeros' padding_mode is left to that pad2d."""
    if module.padding_mode != "zeros" and not padding_mode:
        raise errors.UnsupportedOperation(
            f"conv2d layer '{name}': padding_mode={module.padding_mode!r} is not supported by the in-place swap "
            "(only 'zeros'); ai3.swap_backend takes it as a pad2d before the conv"
        )
    attrs = conv2d_call(module.kernel_size, module.stride, module.padding, module.dilation, module.groups, name)
    if module.padding_mode != "zeros":
        attrs["pad_by_mode"], attrs["padding"] = attrs["padding"], (0, 0, 0, 0)
    return attrs


def conv2d_call(kernel_size: Any, stride: Any, padding: Any, dilation: Any, groups: Any, name: str) -> dict[str, Any]:
    """conv2d attrs from the arguments nn.Conv2d and F.conv2d share (an
    F.conv2d call's kernel size is its weight's last two dims)."""
    layer = f"conv2d layer '{name}'"
    kernel = pair(kernel_size, "kernel_size", layer)
    dilation = pair(dilation, "dilation", layer)
    stride = pair(stride, "stride", layer)
    if padding == "same" and stride != (1, 1):
        raise errors.InvalidArgument(
            f"{layer}: padding='same' is not supported for strided convolutions (as in PyTorch)"
        )
    return dict(
        stride=stride,
        padding=padding4(padding, kernel, dilation, layer),
        dilation=dilation,
        groups=_int(groups, "groups", layer),
    )


def conv3d(module: nn.Conv3d, name: str) -> dict[str, Any]:
    """conv3d attrs of an nn.Conv3d (zero padding only)."""
    if module.padding_mode != "zeros":
        raise errors.UnsupportedOperation(
            f"conv3d layer '{name}': padding_mode={module.padding_mode!r} is not supported (only 'zeros')"
        )
    return conv3d_call(module.kernel_size, module.stride, module.padding, module.dilation, module.groups, name)


def conv3d_call(kernel_size: Any, stride: Any, padding: Any, dilation: Any, groups: Any, name: str) -> dict[str, Any]:
    """conv3d attrs from the arguments nn.Conv3d and F.conv3d share:
    (d, h, w) triples, padding as (front, back, top, bottom, left, right)."""
    layer = f"conv3d layer '{name}'"
    kernel = ints(kernel_size, 3, "kernel_size", layer)
    dilation3 = ints(dilation, 3, "dilation", layer)
    stride3 = ints(stride, 3, "stride", layer)
    if padding == "valid":
        pads: tuple[int, ...] = (0,) * 6
    elif padding == "same":
        if stride3 != (1, 1, 1):
            raise errors.InvalidArgument(
                f"{layer}: padding='same' is not supported for strided convolutions (as in PyTorch)"
            )
        pads = padding_rule.same_nd((None,) * 3, kernel, stride3, dilation3)  # type: ignore[assignment]
    elif isinstance(padding, str):
        raise errors.InvalidArgument(f"{layer}: padding must be 'valid', 'same' or ints, got {padding!r}")
    else:
        pads = tuple(p for p in ints(padding, 3, "padding", layer) for _ in range(2))
    return dict(stride=stride3, padding=pads, dilation=dilation3, groups=_int(groups, "groups", layer))


def batchnorm(
    running_mean: Any, running_var: Any, weight: Any, bias: Any, eps: float
) -> tuple[dict[str, Any], dict[str, Any]]:
    """batchnorm2d attrs and weights of nn.BatchNorm2d / F.batch_norm at
    inference (running statistics); without an affine weight and bias the
    core's are ones and zeros."""
    weight = np.ones_like(running_mean) if weight is None else weight
    bias = np.zeros_like(running_mean) if bias is None else bias
    return {"eps": float(eps)}, {
        "weight": weight,
        "bias": bias,
        "running_mean": running_mean,
        "running_var": running_var,
    }


def maxpool2d(
    kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False, *, name: str, dims: int = 2
) -> dict[str, Any]:
    """maxpool2d attrs of nn.MaxPool2d / F.max_pool2d; with dims=3,
    maxpool3d's of nn.MaxPool3d / F.max_pool3d."""
    layer = f"maxpool{dims}d layer '{name}'"
    if return_indices:
        raise errors.UnsupportedOperation(f"{layer}: return_indices=True is not supported")
    kernel = ints(kernel_size, dims, "kernel_size", layer)
    return dict(
        kernel=kernel,
        stride=pool_stride(stride, kernel, layer),
        padding=_window_padding(padding, dims, layer),
        dilation=ints(dilation, dims, "dilation", layer),
        ceil_mode=bool(ceil_mode),
    )


def avgpool2d(
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode=False,
    count_include_pad=True,
    divisor_override=None,
    *,
    name: str,
    dims: int = 2,
) -> dict[str, Any]:
    """avgpool2d attrs of nn.AvgPool2d / F.avg_pool2d; with dims=3,
    avgpool3d's of nn.AvgPool3d / F.avg_pool3d."""
    layer = f"avgpool{dims}d layer '{name}'"
    kernel = ints(kernel_size, dims, "kernel_size", layer)
    return dict(
        kernel=kernel,
        stride=pool_stride(stride, kernel, layer),
        padding=_window_padding(padding, dims, layer),
        ceil_mode=bool(ceil_mode),
        count_include_pad=bool(count_include_pad),
        divisor_override=None if divisor_override is None else _int(divisor_override, "divisor_override", layer),
    )


def _window_padding(padding: Any, dims: int, layer: str) -> tuple[int, ...]:
    """A pool's padding, ints per spatial dim, as the core's (before,
    after) pairs."""
    return tuple(p for p in ints(padding, dims, "padding", layer) for _ in range(2))


def adaptive_output_size(output_size, input_shape: Sequence[int] | None, name: str) -> tuple[int, int]:
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


def numpy_weight(tensor: torch.Tensor | None):
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
    """pad2d attrs from F.pad's / nn.ConstantPad2d's / nn.ReflectionPad2d's
    ... (left, right, top, bottom) on the last two dims of an NCHW tensor,
    in torch's modes ('constant', 'reflect', 'replicate', 'circular', the
    core's names)."""
    layer = f"pad2d layer '{name}'"
    if mode not in PAD_MODES:
        raise errors.UnsupportedOperation(
            f"{layer}: padding mode '{mode}' is not supported (one of {', '.join(PAD_MODES)})"
        )
    if isinstance(pad, int) and not isinstance(pad, bool):
        pad = (pad,) * 4  # nn.ReflectionPad2d(2) and the like
    if not isinstance(pad, (list, tuple)) or len(pad) != 4 or not all(isinstance(p, int) for p in pad):
        raise errors.UnsupportedOperation(
            f"{layer}: only 4 int pads (left, right, top, bottom) of a rank-4 tensor are supported, got {pad!r}"
        )
    if any(p < 0 for p in pad):
        raise errors.UnsupportedOperation(f"{layer}: negative pads (cropping) are not supported, got {tuple(pad)}")
    left, right, top, bottom = pad
    attrs = {
        "padding": (top, bottom, left, right),
        "value": 0.0 if value is None or mode != "constant" else float(value),
    }
    if mode != "constant":
        attrs["mode"] = mode
    return attrs


# pad2d's modes, torch's names (F.pad's and nn.Conv2d's padding_mode, where
# 'zeros' is 'constant').
PAD_MODES = ("constant", "reflect", "replicate", "circular")


def conv_transpose2d(module: nn.ConvTranspose2d, name: str) -> dict[str, Any]:
    layer = f"conv_transpose2d layer '{name}'"
    if module.padding_mode != "zeros":
        raise errors.UnsupportedOperation(
            f"{layer}: padding_mode={module.padding_mode!r} is not supported (only 'zeros', as torch)"
        )
    return conv_transpose2d_attrs(
        module.stride, module.padding, module.output_padding, module.groups, module.dilation, layer
    )


def conv_transpose2d_attrs(
    stride: Any, padding: Any, output_padding: Any, groups: Any, dilation: Any, layer: str
) -> dict[str, Any]:
    """conv_transpose2d attrs of nn.ConvTranspose2d / F.conv_transpose2d."""
    ph, pw = pair(padding, "padding", layer)
    return dict(
        stride=pair(stride, "stride", layer),
        padding=(ph, ph, pw, pw),
        output_padding=pair(output_padding, "output_padding", layer),
        dilation=pair(dilation, "dilation", layer),
        groups=_int(groups, "groups", layer),
    )


# -- issue 17 (helper N2): resampling, norms, block shuffles ---------------


def interpolate(
    size: Any,
    scale_factor: Any,
    mode: str,
    align_corners: Any,
    recompute_scale_factor: Any,
    input_shape: Sequence[int] | None,
    name: str,
) -> dict[str, Any]:
    """resize attrs of F.interpolate / nn.Upsample on an NCHW tensor:
    'nearest' (asymmetric + floor), 'nearest-exact' (half_pixel, rounding
    halves up), 'bilinear' and 'bicubic' (half_pixel, or align_corners;
    bicubic's A is torch's -0.75). A
    scale_factor maps the coordinates as torch does (by 1 / scale), unless
    recompute_scale_factor, where the sizes' ratio does (which needs the
    input's size)."""
    layer = f"resize layer '{name}'"
    modes = {
        "nearest": ("nearest", "asymmetric", "floor"),
        "nearest-exact": ("nearest", "half_pixel", "round_prefer_ceil"),
        "bilinear": ("linear", "align_corners" if align_corners else "half_pixel", "floor"),
        "bicubic": ("cubic", "align_corners" if align_corners else "half_pixel", "floor"),
    }
    if mode not in modes:
        raise errors.UnsupportedOperation(f"{layer}: mode {mode!r} is not supported (one of {', '.join(modes)})")
    if align_corners and mode not in ("bilinear", "bicubic"):
        raise errors.InvalidArgument(f"{layer}: align_corners only applies to a linear mode, not {mode!r}")
    core_mode, coordinates, rounding = modes[mode]
    attrs: dict[str, Any] = {"mode": core_mode, "coordinate_transformation_mode": coordinates, "nearest_mode": rounding}
    if (size is None) == (scale_factor is None):
        raise errors.InvalidArgument(f"{layer}: give exactly one of size and scale_factor")
    if size is not None:
        attrs["size"] = pair(size, "size", layer)
        return attrs
    sf = scale_factor if isinstance(scale_factor, (tuple, list)) else (scale_factor, scale_factor)
    if len(sf) != 2 or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in sf):
        raise errors.UnsupportedOperation(f"{layer}: scale_factor must be a number or 2 numbers, got {scale_factor!r}")
    scale = (float(sf[0]), float(sf[1]))
    if recompute_scale_factor:
        if input_shape is None:
            raise NeedsInputShape(f"{layer}: recompute_scale_factor needs the input's size; pass sample_input_shape")
        attrs["size"] = (int(input_shape[-2] * scale[0]), int(input_shape[-1] * scale[1]))
        return attrs
    attrs["scale"] = scale
    return attrs


def groupnorm(groups: int, eps: float, weight: Any, bias: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """groupnorm attrs and weights (groups 0: one per channel, instance norm)."""
    return {"groups": int(groups), "eps": float(eps)}, {"weight": weight, "bias": bias}


def rmsnorm(normalized_shape: Any, weight: Any, eps: float | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """rmsnorm attrs and weights of nn.RMSNorm / F.rms_norm; eps None is
    torch's finfo(float32).eps (the model's dtype, float32 as torch builds
    it; torch takes the input's)."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    eps = float(torch.finfo(torch.float32).eps) if eps is None else float(eps)
    return {"axes": len(shape), "eps": eps}, {"weight": weight}


def lrn(size: int, alpha: float, beta: float, k: float) -> dict[str, Any]:
    """lrn attrs of nn.LocalResponseNorm: torch's window starts size // 2
    channels before c."""
    return {"size": int(size), "alpha": float(alpha), "beta": float(beta), "bias": float(k), "before": int(size) // 2}
