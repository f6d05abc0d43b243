"""The core's ops as PyTorch custom operators: ``torch.ops.ai3.<op>``.

Importing this module registers, in the ``ai3`` namespace::

    ai3::conv2d(Tensor x, Tensor weight, Tensor? bias, int[] stride,
                int[] padding, int[] dilation, int groups, str algorithm) -> Tensor
    ai3::linear(Tensor x, Tensor weight, Tensor? bias, str algorithm) -> Tensor
    ai3::relu(Tensor x, str algorithm) -> Tensor
    ai3::maxpool2d(Tensor x, int[] kernel, int[] stride, int[] padding,
                   int[] dilation, bool ceil_mode, str algorithm) -> Tensor
    ai3::avgpool2d(Tensor x, int[] kernel, int[] stride, int[] padding,
                   bool ceil_mode, bool count_include_pad,
                   int? divisor_override, str algorithm) -> Tensor
    ai3::adaptiveavgpool2d(Tensor x, int[] output_size, str algorithm) -> Tensor
    ai3::flatten(Tensor x, int start_dim, int end_dim, str algorithm) -> Tensor

Each op is self-describing (weights are tensor arguments, parameters are
ints/lists/strings), so graphs captured by torch.compile, torch.export and
torch.jit.trace keep everything the op needs. Conventions:

- Images are NCHW (rank 4). ``stride``/``dilation``/``kernel``/
  ``output_size`` take 1 or 2 ints (h, w). ``padding`` takes 4 ints
  (top, bottom, left, right), 2 ints (h, w: symmetric, as PyTorch) or 1.
- ``algorithm`` is a name from ``ai3.algorithms()[op]`` or "default".
- Inputs and weights: float32 or float64, of one dtype, on the CPU or (in a
  --config=cuda build) on a GPU, where they stay: weighted layers run on
  their weight's device, weightless ones on the input's (ai3.cuda). A tensor
  on another device raises ai3.UnsupportedOperation;
  another dtype raises ai3.DTypeError; a bad shape ai3.ShapeError. The same
  checks run in the fake (meta) kernels, so torch.compile/export fail at
  trace time rather than at run time.
- The result is a new tensor (never a view of the input), contiguous.

Core layers are built once and reused: a layer copies (and may transform,
e.g. winograd) its weights, so rebuilding it per call would cost more than
the op. Layers of weighted ops are cached per weight tensor (weakly: the
entry goes with the tensor) and keyed by the weight's data pointer, version
counter, dtype and shape, the bias (identity, data pointer, version), every
parameter and the algorithm; an in-place update of a weight (optimizer step,
``load_state_dict``) or a replaced ``.data`` (``module.to(torch.float64)``)
therefore builds a new layer, and the stale one is dropped. Weightless
layers are cached per thread by their parameters.

Inference only: the ops run under autograd (inputs or weights that require
grad are fine, the forward runs), but their backward raises
ai3.UnsupportedOperation("... ai3 layers are inference-only"). The backward
is registered so that torch.compile can trace a model whose parameters
require grad; the error comes when a backward pass actually runs.
"""

from __future__ import annotations

import functools
import re
import threading
import warnings
import weakref
from typing import Any, Callable, Optional, Sequence

import torch
from torch.utils.weak import WeakIdKeyDictionary

from ai3 import cuda, errors, layers

NAMESPACE = "ai3"
OPS = ("conv2d", "linear", "relu", "maxpool2d", "avgpool2d", "adaptiveavgpool2d", "flatten")
_FLOATS = (torch.float32, torch.float64)


# ---------------------------------------------------------------------------
# Argument checks, shared by the real and the fake kernels. They only read
# metadata (shapes may be SymInts under torch.compile(dynamic=True)).


def _check_tensor(op: str, t: torch.Tensor, what: str) -> None:
    if t.device.type == "cuda" and not cuda.built():
        raise errors.UnsupportedOperation(
            f"{op}: {what} is on {t.device}; this ai3 build runs on the CPU only (build with --config=cuda)"
        )
    if t.device.type not in ("cpu", "meta", "cuda"):
        raise errors.UnsupportedOperation(f"{op}: {what} is on {t.device}; ai3 runs on cpu and cuda")
    if t.dtype not in _FLOATS:
        raise errors.DTypeError(f"{op}: {what} has dtype {t.dtype}; ai3 takes float32 or float64")


