"""The one mapping of PyTorch modules onto the core's ops.

Each torch module class that is one core layer has ONE entry here: the op,
and a function reading the module's attributes (in the core's names, see
core/ops/README.md) and its weights (in the op's declared names, the
module's own Parameters and buffers where it has them). Both paths start
from this table:

- swap_backend (ai3.torch.fx): a call_module node becomes the entry's
  LayerSpec (any subclass of an entry's class maps as the class does: fx
  traces through a subclass's own forward, so a leaf module is the class);
- the in-place swaps (ai3.torch.swap_operation): each module of exactly an
  entry's class (a subclass may override forward, which ai3 would not
  honour) becomes an ai3.torch.Layer holding the module's own tensors.

Adding an op to the torch frontend is one `maps(...)` entry below (plus
the core op); functional calls (F.relu, torch.flatten, ...) keep their
handlers in ai3.torch.fx.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from ai3 import errors
from ai3.torch import params

Attrs = dict[str, Any]
Weights = dict[str, torch.Tensor | None]
# attrs that depend on the input's shape (None: not known): the complete attrs
Resolve = Callable[[Attrs, Sequence[int] | None, str], Attrs]


@dataclass(frozen=True)
class Entry:
    op: str  # a core op, or "identity" (dropped at inference)
    read: Callable[[nn.Module, str], tuple[Attrs, Weights]]  # (module, layer name) -> (attrs, weights)
    image: bool = False  # an NCHW op: a rank-3 input is one CHW image, as PyTorch takes it
    resolve: Resolve | None = None  # module-level function (a swapped module pickles it)
    methods: tuple[str, ...] = ("forward",)  # what a subclass must not override for ai3 to stand in
    # What the swapped module runs in training mode (module.training), when
    # that differs from the core op: a module-level function (swapped module,
    # input) -> output (a swapped module pickles it). None: the core op in
    # both modes.
    training: Callable[[nn.Module, torch.Tensor], torch.Tensor] | None = None


_TABLE: dict[type, Entry] = {}


def maps(
    *classes: type,
    op: str,
    image: bool = False,
    resolve: Resolve | None = None,
    methods: tuple[str, ...] = ("forward",),
    training: Callable[[nn.Module, torch.Tensor], torch.Tensor] | None = None,
):
    """Registers `read` as the mapping of `classes` onto `op`."""

    def register(read: Callable[[nn.Module, str], tuple[Attrs, Weights]]):
        entry = Entry(op, read, image, resolve, methods, training)
        for cls in classes:
            _TABLE[cls] = entry
        return read

    return register


def _none(m: nn.Module, name: str) -> tuple[Attrs, Weights]:
    return {}, {}


for _cls, _op in (
    (nn.ReLU, "relu"),
    (nn.Sigmoid, "sigmoid"),
    (nn.SiLU, "silu"),
    (nn.Tanh, "tanh"),
    (nn.Hardswish, "hardswish"),
):
    maps(_cls, op=_op)(_none)
maps(nn.Dropout, nn.Dropout1d, nn.Dropout2d, nn.Dropout3d, nn.AlphaDropout, nn.Identity, op="identity")(_none)


@maps(nn.Conv2d, op="conv2d", image=True, methods=("forward", "_conv_forward"))
def _conv2d(m: nn.Conv2d, name: str) -> tuple[Attrs, Weights]:
    return params.conv2d(m, name), {"weight": m.weight, "bias": m.bias}


@maps(nn.Conv3d, op="conv3d", methods=("forward", "_conv_forward"))
def _conv3d(m: nn.Conv3d, name: str) -> tuple[Attrs, Weights]:
    return params.conv3d(m, name), {"weight": m.weight, "bias": m.bias}


@maps(nn.Linear, op="linear")
def _linear(m: nn.Linear, name: str) -> tuple[Attrs, Weights]:
    return {}, {"weight": m.weight, "bias": m.bias}


@maps(nn.MaxPool2d, op="maxpool2d", image=True)
def _maxpool2d(m: nn.MaxPool2d, name: str) -> tuple[Attrs, Weights]:
    return params.maxpool2d(
        m.kernel_size, m.stride, m.padding, m.dilation, m.ceil_mode, m.return_indices, name=name
    ), {}


@maps(nn.AvgPool2d, op="avgpool2d", image=True)
def _avgpool2d(m: nn.AvgPool2d, name: str) -> tuple[Attrs, Weights]:
    a = params.avgpool2d(
        m.kernel_size, m.stride, m.padding, m.ceil_mode, m.count_include_pad, m.divisor_override, name=name
    )
    return a, {}


@maps(nn.MaxPool3d, op="maxpool3d")
def _maxpool3d(m: nn.MaxPool3d, name: str) -> tuple[Attrs, Weights]:
    return params.maxpool2d(
        m.kernel_size, m.stride, m.padding, m.dilation, m.ceil_mode, m.return_indices, name=name, dims=3
    ), {}


@maps(nn.AvgPool3d, op="avgpool3d")
def _avgpool3d(m: nn.AvgPool3d, name: str) -> tuple[Attrs, Weights]:
    a = params.avgpool2d(
        m.kernel_size, m.stride, m.padding, m.ceil_mode, m.count_include_pad, m.divisor_override, name=name, dims=3
    )
    return a, {}


def adaptive_size(attrs: Attrs, input_shape: Sequence[int] | None, name: str) -> Attrs:
    """output_size with PyTorch's None entries (keep the input's size) taken
    from the input."""
    return {**attrs, "output_size": params.adaptive_output_size(attrs["output_size"], input_shape, name)}


@maps(nn.AdaptiveAvgPool2d, op="adaptiveavgpool2d", image=True, resolve=adaptive_size)
def _adaptiveavgpool2d(m: nn.AdaptiveAvgPool2d, name: str) -> tuple[Attrs, Weights]:
    return {"output_size": m.output_size}, {}


# A video model's global average (torchvision's video ResNets and S3D):
# the mean over the three spatial dims.
@maps(nn.AdaptiveAvgPool3d, op="mean")
def _adaptiveavgpool3d(m: nn.AdaptiveAvgPool3d, name: str) -> tuple[Attrs, Weights]:
    if params.ints(m.output_size, 3, "output_size", f"adaptiveavgpool3d layer '{name}'") != (1, 1, 1):
        raise errors.UnsupportedOperation(
            f"adaptiveavgpool3d layer '{name}': output_size={m.output_size!r} is not supported (only 1, a global average)"
        )
    return {"axes": [-3, -2, -1], "keepdim": True}, {}


@maps(nn.AdaptiveMaxPool2d, op="adaptivemaxpool2d", image=True, resolve=adaptive_size)
def _adaptivemaxpool2d(m: nn.AdaptiveMaxPool2d, name: str) -> tuple[Attrs, Weights]:
    if m.return_indices:
        raise errors.UnsupportedOperation(f"adaptivemaxpool2d layer '{name}': return_indices=True is not supported")
    return {"output_size": m.output_size}, {}


@maps(nn.Flatten, op="flatten")
def _flatten(m: nn.Flatten, name: str) -> tuple[Attrs, Weights]:
    return {"start_dim": m.start_dim, "end_dim": m.end_dim}, {}


@maps(nn.Hardtanh, nn.ReLU6, op="clamp")  # ReLU6 is Hardtanh(0, 6)
def _clamp(m: nn.Hardtanh, name: str) -> tuple[Attrs, Weights]:
    return {"min": float(m.min_val), "max": float(m.max_val)}, {}


@maps(nn.GELU, op="gelu")
def _gelu(m: nn.GELU, name: str) -> tuple[Attrs, Weights]:
    return {"approximate": m.approximate}, {}


@maps(nn.LeakyReLU, op="leaky_relu")
def _leaky_relu(m: nn.LeakyReLU, name: str) -> tuple[Attrs, Weights]:
    return {"alpha": float(m.negative_slope)}, {}


# Issue 17's activations (core/ops/unary) and PReLU (the binary op prelu,
# whose 1-D weight applies along dim 1 as torch's does).
for _cls, _op in ((nn.SELU, "selu"), (nn.Softsign, "softsign"), (nn.Mish, "mish")):
    maps(_cls, op=_op)(_none)


@maps(nn.ELU, op="elu")
def _elu(m: nn.ELU, name: str) -> tuple[Attrs, Weights]:
    return {"alpha": float(m.alpha)}, {}


@maps(nn.CELU, op="celu")
def _celu(m: nn.CELU, name: str) -> tuple[Attrs, Weights]:
    return {"alpha": float(m.alpha)}, {}


@maps(nn.Softplus, op="softplus")
def _softplus(m: nn.Softplus, name: str) -> tuple[Attrs, Weights]:
    return {"beta": float(m.beta), "threshold": float(m.threshold)}, {}


@maps(nn.PReLU, op="prelu")
def _prelu(m: nn.PReLU, name: str) -> tuple[Attrs, Weights]:
    return {}, {"other": m.weight}


@maps(nn.Hardsigmoid, op="hardsigmoid")
def _hardsigmoid(m: nn.Hardsigmoid, name: str) -> tuple[Attrs, Weights]:
    return dict(params.TORCH_HARDSIGMOID), {}


@maps(nn.LayerNorm, op="layernorm")
def _layernorm(m: nn.LayerNorm, name: str) -> tuple[Attrs, Weights]:
    return params.layernorm(m.normalized_shape, m.weight, m.bias, m.eps)


def softmax_axis(attrs: Attrs, input_shape: Sequence[int] | None, name: str) -> Attrs:
    """dim=None: PyTorch's legacy implicit dim, from the input's rank."""
    if attrs["axis"] is not None:
        return attrs
    if input_shape is None:
        raise params.NeedsInputShape(
            f"softmax layer '{name}': dim=None needs the input's rank: pass dim, or a sample input shape"
        )
    return {**attrs, "axis": params.legacy_softmax_dim(len(input_shape))}


@maps(nn.Softmax, op="softmax", resolve=softmax_axis)
def _softmax(m: nn.Softmax, name: str) -> tuple[Attrs, Weights]:
    return {"axis": m.dim}, {}


@maps(nn.LogSoftmax, op="log_softmax", resolve=softmax_axis)
def _log_softmax(m: nn.LogSoftmax, name: str) -> tuple[Attrs, Weights]:
    return {"axis": m.dim}, {}


@maps(nn.ConstantPad2d, nn.ZeroPad2d, op="pad2d", image=True)
def _pad2d(m: nn.ConstantPad2d, name: str) -> tuple[Attrs, Weights]:
    return params.pad2d(m.padding, "constant", m.value, name), {}


# Issue 17 (helper N2): padding modes, deconvolution, resampling, norms.
@maps(nn.ReflectionPad2d, nn.ReplicationPad2d, nn.CircularPad2d, op="pad2d", image=True)
def _pad2d_mode(m: nn.Module, name: str) -> tuple[Attrs, Weights]:
    mode = (
        "reflect"
        if isinstance(m, nn.ReflectionPad2d)
        else "replicate"
        if isinstance(m, nn.ReplicationPad2d)
        else "circular"
    )
    return params.pad2d(tuple(m.padding), mode, None, name), {}


@maps(nn.ConvTranspose2d, op="conv_transpose2d", image=True)
def _conv_transpose2d(m: nn.ConvTranspose2d, name: str) -> tuple[Attrs, Weights]:
    return params.conv_transpose2d(m, name), {"weight": m.weight, "bias": m.bias}


def upsample_resolve(attrs: Attrs, input_shape: Sequence[int] | None, name: str) -> Attrs:
    """nn.Upsample's attrs (ai3.torch.params.interpolate), which need the
    input's size only with recompute_scale_factor."""
    return params.interpolate(*attrs["upsample"], input_shape, name)


