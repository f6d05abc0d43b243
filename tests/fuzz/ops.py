"""What the fuzz tests share: one case builder per op (attributes, weights,
inputs and the PyTorch / NumPy reference), the memory forms and dtypes an
input may come in, and `check`, the property every case must hold.

Each builder takes hypothesis' `draw` and an algorithm name and returns a
Case. Builders create layers through `ai3.layers` only, in `Case.make`, so
that a change of the Python wrappers is adapted here in one place per op.
"""

from __future__ import annotations

import collections
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import gradients  # tests/training_ops: the gradient ops' cases
import numpy as np
import torch
import torch.nn.functional as F
from hypothesis import strategies as st

from ai3 import errors, layers

Draw = Callable[[st.SearchStrategy], Any]

# Per-dtype tolerance, relative to the reference's largest magnitude (and
# at least 1): float32 kernels accumulate in float32 (winograd's transforms
# lose a few more bits), float64 ones in float64.
TOL = {np.dtype(np.float32): 2e-4, np.dtype(np.float64): 1e-9}
FLOATS = [np.float32, np.float64]
# dtypes the core does not take: each must be refused with an ai3.Error.
WRONG_DTYPES = [np.int64, np.float16, np.bool_]
# The forward pass (and the reference) run only when the output is at most
# this many elements; bigger outputs (huge paddings) are checked through
# output_shape alone, which allocates nothing.
MAX_OUTPUT = 1 << 16

INT64_MAX, INT64_MIN = 2**63 - 1, -(2**63)
# Attribute values that must be refused or handled: zero, negative, and
# sizes whose products overflow int64.
BAD_INTS = [0, -1, -3, 2**30, 2**31 - 1, 2**31, 2**40, 2**62, INT64_MAX, INT64_MIN]
HUGE_PADS = [2**20, 2**30, 2**31 - 1, 2**31, 2**40, 2**62, INT64_MAX]


class NoReference(Exception):
    """The reference cannot state the answer for these parameters (a form
    PyTorch has no equivalent of); the case checks only that ai3 neither
    crashes nor returns the wrong shape."""


@dataclass
class Case:
    """One fuzz case: `make(name, dtype)` builds the layer (weights in the
    layer's dtype), `inputs` are float64 values, `reference(*inputs)` is the
    expected output from float64 copies of the inputs as ai3 saw them."""

    op: str
    make: Callable[[str, Any], Any]
    inputs: list[np.ndarray]
    reference: Callable[..., Any]
    # What the layer's weights are made of: float32 or float64.
    dtype: Any = np.float32
    # Inputs may hold NaN/inf (elementwise ops, pools, reductions).
    specials: bool = False
    # A multi-input op called through its wrapper with keyword inputs.
    call: Callable[[Any, list[Any]], Any] | None = None
    notes: list[str] = field(default_factory=list)
    # Inputs of a dtype of their own, kept as given (gather's int64
    # indices, where's bool condition), by position.
    fixed: dict[int, Any] = field(default_factory=dict)
    # The output's dtype for a float input dtype (cast's `to`, the
    # comparisons' bool); None: the input's.
    out_dtype: Callable[[np.dtype], Any] | None = None
    # The op takes int64 and bool inputs too (cast, comparisons, gather's
    # data, where's branches): accepting them is not a failure.
    any_dtype: bool = False
    # The op computes in int64 too (add, sub, mul, maximum, minimum,
    # cumsum): accepting int64 is not a failure, and int64 inputs reach the
    # reference as int64 (wrapping as ai3's do), not as float64 copies.
    int64: bool = False


def chance(draw: Draw, percent: int) -> bool:
    """True about `percent`% of the time. Hypothesis' integers (and its
    Random) are far from uniform, 0 and small values coming most, which made
    a 20% branch run 5% of the time or half of them; a multiplicative hash
    of the drawn integer spreads them, and 0 (what shrinking tends to) maps
    to 84, so a shrunk example leaves the rare branches."""
    x = draw(st.integers(0, 2**32 - 1))
    return ((((x ^ 0x5BD1E995) * 2654435761) % 2**32) * 100 >> 32) < percent


def often(draw: Draw, good: st.SearchStrategy, bad: Sequence[Any], percent: int = 12) -> Any:
    """A value from `good`, or about `percent`% of the time one of `bad`."""
    if bad and chance(draw, percent):
        return draw(st.sampled_from(list(bad)))
    return draw(good)


def dim(draw: Draw, lo: int = 1, hi: int = 6, zero: bool = True, big: bool = False) -> int:
    """A tensor dimension: mostly lo..hi, sometimes 0, and with `big` now
    and then up to 40 (past the kernels' register blocks, vector widths and
    threading thresholds)."""
    if zero and chance(draw, 6):
        return 0
    if big and chance(draw, 4):
        return draw(st.integers(hi + 1, max(hi + 1, 40)))
    return draw(st.integers(lo, hi))