def _check_same_dtype(op: str, x: torch.Tensor, t: Optional[torch.Tensor], what: str) -> None:
    if t is None:
        return
    _check_tensor(op, t, what)
    if t.device.type != x.device.type:
        raise errors.InvalidArgument(f"{op}: input is on {x.device} but {what} is on {t.device}")
    if t.dtype != x.dtype:
        raise errors.DTypeError(f"{op}: input is {x.dtype} but {what} is {t.dtype}; convert one of them")


def _ints(op: str, values: tuple, what: str, lengths: Sequence[int]) -> tuple[int, ...]:
    if len(values) not in lengths or not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        want = " or ".join(str(n) for n in lengths)
        raise errors.InvalidArgument(f"{op}: {what} must be {want} ints, got {list(values)!r}")
    return values


def _pair(op: str, values: Sequence[int], what: str, minimum: int = 1) -> tuple[int, int]:
    """(h, w) from 1 or 2 ints."""
    return _pair_of(op, tuple(values), what, minimum)


def _pads(op: str, values: Sequence[int]) -> tuple[int, int, int, int]:
    """(top, bottom, left, right) from 1, 2 (h, w) or 4 ints."""
    return _pads_of(op, tuple(values))


# Cached: the same few parameter lists come with every call of an op.
@functools.lru_cache(maxsize=4096)
def _pair_of(op: str, values: tuple, what: str, minimum: int) -> tuple[int, int]:
    v = _ints(op, values, what, (1, 2))
    h, w = (v[0], v[0]) if len(v) == 1 else v
    if h < minimum or w < minimum:
        raise errors.InvalidArgument(f"{op}: {what} must be >= {minimum}, got {list(values)!r}")
    return h, w


@functools.lru_cache(maxsize=4096)
def _pads_of(op: str, values: tuple) -> tuple[int, int, int, int]:
    v = _ints(op, values, "padding", (1, 2, 4))
    if len(v) == 1:
        pads = (v[0],) * 4
    elif len(v) == 2:
        pads = (v[0], v[0], v[1], v[1])
    else:
        pads = v
    if min(pads) < 0:
        raise errors.InvalidArgument(f"{op}: padding must be >= 0, got {list(values)!r}")
    return pads  # type: ignore[return-value]


def _image(op: str, x: torch.Tensor) -> None:
    if x.dim() != 4:
        raise errors.ShapeError(f"{op}: expected a rank-4 NCHW input, got shape {tuple(x.shape)}")