@maps(nn.Upsample, nn.UpsamplingNearest2d, nn.UpsamplingBilinear2d, op="resize", resolve=upsample_resolve)
def _upsample(m: nn.Upsample, name: str) -> tuple[Attrs, Weights]:
    # UpsamplingBilinear2d is bilinear with align_corners=True (its own forward).
    align = True if isinstance(m, nn.UpsamplingBilinear2d) else m.align_corners
    return {"upsample": (m.size, m.scale_factor, m.mode, align, m.recompute_scale_factor)}, {}


@maps(nn.GroupNorm, op="groupnorm")
def _groupnorm(m: nn.GroupNorm, name: str) -> tuple[Attrs, Weights]:
    return params.groupnorm(m.num_groups, m.eps, m.weight, m.bias)


def _instance_norm(m: nn.Module, name: str) -> tuple[Attrs, Weights]:
    """InstanceNorm: groupnorm with one group per channel (groups 0)."""
    if m.track_running_stats:
        raise errors.UnsupportedOperation(
            f"groupnorm layer '{name}': {type(m).__name__} with track_running_stats=True normalises by running "
            "statistics in eval mode, which ai3 does not take"
        )
    return params.groupnorm(0, m.eps, m.weight, m.bias)


maps(nn.InstanceNorm1d, nn.InstanceNorm3d, op="groupnorm")(_instance_norm)
maps(nn.InstanceNorm2d, op="groupnorm", image=True)(_instance_norm)