def values(draw: Draw, shape: Sequence[int], specials: bool = False) -> np.ndarray:
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    x = rng.standard_normal(tuple(shape))
    if specials and x.size and chance(draw, 25):
        flat = x.reshape(-1)
        picks = rng.integers(0, flat.size, size=max(1, flat.size // 8))
        flat[picks] = rng.choice([np.nan, np.inf, -np.inf, 1e30, -1e30, 0.0, -0.0], size=picks.size)
    return x


def t64(x: Any) -> torch.Tensor:
    return torch.from_numpy(np.array(x, dtype=np.float64))


def exact(x: np.ndarray) -> torch.Tensor:
    """An int64 input as it is (int64 arithmetic wraps in torch as in ai3),
    a float one as float64."""
    return torch.from_numpy(x) if x.dtype == np.int64 else t64(x)


def nchw(x: torch.Tensor, nhwc: bool) -> torch.Tensor:
    return torch.movedim(x, -1, 1) if nhwc else x


def back(y: torch.Tensor, nhwc: bool) -> torch.Tensor:
    return torch.movedim(y, 1, -1) if nhwc else y


def image_shape(draw: Draw, nhwc: bool, c: int | None = None, hw: int = 9) -> list[int]:
    n = dim(draw, 1, 2)
    c = dim(draw, 1, 5) if c is None else c
    h, w = dim(draw, 1, hw, big=True), dim(draw, 1, hw, big=True)
    return [n, h, w, c] if nhwc else [n, c, h, w]


def layout(draw: Draw) -> tuple[str, bool]:
    lay = draw(st.sampled_from(["NCHW", "NHWC"]))
    return lay, lay == "NHWC"


def pads4(draw: Draw, top: int, left: int) -> Any:
    """A padding argument: int, pair or (top, bottom, left, right)."""
    form = draw(st.integers(0, 2))
    if form == 0:
        return top
    if form == 1:
        return (top, left)
    return (top, draw(st.integers(0, 3)), left, draw(st.integers(0, 3)))


def unpad(p: Any) -> tuple[int, int, int, int]:
    if isinstance(p, int):
        return p, p, p, p
    if len(p) == 2:
        return p[0], p[0], p[1], p[1]
    return tuple(p)


def rank_shape(draw: Draw, lo: int = 0, hi: int = 4) -> list[int]:
    return [dim(draw, 1, 5, big=True) for _ in range(draw(st.integers(lo, hi)))]


# ---- the ops ------------------------------------------------------------


def conv2d(draw: Draw, algorithm: str) -> Case:
    dtype = draw(st.sampled_from(FLOATS))
    lay, nhwc = layout(draw)
    groups = often(draw, st.sampled_from([1, 1, 1, 2, 3]), [0, -1, 2**62, 7])
    # Empty channels come from the wrong-weight branch below, not here.
    cg = dim(draw, 1, 3, zero=False, big=True)
    kg = dim(draw, 1, 3, zero=False, big=True)
    g = groups if 1 <= groups <= 8 else 1
    c, k = cg * g, kg * g
    # Winograd's own case 3 times in 4, so it is not refused every time.
    winograd = algorithm == "winograd" and not chance(draw, 25)
    if winograd:
        kh = kw = 3
    else:
        kh, kw = dim(draw, 1, 5, zero=False), dim(draw, 1, 5, zero=False)
    weight_shape = [k, cg, kh, kw]
    if chance(draw, 10):  # a weight of the wrong shape or rank
        weight_shape = draw(
            st.sampled_from([[k, cg + 1, kh, kw], [k, cg, kh], [0, cg, kh, kw], [k, 0, kh, kw], [k, cg, 0, kw]])
        )
    weight = values(draw, weight_shape)
    has_bias = draw(st.booleans())
    bias = values(draw, [often(draw, st.just(k), [k + 1, 0], 5)]) if has_bias else None
    small = st.just(1) if winograd else st.integers(1, 3)
    stride = (often(draw, small, BAD_INTS, 6), often(draw, small, BAD_INTS, 6))
    small = st.just(1) if winograd else st.integers(1, 2)
    dilation = (often(draw, small, BAD_INTS, 6), often(draw, small, BAD_INTS, 6))
    padding = pads4(
        draw, often(draw, st.integers(0, 3), [-1] + HUGE_PADS, 6), often(draw, st.integers(0, 3), [-1] + HUGE_PADS, 6)
    )
    activation = draw(st.sampled_from([None, None, "relu", "relu6"]))
    c_in = often(draw, st.just(c), [c + 1, 0], 8)
    x = values(draw, image_shape(draw, nhwc, c_in))

    def make(name: str, dt: Any) -> Any:
        return layers.Conv2d(
            weight.astype(dt),
            None if bias is None else bias.astype(dt),
            stride,
            padding,
            dilation,
            groups,
            algorithm=algorithm,
            layout=lay,
            name=name,
            activation=activation,
        )

    def reference(x: np.ndarray) -> Any:
        t, b, l, r = unpad(padding)
        xt = F.pad(nchw(t64(x), nhwc), (l, r, t, b))
        y = F.conv2d(xt, t64(weight), None if bias is None else t64(bias), stride, 0, dilation, groups)
        if activation:
            y = y.clamp(0, 6 if activation == "relu6" else None)
        return back(y, nhwc)

    return Case("conv2d", make, [x], reference, dtype)


def linear(draw: Draw, algorithm: str) -> Case:
    dtype = draw(st.sampled_from(FLOATS))
    out_f, in_f = dim(draw, 1, 9, big=True), dim(draw, 1, 9, big=True)
    weight = values(
        draw, draw(st.sampled_from([[out_f, in_f]] * 6 + [[out_f], [out_f, in_f, 1], [0, in_f], [out_f, 0]]))
    )
    bias = values(draw, [draw(st.sampled_from([out_f, out_f, out_f, out_f + 1]))]) if draw(st.booleans()) else None
    activation = draw(st.sampled_from([None, "relu", "relu6"]))
    lead = rank_shape(draw, 0, 3)
    x = values(draw, lead + [often(draw, st.just(in_f), [in_f + 1, 0], 8)])

    def make(name: str, dt: Any) -> Any:
        return layers.Linear(
            weight.astype(dt),
            None if bias is None else bias.astype(dt),
            algorithm=algorithm,
            name=name,
            activation=activation,
        )

    def reference(x: np.ndarray) -> Any:
        y = F.linear(t64(x), t64(weight), None if bias is None else t64(bias))
        return y.clamp(0, 6 if activation == "relu6" else None) if activation else y

    return Case("linear", make, [x], reference, dtype)


def _unary(
    op: str, cls: Callable[..., Any], fn: Callable[[torch.Tensor], torch.Tensor], **attrs: Any
) -> Callable[[Draw, str], Case]:
    def build(draw: Draw, algorithm: str) -> Case:
        x = values(draw, rank_shape(draw, 0, 4), specials=True)
        return Case(
            op, lambda name, dt: cls(algorithm=algorithm, name=name, **attrs), [x], lambda x: fn(t64(x)), specials=True
        )

    return build


def gelu(draw: Draw, algorithm: str) -> Case:
    approximate = often(draw, st.sampled_from(["none", "tanh"]), ["exact", ""])
    x = values(draw, rank_shape(draw, 0, 4), specials=True)
    return Case(
        "gelu",
        lambda n, dt: layers.GELU(approximate, algorithm=algorithm, name=n),
        [x],
        lambda x: F.gelu(t64(x), approximate=approximate),
        specials=True,
    )


def hardsigmoid(draw: Draw, algorithm: str) -> Case:
    alpha = draw(st.sampled_from([1 / 6, 0.2, 0.0, -1.0, 3.5, math.inf, math.nan]))
    beta = draw(st.sampled_from([0.5, 0.0, -2.0, 1.0, math.nan]))
    x = values(draw, rank_shape(draw, 0, 4), specials=True)
    return Case(
        "hardsigmoid",
        lambda n, dt: layers.Hardsigmoid(alpha, beta, algorithm=algorithm, name=n),
        [x],
        lambda x: torch.clamp(alpha * t64(x) + beta, 0, 1),
        specials=True,
    )


def leaky_relu(draw: Draw, algorithm: str) -> Case:
    alpha = draw(st.sampled_from([0.01, 0.3, 0.0, 1.0, -0.5, 2.5, math.inf, math.nan]))
    x = values(draw, rank_shape(draw, 0, 4), specials=True)

    def reference(x: np.ndarray) -> Any:
        if not math.isfinite(alpha):
            raise NoReference("a slope that is not finite: ai3 refuses it")
        return F.leaky_relu(t64(x), alpha)

    make = lambda n, dt: layers.Layer("leaky_relu", {"alpha": alpha}, {}, algorithm=algorithm, name=n)  # noqa: E731
    return Case("leaky_relu", make, [x], reference, specials=True)


def clamp(draw: Draw, algorithm: str) -> Case:
    lo = draw(st.sampled_from([None, 0.0, -1.0, 2.0, -math.inf, math.nan]))
    hi = draw(st.sampled_from([None, 6.0, 1.0, -2.0, math.inf, math.nan]))
    x = values(draw, rank_shape(draw, 0, 4), specials=True)

    def reference(x: np.ndarray) -> Any:
        if (lo is not None and math.isnan(lo)) or (hi is not None and math.isnan(hi)):
            raise NoReference("torch.clamp with a NaN bound gives NaN; ai3 refuses it")
        if lo is None and hi is None:
            return t64(x)  # torch.clamp refuses no bounds; ai3 copies x
        return torch.clamp(t64(x), lo, hi)

    return Case("clamp", lambda n, dt: layers.Clamp(lo, hi, algorithm=algorithm, name=n), [x], reference, specials=True)


def _window(draw: Draw, nhwc: bool, dilation: bool) -> dict[str, Any]:
    kh, kw = often(draw, st.integers(1, 4), BAD_INTS), often(draw, st.integers(1, 4), BAD_INTS)
    stride = draw(
        st.one_of(
            st.none(), st.just((often(draw, st.integers(1, 3), BAD_INTS), often(draw, st.integers(1, 3), BAD_INTS)))
        )
    )
    ph = often(draw, st.integers(0, max(0, min(kh, 4) // 2)), [-1, 3] + HUGE_PADS)
    pw = often(draw, st.integers(0, max(0, min(kw, 4) // 2)), [-1, 3] + HUGE_PADS)
    out = dict(kernel=(kh, kw), stride=stride, padding=pads4(draw, ph, pw), ceil_mode=draw(st.booleans()))
    if dilation:
        out["dilation"] = (often(draw, st.integers(1, 2), BAD_INTS), often(draw, st.integers(1, 2), BAD_INTS))
    return out


def maxpool2d(draw: Draw, algorithm: str) -> Case:
    lay, nhwc = layout(draw)
    w = _window(draw, nhwc, dilation=True)
    x = values(draw, image_shape(draw, nhwc), specials=True)

    def make(name: str, dt: Any) -> Any:
        return layers.MaxPool2d(
            w["kernel"],
            w["stride"],
            w["padding"],
            w["dilation"],
            w["ceil_mode"],
            algorithm=algorithm,
            layout=lay,
            name=name,
        )

    def reference(x: np.ndarray) -> Any:
        t, b, l, r = unpad(w["padding"])
        xt = nchw(t64(x), nhwc)
        stride = w["stride"] or w["kernel"]
        if t == b and l == r:
            y = F.max_pool2d(xt, w["kernel"], stride, (t, l), w["dilation"], w["ceil_mode"])
        elif not w["ceil_mode"] and max(t, b) <= w["kernel"][0] // 2 and max(l, r) <= w["kernel"][1] // 2:
            y = F.max_pool2d(F.pad(xt, (l, r, t, b), value=-math.inf), w["kernel"], stride, 0, w["dilation"])
        else:
            raise NoReference("asymmetric padding with ceil_mode has no torch form")
        return back(y, nhwc)

    return Case("maxpool2d", make, [x], reference, specials=True)


def avgpool2d(draw: Draw, algorithm: str) -> Case:
    lay, nhwc = layout(draw)
    w = _window(draw, nhwc, dilation=False)
    include = draw(st.booleans())
    divisor = often(draw, st.sampled_from([None, None, 1, 2, 5]), [-1, 0, 2**62])
    x = values(draw, image_shape(draw, nhwc))

    def make(name: str, dt: Any) -> Any:
        return layers.AvgPool2d(
            w["kernel"],
            w["stride"],
            w["padding"],
            w["ceil_mode"],
            include,
            divisor,
            algorithm=algorithm,
            layout=lay,
            name=name,
        )

    def reference(x: np.ndarray) -> Any:
        t, b, l, r = unpad(w["padding"])
        xt = nchw(t64(x), nhwc)
        stride = w["stride"] or w["kernel"]
        # torch takes divisor_override as an int32: a larger one divides the
        # plain sum afterwards.
        big = divisor is not None and divisor >= 2**31
        div = 1 if big else divisor or None
        if t == b and l == r:
            y = F.avg_pool2d(xt, w["kernel"], stride, (t, l), w["ceil_mode"], include, div)
        elif include and not w["ceil_mode"] and max(t, b) <= w["kernel"][0] // 2 and max(l, r) <= w["kernel"][1] // 2:
            y = F.avg_pool2d(F.pad(xt, (l, r, t, b)), w["kernel"], stride, 0, False, True, div)
        else:
            raise NoReference("this asymmetric padding has no torch form")
        return back(y / divisor if big else y, nhwc)

    return Case("avgpool2d", make, [x], reference)


def _adaptive(op: str, cls: Callable[..., Any], fn: Callable[..., torch.Tensor]) -> Callable[[Draw, str], Case]:
    def build(draw: Draw, algorithm: str) -> Case:
        lay, nhwc = layout(draw)
        size = (often(draw, st.integers(1, 10), BAD_INTS), often(draw, st.integers(1, 10), BAD_INTS))
        x = values(draw, image_shape(draw, nhwc), specials=op == "adaptivemaxpool2d")
        return Case(
            op,
            lambda n, dt: cls(size, algorithm=algorithm, layout=lay, name=n),
            [x],
            lambda x: back(fn(nchw(t64(x), nhwc), size), nhwc),
            specials=op == "adaptivemaxpool2d",
        )

    return build


def batchnorm2d(draw: Draw, algorithm: str) -> Case:
    dtype = draw(st.sampled_from(FLOATS))
    lay, nhwc = layout(draw)
    c = dim(draw, 1, 5)
    shapes = [[draw(st.sampled_from([c] * 8 + [c + 1, 0]))] for _ in range(4)]
    weight, bias, mean = (values(draw, s) for s in shapes[:3])
    var = np.abs(values(draw, shapes[3])) + 0.1
    eps = often(draw, st.sampled_from([1e-5, 1e-3, 0.0]), [-1.0, math.nan, math.inf], 10)
    x = values(draw, image_shape(draw, nhwc, often(draw, st.just(c), [c + 1], 6)))

    def make(name: str, dt: Any) -> Any:
        return layers.BatchNorm2d(
            weight.astype(dt),
            bias.astype(dt),
            mean.astype(dt),
            var.astype(dt),
            eps,
            algorithm=algorithm,
            layout=lay,
            name=name,
        )

    def reference(x: np.ndarray) -> Any:
        y = F.batch_norm(nchw(t64(x), nhwc), t64(mean), t64(var), t64(weight), t64(bias), False, 0.0, eps)
        return back(y, nhwc)

    return Case("batchnorm2d", make, [x], reference, dtype)


def flatten(draw: Draw, algorithm: str) -> Case:
    shape = rank_shape(draw, 0, 5)
    r = max(len(shape), 1)
    start = often(draw, st.integers(-r, r - 1), [r, -r - 1, INT64_MAX, INT64_MIN])
    end = often(draw, st.integers(-r, r - 1), [r, -r - 1, INT64_MAX, INT64_MIN])
    x = values(draw, shape)
    return Case(
        "flatten",
        lambda n, dt: layers.Flatten(start, end, algorithm=algorithm, name=n),
        [x],
        lambda x: torch.flatten(t64(x), start, end),
    )


def _axis_op(op: str, cls: Callable[..., Any], fn: Callable[..., torch.Tensor]) -> Callable[[Draw, str], Case]:
    def build(draw: Draw, algorithm: str) -> Case:
        shape = rank_shape(draw, 0, 4)
        r = max(len(shape), 1)
        axis = often(draw, st.integers(-r, r - 1), [r, -r - 1, INT64_MAX, INT64_MIN])
        x = values(draw, shape, specials=True)
        return Case(
            op, lambda n, dt: cls(axis, algorithm=algorithm, name=n), [x], lambda x: fn(t64(x), dim=axis), specials=True
        )

    return build


def _broadcast_pair(draw: Draw) -> tuple[list[int], list[int]]:
    a = rank_shape(draw, 0, 4)
    b = list(a[draw(st.integers(0, len(a))) :])
    for i in range(len(b)):
        roll = draw(st.integers(0, 9))
        if roll == 4:
            b[i] = 1
        elif roll == 5:
            a[len(a) - len(b) + i] = 1
        elif roll == 6:
            b[i] = b[i] + 1  # does not broadcast (unless a's is 1)
    if draw(st.booleans()):
        a, b = b, a
    return a, b


# The binary ops that take int64 (core/ops/binary/binary.h).
_INT64_BINARY = ("add", "sub", "mul", "maximum", "minimum", "remainder", "fmod")


def _divides_safely(fn: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
    """A remainder `fn` whose int64 remainder by 0 (and INT64_MIN by -1) is
    0, as ai3's is (NumPy's too): torch raises on those."""

    def safe(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        if a.is_floating_point():
            return fn(a, b)
        a, b = torch.broadcast_tensors(a, b)
        bad = (b == 0) | ((b == -1) & (a == INT64_MIN))
        return torch.where(bad, torch.zeros_like(a), fn(a, torch.where(bad, torch.ones_like(b), b)))

    return safe


def _volume_shape(draw: Draw, nhwc: bool, c: int) -> list[int]:
    """A clip (N, C, D, H, W), channels last in NHWC."""
    n = dim(draw, 1, 2)
    d, h, w = dim(draw, 1, 5), dim(draw, 1, 6, big=True), dim(draw, 1, 6)
    return [n, d, h, w, c] if nhwc else [n, c, d, h, w]


def _pad_volume(x: torch.Tensor, p: Sequence[int], value: float = 0.0) -> torch.Tensor:
    """(front, back, top, bottom, left, right) as F.pad takes them."""
    return F.pad(x, (p[4], p[5], p[2], p[3], p[0], p[1]), value=value)


def conv3d(draw: Draw, algorithm: str) -> Case:
    dtype = draw(st.sampled_from(FLOATS))
    lay, nhwc = layout(draw)
    groups = often(draw, st.sampled_from([1, 1, 2]), [0, -1, 2**62, 7])
    g = groups if 1 <= groups <= 8 else 1
    cg, kg = dim(draw, 1, 3, zero=False), dim(draw, 1, 3, zero=False)
    c, k = cg * g, kg * g
    kernel = [dim(draw, 1, 3, zero=False) for _ in range(3)]
    weight_shape = [k, cg, *kernel]
    if chance(draw, 10):  # a weight of the wrong shape or rank
        weight_shape = draw(st.sampled_from([[k, cg + 1, *kernel], [k, cg, *kernel[:2]], [0, cg, *kernel]]))
    weight = values(draw, weight_shape)
    bias = values(draw, [often(draw, st.just(k), [k + 1, 0], 5)]) if draw(st.booleans()) else None
    stride = [often(draw, st.integers(1, 2), BAD_INTS, 4) for _ in range(3)]
    dilation = [often(draw, st.integers(1, 2), BAD_INTS, 4) for _ in range(3)]
    padding = [often(draw, st.integers(0, 2), [-1] + HUGE_PADS, 3) for _ in range(6)]
    activation = draw(st.sampled_from([None, None, (0.0, math.inf)]))
    x = values(draw, _volume_shape(draw, nhwc, often(draw, st.just(c), [c + 1, 0], 8)))
    attrs = dict(stride=stride, padding=padding, dilation=dilation, groups=groups, layout=lay, activation=activation)

    def make(name: str, dt: Any) -> Any:
        weights = {"weight": weight.astype(dt), "bias": None if bias is None else bias.astype(dt)}
        return layers.Layer("conv3d", attrs, weights, algorithm=algorithm, name=name)

    def reference(x: np.ndarray) -> Any:
        xt = _pad_volume(nchw(t64(x), nhwc), padding)
        y = F.conv3d(xt, t64(weight), None if bias is None else t64(bias), stride, 0, dilation, groups)
        return back(y.clamp(min=0) if activation else y, nhwc)

    return Case("conv3d", make, [x], reference, dtype)


def _pool3d(op: str) -> Callable[[Draw, str], Case]:
    def build(draw: Draw, algorithm: str) -> Case:
        lay, nhwc = layout(draw)
        kernel = [often(draw, st.integers(1, 3), BAD_INTS, 4) for _ in range(3)]
        stride = draw(st.one_of(st.none(), st.just([often(draw, st.integers(1, 2), BAD_INTS, 4) for _ in range(3)])))
        pads = [often(draw, st.integers(0, 1), [-1, 3] + HUGE_PADS, 4) for _ in range(3)]
        attrs: dict[str, Any] = dict(kernel=kernel, stride=stride, padding=[p for p in pads for _ in range(2)])
        attrs.update(ceil_mode=draw(st.booleans()), layout=lay)
        if op == "maxpool3d":
            attrs["dilation"] = [often(draw, st.integers(1, 2), BAD_INTS, 4) for _ in range(3)]
        else:
            attrs["count_include_pad"] = draw(st.booleans())
        x = values(draw, _volume_shape(draw, nhwc, dim(draw, 1, 4)), specials=op == "maxpool3d")

        def reference(x: np.ndarray) -> Any:
            xt = nchw(t64(x), nhwc)
            s = attrs["stride"] or kernel
            if op == "maxpool3d":
                y = F.max_pool3d(xt, kernel, s, pads, attrs["dilation"], attrs["ceil_mode"])
            elif any(n < k for n, k in zip(xt.shape[2:], kernel)):
                # (ai3 pools the padded input as avg_pool2d and max_pool3d do)
                raise NoReference("torch's avg_pool3d refuses an input smaller than its kernel, even padded")
            else:
                y = F.avg_pool3d(xt, kernel, s, pads, attrs["ceil_mode"], attrs["count_include_pad"])
            return back(y, nhwc)

        make = lambda name, dt: layers.Layer(op, attrs, {}, algorithm=algorithm, name=name)  # noqa: E731
        return Case(op, make, [x], reference, specials=op == "maxpool3d")

    return build


def grid_sample(draw: Draw, algorithm: str) -> Case:
    lay, nhwc = layout(draw)
    dims = draw(st.sampled_from([2, 2, 3]))
    mode = draw(st.sampled_from(["bilinear", "nearest", "bicubic"] if dims == 2 else ["bilinear", "nearest"]))
    attrs = dict(
        mode=mode,
        padding_mode=draw(st.sampled_from(["zeros", "border", "reflection"])),
        align_corners=draw(st.booleans()),
        layout=lay,
    )
    c = dim(draw, 1, 3)
    x_shape = image_shape(draw, nhwc, c, hw=6) if dims == 2 else _volume_shape(draw, nhwc, c)
    x = values(draw, x_shape)
    out = [dim(draw, 1, 4) for _ in range(dims)]
    grid_shape = [x_shape[0], *out, often(draw, st.just(dims), [dims + 1, 1], 6)]
    grid = np.clip(values(draw, grid_shape), -1.4, 1.4)

    def reference(x: np.ndarray, grid: np.ndarray) -> Any:
        y = F.grid_sample(nchw(t64(x), nhwc), t64(grid), mode, attrs["padding_mode"], attrs["align_corners"])
        return back(y, nhwc)

    make = lambda name, dt: layers.Layer("grid_sample", attrs, {}, algorithm=algorithm, name=name)  # noqa: E731
    return Case("grid_sample", make, [x, grid], reference)


def _binary(op: str, cls: Callable[..., Any], fn: Callable[..., torch.Tensor]) -> Callable[[Draw, str], Case]:
    def build(draw: Draw, algorithm: str) -> Case:
        dtype = draw(st.sampled_from(FLOATS))
        sa, sb = _broadcast_pair(draw)
        a, b = values(draw, sa, specials=True), values(draw, sb, specials=True)
        form = draw(st.sampled_from(["two", "constant", "reverse"]))
        if form == "two":
            return Case(
                op,
                lambda n, dt: cls(algorithm=algorithm, name=n),
                [a, b],
                lambda a, b: fn(exact(a), exact(b)),
                dtype,
                specials=True,
                int64=op in _INT64_BINARY,
            )
        reverse = form == "reverse"

        def reference(a: np.ndarray) -> Any:
            other = t64(b.astype(dtype))
            return fn(other, t64(a)) if reverse else fn(t64(a), other)

        return Case(
            op,
            lambda n, dt: cls(b.astype(dt), reverse=reverse, algorithm=algorithm, name=n),
            [a],
            reference,
            dtype,
            specials=True,
        )

    return build


def matmul(draw: Draw, algorithm: str) -> Case:
    dtype = draw(st.sampled_from(FLOATS))
    m, k, n = dim(draw, 1, 5), dim(draw, 1, 5), dim(draw, 1, 5)
    ba, bb = _broadcast_pair(draw)
    ba, bb = ba[:2], bb[:2]
    sa = draw(st.sampled_from([ba + [m, k], [k], ba + [m, k]]))
    kb = often(draw, st.just(k), [k + 1], 8)
    two = draw(st.booleans())
    # A 0-d constant would reach the core as (1,) (the wrapper's
    # np.ascontiguousarray; see regressions_test.py): only the two-input
    # form gets a 0-d operand.
    sb = draw(st.sampled_from([bb + [kb, n], [kb], bb + [kb, n]] + ([[]] if two else [])))
    a, b = values(draw, sa), values(draw, sb)
    if two:
        return Case(
            "matmul",
            lambda nm, dt: layers.Matmul(algorithm=algorithm, name=nm),
            [a, b],
            lambda a, b: torch.matmul(t64(a), t64(b)),
            dtype,
        )
    return Case(
        "matmul",
        lambda nm, dt: layers.Matmul(b.astype(dt), algorithm=algorithm, name=nm),
        [a],
        lambda a: torch.matmul(t64(a), t64(b.astype(dtype))),
        dtype,
    )


def reshape(draw: Draw, algorithm: str) -> Case:
    shape = rank_shape(draw, 0, 4)
    numel = int(np.prod(shape)) if shape else 1
    target: list[int] = []
    rest = numel
    for _ in range(draw(st.integers(0, 3))):
        d = draw(st.sampled_from([1, 2, 3]))
        if rest % d == 0:
            target.append(d)
            rest //= d
    target.append(rest)
    target = list(draw(st.permutations(target)))
    roll = draw(st.integers(0, 9))
    if roll == 4 and target:
        target[draw(st.integers(0, len(target) - 1))] = -1
    elif roll == 5:
        target.append(draw(st.sampled_from([-1, -2, 0, 2, 2**32, 2**62, INT64_MAX])))
    elif roll == 6:
        target = draw(
            st.sampled_from(
                [[2**32, 2**32, 0], [2**62, 4], [INT64_MAX, 2], [-1, -1], [2**32, 2**32, -1], [0, 0, 0, 0, 0]]
            )
        )
    x = values(draw, shape)

    def reference(x: np.ndarray) -> Any:
        want = [x.shape[i] if d == 0 and i < x.ndim else d for i, d in enumerate(target)]
        if any(d == 0 for i, d in enumerate(target) if i >= x.ndim):
            raise ValueError("0 copies a dimension the input lacks")
        return torch.reshape(t64(x), want)

    # reshape, permute, slice, tile and expand move bytes: any dtype.
    return Case(
        "reshape", lambda n, dt: layers.Reshape(target, algorithm=algorithm, name=n), [x], reference, any_dtype=True
    )


def permute(draw: Draw, algorithm: str) -> Case:
    shape = rank_shape(draw, 0, 5)
    dims = list(draw(st.permutations(range(len(shape)))))
    dims = [d - len(shape) if draw(st.booleans()) else d for d in dims]
    roll = draw(st.integers(0, 9))
    if roll == 4 and dims:
        dims[0] = dims[-1]  # not a permutation
    elif roll == 5:
        dims.append(draw(st.sampled_from([0, len(shape), INT64_MAX, INT64_MIN])))
    elif roll == 6 and dims:
        dims.pop()
    x = values(draw, shape)
    return Case(
        "permute",
        lambda n, dt: layers.Permute(dims, algorithm=algorithm, name=n),
        [x],
        lambda x: t64(x).permute(dims),
        any_dtype=True,
    )


def slice_op(draw: Draw, algorithm: str) -> Case:
    shape = rank_shape(draw, 1, 4)
    r = len(shape)
    axis = often(draw, st.integers(-r, r - 1), [r, -r - 1, INT64_MAX, INT64_MIN])
    bound = st.one_of(st.none(), st.integers(-8, 8), st.sampled_from([INT64_MAX, INT64_MIN, 2**40, -(2**40)]))
    start, stop = draw(bound), draw(bound)
    step = often(
        draw, st.sampled_from([1, 1, 2, 3, -1, -2]), [0, INT64_MAX, INT64_MIN, INT64_MIN + 1, 2**40, -(2**40)], 20
    )
    x = values(draw, shape)

    def reference(x: np.ndarray) -> Any:
        a = axis if axis >= 0 else axis + x.ndim
        if not 0 <= a < x.ndim:
            raise IndexError("axis")
        return x[(slice(None),) * a + (slice(start, stop, step),)]

    return Case(
        "slice",
        lambda n, dt: layers.Slice(axis, start, stop, step, algorithm=algorithm, name=n),
        [x],
        reference,
        any_dtype=True,
    )


def layernorm(draw: Draw, algorithm: str) -> Case:
    dtype = draw(st.sampled_from(FLOATS))
    shape = rank_shape(draw, 1, 4)
    axes = often(draw, st.integers(1, len(shape)), [0, -1, len(shape) + 1, INT64_MAX])
    tail = shape[-axes:] if 1 <= axes <= len(shape) else shape
    wshape = often(draw, st.just(tail), [tail + [1], [t + 1 for t in tail]], 8)
    w = values(draw, wshape) if draw(st.booleans()) else None
    b = values(draw, wshape) if draw(st.booleans()) else None
    eps = often(draw, st.sampled_from([1e-5, 1e-3]), [0.0, -1.0, math.nan, math.inf])
    x = values(draw, shape)

    def make(name: str, dt: Any) -> Any:
        return layers.LayerNorm(
            None if w is None else w.astype(dt),
            None if b is None else b.astype(dt),
            axes,
            eps,
            algorithm=algorithm,
            name=name,
        )

    def reference(x: np.ndarray) -> Any:
        if not 1 <= axes <= x.ndim:
            raise ValueError("axes")
        return F.layer_norm(
            t64(x), x.shape[x.ndim - axes :], None if w is None else t64(w), None if b is None else t64(b), eps
        )

    return Case("layernorm", make, [x], reference, dtype)


def mean(draw: Draw, algorithm: str) -> Case:
    shape = rank_shape(draw, 0, 4)
    r = max(len(shape), 1)
    axes = [often(draw, st.integers(-r, r - 1), [r, INT64_MIN, INT64_MAX]) for _ in range(draw(st.integers(0, 3)))]
    keepdim = draw(st.booleans())
    x = values(draw, shape, specials=True)

    def reference(x: np.ndarray) -> Any:
        if not axes:
            y = t64(x).mean()
            return y.reshape([1] * x.ndim) if keepdim else y
        return t64(x).mean(dim=axes, keepdim=keepdim)

    return Case(
        "mean", lambda n, dt: layers.Mean(axes, keepdim, algorithm=algorithm, name=n), [x], reference, specials=True
    )


def roll(draw: Draw, algorithm: str) -> Case:
    shape = rank_shape(draw, 1, 4)
    r = len(shape)
    count = draw(st.integers(1, 3))
    axes = [often(draw, st.integers(-r, r - 1), [r, INT64_MIN, INT64_MAX]) for _ in range(count)]
    shifts = [often(draw, st.integers(-7, 7), [INT64_MAX, INT64_MIN, 2**62]) for _ in range(count + chance(draw, 10))]
    x = values(draw, shape)

    def reference(x: np.ndarray) -> Any:
        return torch.from_numpy(np.roll(x, shifts, axes) if len(shifts) == len(axes) else np.roll(x, shifts))

    return Case("roll", lambda n, dt: layers.Roll(shifts, axes, algorithm=algorithm, name=n), [x], reference)


def pad2d(draw: Draw, algorithm: str) -> Case:
    lay, nhwc = layout(draw)
    pads = tuple(often(draw, st.integers(0, 3), [-1] + HUGE_PADS) for _ in range(4))
    value = draw(st.sampled_from([0.0, 1.5, -math.inf, math.nan]))
    mode = draw(st.sampled_from(["constant", "constant", "reflect", "replicate", "circular"]))
    x = values(draw, image_shape(draw, nhwc))

    def reference(x: np.ndarray) -> Any:
        t, b, l, r = pads
        if mode == "constant":
            return back(F.pad(nchw(t64(x), nhwc), (l, r, t, b), value=value), nhwc)
        if x.size == 0:
            raise NoReference()  # torch refuses empty planes in these modes; ai3's output is empty too
        return back(F.pad(nchw(t64(x), nhwc), (l, r, t, b), mode=mode), nhwc)

    return Case(
        "pad2d", lambda n, dt: layers.Pad2d(pads, value, mode, algorithm=algorithm, layout=lay, name=n), [x], reference
    )


# ---- issue 17 (helper N2): deconvolution, resampling, norms, shuffles -------


def conv_transpose2d(draw: Draw, algorithm: str) -> Case:
    dtype = draw(st.sampled_from(FLOATS))
    lay, nhwc = layout(draw)
    groups = often(draw, st.sampled_from([1, 1, 2, 3]), [0, -1, 2**62])
    g = groups if 1 <= groups <= 8 else 1
    cg, kg = dim(draw, 1, 3, zero=False), dim(draw, 1, 3, zero=False)
    kh, kw = (often(draw, st.integers(1, 4), [0, -1, 2**31]) for _ in range(2))
    stride = tuple(often(draw, st.integers(1, 3), [0, -2, 2**31]) for _ in range(2))
    dil = tuple(often(draw, st.integers(1, 2), [0, 2**40]) for _ in range(2))
    ph, pw = (often(draw, st.integers(0, 2), [-1, 2**31, 2**62]) for _ in range(2))
    out_pad = tuple(often(draw, st.integers(0, max(1, min(stride[i], 3)) - 1), [-1, 5]) for i in range(2))
    w = values(draw, [cg * g, kg, max(kh, 0) if kh < 8 else 1, max(kw, 0) if kw < 8 else 1])
    bias = values(draw, [kg * g]) if draw(st.booleans()) else None
    x = values(draw, image_shape(draw, nhwc, c=cg * g if not chance(draw, 5) else cg * g + 1, hw=6))
    attrs = {
        "stride": stride,
        "padding": (ph, ph, pw, pw),
        "output_padding": out_pad,
        "dilation": dil,
        "groups": groups,
        "layout": lay,
    }

    def make(name: str, dt: Any) -> Any:
        weights = {"weight": w.astype(dt), "bias": None if bias is None else bias.astype(dt)}
        return layers.Layer("conv_transpose2d", attrs, weights, algorithm=algorithm, name=name)

    def reference(x: np.ndarray) -> Any:
        # The unpadded transposed convolution, then the output's window of
        # it: rows from the top pad on, output_padding rows past its end
        # zero (torch takes output_padding < stride or dilation only; ai3
        # takes ONNX's larger ones).
        full = F.conv_transpose2d(nchw(t64(x), nhwc), t64(w), None, stride, 0, 0, groups, dil)
        oh = full.shape[2] - 2 * ph + out_pad[0]
        ow = full.shape[3] - 2 * pw + out_pad[1]
        if oh < 1 or ow < 1:
            raise ValueError("empty output")
        full = F.pad(full, (0, max(0, pw + ow - full.shape[3]), 0, max(0, ph + oh - full.shape[2])))
        y = full[:, :, ph : ph + oh, pw : pw + ow]
        if bias is not None:
            y = y + t64(bias).reshape(1, -1, 1, 1)
        return back(y, nhwc)

    return Case(
        "conv_transpose2d",
        make,
        [x],
        reference,
        dtype,
        notes=[f"attrs={attrs}", f"weight={list(w.shape)}", f"layout={lay}"],
    )


def resize(draw: Draw, algorithm: str) -> Case:
    lay, nhwc = layout(draw)
    mode = draw(st.sampled_from(["nearest", "nearest-exact", "bilinear", "bilinear-corners"]))
    by_size = draw(st.booleans())
    size = tuple(often(draw, st.integers(1, 12), [0, -1, 2**40]) for _ in range(2)) if by_size else None
    scale = (
        None
        if by_size
        else tuple(
            often(draw, st.sampled_from([0.5, 1.0, 1.5, 2.0, 3.0]), [0.0, -1.0, math.inf, 1e300]) for _ in range(2)
        )
    )
    x = values(draw, image_shape(draw, nhwc, hw=7))
    align = mode == "bilinear-corners"
    tmode = "bilinear" if align else mode
    from ai3.torch import params as torch_params

    attrs = torch_params.interpolate(size, scale, tmode, align or None, None, None, "resize")

    def reference(x: np.ndarray) -> Any:
        if min(x.shape) == 0:
            raise NoReference()
        return back(
            F.interpolate(nchw(t64(x), nhwc), size=size, scale_factor=scale, mode=tmode, align_corners=align or None),
            nhwc,
        )

    return Case(
        "resize",
        lambda n, dt: layers.Layer("resize", {**attrs, "layout": lay}, algorithm=algorithm, name=n),
        [x],
        reference,
    )


def groupnorm(draw: Draw, algorithm: str) -> Case:
    dtype = draw(st.sampled_from(FLOATS))
    nhwc = draw(st.booleans())
    groups = often(draw, st.integers(0, 3), [-1, 5, 2**62])
    c = dim(draw, 1, 3, zero=False) * max(groups, 1) if 0 < groups < 8 else dim(draw, 1, 6, zero=False)
    shape = [dim(draw, 1, 2), c, *rank_shape(draw, 0, 2)]
    wshape = often(draw, st.just([c]), [[c + 1], [c, 1]], 8)
    w = values(draw, wshape) if draw(st.booleans()) else None
    b = values(draw, wshape) if draw(st.booleans()) else None
    eps = often(draw, st.sampled_from([1e-5, 1e-2]), [-1.0, math.nan])
    x = values(draw, shape)
    if nhwc:
        x = np.ascontiguousarray(np.moveaxis(x, 1, -1))

    def make(name: str, dt: Any) -> Any:
        weights = {"weight": None if w is None else w.astype(dt), "bias": None if b is None else b.astype(dt)}
        attrs = {"groups": groups, "eps": eps, "layout": "NHWC" if nhwc else "NCHW"}
        return layers.Layer("groupnorm", attrs, weights, algorithm=algorithm, name=name)

    def reference(x: np.ndarray) -> Any:
        t = t64(np.moveaxis(x, -1, 1) if nhwc else x)
        g = groups or t.shape[1]
        if t.numel() == 0:
            return t64(x)  # nothing to normalise (torch refuses empty maps)
        if t.numel() // max(t.shape[0] * g, 1) == 1:
            # torch refuses groups of one element (its training-mode check);
            # each is its own mean: 0, then the affine map.
            y = torch.zeros_like(t)
            shape = (1, -1) + (1,) * (t.dim() - 2)
            y = y * (1 if w is None else t64(w).reshape(shape)) + (0 if b is None else t64(b).reshape(shape))
        else:
            y = F.group_norm(t, g, None if w is None else t64(w), None if b is None else t64(b), eps)
        return torch.movedim(y, 1, -1) if nhwc else y

    return Case("groupnorm", make, [x], reference, dtype)


def rmsnorm(draw: Draw, algorithm: str) -> Case:
    dtype = draw(st.sampled_from(FLOATS))
    shape = rank_shape(draw, 1, 4)
    axes = often(draw, st.integers(1, len(shape)), [0, -1, len(shape) + 1])
    tail = shape[-axes:] if 1 <= axes <= len(shape) else shape
    w = values(draw, often(draw, st.just(tail), [tail + [1]], 8)) if draw(st.booleans()) else None
    eps = often(draw, st.sampled_from([1e-6, 1e-3]), [-1.0, math.inf])
    x = values(draw, shape)

    def make(name: str, dt: Any) -> Any:
        return layers.Layer(
            "rmsnorm",
            {"axes": axes, "eps": eps},
            {"weight": None if w is None else w.astype(dt)},
            algorithm=algorithm,
            name=name,
        )

    def reference(x: np.ndarray) -> Any:
        return F.rms_norm(t64(x), x.shape[x.ndim - axes :], None if w is None else t64(w), eps)

    return Case("rmsnorm", make, [x], reference, dtype)


def lrn(draw: Draw, algorithm: str) -> Case:
    lay, nhwc = layout(draw)
    size = often(draw, st.integers(1, 6), [0, -1, 2**62])
    alpha, beta, k = (
        draw(st.sampled_from([1e-4, 0.5])),
        draw(st.sampled_from([0.75, 1.0])),
        draw(st.sampled_from([1.0, 2.0])),
    )
    x = values(draw, image_shape(draw, nhwc))
    attrs = {"size": size, "alpha": alpha, "beta": beta, "bias": k, "before": max(size, 0) // 2, "layout": lay}

    def reference(x: np.ndarray) -> Any:
        if size <= 16:
            return back(F.local_response_norm(nchw(t64(x), nhwc), size, alpha, beta, k), nhwc)
        # A window wider than any channel count (torch would pad by it):
        # every channel's sum, over the window's fixed size.
        t = nchw(t64(x), nhwc)
        total = (t * t).sum(dim=1, keepdim=True)
        return back(t / (k + alpha / size * total) ** beta, nhwc)

    return Case("lrn", lambda n, dt: layers.Layer("lrn", attrs, algorithm=algorithm, name=n), [x], reference)


def _block_shuffle(op: str) -> Callable[[Draw, str], Case]:
    def build(draw: Draw, algorithm: str) -> Case:
        lay, nhwc = layout(draw)
        b = often(draw, st.integers(1, 3), [0, -1, 2**40])
        x = values(
            draw,
            image_shape(
                draw, nhwc, c=dim(draw, 1, 2) * (b * b if 0 < b < 4 else 1) if op == "depth_to_space" else None
            ),
        )
        fn = F.pixel_shuffle if op == "depth_to_space" else F.pixel_unshuffle

        def reference(x: np.ndarray) -> Any:
            if x.size == 0:
                raise NoReference()  # torch's shuffles of empty tensors keep other shapes
            return back(fn(nchw(t64(x), nhwc), b), nhwc)

        attrs = {"blocksize": b, "mode": "CRD", "layout": lay}
        return Case(op, lambda n, dt: layers.Layer(op, attrs, algorithm=algorithm, name=n), [x], reference)

    return build


def attention(draw: Draw, algorithm: str) -> Case:
    dtype = draw(st.sampled_from(FLOATS))
    batch = rank_shape(draw, 0, 2)
    L, S, E, Ev = (dim(draw, 1, 6, big=True) for _ in range(4))
    S_v = often(draw, st.just(S), [S + 1], 6)
    q, k, v = values(draw, batch + [L, E]), values(draw, batch + [S, E]), values(draw, batch + [S_v, Ev])
    causal = draw(st.booleans())
    scale = draw(st.sampled_from([None, None, 0.5, 0.0, -1.0]))
    mask = (
        values(draw, draw(st.sampled_from([[L, S], [1, S], [L, 1], batch + [L, S], [L + 1, S]])))
        if draw(st.booleans())
        else None
    )
    if mask is not None and draw(st.booleans()):
        mask = mask > 0  # a boolean mask: True takes part
    inputs = [q, k, v] + ([] if mask is None else [mask])

    def make(name: str, dt: Any) -> Any:
        return layers.Attention(causal=causal, scale=scale, has_mask=mask is not None, algorithm=algorithm, name=name)

    def reference(q: np.ndarray, k: np.ndarray, v: np.ndarray, m: Any = None) -> Any:
        # Written out rather than F.scaled_dot_product_attention, which
        # gives NaN for scale=0 with is_causal (its -inf mask times 0) and
        # refuses a mask with is_causal; ai3 applies both, and a query whose
        # keys are all masked gives zeros (core/ops/README.md).
        qt, kt, vt = t64(q), t64(k), t64(v)
        if qt.shape[:-2] != kt.shape[:-2] or kt.shape[:-1] != vt.shape[:-1]:
            raise ValueError("q, k, v do not match")
        s = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
        scores = (qt @ kt.transpose(-1, -2)) * s
        if m is not None:
            tm = torch.from_numpy(m) if m.dtype == np.bool_ else t64(m)
            tm = torch.broadcast_to(tm, scores.shape)
            scores = scores.masked_fill(~tm, -math.inf) if tm.dtype == torch.bool else scores + tm
        if causal:
            keep = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril()
            scores = scores.masked_fill(~keep, -math.inf)
        weights = torch.softmax(scores, dim=-1)
        dead = torch.isneginf(scores).all(dim=-1, keepdim=True)
        return torch.where(dead, 0.0, weights) @ vt

    def call(layer: Any, xs: list[Any]) -> Any:
        return layer(*xs[:3], xs[3] if len(xs) > 3 else None)

    return Case("attention", make, inputs, reference, dtype, call=call)


def multihead_attention(draw: Draw, algorithm: str) -> Case:
    dtype = draw(st.sampled_from(FLOATS))
    heads = often(draw, st.integers(1, 3), [0, -1, 2**40])
    head_dim = dim(draw, 1, 3, zero=False)
    D = head_dim * (heads if 1 <= heads <= 3 else 1)
    batch_first = draw(st.booleans())
    B, L = dim(draw, 1, 3), dim(draw, 1, 5)
    in_w = values(draw, draw(st.sampled_from([[3 * D, D]] * 6 + [[D, D], [3 * D, D + 1]])))
    has_bias = draw(st.booleans())
    in_b, out_b = (values(draw, [3 * D]), values(draw, [D])) if has_bias else (None, None)
    out_w = values(draw, [D, D])
    x_shape = draw(st.sampled_from([[B, L, D] if batch_first else [L, B, D]] * 4 + [[L, D], [L, B, D + 1], [D]]))
    x = values(draw, x_shape)

    def make(name: str, dt: Any) -> Any:
        cast = lambda a: None if a is None else a.astype(dt)  # noqa: E731
        return layers.MultiheadAttention(
            cast(in_w),
            cast(in_b),
            cast(out_w),
            cast(out_b),
            heads,
            batch_first=batch_first,
            algorithm=algorithm,
            name=name,
        )

    def reference(x: np.ndarray) -> Any:
        m = torch.nn.MultiheadAttention(D, heads, bias=has_bias, batch_first=batch_first, dtype=torch.float64).eval()
        with torch.no_grad():
            m.in_proj_weight.copy_(t64(in_w.astype(dtype)))
            m.out_proj.weight.copy_(t64(out_w.astype(dtype)))
            if has_bias:
                m.in_proj_bias.copy_(t64(in_b.astype(dtype)))
                m.out_proj.bias.copy_(t64(out_b.astype(dtype)))
            xt = t64(x)
            return m(xt, xt, xt, need_weights=False)[0]

    return Case("multihead_attention", make, [x], reference, dtype)


# ---- gradient ops (issue 16): inputs [grad_output, x, y] ---------------------

_GRAD_ACTIVATIONS = [None, None, (0.0, math.inf), (-0.5, 0.5)]


def _grad_mask(dy: torch.Tensor, y: torch.Tensor, activation: Any) -> torch.Tensor:
    """dL/dz from dL/dy through the fused clamp: 0 where it held y at a bound."""
    if activation is None:
        return dy
    return dy * ((y > activation[0]) & (y < activation[1]))


def _grad_output(draw: Draw, y_shape: list[int]) -> np.ndarray:
    """grad_output: y's shape mostly, sometimes a dimension off (refused)."""
    bad = [y_shape[:i] + [y_shape[i] + 1] + y_shape[i + 1 :] for i in range(len(y_shape))]
    return values(draw, often(draw, st.just(y_shape), bad, 8))


def _conv2d_backward(target: str) -> Callable[[Draw, str], Case]:
    op = f"conv2d_backward_{target}"

    def build(draw: Draw, algorithm: str) -> Case:
        dtype = draw(st.sampled_from(FLOATS))
        lay, nhwc = layout(draw)
        groups = draw(st.sampled_from([1, 1, 2, 3]))
        cg, kg = dim(draw, 1, 3, zero=False, big=True), dim(draw, 1, 3, zero=False, big=True)
        c, k = cg * groups, kg * groups
        # The winograd gradient's own case (3x3, dilation 1) 3 times in 4.
        winograd = algorithm == "winograd" and not chance(draw, 25)
        kh, kw = (3, 3) if winograd else (dim(draw, 1, 4, zero=False), dim(draw, 1, 4, zero=False))
        stride = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
        dilation = (1, 1) if winograd else (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
        padding = pads4(draw, draw(st.integers(0, 3)), draw(st.integers(0, 3)))
        weight = values(draw, [k, cg, kh, kw])
        bias = values(draw, [k]) if draw(st.booleans()) else None
        activation = draw(st.sampled_from(_GRAD_ACTIVATIONS))
        x = values(draw, image_shape(draw, nhwc, often(draw, st.just(c), [c + 1], 8)))
        t, b, l, r = unpad(padding)

        def forward(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
            return F.conv2d(F.pad(nchw(x, nhwc), (l, r, t, b)), w, None, stride, 0, dilation, groups)

        try:  # y: the forward's output for x, where there is one
            y = forward(t64(x), t64(weight))
            if bias is not None:
                y = y + t64(bias)[:, None, None]
            y = back(y.clamp(*activation) if activation else y, nhwc).numpy()
        except RuntimeError:  # no output for this x: a stand-in, refused
            y = values(draw, [1, 1, 1, 1])
        dy = _grad_output(draw, list(y.shape))
        attrs = {
            "stride": stride,
            "padding": padding,
            "dilation": dilation,
            "groups": groups,
            "layout": lay,
            "activation": activation,
        }

        def make(name: str, dt: Any) -> Any:
            weights = {"weight": weight.astype(dt), "bias": None if bias is None else bias.astype(dt)}
            return layers.Layer(op, attrs, weights, algorithm=algorithm, name=name)

        def reference(dy: np.ndarray, x: np.ndarray, y: np.ndarray) -> Any:
            xt, wt = t64(x).requires_grad_(), t64(weight).requires_grad_()
            z = forward(xt, wt)
            if list(back(z, nhwc).shape) != list(y.shape) or dy.shape != y.shape:
                raise ValueError("y or grad_output is not shaped like conv2d's output for x")
            dz = nchw(_grad_mask(t64(dy), t64(y), activation), nhwc)
            gx, gw = torch.autograd.grad(z, [xt, wt], dz)
            return {"data": gx, "weight": gw, "bias": dz.sum((0, 2, 3))}[target]

        return Case(op, make, [dy, x, y], reference, dtype)

    return build


def _linear_backward(target: str) -> Callable[[Draw, str], Case]:
    op = f"linear_backward_{target}"

    def build(draw: Draw, algorithm: str) -> Case:
        dtype = draw(st.sampled_from(FLOATS))
        out_f, in_f = dim(draw, 1, 9, big=True), dim(draw, 1, 9, big=True)
        weight = values(draw, [out_f, in_f])
        bias = values(draw, [out_f]) if draw(st.booleans()) else None
        activation = draw(st.sampled_from(_GRAD_ACTIVATIONS))
        lead = rank_shape(draw, 0, 3)
        x = values(draw, lead + [often(draw, st.just(in_f), [in_f + 1], 8)])
        z = x @ weight.T + (0 if bias is None else bias) if x.shape[-1] == in_f else np.zeros(lead + [out_f])
        y = np.clip(z, *activation) if activation else z
        dy = _grad_output(draw, list(y.shape))

        def make(name: str, dt: Any) -> Any:
            weights = {"weight": weight.astype(dt), "bias": None if bias is None else bias.astype(dt)}
            return layers.Layer(op, {"activation": activation}, weights, algorithm=algorithm, name=name)

        def reference(dy: np.ndarray, x: np.ndarray, y: np.ndarray) -> Any:
            if x.shape[-1] != in_f or dy.shape != y.shape or y.shape != x.shape[:-1] + (out_f,):
                raise ValueError("x, y or grad_output is not shaped as linear's")
            dz = _grad_mask(t64(dy), t64(y), activation).reshape(-1, out_f)
            rows = t64(x).reshape(-1, in_f)
            return {"data": (dz @ t64(weight)).reshape(x.shape), "weight": dz.T @ rows, "bias": dz.sum(0)}[target]

        return Case(op, make, [dy, x, y], reference, dtype)

    return build


_GRADIENT_CASES = gradients.cases()


def _gradient(op: str, target: str) -> Callable[[Draw, str], Case]:
    """The case of gradient op <op>_backward_<target> (issue 16): a layer of
    the grid of tests/training_ops/gradients.py, inputs [dy, x, y] with y
    torch's forward of x, and as reference torch.autograd.grad at the x ai3
    saw (with the dy it saw)."""
    grid = [c for c in _GRADIENT_CASES if c.op == op and target in c.targets]

    def build(draw: Draw, algorithm: str) -> Case:
        g = draw(st.sampled_from(grid))
        dtype = draw(st.sampled_from(FLOATS))
        x = gradients.inputs(g, draw(st.integers(0, 2**32 - 1)))
        y, _, dy = gradients.reference(g, x, lambda shape: values(draw, shape))

        def reference(dy: np.ndarray, x: np.ndarray, y: np.ndarray) -> Any:
            return gradients.reference(g, x, lambda shape: dy)[1][target]

        def make(name: str, dt: Any) -> Any:
            return gradients.layer(g, target, dt, algorithm, name)

        return Case(f"{op}_backward_{target}", make, [dy, x, y], reference, dtype)

    return build


# ---- issue 17: unary math, activations, pow / maximum / minimum / prelu,
# the reductions, tile and expand (through the generic ai3.layers.Layer) ----


def _generic(op: str, **attrs: Any) -> Callable[..., Any]:
    """An ai3.layers class-like maker of `op`: (other=None, reverse=False,
    algorithm, name) as the binary ops' classes take them."""

    def make(other: Any = None, reverse: bool = False, *, algorithm: str, name: str) -> Any:
        a = dict(attrs, **({"reverse": reverse} if other is not None else {}))
        return layers.Layer(op, a, {} if other is None else {"other": other}, algorithm=algorithm, name=name)

    return make


def _activation(op: str, fn: Callable[..., torch.Tensor], grid: dict[str, list[float]]) -> Callable[[Draw, str], Case]:
    """An activation with scalar attributes drawn from `grid` (each name's
    first value is torch's default); non-finite or 0 ones must be refused
    where the op refuses them (no reference)."""

    def build(draw: Draw, algorithm: str) -> Case:
        attrs = {k: draw(st.sampled_from(v)) for k, v in grid.items()}
        x = values(draw, rank_shape(draw, 0, 4), specials=True)

        def reference(x: np.ndarray) -> Any:
            bad = [
                k
                for k, v in attrs.items()
                if not math.isfinite(v) and not (op == "softplus" and k == "threshold" and v == math.inf)
            ]
            if bad or (op in ("celu", "softplus") and attrs.get("alpha", attrs.get("beta")) == 0):
                raise NoReference(f"{op} with {attrs}: ai3 refuses it")
            return fn(t64(x), **attrs)

        make = lambda n, dt: layers.Layer(op, attrs, {}, algorithm=algorithm, name=n)  # noqa: E731
        return Case(op, make, [x], reference, specials=True)

    return build


def _selu(x: torch.Tensor, alpha: float, gamma: float) -> torch.Tensor:
    return gamma * torch.where(x > 0, x, alpha * torch.expm1(x))


def _softplus(x: torch.Tensor, beta: float, threshold: float) -> torch.Tensor:
    """torch's softplus without its overflow to inf where beta x is huge but
    under the threshold (threshold=inf: ONNX's and Keras' form)."""
    return torch.where(beta * x > threshold, x, torch.logaddexp(torch.zeros_like(x), beta * x) / beta)


def _prelu_reference(x: torch.Tensor, slope: torch.Tensor) -> torch.Tensor:
    if slope.dim() == 1 and x.dim() >= 2:  # along dim 1, as torch's F.prelu
        slope = slope.reshape((-1,) + (1,) * (x.dim() - 2))
    return torch.where(x < 0, slope * x, x)


def prelu(draw: Draw, algorithm: str) -> Case:
    dtype = draw(st.sampled_from(FLOATS))
    shape = rank_shape(draw, 1, 4)
    channels = shape[1] if len(shape) >= 2 else shape[0]
    sb = draw(st.sampled_from([[channels], [1], list(shape[1:]) or [1], [channels + 1]]))
    x, slope = values(draw, shape, specials=True), values(draw, sb)

    def reference(x: np.ndarray) -> Any:
        return _prelu_reference(t64(x), t64(slope.astype(dtype)))

    return Case(
        "prelu",
        lambda n, dt: _generic("prelu")(slope.astype(dt), algorithm=algorithm, name=n),
        [x],
        reference,
        dtype,
        specials=True,
    )


def _np_reduction(fn: Callable[..., np.ndarray], **kw: Any) -> Callable[[np.ndarray, tuple, bool], np.ndarray]:
    def reduce(x: np.ndarray, axes: tuple, keepdim: bool) -> np.ndarray:
        with np.errstate(all="ignore"):
            return np.asarray(fn(x, axis=axes, keepdims=keepdim, **kw))

    return reduce


def _log_sum_exp(x: np.ndarray, axis: tuple, keepdims: bool) -> np.ndarray:
    t = t64(x)
    dims = list(axis)
    if t.numel() == 0 or not dims:  # torch.logsumexp refuses no dims; -inf over none
        m = np.max(x, axis=axis, keepdims=True, initial=-np.inf)
        shift = np.where(np.isfinite(m), m, 0.0)
        y = shift + np.log(np.sum(np.exp(x - shift), axis=axis, keepdims=True))
        return y if keepdims else np.squeeze(y, axis=axis)
    return torch.logsumexp(t, dim=dims, keepdim=keepdims).numpy()


_REDUCTIONS: dict[str, Callable[[np.ndarray, tuple, bool], np.ndarray]] = {
    "reduce_sum": _np_reduction(np.sum),
    "reduce_prod": _np_reduction(np.prod),
    "reduce_max": _np_reduction(np.max, initial=-np.inf),
    "reduce_min": _np_reduction(np.min, initial=np.inf),
    "reduce_l1": lambda x, a, k: _np_reduction(np.sum)(np.abs(x), a, k),
    "reduce_l2": lambda x, a, k: np.sqrt(_np_reduction(np.sum)(x * x, a, k)),
    "reduce_sum_square": lambda x, a, k: _np_reduction(np.sum)(x * x, a, k),
    "reduce_log_sum_exp": lambda x, a, k: _log_sum_exp(x, a, k),
}


def _reduction(op: str) -> Callable[[Draw, str], Case]:
    def build(draw: Draw, algorithm: str) -> Case:
        shape = rank_shape(draw, 0, 4)
        r = max(len(shape), 1)
        axes = [often(draw, st.integers(-r, r - 1), [r, INT64_MIN, INT64_MAX]) for _ in range(draw(st.integers(0, 3)))]
        keepdim = draw(st.booleans())
        # No 1e30s where float32 would overflow where the float64 reference does not.
        x = values(draw, shape, specials=op not in ("reduce_prod", "reduce_l2", "reduce_sum_square"))

        def reference(x: np.ndarray) -> Any:
            if any(not -x.ndim <= a < max(x.ndim, 1) for a in axes) or (x.ndim == 0 and axes):
                raise IndexError(f"axes {axes} out of range for rank {x.ndim}")
            dims = tuple(sorted(a % x.ndim for a in axes)) if axes else tuple(range(x.ndim))
            if len(set(dims)) != len(dims):
                raise ValueError(f"axes {axes} repeat a dimension")
            return _REDUCTIONS[op](x, dims, keepdim)

        make = lambda n, dt: layers.Layer(op, {"axes": axes, "keepdim": keepdim}, {}, algorithm=algorithm, name=n)  # noqa: E731
        return Case(op, make, [x], reference, specials=True)

    return build


def tile(draw: Draw, algorithm: str) -> Case:
    shape = rank_shape(draw, 0, 3)
    repeats = [often(draw, st.integers(0, 3), [-1, INT64_MAX, 2**40]) for _ in range(draw(st.integers(0, 4)))]
    x = values(draw, shape)

    def reference(x: np.ndarray) -> Any:
        if any(r < 0 for r in repeats):
            raise ValueError("negative repeats")
        return np.tile(x, repeats) if repeats else x

    make = lambda n, dt: layers.Layer("tile", {"repeats": repeats}, {}, algorithm=algorithm, name=n)  # noqa: E731
    return Case("tile", make, [x], reference, any_dtype=True)


def expand(draw: Draw, algorithm: str) -> Case:
    shape = rank_shape(draw, 0, 3)
    target = [draw(st.sampled_from([d, 1, 3] if d == 1 else [d, 1, d + 1])) for d in shape]
    target = [draw(st.integers(1, 3)) for _ in range(draw(st.integers(0, 2)))] + target
    x = values(draw, shape)

    def reference(x: np.ndarray) -> Any:
        return np.broadcast_to(x, np.broadcast_shapes(x.shape, tuple(target))).copy()

    make = lambda n, dt: layers.Layer("expand", {"shape": target}, {}, algorithm=algorithm, name=n)  # noqa: E731
    return Case("expand", make, [x], reference, any_dtype=True)


# -- integer tensors (issue 17): gather, cast, comparisons, where -------------
_CORE_DTYPES = ("float32", "float64", "int64", "bool")


def _gathering(
    draw: Draw,
    op: str,
    axis: int,
    data: np.ndarray,
    index: np.ndarray,
    reference: Callable[..., Any],
    dtype: Any,
    algorithm: str,
) -> Case:
    """A case of gather or gather_elements: the data the layer's constant
    and the int64 indices its one input, or both inputs."""
    if draw(st.booleans()):
        return Case(
            op,
            lambda n, dt: layers.Layer(op, {"axis": axis}, {"other": data.astype(dt)}, algorithm=algorithm, name=n),
            [index],
            lambda i: reference(data.astype(dtype), i),
            dtype,
            fixed={0: np.int64},
            out_dtype=lambda d: dtype,
        )
    return Case(
        op,
        lambda n, dt: layers.Layer(op, {"axis": axis}, {}, algorithm=algorithm, name=n),
        [data, index],
        reference,
        dtype,
        fixed={1: np.int64},
        any_dtype=True,
    )


def gather(draw: Draw, algorithm: str) -> Case:
    dtype = draw(st.sampled_from(FLOATS))
    data_shape = [dim(draw, 1, 5) for _ in range(draw(st.integers(1, 3)))]
    rank = len(data_shape)
    axis = often(draw, st.integers(-rank, rank - 1), [rank, -rank - 1, INT64_MAX])
    size = data_shape[axis] if -rank <= axis < rank else 1
    index_shape = rank_shape(draw, 0, 2)
    size = max(size, 1)  # (an empty axis: every index is out of range, refused)
    index = np.asarray(
        draw(st.lists(st.integers(-size, size - 1), min_size=math.prod(index_shape), max_size=math.prod(index_shape))),
        np.int64,
    ).reshape(index_shape)
    if index.size and chance(draw, 10):
        index.reshape(-1)[0] = draw(st.sampled_from([size, -size - 1, INT64_MAX, INT64_MIN]))  # out of range: refused
    data = values(draw, data_shape)

    def reference(x: np.ndarray, i: np.ndarray) -> np.ndarray:
        ax = axis + x.ndim if axis < 0 else axis
        out = x.shape[:ax] + i.shape + x.shape[ax + 1 :]
        if 0 in out:  # nothing is read, so no index is checked
            return np.zeros(out, x.dtype)
        return np.take(x, i, axis=axis, mode="raise")

    # (as an embedding: the table is the layer's constant)
    return _gathering(draw, "gather", axis, data, index, reference, dtype, algorithm)


def gather_elements(draw: Draw, algorithm: str) -> Case:
    dtype = draw(st.sampled_from(FLOATS))
    data_shape = [dim(draw, 1, 5) for _ in range(draw(st.integers(1, 3)))]
    rank = len(data_shape)
    axis = often(draw, st.integers(-rank, rank - 1), [rank, -rank - 1, INT64_MAX])
    size = data_shape[axis] if -rank <= axis < rank else 1
    # The indices: the data's rank, no larger on the other axes (now and
    # then larger, or of another rank: refused), any length along the axis.
    index_shape = [draw(st.integers(0, d)) for d in data_shape]
    if -rank <= axis < rank:
        index_shape[axis] = dim(draw, 0, 6)
    if chance(draw, 8):
        index_shape[0] += 1
    if chance(draw, 5):
        index_shape = index_shape[:-1]
    count = math.prod(index_shape)
    index = np.asarray(
        draw(st.lists(st.integers(-size, max(size - 1, -size)), min_size=count, max_size=count)), np.int64
    ).reshape(index_shape)
    if index.size and chance(draw, 10):
        index.reshape(-1)[0] = draw(st.sampled_from([size, -size - 1, INT64_MAX, INT64_MIN]))  # out of range: refused
    data = values(draw, data_shape)

    def reference(x: np.ndarray, i: np.ndarray) -> Any:
        if i.size == 0:
            raise NoReference()  # (torch's own checks differ on empty indices)
        ax = axis + x.ndim if axis < 0 else axis
        return torch.gather(torch.from_numpy(x), ax, torch.from_numpy(np.where(i < 0, i + x.shape[ax], i)))

    return _gathering(draw, "gather_elements", axis, data, index, reference, dtype, algorithm)


_SCATTER_COMBINE = {
    "none": lambda a, u: u,
    "add": lambda a, u: a + u,
    "mul": lambda a, u: a * u,
    "max": lambda a, u: u if u > a or u != u else a,
    "min": lambda a, u: u if u < a or u != u else a,
}


def _scattering(draw: Draw, op: str, attrs: dict[str, Any], data, index, updates, reference, algorithm) -> Case:
    """A case of scatter_elements or scatter_nd: the int64 indices the
    layer's second input, or its constant `indices` weight."""
    if draw(st.booleans()):
        return Case(
            op,
            lambda n, dt: layers.Layer(op, attrs, {"indices": index}, algorithm=algorithm, name=n),
            [data, updates],
            lambda x, u: reference(x, index, u),
            any_dtype=True,
            int64=True,
        )
    return Case(
        op,
        lambda n, dt: layers.Layer(op, attrs, {}, algorithm=algorithm, name=n),
        [data, index, updates],
        reference,
        fixed={1: np.int64},
        any_dtype=True,
        int64=True,
    )


def scatter_elements(draw: Draw, algorithm: str) -> Case:
    """Against a loop over the indices in order (a repeated index keeps the
    last update with reduction "none", as the core defines it)."""
    data_shape = [dim(draw, 1, 5) for _ in range(draw(st.integers(1, 3)))]
    rank = len(data_shape)
    axis = often(draw, st.integers(-rank, rank - 1), [rank, -rank - 1, INT64_MAX])
    size = data_shape[axis] if -rank <= axis < rank else 1
    index_shape = [draw(st.integers(0, d)) for d in data_shape]
    if chance(draw, 8):
        index_shape[0] += 1  # larger than the data: refused
    count = math.prod(index_shape)
    index = np.asarray(draw(st.lists(st.integers(-size, size - 1), min_size=count, max_size=count)), np.int64).reshape(
        index_shape
    )
    if index.size and chance(draw, 10):
        index.reshape(-1)[0] = draw(st.sampled_from([size, -size - 1, INT64_MAX, INT64_MIN]))
    reduction = draw(st.sampled_from(list(_SCATTER_COMBINE)))
    data, updates = values(draw, data_shape), values(draw, index_shape)

    def reference(x: np.ndarray, i: np.ndarray, u: np.ndarray) -> Any:
        y, ax = x.copy(), axis % x.ndim
        for j in np.ndindex(*i.shape):
            at = list(j)
            at[ax] = int(i[j]) % x.shape[ax]
            y[tuple(at)] = _SCATTER_COMBINE[reduction](y[tuple(at)], u[j])
        return torch.from_numpy(y)

    attrs = {"axis": axis, "reduction": reduction}
    return _scattering(draw, "scatter_elements", attrs, data, index, updates, reference, algorithm)


def scatter_nd(draw: Draw, algorithm: str) -> Case:
    data_shape = [dim(draw, 1, 4) for _ in range(draw(st.integers(1, 3)))]
    k = often(draw, st.integers(1, len(data_shape)), [0, len(data_shape) + 1])
    lead = rank_shape(draw, 0, 2)
    count = math.prod(lead)
    tuples = [
        [
            draw(st.integers(-max(data_shape[d], 1), max(data_shape[d], 1) - 1)) if d < len(data_shape) else 0
            for d in range(k)
        ]
        for _ in range(count)
    ]
    index = np.asarray(tuples, np.int64).reshape(*lead, k)
    if index.size and chance(draw, 10):
        index.reshape(-1)[0] = draw(st.sampled_from([INT64_MAX, INT64_MIN, data_shape[0]]))
    reduction = draw(st.sampled_from(list(_SCATTER_COMBINE)))
    data = values(draw, data_shape)
    updates = values(draw, [*lead, *data_shape[k:]] if k <= len(data_shape) else lead)

    def reference(x: np.ndarray, i: np.ndarray, u: np.ndarray) -> Any:
        y = x.copy()
        flat_i, flat_u = i.reshape(-1, i.shape[-1]), u.reshape(-1, *x.shape[i.shape[-1] :])
        for t, v in zip(flat_i, flat_u):
            at = tuple(int(a) % x.shape[d] for d, a in enumerate(t))
            combine = np.vectorize(_SCATTER_COMBINE[reduction])
            y[at] = combine(y[at], v)
        return torch.from_numpy(y)

    return _scattering(draw, "scatter_nd", {"reduction": reduction}, data, index, updates, reference, algorithm)


def cumsum(draw: Draw, algorithm: str) -> Case:
    shape = rank_shape(draw, 1, 3)
    rank = len(shape)
    axis = often(draw, st.integers(-rank, rank - 1), [rank, -rank - 1, INT64_MAX, INT64_MIN])
    exclusive, reverse = draw(st.booleans()), draw(st.booleans())
    x = values(draw, shape, specials=True)

    def reference(x: np.ndarray) -> Any:
        t = exact(x)
        ax = axis + t.dim() if axis < 0 else axis
        if reverse:
            t = t.flip(ax)
        y = torch.cumsum(t, ax)
        if exclusive:  # each sum shifted one along: 0 first
            y = torch.cat([torch.zeros_like(y.narrow(ax, 0, 1)), y.narrow(ax, 0, y.shape[ax] - 1)], ax)
        return y.flip(ax) if reverse else y

    make = lambda n, dt: layers.Layer(  # noqa: E731
        "cumsum", {"axis": axis, "exclusive": exclusive, "reverse": reverse}, {}, algorithm=algorithm, name=n
    )
    return Case("cumsum", make, [x], reference, specials=True, int64=True)


def _arg_extreme(op: str) -> Callable[[Draw, str], Case]:
    """argmax / argmin against torch's (the first index of ties, NaN the
    extreme); select_last_index as torch's on the flipped axis."""
    fn = torch.argmax if op == "argmax" else torch.argmin

    def build(draw: Draw, algorithm: str) -> Case:
        shape = rank_shape(draw, 1, 3)
        rank = len(shape)
        axis = often(draw, st.integers(-rank, rank - 1), [rank, -rank - 1, INT64_MAX, INT64_MIN])
        keepdim, last = draw(st.booleans()), draw(st.booleans())
        x = np.round(values(draw, shape, specials=True) * 2)  # ties are common

        def reference(x: np.ndarray) -> Any:
            t = exact(x)
            ax = axis + t.dim() if axis < 0 else axis
            if not last:
                return fn(t, ax, keepdim)
            return t.shape[ax] - 1 - fn(t.flip(ax), ax, keepdim)

        attrs = {"axis": axis, "keepdim": keepdim, "select_last_index": last}
        return Case(
            op,
            lambda n, dt: layers.Layer(op, attrs, {}, algorithm=algorithm, name=n),
            [x],
            reference,
            specials=True,
            out_dtype=lambda d: np.int64,
            int64=True,
        )

    return build


def topk(draw: Draw, algorithm: str) -> Case:
    """topk against a stable sort (ties by index, as ONNX; NaN the largest,
    as torch), k anywhere from 0 to past the axis' size."""
    shape = rank_shape(draw, 1, 3)
    rank = len(shape)
    axis = often(draw, st.integers(-rank, rank - 1), [rank, -rank - 1, INT64_MAX])
    size = shape[axis] if -rank <= axis < rank else 1
    k = often(draw, st.integers(0, size), [size + 1, -1, INT64_MAX])
    largest = draw(st.booleans())
    x = np.round(values(draw, shape, specials=True) * 2)  # ties are common

    def reference(x: np.ndarray) -> Any:
        t = np.moveaxis(x, axis, -1)
        nan = np.isnan(t)
        plain = np.where(nan, 0, t)
        # lexsort: the last key first; NaN first when largest, last when not.
        keys = (-plain, ~nan) if largest else (plain, nan)
        order = np.lexsort(keys, axis=-1)[..., :k]
        return torch.from_numpy(np.ascontiguousarray(np.moveaxis(order, -1, axis)))

    attrs = {"k": k, "axis": axis, "largest": largest}
    return Case(
        "topk",
        lambda n, dt: layers.Layer("topk", attrs, {}, algorithm=algorithm, name=n),
        [x],
        reference,
        specials=True,
        out_dtype=lambda d: np.int64,
        int64=True,
    )


def trilu(draw: Draw, algorithm: str) -> Case:
    shape = rank_shape(draw, 2, 4)
    upper = draw(st.booleans())
    k = often(draw, st.integers(-6, 6), [INT64_MAX, INT64_MIN, 100, -100])
    x = values(draw, shape, specials=True)

    def reference(x: np.ndarray) -> Any:
        rows, cols = x.shape[-2:]
        kk = max(min(k, rows + cols), -rows - cols)  # (torch's k is an int64 too)
        return (torch.triu if upper else torch.tril)(torch.from_numpy(x), kk)

    return Case(
        "trilu",
        lambda n, dt: layers.Layer("trilu", {"upper": upper, "k": k}, {}, algorithm=algorithm, name=n),
        [x],
        reference,
        draw(st.sampled_from(FLOATS)),
        specials=True,
        any_dtype=True,
    )


def _truncate(x: np.ndarray, to: str) -> np.ndarray:
    """ONNX Cast as cast.h states it: float -> int64 toward zero, NaN and
    values past int64's range to INT64_MIN."""
    if to == "bool":
        return x != 0
    if to != "int64" or x.dtype.kind != "f":
        return x.astype(to)
    inside = (x >= -(2.0**63)) & (x < 2.0**63)
    return np.where(inside, np.trunc(np.where(inside, x, 0)), 0).astype(np.int64) + np.where(inside, 0, INT64_MIN)


def cast(draw: Draw, algorithm: str) -> Case:
    to = draw(st.sampled_from(_CORE_DTYPES))
    x = values(draw, rank_shape(draw, 0, 3), specials=True) * 4
    return Case(
        "cast",
        lambda n, dt: layers.Layer("cast", {"to": to}, {}, algorithm=algorithm, name=n),
        [x],
        lambda a: _truncate(a, to),
        draw(st.sampled_from(FLOATS)),
        specials=True,
        out_dtype=lambda d: to,
        any_dtype=True,
    )


_COMPARISONS = {
    "equal": np.equal, "less": np.less, "greater": np.greater, "less_equal": np.less_equal,
    "greater_equal": np.greater_equal, "logical_and": np.logical_and, "logical_or": np.logical_or,
    "logical_xor": np.logical_xor,
}  # fmt: skip


def _comparison(op: str) -> Callable[[Draw, str], Case]:
    def build(draw: Draw, algorithm: str) -> Case:
        dtype = draw(st.sampled_from(FLOATS))
        sa, sb = _broadcast_pair(draw)
        # Small integers, so that equal values (and zeros) occur.
        a, b = (np.round(values(draw, s) * 2) for s in (sa, sb))
        fn = _COMPARISONS[op]
        if draw(st.booleans()):
            return Case(
                op, lambda n, dt: layers.Layer(op, {}, {}, algorithm=algorithm, name=n), [a, b], fn, dtype,
                out_dtype=lambda d: np.bool_, any_dtype=True,
            )  # fmt: skip
        return Case(
            op,
            lambda n, dt: layers.Layer(op, {}, {"other": b.astype(dt)}, algorithm=algorithm, name=n),
            [a],
            lambda x: fn(x, b.astype(dtype)),
            dtype,
            out_dtype=lambda d: np.bool_,
        )

    return build


def logical_not(draw: Draw, algorithm: str) -> Case:
    x = np.round(values(draw, rank_shape(draw, 0, 3), specials=True))
    return Case(
        "logical_not",
        lambda n, dt: layers.Layer("logical_not", {}, {}, algorithm=algorithm, name=n),
        [x],
        lambda a: a == 0,
        draw(st.sampled_from(FLOATS)),
        specials=True,
        out_dtype=lambda d: np.bool_,
        any_dtype=True,
    )


def where(draw: Draw, algorithm: str) -> Case:
    dtype = draw(st.sampled_from(FLOATS))
    sx, sy = _broadcast_pair(draw)
    sc = list((sx if len(sx) >= len(sy) else sy)[draw(st.integers(0, 2)) :])
    cond = np.asarray(draw(st.lists(st.booleans(), min_size=math.prod(sc), max_size=math.prod(sc))), np.bool_).reshape(
        sc
    )
    x, y = values(draw, sx, specials=True), values(draw, sy, specials=True)
    form = draw(st.sampled_from(["three", "constant x", "constant y"]))
    if form == "three":
        return Case(
            "where", lambda n, dt: layers.Layer("where", {}, {}, algorithm=algorithm, name=n), [cond, x, y],
            np.where, dtype, specials=True, fixed={0: np.bool_}, any_dtype=True,
        )  # fmt: skip
    const, branch = (x, y) if form == "constant x" else (y, x)
    other_is_x = form == "constant x"

    def reference(c: np.ndarray, t: np.ndarray) -> np.ndarray:
        k = const.astype(dtype)
        return np.where(c, k, t) if other_is_x else np.where(c, t, k)

    return Case(
        "where",
        lambda n, dt: layers.Layer(
            "where", {"other_is_x": other_is_x}, {"other": const.astype(dt)}, algorithm=algorithm, name=n
        ),
        [cond, branch],
        reference,
        dtype,
        specials=True,
        fixed={0: np.bool_},
    )


_ISSUE17_OPS: dict[str, Callable[[Draw, str], Case]] = {
    "gather": gather,
    "gather_elements": gather_elements,
    "cumsum": cumsum,
    "argmax": _arg_extreme("argmax"),
    "argmin": _arg_extreme("argmin"),
    "topk": topk,
    "scatter_elements": scatter_elements,
    "scatter_nd": scatter_nd,
    "trilu": trilu,
    "cast": cast,
    **{op: _comparison(op) for op in _COMPARISONS},
    "logical_not": logical_not,
    "where": where,
    **{
        op: _unary(op, _generic(op), fn)
        for op, fn in {
            "exp": torch.exp, "log": torch.log, "sqrt": torch.sqrt, "neg": torch.neg, "abs": torch.abs, "erf": torch.erf,
            "reciprocal": torch.reciprocal, "floor": torch.floor, "ceil": torch.ceil, "sign": torch.sign, "sin": torch.sin,
            "cos": torch.cos, "softsign": F.softsign, "mish": F.mish, "tan": torch.tan, "asin": torch.asin,
            "acos": torch.acos, "atan": torch.atan, "sinh": torch.sinh, "cosh": torch.cosh, "asinh": torch.asinh,
            "acosh": torch.acosh, "atanh": torch.atanh,
        }.items()
    },
    "elu": _activation("elu", F.elu, {"alpha": [1.0, 0.5, -0.3, math.inf]}),
    "celu": _activation("celu", F.celu, {"alpha": [1.0, 0.5, 2.0, 0.0, math.nan]}),
    "selu": _activation("selu", _selu, {"alpha": [1.6732632423543772, 1.0], "gamma": [1.0507009873554805, 2.0, math.nan]}),
    "softplus": _activation("softplus", _softplus, {"beta": [1.0, 2.0, 0.5, 0.0], "threshold": [20.0, 1.0, math.inf]}),
    "thresholded_relu": _activation("thresholded_relu", lambda x, alpha: torch.where(x > alpha, x, 0.0), {"alpha": [1.0, 0.0, -2.0, math.nan]}),
    "pow": _binary("pow", _generic("pow"), torch.pow),
    "maximum": _binary("maximum", _generic("maximum"), torch.maximum),
    "minimum": _binary("minimum", _generic("minimum"), torch.minimum),
    "remainder": _binary("remainder", _generic("remainder"), _divides_safely(torch.remainder)),
    "fmod": _binary("fmod", _generic("fmod"), _divides_safely(torch.fmod)),
    "conv3d": conv3d,
    "maxpool3d": _pool3d("maxpool3d"),
    "avgpool3d": _pool3d("avgpool3d"),
    "grid_sample": grid_sample,
    "prelu": prelu,
    **{op: _reduction(op) for op in _REDUCTIONS},
    "tile": tile,
    "expand": expand,
}  # fmt: skip


OPS: dict[str, Callable[[Draw, str], Case]] = {
    "conv2d": conv2d,
    "linear": linear,
    "relu": _unary("relu", layers.ReLU, torch.relu),
    "sigmoid": _unary("sigmoid", layers.Sigmoid, torch.sigmoid),
    "silu": _unary("silu", layers.SiLU, F.silu),
    "tanh": _unary("tanh", layers.Tanh, torch.tanh),
    "hardswish": _unary("hardswish", layers.Hardswish, F.hardswish),
    "gelu": gelu,
    "hardsigmoid": hardsigmoid,
    "clamp": clamp,
    "leaky_relu": leaky_relu,
    "maxpool2d": maxpool2d,
    "avgpool2d": avgpool2d,
    "adaptiveavgpool2d": _adaptive("adaptiveavgpool2d", layers.AdaptiveAvgPool2d, F.adaptive_avg_pool2d),
    "adaptivemaxpool2d": _adaptive("adaptivemaxpool2d", layers.AdaptiveMaxPool2d, F.adaptive_max_pool2d),
    "batchnorm2d": batchnorm2d,
    "flatten": flatten,
    "softmax": _axis_op("softmax", layers.Softmax, F.softmax),
    "log_softmax": _axis_op("log_softmax", layers.LogSoftmax, F.log_softmax),
    "add": _binary("add", layers.Add, torch.add),
    "sub": _binary("sub", layers.Sub, torch.sub),
    "mul": _binary("mul", layers.Mul, torch.mul),
    "div": _binary("div", layers.Div, torch.div),
    "matmul": matmul,
    "reshape": reshape,
    "permute": permute,
    "slice": slice_op,
    "layernorm": layernorm,
    "mean": mean,
    "roll": roll,
    "pad2d": pad2d,
    "conv_transpose2d": conv_transpose2d,
    "resize": resize,
    "groupnorm": groupnorm,
    "rmsnorm": rmsnorm,
    "lrn": lrn,
    "depth_to_space": _block_shuffle("depth_to_space"),
    "space_to_depth": _block_shuffle("space_to_depth"),
    "attention": attention,
    "multihead_attention": multihead_attention,
    **{f"conv2d_backward_{t}": _conv2d_backward(t) for t in ("data", "weight", "bias")},
    **{f"linear_backward_{t}": _linear_backward(t) for t in ("data", "weight", "bias")},
}
OPS.update(_ISSUE17_OPS)
# Every gradient op of that grid.
OPS.update({f"{c.op}_backward_{t}": _gradient(c.op, t) for c in _GRADIENT_CASES for t in c.targets})


# ---- memory forms, dtypes and the property ---------------------------------


def _misaligned(x: np.ndarray) -> np.ndarray:
    """x's values in a C-contiguous array whose data starts one byte off
    the element alignment (a kernel's aligned vector load would fault)."""
    raw = np.zeros(x.nbytes + 1, np.uint8)
    y = raw[1:].view(x.dtype).reshape(x.shape)
    y[...] = x
    assert x.size == 0 or x.itemsize == 1 or not y.flags.aligned
    return y


def _strided(x: np.ndarray) -> np.ndarray:
    """x's values as every other element of a larger buffer."""
    big = np.zeros(x.shape[:-1] + (2 * x.shape[-1] + 1,), x.dtype)
    view = big[..., 1::2]
    view[...] = x
    return view


FORMS: dict[str, Callable[[np.ndarray], Any]] = {
    "contiguous": lambda x: x,
    "transposed": lambda x: np.ascontiguousarray(x.T).T if x.ndim else x,
    "reversed": lambda x: np.ascontiguousarray(x[::-1])[::-1] if x.ndim else x,
    "strided": lambda x: _strided(x) if x.ndim else x,
    "misaligned": _misaligned,
    "offset view": lambda x: np.concatenate([np.zeros(3, x.dtype), x.reshape(-1)])[3:].reshape(x.shape),
    "torch": lambda x: torch.from_numpy(x),
    "torch transposed": lambda x: (
        torch.from_numpy(np.ascontiguousarray(x.T)).permute(*range(x.ndim - 1, -1, -1))
        if x.ndim
        else torch.from_numpy(x)
    ),
}


# How each example ended, per (op, algorithm): "matched" (the reference's
# answer), "refused" (an ai3.Error naming the layer), "internal error" (an
# ai3.InternalError naming the layer: allowed by the property, but each is a
# limit of an algorithm worth reporting), "wrong dtype refused", "shape
# only" (too large to run, or no reference). fuzz_ops_test prints it.
OUTCOMES: collections.Counter = collections.Counter()


def outcome_table() -> str:
    keys = sorted({(op, algo) for op, algo, _ in OUTCOMES})
    kinds = ["matched", "refused", "internal error", "wrong dtype refused", "shape only"]
    rows = [f"{'op':<20} {'algorithm':<14} {'examples':>8} " + " ".join(f"{k:>19}" for k in kinds)]
    for op, algo in keys:
        counts = [OUTCOMES[(op, algo, k)] for k in kinds]
        rows.append(f"{op:<20} {algo:<14} {sum(counts):>8} " + " ".join(f"{c:>19}" for c in counts))
    total = [sum(OUTCOMES[(o, a, k)] for o, a in keys) for k in kinds]
    rows.append(f"{'total':<20} {'':<14} {sum(total):>8} " + " ".join(f"{c:>19}" for c in total))
    return "\n".join(rows)


def _names_layer(e: BaseException, name: str) -> bool:
    return name in str(e)


def _fail(case: Case, what: str, detail: str) -> None:
    raise AssertionError(f"{case.op}: {what}\n{detail}\nnotes: {case.notes}")


def check(case: Case, draw: Draw, algorithm: str) -> None:
    """The property: ai3 gives the reference's answer or an ai3.Error naming
    the layer; never a crash, a bare exception or a wrong answer."""
    outcome = ["shape only"]
    try:
        _check(case, draw, outcome)
    finally:
        OUTCOMES[(case.op, algorithm, outcome[0])] += 1


def _check(case: Case, draw: Draw, outcome: list[str]) -> None:
    name = f"fz.{case.op}.{draw(st.integers(0, 999))}"
    # The input dtype: the layer's mostly, sometimes the other float type
    # (a mismatch for layers with weights) or one the core does not take.
    if len(case.fixed) == len(case.inputs):
        # Every input keeps a dtype of its own (an embedding's int64 ids):
        # no drawn dtype reaches the layer, whose output has its weights'.
        in_dtype = np.dtype(case.dtype)
    elif chance(draw, 5):
        in_dtype = np.dtype(draw(st.sampled_from(WRONG_DTYPES)))
    elif chance(draw, 5):
        in_dtype = np.dtype(np.float64 if np.dtype(case.dtype) == np.float32 else np.float32)
    else:
        in_dtype = np.dtype(case.dtype)
    forms = [draw(st.sampled_from(sorted(FORMS))) for _ in case.inputs]
    via_core = chance(draw, 20)  # the core layer object, no wrapper
    case.notes += [f"name={name}", f"input dtype={in_dtype}", f"forms={forms}", f"via_core={via_core}"]
    case.notes += [f"input shapes={[list(x.shape) for x in case.inputs]}"]

    def cast(x: np.ndarray) -> np.ndarray:
        if x.dtype == np.bool_ or x.dtype == np.int64:
            return x  # attention's boolean mask, gather's indices keep theirs
        with np.errstate(invalid="ignore", over="ignore"):
            y = np.nan_to_num(x, nan=0.0, posinf=1.0, neginf=-1.0) if in_dtype.kind != "f" else x
            return np.asarray(y).astype(in_dtype)

    arrays = [cast(x) for x in case.inputs]

    try:
        layer = case.make(name, case.dtype)
    except errors.Error as e:
        if not _names_layer(e, name):
            _fail(case, "an ai3.Error at construction does not name the layer", repr(e))
        outcome[0] = "refused"
        return
    except Exception as e:  # noqa: BLE001 - the property forbids any other
        _fail(case, "construction raised a non-ai3 exception", f"{type(e).__name__}: {e}")

    # The shape query allocates nothing: it is how outputs too large to run
    # (huge paddings) are still checked.
    shapes = [list(a.shape) for a in arrays]
    query_dtype: Any = in_dtype.name if in_dtype.kind == "f" and in_dtype.itemsize >= 4 else "float32"
    if case.fixed or case.any_dtype:  # one dtype per input, as the call gives them
        query_dtype = [
            np.dtype(a.dtype).name if np.dtype(a.dtype).name in _CORE_DTYPES else query_dtype for a in arrays
        ]
        query_dtype = query_dtype if len(query_dtype) > 1 else query_dtype[0]
    try:
        predicted = layer.output_shape(shapes if len(shapes) > 1 else shapes[0], query_dtype)
    except errors.Error as e:
        if not _names_layer(e, name):
            _fail(case, "output_shape raised an ai3.Error that does not name the layer", repr(e))
        predicted = None
    except Exception as e:  # noqa: BLE001
        _fail(case, "output_shape raised a non-ai3 exception", f"{type(e).__name__}: {e}")
    if predicted is not None:
        if any((not isinstance(d, int)) or d < 0 for d in predicted):
            _fail(case, "output_shape gave a negative dimension", str(predicted))
        if math.prod(predicted) > MAX_OUTPUT:
            return  # too big to run here; the shape was checked above

    xs = [FORMS[f](a) for f, a in zip(forms, arrays)]
    try:
        if via_core:
            got = layer._core_layer(*[x.numpy() if isinstance(x, torch.Tensor) else x for x in xs])
        elif case.call is not None:
            got = case.call(layer, xs)
        else:
            got = layer(*xs)
    except errors.Error as e:
        if not _names_layer(e, name):
            _fail(case, "the call raised an ai3.Error that does not name the layer", repr(e))
        if in_dtype.kind == "f" and predicted is not None and not via_core and in_dtype == np.dtype(case.dtype):
            # The shape query accepted these shapes; the call may still
            # refuse (an algorithm's own limits), but then it must say so.
            case.notes.append(f"refused after output_shape accepted: {e}")
        if in_dtype.kind != "f" or in_dtype.itemsize < 4:
            outcome[0] = "wrong dtype refused"
        else:
            outcome[0] = "internal error" if isinstance(e, errors.InternalError) else "refused"
        return
    except Exception as e:  # noqa: BLE001
        _fail(case, "the call raised a non-ai3 exception", f"{type(e).__name__}: {e}")

    if (
        (in_dtype.kind != "f" or in_dtype.itemsize < 4)
        and not (case.any_dtype and in_dtype.name in _CORE_DTYPES)
        and not (case.int64 and in_dtype == np.int64)
    ):
        _fail(case, f"the layer accepted an input of dtype {in_dtype}", "")
    got = got.numpy() if isinstance(got, torch.Tensor) else np.asarray(got)
    if predicted is None:
        _fail(case, "the call succeeded though output_shape refused the input", str(got.shape))
    if list(got.shape) != list(predicted):
        _fail(case, "the output's shape is not output_shape's", f"{got.shape} vs {predicted}")
    out_dtype = np.dtype(case.out_dtype(in_dtype)) if case.out_dtype is not None else in_dtype
    if got.dtype != out_dtype:
        _fail(case, "the output dtype is not the one expected", f"{got.dtype} vs {out_dtype}")

    try:
        want = case.reference(
            *[
                a
                if a.dtype == np.bool_ or k in case.fixed or (case.int64 and a.dtype == np.int64)
                else a.astype(np.float64)
                for k, a in enumerate(arrays)
            ]
        )
    except NoReference:
        return  # "shape only"
    except Exception as e:  # noqa: BLE001 - the reference refused
        _fail(case, "ai3 returned a result for an input the reference refuses", f"{type(e).__name__}: {e}")
    want = want.numpy() if isinstance(want, torch.Tensor) else np.asarray(want)
    if got.shape != want.shape:
        _fail(case, "shape differs from the reference", f"{got.shape} vs {want.shape}")
    # Rounded to the input's dtype, so a float32 result that overflows to
    # inf matches a float64 reference that does not.
    if out_dtype.kind != "f":  # integers and bools: exactly
        if not np.array_equal(got, want.astype(out_dtype)):
            _fail(case, "values differ from the reference", f"{got} vs {want}")
        outcome[0] = "matched"
        return
    with np.errstate(over="ignore"):
        want = want.astype(in_dtype).astype(np.float64)
    # The error of a sum scales with its largest term, which may be an
    # input (1e30 - 1e30 + x loses x): the tolerance scales with both.
    scale = 1.0
    for a in [want] + [a.astype(np.float64) for a in arrays if a.dtype != np.bool_]:
        finite = np.abs(a[np.isfinite(a)])
        scale = max(scale, float(finite.max()) if finite.size else 1.0)
    tol = TOL.get(in_dtype, 0.0)
    try:
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol, atol=tol * scale, equal_nan=True)
    except AssertionError as e:
        _fail(case, "values differ from the reference", str(e))
    outcome[0] = "matched"