def _pool_size(size, kernel: int, before: int, after: int, stride: int, dilation: int, ceil_mode: bool):
    # PyTorch's pooling_output_shape (the core's PoolOutputSize).
    out = (size + before + after - dilation * (kernel - 1) - 1 + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= size + before:
        out = out - 1
    return out


def _conv2d_shape(x, weight, bias, stride, padding, dilation, groups) -> tuple:
    op = "conv2d"
    _check_tensor(op, x, "input")
    _check_same_dtype(op, x, weight, "weight")
    _check_same_dtype(op, x, bias, "bias")
    sh, sw = _pair(op, stride, "stride")
    dh, dw = _pair(op, dilation, "dilation")
    top, bottom, left, right = _pads(op, padding)
    if not isinstance(groups, int) or groups < 1:
        raise errors.InvalidArgument(f"{op}: groups must be >= 1, got {groups!r}")
    if weight.dim() != 4:
        raise errors.ShapeError(f"{op}: weight must be (out_channels, in_channels / groups, kh, kw), got shape {tuple(weight.shape)}")
    out_ch, in_per_group, kh, kw = weight.shape
    if out_ch % groups != 0:
        raise errors.InvalidArgument(f"{op}: groups={groups} must divide out_channels={out_ch}")
    if bias is not None and tuple(bias.shape) != (out_ch,):
        raise errors.ShapeError(f"{op}: bias has shape {tuple(bias.shape)}, expected ({out_ch},)")
    _image(op, x)
    n, c, h, w = x.shape
    if c != in_per_group * groups:
        raise errors.ShapeError(
            f"{op}: input {tuple(x.shape)} has {c} channels, the weight {tuple(weight.shape)} "
            f"with groups={groups} expects {in_per_group * groups}"
        )
    span_h, span_w = dh * (kh - 1) + 1, dw * (kw - 1) + 1
    padded_h, padded_w = h + top + bottom, w + left + right
    if h < 1 or w < 1 or padded_h < span_h or padded_w < span_w:
        raise errors.ShapeError(
            f"{op}: input {tuple(x.shape)} padded to {padded_h}x{padded_w} is smaller than "
            f"the dilated kernel {span_h}x{span_w}"
        )
    return (n, out_ch, (padded_h - span_h) // sh + 1, (padded_w - span_w) // sw + 1)


def _linear_shape(x, weight, bias) -> tuple:
    op = "linear"
    _check_tensor(op, x, "input")
    _check_same_dtype(op, x, weight, "weight")
    _check_same_dtype(op, x, bias, "bias")
    if weight.dim() != 2:
        raise errors.ShapeError(f"{op}: weight must be (out_features, in_features), got shape {tuple(weight.shape)}")
    out_f, in_f = weight.shape
    if bias is not None and tuple(bias.shape) != (out_f,):
        raise errors.ShapeError(f"{op}: bias has shape {tuple(bias.shape)}, expected ({out_f},)")
    if x.dim() < 1 or x.shape[-1] != in_f:
        raise errors.ShapeError(
            f"{op}: expected an input whose last dimension is in_features={in_f}, got shape {tuple(x.shape)}"
        )
    return (*x.shape[:-1], out_f)


def _relu_shape(x) -> tuple:
    _check_tensor("relu", x, "input")
    return tuple(x.shape)


def _window(op, kernel, stride, padding, dilation):
    kh, kw = _pair(op, kernel, "kernel")
    sh, sw = _pair(op, stride, "stride")
    dh, dw = _pair(op, dilation, "dilation")
    top, bottom, left, right = _pads(op, padding)
    if max(top, bottom) > kh // 2 or max(left, right) > kw // 2:
        raise errors.InvalidArgument(
            f"{op}: padding should be at most half of the kernel size, got padding {list(padding)} "
            f"for a {kh}x{kw} kernel"
        )
    return (kh, kw), (sh, sw), (top, bottom, left, right), (dh, dw)


def _pool_shape(op, x, kernel, stride, padding, dilation, ceil_mode) -> tuple:
    _check_tensor(op, x, "input")
    (kh, kw), (sh, sw), (top, bottom, left, right), (dh, dw) = _window(op, kernel, stride, padding, dilation)
    _image(op, x)
    n, c, h, w = x.shape
    if c < 1 or h < 1 or w < 1:
        raise errors.ShapeError(f"{op}: input {tuple(x.shape)} has an empty channel or spatial dimension")
    oh = _pool_size(h, kh, top, bottom, sh, dh, bool(ceil_mode))
    ow = _pool_size(w, kw, left, right, sw, dw, bool(ceil_mode))
    if oh < 1 or ow < 1:
        raise errors.ShapeError(
            f"{op}: input {tuple(x.shape)} gives an output of spatial size {oh}x{ow}: the {kh}x{kw} "
            f"kernel with dilation {dh}x{dw} does not fit the padded input"
        )
    return (n, c, oh, ow)


def _maxpool2d_shape(x, kernel, stride, padding, dilation, ceil_mode) -> tuple:
    return _pool_shape("maxpool2d", x, kernel, stride, padding, dilation, ceil_mode)


def _avgpool2d_shape(x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override) -> tuple:
    if divisor_override is not None and divisor_override < 1:
        raise errors.InvalidArgument(f"avgpool2d: divisor_override must be >= 1 or None, got {divisor_override}")
    return _pool_shape("avgpool2d", x, kernel, stride, padding, (1, 1), ceil_mode)


def _adaptiveavgpool2d_shape(x, output_size) -> tuple:
    op = "adaptiveavgpool2d"
    _check_tensor(op, x, "input")
    oh, ow = _pair(op, output_size, "output_size")
    _image(op, x)
    n, c, h, w = x.shape
    if c < 1 or h < 1 or w < 1:
        raise errors.ShapeError(f"{op}: input {tuple(x.shape)} has an empty channel or spatial dimension")
    return (n, c, oh, ow)


def _flatten_shape(x, start_dim, end_dim) -> tuple:
    op = "flatten"
    _check_tensor(op, x, "input")
    rank = max(x.dim(), 1)

    def wrap(what, dim):
        if dim < -rank or dim >= rank:
            raise errors.ShapeError(
                f"{op}: {what}={dim} is out of range for an input of shape {tuple(x.shape)} "
                f"(expected a dim in [{-rank}, {rank - 1}])"
            )
        return dim + rank if dim < 0 else dim

    start, end = wrap("start_dim", start_dim), wrap("end_dim", end_dim)
    if start > end:
        raise errors.ShapeError(f"{op}: start_dim={start_dim} comes after end_dim={end_dim} for shape {tuple(x.shape)}")
    if x.dim() == 0:
        return (1,)
    merged = 1
    for d in x.shape[start : end + 1]:
        merged = merged * d
    return (*x.shape[:start], merged, *x.shape[end + 1 :])


# ---------------------------------------------------------------------------
# The cache of core layers.


class _Entry:
    """A core layer and the lock that serializes its calls (a core layer
    owns a workspace, so one layer must not run on two threads at once).

    A layer runs on one device. Weighted layers are built on their weight's
    device; a weightless entry keeps `build` and makes a layer for each other
    device an input comes from (a CUDA layer per GPU, see ai3.cuda)."""

    __slots__ = ("layer", "lock", "weight_state", "bias_ref", "bias_state", "build", "on_device", "__weakref__")

    def __init__(self, layer, weight_state=None, bias=None, bias_state=None, build=None):
        self.layer = layer
        self.lock = threading.Lock()
        self.weight_state = weight_state
        self.bias_ref = None if bias is None else weakref.ref(bias)
        self.bias_state = bias_state
        self.build = build
        self.on_device: dict = {}

    def run(self, x: torch.Tensor) -> torch.Tensor:
        with self.lock:
            layer = self.layer
            if x.device.type == "cuda" and self.build is not None:
                layer = self.on_device.get(x.device)
                if layer is None:
                    layer = self.on_device[x.device] = _build(self.layer.op, self.build, x.device)
            try:
                return layer(x)
            except errors.Error as e:
                raise _renamed(e, self.layer.op) from None


def _renamed(error: errors.Error, op: str) -> errors.Error:
    """The core names a layer ("conv2d layer 'conv2d' (smm): ..."); these
    layers are anonymous (shared by every module with the same weights), so
    the message says "conv2d (smm): ..." and the module adds its own name."""
    pattern = re.compile(rf"^(?:{re.escape(op)} layer(?: '[^']*')?(?: \(([^)]*)\))?: )+")
    match = pattern.match(str(error))
    if not match:
        return error
    algorithm = match.group(1)
    message = f"{op}{f' ({algorithm})' if algorithm else ''}: {str(error)[match.end():]}"
    try:
        return type(error)(message).with_traceback(error.__traceback__)
    except TypeError:
        return error


def _build(op: str, build: Callable[[], Any], device: Optional[torch.device] = None) -> Any:
    try:
        with cuda.layer_device(device):  # the device the layer runs on
            return build()
    except errors.Error as e:
        raise _renamed(e, op) from None


_weighted: WeakIdKeyDictionary = WeakIdKeyDictionary()  # weight -> {key: _Entry}
_weighted_lock = threading.Lock()
_thread_local = threading.local()  # .layers: {key: _Entry} of weightless ops
_warned_inference_tensor = False


def _state(t: torch.Tensor):
    """What identifies the contents of `t`, or None when it cannot be known
    (an inference tensor has no version counter)."""
    try:
        version = t._version
    except RuntimeError:
        return None
    return (t.data_ptr(), version, t.dtype, tuple(t.shape), tuple(t.stride()))


def _weighted_layer(op: str, weight: torch.Tensor, bias: Optional[torch.Tensor], params: tuple, build: Callable[[], Any]) -> _Entry:
    weight_state = _state(weight)
    bias_state = None if bias is None else _state(bias)
    if weight_state is None or (bias is not None and bias_state is None):
        global _warned_inference_tensor
        if not _warned_inference_tensor:
            _warned_inference_tensor = True
            warnings.warn(
                "ai3: a weight is an inference tensor (made under torch.inference_mode), which has no "
                "version counter; ai3 rebuilds its layer on every call instead of caching it",
                stacklevel=3,
            )
        return _Entry(_build(op, build, weight.device))
    key = (op, weight_state, None if bias is None else (id(bias), bias_state), params)
    with _weighted_lock:
        per_weight = _weighted.get(weight)
        entry = None if per_weight is None else per_weight.get(key)
    if entry is not None and (bias is None or (entry.bias_ref is not None and entry.bias_ref() is bias)):
        return entry
    entry = _Entry(_build(op, build, weight.device), weight_state, bias, bias_state)
    with _weighted_lock:
        per_weight = _weighted.get(weight)
        if per_weight is None:
            per_weight = _weighted[weight] = {}
        # Drop what can no longer hit: layers of older contents of this
        # weight, of dead biases, or of older contents of this bias.
        for k in [k for k, e in per_weight.items() if _stale(e, weight_state, bias, bias_state)]:
            del per_weight[k]
        per_weight[key] = entry
    return entry


def _stale(e: _Entry, weight_state, bias, bias_state) -> bool:
    if e.weight_state != weight_state:
        return True
    if e.bias_ref is None:
        return False
    old_bias = e.bias_ref()
    return old_bias is None or (old_bias is bias and e.bias_state != bias_state)


def _weightless_layer(key: tuple, build: Callable[[], Any]) -> _Entry:  # key[0]: the op
    cache = getattr(_thread_local, "layers", None)
    if cache is None:
        cache = _thread_local.layers = {}
    entry = cache.get(key)
    if entry is None:
        entry = cache[key] = _Entry(_build(key[0], build), build=build)
    return entry


def clear_cache() -> None:
    """Forgets every cached core layer (of this thread, for weightless ops)."""
    with _weighted_lock:
        _weighted.clear()
    _thread_local.layers = {}


def cached_layer_count() -> int:
    """How many core layers the cache holds (weighted ops, plus this
    thread's weightless ones): for tests and diagnostics."""
    with _weighted_lock:
        weighted = sum(len(d) for d in _weighted.values())
    return weighted + len(getattr(_thread_local, "layers", {}))


# Builders: the core layer (an ai3.layers object) for normalized arguments.


def _conv2d_entry(weight, bias, stride, padding, dilation, groups, algorithm) -> _Entry:
    stride, dilation, padding = _pair("conv2d", stride, "stride"), _pair("conv2d", dilation, "dilation"), _pads("conv2d", padding)
    return _weighted_layer(
        "conv2d",
        weight,
        bias,
        (stride, padding, dilation, int(groups), algorithm),
        lambda: layers.Conv2d(weight, bias, stride, padding, dilation, groups, algorithm=algorithm, name="conv2d"),
    )


def _linear_entry(weight, bias, algorithm) -> _Entry:
    return _weighted_layer(
        "linear", weight, bias, (algorithm,), lambda: layers.Linear(weight, bias, algorithm=algorithm, name="linear")
    )


def _relu_entry(algorithm) -> _Entry:
    return _weightless_layer(("relu", algorithm), lambda: layers.ReLU(algorithm=algorithm, name="relu"))


def _maxpool2d_entry(kernel, stride, padding, dilation, ceil_mode, algorithm) -> _Entry:
    kernel, stride, padding, dilation = (
        _pair("maxpool2d", kernel, "kernel"),
        _pair("maxpool2d", stride, "stride"),
        _pads("maxpool2d", padding),
        _pair("maxpool2d", dilation, "dilation"),
    )
    ceil_mode = bool(ceil_mode)
    return _weightless_layer(
        ("maxpool2d", kernel, stride, padding, dilation, ceil_mode, algorithm),
        lambda: layers.MaxPool2d(kernel, stride, padding, dilation, ceil_mode, algorithm=algorithm, name="maxpool2d"),
    )


def _avgpool2d_entry(kernel, stride, padding, ceil_mode, count_include_pad, divisor_override, algorithm) -> _Entry:
    kernel, stride, padding = _pair("avgpool2d", kernel, "kernel"), _pair("avgpool2d", stride, "stride"), _pads("avgpool2d", padding)
    ceil_mode, count_include_pad = bool(ceil_mode), bool(count_include_pad)
    return _weightless_layer(
        ("avgpool2d", kernel, stride, padding, ceil_mode, count_include_pad, divisor_override, algorithm),
        lambda: layers.AvgPool2d(
            kernel, stride, padding, ceil_mode, count_include_pad, divisor_override, algorithm=algorithm, name="avgpool2d"
        ),
    )


def _adaptiveavgpool2d_entry(output_size, algorithm) -> _Entry:
    output_size = _pair("adaptiveavgpool2d", output_size, "output_size")
    return _weightless_layer(
        ("adaptiveavgpool2d", output_size, algorithm),
        lambda: layers.AdaptiveAvgPool2d(output_size, algorithm=algorithm, name="adaptiveavgpool2d"),
    )


def _flatten_entry(start_dim, end_dim, algorithm) -> _Entry:
    return _weightless_layer(
        ("flatten", int(start_dim), int(end_dim), algorithm),
        lambda: layers.Flatten(start_dim, end_dim, algorithm=algorithm, name="flatten"),
    )


def prepare(op: str, *args) -> str:
    """Builds (and caches) the core layer that ``torch.ops.ai3.<op>`` would
    run for these arguments (the op's arguments without the input, e.g.
    ``prepare("conv2d", weight, bias, stride, padding, dilation, groups,
    algorithm)``) and returns the algorithm it runs ("default" resolved).
    Raises what building the layer raises (ai3.AlgorithmNotApplicable, ...),
    so a swap can refuse a layer before its first forward."""
    builders = {
        "conv2d": _conv2d_entry,
        "linear": _linear_entry,
        "relu": _relu_entry,
        "maxpool2d": _maxpool2d_entry,
        "avgpool2d": _avgpool2d_entry,
        "adaptiveavgpool2d": _adaptiveavgpool2d_entry,
        "flatten": _flatten_entry,
    }
    if op not in builders:
        raise errors.UnsupportedOperation(f"ai3.torch.ops.prepare: unknown op {op!r}; ai3 has {list(OPS)}")
    if op in ("conv2d", "linear"):
        weight, bias = args[0], args[1]
        for t, what in ((weight, "weight"), (bias, "bias")):
            if t is not None:
                _check_tensor(op, t, what)
        if bias is not None and bias.dtype != weight.dtype:
            raise errors.DTypeError(f"{op}: weight is {weight.dtype} but bias is {bias.dtype}")
    return builders[op](*args).layer.algorithm


# ---------------------------------------------------------------------------
# The ops. The real kernels check their arguments (the same checks as the
# fake kernels), find or build the core layer, and run it.


@torch.library.custom_op(
    "ai3::conv2d",
    mutates_args=(),
    schema="(Tensor x, Tensor weight, Tensor? bias, int[] stride, int[] padding, int[] dilation, int groups, str algorithm) -> Tensor",
)
def conv2d(x, weight, bias, stride, padding, dilation, groups, algorithm):
    _conv2d_shape(x, weight, bias, stride, padding, dilation, groups)
    return _conv2d_entry(weight, bias, stride, padding, dilation, groups, algorithm).run(x)


@conv2d.register_fake
def _(x, weight, bias, stride, padding, dilation, groups, algorithm):
    return x.new_empty(_conv2d_shape(x, weight, bias, stride, padding, dilation, groups))


@torch.library.custom_op(
    "ai3::linear", mutates_args=(), schema="(Tensor x, Tensor weight, Tensor? bias, str algorithm) -> Tensor"
)
def linear(x, weight, bias, algorithm):
    _linear_shape(x, weight, bias)
    return _linear_entry(weight, bias, algorithm).run(x)


@linear.register_fake
def _(x, weight, bias, algorithm):
    return x.new_empty(_linear_shape(x, weight, bias))


@torch.library.custom_op("ai3::relu", mutates_args=(), schema="(Tensor x, str algorithm) -> Tensor")
def relu(x, algorithm):
    _relu_shape(x)
    return _relu_entry(algorithm).run(x)


@relu.register_fake
def _(x, algorithm):
    return x.new_empty(_relu_shape(x))


@torch.library.custom_op(
    "ai3::maxpool2d",
    mutates_args=(),
    schema="(Tensor x, int[] kernel, int[] stride, int[] padding, int[] dilation, bool ceil_mode, str algorithm) -> Tensor",
)
def maxpool2d(x, kernel, stride, padding, dilation, ceil_mode, algorithm):
    _maxpool2d_shape(x, kernel, stride, padding, dilation, ceil_mode)
    return _maxpool2d_entry(kernel, stride, padding, dilation, ceil_mode, algorithm).run(x)


@maxpool2d.register_fake
def _(x, kernel, stride, padding, dilation, ceil_mode, algorithm):
    return x.new_empty(_maxpool2d_shape(x, kernel, stride, padding, dilation, ceil_mode))


@torch.library.custom_op(
    "ai3::avgpool2d",
    mutates_args=(),
    schema="(Tensor x, int[] kernel, int[] stride, int[] padding, bool ceil_mode, bool count_include_pad, "
    "int? divisor_override, str algorithm) -> Tensor",
)
def avgpool2d(x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override, algorithm):
    _avgpool2d_shape(x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)
    return _avgpool2d_entry(kernel, stride, padding, ceil_mode, count_include_pad, divisor_override, algorithm).run(x)


@avgpool2d.register_fake
def _(x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override, algorithm):
    return x.new_empty(_avgpool2d_shape(x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override))


@torch.library.custom_op(
    "ai3::adaptiveavgpool2d", mutates_args=(), schema="(Tensor x, int[] output_size, str algorithm) -> Tensor"
)
def adaptiveavgpool2d(x, output_size, algorithm):
    _adaptiveavgpool2d_shape(x, output_size)
    return _adaptiveavgpool2d_entry(output_size, algorithm).run(x)


@adaptiveavgpool2d.register_fake
def _(x, output_size, algorithm):
    return x.new_empty(_adaptiveavgpool2d_shape(x, output_size))


@torch.library.custom_op(
    "ai3::flatten", mutates_args=(), schema="(Tensor x, int start_dim, int end_dim, str algorithm) -> Tensor"
)
def flatten(x, start_dim, end_dim, algorithm):
    _flatten_shape(x, start_dim, end_dim)
    return _flatten_entry(start_dim, end_dim, algorithm).run(x)


@flatten.register_fake
def _(x, start_dim, end_dim, algorithm):
    return x.new_empty(_flatten_shape(x, start_dim, end_dim))


# ---------------------------------------------------------------------------
# Autograd: inference only. The backward of every op calls
# ai3::backward_unsupported, whose real kernel raises; its fake kernel lets
# torch.compile/AOTAutograd trace the backward graph of a model whose
# parameters require grad (the error then comes only if backward runs).

INFERENCE_ONLY = "ai3 layers are inference-only; {op} has no backward (run the model under torch.no_grad() or torch.inference_mode(), or keep the PyTorch layer where you need gradients)"


@torch.library.custom_op("ai3::backward_unsupported", mutates_args=(), schema="(Tensor grad, str op) -> Tensor")
def backward_unsupported(grad, op):
    raise errors.UnsupportedOperation(INFERENCE_ONLY.format(op=op))


@backward_unsupported.register_fake
def _(grad, op):
    return grad.new_empty(())


def _register_inference_only(custom_op, op: str) -> None:
    def setup_context(ctx, inputs, output):
        ctx.input_shapes = [tuple(t.shape) if isinstance(t, torch.Tensor) else None for t in inputs]

    def backward(ctx, grad):
        marker = torch.ops.ai3.backward_unsupported(grad, op)
        return tuple(
            marker.expand(shape) if shape is not None and needed else None
            for shape, needed in zip(ctx.input_shapes, ctx.needs_input_grad)
        )

    custom_op.register_autograd(backward, setup_context=setup_context)


for _op_name, _custom_op in (
    ("conv2d", conv2d),
    ("linear", linear),
    ("relu", relu),
    ("maxpool2d", maxpool2d),
    ("avgpool2d", avgpool2d),
    ("adaptiveavgpool2d", adaptiveavgpool2d),
    ("flatten", flatten),
):
    _register_inference_only(_custom_op, _op_name)


__all__ = [
    "OPS",
    "adaptiveavgpool2d",
    "avgpool2d",
    "cached_layer_count",
    "clear_cache",
    "conv2d",
    "flatten",
    "linear",
    "maxpool2d",
    "prepare",
    "relu",
]