@maps(nn.RMSNorm, op="rmsnorm")
def _rmsnorm(m: nn.RMSNorm, name: str) -> tuple[Attrs, Weights]:
    return params.rmsnorm(m.normalized_shape, m.weight, m.eps)


@maps(nn.LocalResponseNorm, op="lrn")
def _lrn(m: nn.LocalResponseNorm, name: str) -> tuple[Attrs, Weights]:
    return params.lrn(m.size, m.alpha, m.beta, m.k), {}


@maps(nn.PixelShuffle, op="depth_to_space", image=True)
def _pixel_shuffle(m: nn.PixelShuffle, name: str) -> tuple[Attrs, Weights]:
    return {"blocksize": int(m.upscale_factor), "mode": "CRD"}, {}


@maps(nn.PixelUnshuffle, op="space_to_depth", image=True)
def _pixel_unshuffle(m: nn.PixelUnshuffle, name: str) -> tuple[Attrs, Weights]:
    return {"blocksize": int(m.downscale_factor), "mode": "CRD"}, {}


def batchnorm_training(m: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """A swapped BatchNorm2d (or BatchNorm1d) in training mode: torch's own
    batch-statistics forward (F.batch_norm, updating the running
    statistics), as the module's forward runs it, from the attributes and
    tensors the swapped module took over (momentum, eps,
    num_batches_tracked, ...). The core's batchnorm2d is the inference form
    (running statistics)."""
    if isinstance(m, nn.BatchNorm1d):
        if x.dim() not in (2, 3):
            raise ValueError(f"expected 2D or 3D input (got {x.dim()}D input)")  # nn.BatchNorm1d's words
    elif isinstance(m, nn.BatchNorm3d):
        if x.dim() != 5:
            raise ValueError(f"expected 5D input (got {x.dim()}D input)")  # nn.BatchNorm3d's words
    elif x.dim() != 4:
        raise ValueError(f"expected 4D input (got {x.dim()}D input)")  # nn.BatchNorm2d's check and words
    factor = 0.0 if m.momentum is None else m.momentum
    if m.track_running_stats and m.num_batches_tracked is not None:
        m.num_batches_tracked.add_(1)
        if m.momentum is None:  # a cumulative moving average
            factor = 1.0 / float(m.num_batches_tracked)
    # batch_norm updates the running statistics in place without bumping
    # their version counters, which key the core layer the eval-mode forward
    # runs (ai3.torch.ops), so eval() would run the old statistics. It updates
    # copies here, which go back with copy_ (a counted in-place write); the
    # copies, not the buffers, are what its backward saves.
    mean, var = m.running_mean.clone(), m.running_var.clone()
    y = F.batch_norm(x, mean, var, m.weight, m.bias, True, factor, m.eps)
    with torch.no_grad():
        m.running_mean.copy_(mean)
        m.running_var.copy_(var)
    return y


# BatchNorm1d on (N, C) or (N, C, L) and BatchNorm3d on (N, C, D, H, W):
# the core's batchnorm2d takes any rank >= 2, channels at dim 1.
@maps(nn.BatchNorm2d, nn.BatchNorm1d, nn.BatchNorm3d, op="batchnorm2d", training=batchnorm_training)
def _batchnorm2d(m: nn.BatchNorm2d, name: str) -> tuple[Attrs, Weights]:
    if m.running_mean is None or m.running_var is None:
        raise errors.UnsupportedOperation(
            f"batchnorm2d layer '{name}': BatchNorm2d without running statistics (track_running_stats=False) is not supported"
        )
    # affine=False: the core's weight and bias are ones and zeros.
    weight = m.weight if m.weight is not None else torch.ones_like(m.running_mean)
    bias = m.bias if m.bias is not None else torch.zeros_like(m.running_mean)
    return {"eps": float(m.eps)}, {
        "weight": weight,
        "bias": bias,
        "running_mean": m.running_mean,
        "running_var": m.running_var,
    }


# torchvision is not imported here (a model holding its layers has imported
# it; importing it for models that don't would load its native library into
# processes that never asked for it): its classes join the table once it is.
def _torchvision_entries() -> None:
    tv = sys.modules.get("torchvision.ops")
    depth = getattr(tv, "StochasticDepth", None) if tv is not None else None
    if depth is not None and depth not in _TABLE:
        maps(depth, op="identity")(_none)  # identity at inference (the model is in eval mode)


def base_class(module: nn.Module) -> type | None:
    """The nearest class in `module`'s MRO that has an entry."""
    _torchvision_entries()
    return next((c for c in type(module).__mro__ if c in _TABLE), None)


def lookup(module: nn.Module, exact: bool = False) -> Entry | None:
    """The entry of `module`'s class; with exact=False, of the nearest
    class in its MRO that has one."""
    cls = base_class(module)
    if cls is None or (exact and cls is not type(module)):
        return None
    return _TABLE[cls]


def classes_of(op: str) -> tuple[type, ...]:
    """The module classes mapped onto `op`."""
    return tuple(c for c, e in _TABLE.items() if e.op == op)


def swappable_ops() -> list[str]:
    """The ops an in-place swap can put in place of a torch module."""
    return sorted({e.op for e in _TABLE.values() if e.op != "identity"})


def image_ops() -> frozenset[str]:
    """The ops whose modules take a rank-3 input as one (C, H, W) image."""
    return frozenset(e.op for e in _TABLE.values() if e.image)


__all__ = [
    "Entry",
    "adaptive_size",
    "batchnorm_training",
    "base_class",
    "classes_of",
    "image_ops",
    "lookup",
    "maps",
    "softmax_axis",
    "swappable_ops",
]
