"""The gradient ops' cases (issue 16): for each forward op F whose gradients
F_backward_<target> this package checks, a grid of layers (attributes,
weights, input shape, layout) and the torch function F computes, so a
test can compare every gradient with torch.autograd.grad.

`reference(case, x, dy)` gives {target: gradient} from torch in float64;
`ai3_gradients(case, x, dy, dtype)` the same from ai3's gradient layers, fed
[dy, x, y] with y from ai3's own forward layer, as a frontend would.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

import ai3

Fn = Callable[[torch.Tensor, dict[str, torch.Tensor]], torch.Tensor]


@dataclass
class Gradient:
    op: str
    attrs: dict[str, Any]
    x_shape: tuple[int, ...]  # as ai3 sees it (NHWC for layout NHWC)
    fn: Fn  # F on NCHW tensors (the layout is handled here)
    weights: dict[str, np.ndarray] = field(default_factory=dict)
    # Which weights get a gradient (running stats do not).
    trainable: tuple[str, ...] = ()
    # Integer-valued x, so that windows tie (maxpool's first maximum).
    ties: bool = False
    # x scaled, to reach the activations' flat and curved parts alike.
    scale: float = 3.0
    # Where x is drawn from: the draw mapped into the function's domain and
    # away from its poles (log's x > 0, asin's |x| < 1); None: the draw.
    domain: Callable[[np.ndarray], np.ndarray] | None = None

    @property
    def nhwc(self) -> bool:
        return self.attrs.get("layout") == "NHWC"

    @property
    def targets(self) -> list[str]:
        return ["data"] + list(self.trainable)

    def __str__(self) -> str:
        return f"{self.op}{self.attrs}{list(self.x_shape)}{'-ties' if self.ties else ''}"


def _unary(
    op: str,
    fn: Callable[[torch.Tensor, dict[str, Any]], torch.Tensor],
    grid: tuple[dict[str, Any], ...] = ({},),
    domain: Callable[[np.ndarray], np.ndarray] | None = None,
) -> list[Gradient]:
    # 3300 elements: past the kernels' threading threshold; () and (0, 4):
    # rank 0 and empty.
    shapes = [(2, 3, 5), (7,), (), (0, 4), (3, 1100)]
    return [Gradient(op, a, s, lambda x, w, a=a: fn(x, a), domain=domain) for a in grid for s in shapes]


def _positive(x: np.ndarray) -> np.ndarray:
    return np.abs(x) + 0.5


def _inside_one(x: np.ndarray) -> np.ndarray:
    return 0.9 * np.tanh(x)


def _math() -> list[Gradient]:
    """The elementwise functions and activations of core/ops/unary (issue
    17's ops), each on inputs inside its domain and off its poles."""
    plain = {
        "exp": torch.exp,
        "neg": torch.neg,
        "abs": torch.abs,
        "erf": torch.erf,
        "floor": torch.floor,
        "ceil": torch.ceil,
        "sign": torch.sign,
        "sin": torch.sin,
        "cos": torch.cos,
        "atan": torch.atan,
        "sinh": torch.sinh,
        "cosh": torch.cosh,
        "asinh": torch.asinh,
        "softsign": F.softsign,
        "mish": F.mish,
        "selu": F.selu,
    }
    within = {
        "log": (torch.log, _positive),
        "sqrt": (torch.sqrt, _positive),
        "reciprocal": (torch.reciprocal, lambda x: np.sign(x) * _positive(x)),
        "tan": (torch.tan, lambda x: 1.4 * np.tanh(x)),
        "asin": (torch.asin, _inside_one),
        "acos": (torch.acos, _inside_one),
        "atanh": (torch.atanh, _inside_one),
        "acosh": (torch.acosh, lambda x: np.abs(x) + 1.5),
    }
    cases = [c for op, fn in plain.items() for c in _unary(op, lambda x, a, fn=fn: fn(x))]
    cases += [c for op, (fn, d) in within.items() for c in _unary(op, lambda x, a, fn=fn: fn(x), domain=d)]
    return (
        cases
        + _unary("elu", lambda x, a: F.elu(x, a.get("alpha", 1.0)), ({}, {"alpha": 0.5}))
        + _unary("celu", lambda x, a: F.celu(x, a.get("alpha", 1.0)), ({}, {"alpha": 2.0}))
        + _unary(
            "softplus",
            lambda x, a: F.softplus(x, a.get("beta", 1.0), a.get("threshold", 20.0)),
            ({}, {"beta": 2.0, "threshold": 5.0}, {"threshold": float("inf")}),
        )
        + _unary(
            "thresholded_relu",
            lambda x, a: torch.where(x > a.get("alpha", 1.0), x, torch.zeros_like(x)),
            ({}, {"alpha": 0.5}),
        )
    )


def _activations() -> list[Gradient]:
    return (
        _unary("relu", lambda x, a: F.relu(x))
        + _unary("sigmoid", lambda x, a: torch.sigmoid(x))
        + _unary("tanh", lambda x, a: torch.tanh(x))
        + _unary("silu", lambda x, a: F.silu(x))
        + _unary("hardswish", lambda x, a: F.hardswish(x))
        + _unary("leaky_relu", lambda x, a: F.leaky_relu(x, a.get("alpha", 0.01)), ({}, {"alpha": 0.3}))
        + _unary(
            "gelu", lambda x, a: F.gelu(x, approximate=a.get("approximate", "none")), ({}, {"approximate": "tanh"})
        )
        # Written out: F.hardsigmoid's gradient rounds 1/6 to float32 even
        # in float64; 1/6 is torch's slope, 0.2 ONNX's.
        + _unary(
            "hardsigmoid",
            lambda x, a: torch.clamp(a.get("alpha", 1 / 6) * x + a.get("beta", 0.5), 0, 1),
            ({}, {"alpha": 0.2, "beta": 0.5}),
        )
        # nn.ReLU6 / nn.Hardtanh, whose gradient is 0 at the bounds (so is
        # ai3's), and a clamp open above.
        + _unary(
            "clamp",
            lambda x, a: F.hardtanh(x, float(a["min"]), float(a["max"])),
            ({"min": 0, "max": 6}, {"min": -1.5, "max": 2.0}),
        )
        + _unary("clamp", lambda x, a: torch.clamp(x, min=0.5), ({"min": 0.5},))
    )


def _image(
    op: str, grid: list[dict[str, Any]], fn: Callable[[dict[str, Any]], Fn], shapes: list[tuple[int, ...]], **kw: Any
) -> list[Gradient]:
    out = []
    for attrs, shape, layout in itertools.product(grid, shapes, ["NCHW", "NHWC"]):
        n, c, *spatial = shape  # (N, C, H, W), or (N, C, D, H, W)
        x_shape = (n, *spatial, c) if layout == "NHWC" else shape
        out.append(Gradient(op, dict(attrs, layout=layout), x_shape, fn(attrs), **kw))
    return out


def _pools() -> list[Gradient]:
    shapes = [(2, 3, 9, 8), (1, 70, 5, 6)]  # 70 channels: past one NHWC channel block
    cases: list[Gradient] = []
    for ties in (False, True):
        grid = [
            dict(kernel=k, stride=s, padding=p, dilation=d, ceil_mode=c)
            for k, s, p, d, c in itertools.product((2, 3), (1, 2), (0, 1), (1, 2), (False, True))
        ]
        cases += _image(
            "maxpool2d",
            grid,
            lambda a: (
                lambda x, w: F.max_pool2d(x, a["kernel"], a["stride"], a["padding"], a["dilation"], a["ceil_mode"])
            ),
            shapes[:1],
            ties=ties,
        )
        cases += _image(
            "adaptivemaxpool2d",
            [{"output_size": o} for o in ((1, 1), (3, 4), (5, 3), (9, 8))],
            lambda a: lambda x, w: F.adaptive_max_pool2d(x, a["output_size"]),
            shapes[:1],
            ties=ties,
        )
    cases += _image(
        "maxpool2d",
        [dict(kernel=[3, 2], stride=[2, 1], padding=[1, 1, 0, 1])],
        lambda a: lambda x, w: F.max_pool2d(F.pad(x, (0, 1, 1, 1), value=-float("inf")), (3, 2), (2, 1)),
        shapes,
    )
    grid = [
        dict(kernel=k, stride=s, padding=p, ceil_mode=c, count_include_pad=i)
        for k, s, p, c, i in itertools.product((2, 3), (1, 2), (0, 1), (False, True), (False, True))
    ]
    grid += [dict(kernel=3, stride=2, padding=1, divisor_override=4)]
    cases += _image(
        "avgpool2d",
        grid,
        lambda a: (
            lambda x, w: F.avg_pool2d(
                x,
                a["kernel"],
                a["stride"],
                a["padding"],
                a.get("ceil_mode", False),
                a.get("count_include_pad", True),
                a.get("divisor_override"),
            )
        ),
        shapes[:1],
    )
    cases += _image(
        "adaptiveavgpool2d",
        [{"output_size": o} for o in ((1, 1), (3, 4), (5, 3), (9, 8))],
        lambda a: lambda x, w: F.adaptive_avg_pool2d(x, a["output_size"]),
        shapes,
    )
    return cases


def _axis_ops() -> list[Gradient]:
    cases = []
    for op, fn in (("softmax", F.softmax), ("log_softmax", F.log_softmax)):
        for shape in ((5, 7), (3, 4, 300), (2, 3, 5, 6), (), (0, 3)):
            for axis in sorted({0, -1, max(len(shape) - 2, 0)}):
                cases.append(Gradient(op, {"axis": axis}, shape, lambda x, w, fn=fn, axis=axis: fn(x, axis)))
    return cases


def _over(fn: Callable[[torch.Tensor, tuple[int, ...], bool], torch.Tensor]) -> Fn:
    return lambda x, w, a: fn(x, tuple(a["axes"]) or tuple(range(x.ndim)), a["keepdim"])


def _prod(x: torch.Tensor, dims: tuple[int, ...], keepdim: bool) -> torch.Tensor:
    """torch.prod over several dims (it takes one at a time)."""
    dims = tuple(sorted({d % x.ndim for d in dims}))
    for d in dims:
        x = torch.prod(x, d, keepdim=True)
    return x if keepdim or not dims else x.squeeze(dims)


# The reductions of core/ops/mean: torch's function over explicit dims (all
# of them for ai3's empty axes).
REDUCTIONS: dict[str, Callable[[torch.Tensor, tuple[int, ...], bool], torch.Tensor]] = {
    "mean": lambda x, d, k: torch.mean(x, d, k),
    "reduce_sum": lambda x, d, k: torch.sum(x, d, k),
    "reduce_prod": _prod,
    "reduce_max": lambda x, d, k: torch.amax(x, d, k),
    "reduce_min": lambda x, d, k: torch.amin(x, d, k),
    "reduce_l1": lambda x, d, k: torch.sum(torch.abs(x), d, k),
    "reduce_l2": lambda x, d, k: torch.linalg.vector_norm(x, 2, d, k),
    "reduce_sum_square": lambda x, d, k: torch.sum(x * x, d, k),
    "reduce_log_sum_exp": lambda x, d, k: torch.logsumexp(x, d, k) if x.ndim else x,
}


def _reductions() -> list[Gradient]:
    """Every reduction over kept and reduced blocks in every arrangement
    (inner axis reduced or kept, NCHW's and NHWC's spatial axes, all axes),
    keepdim both ways, rank 0, empty inputs (over an empty axis too), a shape
    past the threading threshold; max and min on tied values, prod on zeros
    (none, one or several per output)."""
    grid = [((2, 3, 4, 5), axes) for axes in ([], [1], [-1], [0, 2], [1, 2, 3], [2, 3], [1, 2])] + [
        ((), []),
        ((0, 4), [1]),
        ((0, 4), [0]),
        ((4, 9000), [1]),
        ((9000, 4), [0]),
    ]
    cases = []
    for op, fn in REDUCTIONS.items():
        for (shape, axes), keepdim in itertools.product(grid, (False, True)):
            if op in ("reduce_max", "reduce_min") and shape == (0, 4) and axes == [0]:
                continue  # torch's amax refuses an empty reduced axis (ai3 gives -inf)
            attrs = {"axes": axes, "keepdim": keepdim}
            cases.append(Gradient(op, attrs, shape, lambda x, w, a=attrs, fn=fn: _over(fn)(x, w, a)))
            if op in ("reduce_max", "reduce_min", "reduce_prod") and shape == (2, 3, 4, 5):
                cases.append(Gradient(op, attrs, shape, lambda x, w, a=attrs, fn=fn: _over(fn)(x, w, a), ties=True))
    return cases


def _norms() -> list[Gradient]:
    rng = np.random.default_rng(0)
    cases: list[Gradient] = []
    for c, shape in ((3, (2, 3, 5, 4)), (70, (1, 70, 3, 3)), (3, (0, 3, 2, 2))):
        weights = {
            "weight": rng.standard_normal(c),
            "bias": rng.standard_normal(c),
            "running_mean": rng.standard_normal(c),
            "running_var": rng.random(c) + 0.5,
        }
        cases += _image(
            "batchnorm2d",
            [{"eps": 1e-3}],
            lambda a: (
                lambda x, w: F.batch_norm(
                    x, w["running_mean"], w["running_var"], w["weight"], w["bias"], False, 0.0, 1e-3
                )
            ),
            [shape],
            weights=weights,
            trainable=("weight", "bias"),
        )
    # groups 0: one per channel (instance norm); (2, 4, 48, 50): past the
    # kernels' threading threshold.
    for shape in ((2, 4, 3, 5), (2, 4, 48, 50)):
        for groups in (1, 2, 0):
            for present in (("weight", "bias"), ("weight",), ()):
                cases += _image(
                    "groupnorm",
                    [{"groups": groups, "eps": 1e-5}],
                    lambda a: (
                        lambda x, w: F.group_norm(x, a["groups"] or x.shape[1], w.get("weight"), w.get("bias"), 1e-5)
                    ),
                    [shape],
                    weights={k: rng.standard_normal(shape[1]) for k in present},
                    trainable=present,
                )
    for shape, axes in (((4, 10), 1), ((2, 3, 300), 1), ((2, 3, 4, 5), 2), ((0, 6), 1), ((3, 7), 2)):
        tail = shape[len(shape) - axes :]
        # layernorm with and without each weight; rmsnorm (no bias) likewise.
        norms = {
            "layernorm": (
                (("weight", "bias"), ("weight",), ("bias",), ()),
                lambda x, w, tail: F.layer_norm(x, tail, w.get("weight"), w.get("bias"), 1e-5),
            ),
            "rmsnorm": ((("weight",), ()), lambda x, w, tail: F.rms_norm(x, tail, w.get("weight"), 1e-5)),
        }
        for op, (presences, fn) in norms.items():
            for present in presences:
                cases.append(
                    Gradient(
                        op,
                        {"axes": axes, "eps": 1e-5},
                        shape,
                        lambda x, w, tail=tail, fn=fn: fn(x, w, tail),
                        weights={k: rng.standard_normal(tail) for k in present},
                        trainable=present,
                    )
                )
    return cases


def _lrn(x: torch.Tensor, a: dict[str, Any]) -> torch.Tensor:
    """lrn as lrn.h defines it, for any window start (torch's
    F.local_response_norm fixes it at size // 2)."""
    size, before, channels = a["size"], a["before"], x.shape[1]
    sq = x * x
    sums = torch.stack(
        [sq[:, max(0, c - before) : min(channels, c - before + size)].sum(1) for c in range(channels)], 1
    )
    return x * (a["bias"] + a["alpha"] / size * sums) ** -a["beta"]


def _lrns() -> list[Gradient]:
    """Windows odd and even, starting where torch and where ONNX start them,
    wider than the channels, of one channel; rank 3 and 4, both layouts, a
    shape past the threading threshold; one case through torch's own
    F.local_response_norm."""
    cases = []
    for size, before, alpha, beta, bias in (
        (3, 1, 1e-2, 0.75, 1.0),
        (4, 2, 0.5, 0.75, 2.0),
        (4, 1, 0.5, 0.5, 1.0),
        (1, 0, 0.1, 1.5, 0.5),
        (7, 3, 0.3, 0.75, 1.0),
    ):
        attrs = {"size": size, "before": before, "alpha": alpha, "beta": beta, "bias": bias}
        cases += _image("lrn", [attrs], lambda a: lambda x, w, a=a: _lrn(x, a), [(2, 5, 4, 3)])
        cases.append(Gradient("lrn", attrs, (2, 5, 6), lambda x, w, a=attrs: _lrn(x, a)))
    attrs = {"size": 5, "before": 2, "alpha": 1e-3, "beta": 0.75, "bias": 2.0}
    cases += _image(
        "lrn", [attrs], lambda a: lambda x, w: F.local_response_norm(x, 5, 1e-3, 0.75, 2.0), [(2, 16, 16, 16)]
    )
    return cases


def _volumes() -> list[Gradient]:
    """conv3d (a stem's strided kernel, r(2+1)d's factorised ones, groups,
    dilation, asymmetric pads, with and without a bias) and the 3-D pools
    (ties for max's first maximum, ceil_mode, count_include_pad)."""
    rng = np.random.default_rng(9)
    cases = []
    for c, k, kernel, stride, pad, dilation, groups, bias, dhw in (
        (3, 4, (3, 5, 5), (1, 2, 2), (1, 1, 2, 2, 2, 2), 1, 1, True, (3, 8, 7)),
        (4, 4, (1, 3, 3), 1, (0, 0, 1, 1, 1, 1), 1, 2, False, (2, 5, 5)),
        (4, 6, (3, 1, 1), (2, 1, 1), (1, 1, 0, 0, 0, 0), 1, 1, True, (5, 3, 4)),
        (2, 3, 2, (1, 2, 1), (0, 1, 1, 0, 0, 1), (2, 1, 1), 1, True, (4, 5, 5)),
    ):
        kernel = (kernel,) * 3 if isinstance(kernel, int) else kernel
        weights = {"weight": rng.standard_normal((k, c // groups, *kernel))}
        if bias:
            weights["bias"] = rng.standard_normal(k)
        attrs = {
            "stride": [stride] * 3 if isinstance(stride, int) else list(stride),
            "padding": list(pad),
            "dilation": [dilation] * 3 if isinstance(dilation, int) else list(dilation),
            "groups": groups,
        }

        def conv3d(a, s=attrs["stride"], p=pad, d=attrs["dilation"], g=groups):
            # F.conv3d pads symmetrically: the asymmetric rest as F.pad first.
            def fn(x, w):
                x = F.pad(x, (p[4], p[5], p[2], p[3], p[0], p[1]))
                return F.conv3d(x, w["weight"], w.get("bias"), s, 0, d, g)

            return fn

        cases += _image("conv3d", [attrs], conv3d, [(2, c, *dhw)], weights=weights, trainable=tuple(weights))
    for ties in (False, True):
        grid = [
            dict(kernel=k, stride=s, padding=p, dilation=d, ceil_mode=m)
            for k, s, p, d, m in (
                ([2, 2, 2], [2, 2, 2], [0] * 6, [1, 1, 1], False),
                ([1, 3, 3], [1, 2, 2], [0, 0, 1, 1, 1, 1], [1, 1, 1], True),
                ([3, 3, 2], [1, 1, 2], [1, 1, 1, 1, 0, 0], [1, 2, 1], False),
            )
        ]
        cases += _image(
            "maxpool3d",
            grid,
            lambda a: (
                lambda x, w: F.max_pool3d(x, a["kernel"], a["stride"], a["padding"][::2], a["dilation"], a["ceil_mode"])
            ),
            [(2, 3, 4, 7, 6)],
            ties=ties,
        )
    avg = [
        dict(kernel=[2, 3, 3], stride=[1, 2, 2], padding=[1, 1, 1, 1, 1, 1], ceil_mode=m, count_include_pad=i)
        for m in (False, True)
        for i in (False, True)
    ]
    cases += _image(
        "avgpool3d",
        avg,
        lambda a: (
            lambda x, w: F.avg_pool3d(
                x, a["kernel"], a["stride"], a["padding"][::2], a["ceil_mode"], a["count_include_pad"]
            )
        ),
        [(2, 3, 4, 7, 6)],
    )
    return cases


def _conv_transpose2d() -> list[Gradient]:
    """nn.ConvTranspose2d's forms: stride, padding, output_padding above and
    below the padding (the adjoint conv2d then reads a crop of dy), dilation,
    groups, with and without a bias, and a shape past the threading
    thresholds."""
    rng = np.random.default_rng(5)
    cases = []
    for c, k, kernel, stride, pad, out_pad, dilation, groups, bias, hw in (
        (3, 4, 3, 1, 0, 0, 1, 1, True, (5, 6)),
        (4, 6, 3, 2, 1, 1, 1, 2, True, (4, 5)),
        (3, 2, 3, 2, 0, 1, 1, 1, False, (4, 4)),
        (2, 4, 4, 2, 1, 0, 1, 1, True, (3, 5)),
        (4, 4, 3, 3, (1, 2), (2, 0), 2, 4, True, (3, 4)),
        (16, 8, 2, 2, 0, 0, 1, 1, True, (20, 20)),
    ):
        ph, pw = pad if isinstance(pad, tuple) else (pad, pad)
        oh, ow = out_pad if isinstance(out_pad, tuple) else (out_pad, out_pad)
        attrs = {
            "stride": [stride, stride],
            "padding": [ph, ph, pw, pw],
            "output_padding": [oh, ow],
            "dilation": [dilation, dilation],
            "groups": groups,
        }
        weights = {"weight": rng.standard_normal((c, k // groups, kernel, kernel))}
        if bias:
            weights["bias"] = rng.standard_normal(k)
        cases += _image(
            "conv_transpose2d",
            [attrs],
            lambda a, s=stride, p=(ph, pw), o=(oh, ow), d=dilation, g=groups: (
                lambda x, w: F.conv_transpose2d(x, w["weight"], w.get("bias"), s, p, o, g, d)
            ),
            [(2, c, *hw)],
            weights=weights,
            trainable=tuple(weights),
        )
    return cases


def _depth_to_space(a: dict[str, Any]) -> Fn:
    """ONNX DepthToSpace on NCHW: CRD is torch's pixel_shuffle; DCR takes
    the block index before the channel."""
    b = a["blocksize"]
    if a["mode"] == "CRD":
        return lambda x, w: F.pixel_shuffle(x, b)

    def dcr(x: torch.Tensor, w: Any) -> torch.Tensor:
        n, c, h, wd = x.shape
        return x.reshape(n, b, b, c // (b * b), h, wd).permute(0, 3, 4, 1, 5, 2).reshape(n, c // (b * b), h * b, wd * b)

    return dcr


def _space_to_depth(a: dict[str, Any]) -> Fn:
    """ONNX SpaceToDepth on NCHW, the inverse of _depth_to_space's map."""
    b = a["blocksize"]
    if a["mode"] == "CRD":
        return lambda x, w: F.pixel_unshuffle(x, b)

    def dcr(x: torch.Tensor, w: Any) -> torch.Tensor:
        n, c, h, wd = x.shape
        return x.reshape(n, c, h // b, b, wd // b, b).permute(0, 3, 5, 1, 2, 4).reshape(n, c * b * b, h // b, wd // b)

    return dcr


def _shapes_ops() -> list[Gradient]:
    cases = [
        Gradient("flatten", {"start_dim": s, "end_dim": e}, (2, 3, 4, 5), lambda x, w, s=s, e=e: torch.flatten(x, s, e))
        for s, e in ((1, -1), (0, -1), (1, 2), (-2, -1))
    ]
    for dims in ((0, 2, 3, 1), (3, 1, 0, 2), (-1, 0, 1, 2), (0, 1, 2, 3)):
        cases.append(Gradient("permute", {"dims": list(dims)}, (2, 3, 4, 5), lambda x, w, d=dims: x.permute(*d)))
    for shape in ((2, -1), (0, 3, 20), (6, 20), (1, 120)):
        # ONNX's 0 (the input's dim there) written out for torch.
        cases.append(
            Gradient(
                "reshape",
                {"shape": list(shape)},
                (2, 3, 4, 5),
                lambda x, w, t=shape: x.reshape([x.shape[i] if d == 0 else d for i, d in enumerate(t)]),
            )
        )
    # Python's slice semantics (clamped bounds, negative steps, an empty
    # slice) through index_select of the indices Python's own slice picks.
    for axis, start, stop, step in (
        (1, 0, 2, 1),
        (-1, 1, None, 2),
        (2, None, None, -1),
        (3, -2, 100, 1),
        (0, 5, 9, 1),
        (2, 3, 0, -2),
    ):
        cases.append(
            Gradient(
                "slice",
                {"axis": axis, "start": start, "stop": stop, "step": step},
                (2, 3, 4, 5),
                lambda x, w, a=axis, sl=slice(start, stop, step): torch.index_select(
                    x, a, torch.tensor(list(range(x.shape[a]))[sl], dtype=torch.long)
                ),
            )
        )
    for shape, repeats in (
        ((2, 3, 4), [2, 1, 3]),
        ((2, 3, 4), [2]),
        ((2, 3, 4), [2, 1, 1, 2]),
        ((2, 3, 4), [1, 0, 2]),
        ((0, 3), [2, 2]),
        ((), [3]),
        ((5, 700), [1, 10]),
    ):
        cases.append(Gradient("tile", {"repeats": repeats}, shape, lambda x, w, r=repeats: torch.tile(x, r)))
    # expand: NumPy broadcasting both ways (ONNX Expand), -1 keeping the size.
    for shape, target in (
        ((3, 1, 4), [2, 3, 5, 4]),
        ((1, 4), [3, -1]),
        ((3, 1), [1, 6]),
        ((1,), [4000, 9]),
        ((), [2, 3]),
        ((2, 0), [3, 2, 0]),
    ):
        cases.append(
            Gradient(
                "expand",
                {"shape": target},
                shape,
                lambda x, w, t=target: x.expand(
                    *np.broadcast_shapes(tuple(x.shape), tuple(1 if d == -1 else d for d in t))
                ),
            )
        )
    # resize as F.interpolate asks for it (ai3.torch's mapping: params.resize),
    # up and down, by size and by scale, in both layouts.
    interpolations = [
        ("nearest", {"scale_factor": 2.0}, ("asymmetric", "floor")),
        ("nearest", {"size": (3, 5)}, ("asymmetric", "floor")),
        ("nearest-exact", {"size": (7, 9)}, ("half_pixel", "round_prefer_ceil")),
        ("bilinear", {"scale_factor": 2.0}, ("half_pixel", "floor")),
        ("bilinear", {"size": (3, 4)}, ("half_pixel", "floor")),
        ("bilinear", {"size": (7, 9), "align_corners": True}, ("align_corners", "floor")),
        ("bilinear", {"scale_factor": (1.5, 2.5)}, ("half_pixel", "floor")),
        ("bicubic", {"size": (7, 9)}, ("half_pixel", "floor")),
        ("bicubic", {"scale_factor": 0.5, "align_corners": True}, ("align_corners", "floor")),
    ]
    for mode, how, (coordinates, rounding) in interpolations:
        attrs = {
            "mode": {"bilinear": "linear", "bicubic": "cubic"}.get(mode, "nearest"),
            "coordinate_transformation_mode": coordinates,
            "nearest_mode": rounding,
        }
        if "size" in how:
            attrs["size"] = list(how["size"])
        else:
            sf = how["scale_factor"]
            attrs["scale"] = list(sf) if isinstance(sf, tuple) else [sf, sf]
        cases += _image(
            "resize",
            [attrs],
            lambda a, mode=mode, how=how: lambda x, w: F.interpolate(x, mode=mode, **how),
            [(2, 3, 4, 6)] + ([(2, 8, 32, 32)] if "scale_factor" in how else []),
        )
    for shifts, axes in (((1,), (0,)), ((2, -1), (1, 3)), ((7,), (-1,)), ((1, 1), (2, 2))):
        cases.append(
            Gradient(
                "roll",
                {"shifts": list(shifts), "axes": list(axes)},
                (2, 3, 4, 5),
                lambda x, w, s=shifts, a=axes: torch.roll(x, s, a),
            )
        )
    for b, mode in ((2, "DCR"), (2, "CRD"), (3, "DCR")):
        cases += _image(
            "depth_to_space", [{"blocksize": b, "mode": mode}], lambda a: _depth_to_space(a), [(2, 2 * b * b, 3, 4)]
        )
        cases += _image(
            "space_to_depth", [{"blocksize": b, "mode": mode}], lambda a: _space_to_depth(a), [(2, 3, 2 * b, 3 * b)]
        )
    for pad in ((0, 0, 0, 0), (1, 2, 3, 0), (2, 2, 2, 2)):
        t, b, l, r = pad
        cases += _image(
            "pad2d",
            [{"padding": list(pad), "value": 1.5}],
            lambda a, l=l, r=r, t=t, b=b: lambda x, w: F.pad(x, (l, r, t, b), value=1.5),
            [(2, 3, 4, 5)],
        )
    return cases


def cases() -> list[Gradient]:
    return (
        _activations()
        + _math()
        + _pools()
        + _axis_ops()
        + _reductions()
        + _norms()
        + _lrns()
        + _conv_transpose2d()
        + _volumes()
        + _shapes_ops()
    )


# The forward ops whose gradients these cases cover.
OPS = sorted({c.op for c in cases()})


def inputs(case: Gradient, seed: int) -> np.ndarray:
    """x, in float64."""
    rng = np.random.default_rng(seed)
    if case.ties:
        return np.asarray(rng.integers(0, 3, case.x_shape), np.float64)
    x = np.asarray(rng.standard_normal(case.x_shape) * case.scale)
    return x if case.domain is None else np.asarray(case.domain(x), np.float64)


def _to_nchw(t: torch.Tensor, nhwc: bool) -> torch.Tensor:
    return torch.movedim(t, -1, 1) if nhwc else t


def reference(
    case: Gradient, x: np.ndarray, dy_fn: Callable[[tuple[int, ...]], np.ndarray]
) -> tuple[np.ndarray, dict[str, np.ndarray], np.ndarray]:
    """(y, {target: gradient}, dy) from torch in float64; dy_fn(shape) draws dy."""
    xt = torch.from_numpy(x).requires_grad_()
    w = {k: torch.from_numpy(v).requires_grad_(k in case.trainable) for k, v in case.weights.items()}
    y = case.fn(_to_nchw(xt, case.nhwc), w)
    if case.nhwc:
        y = torch.movedim(y, 1, -1)
    dy = np.asarray(dy_fn(tuple(y.shape)), np.float64)
    wrt = [xt] + [w[k] for k in case.trainable]
    grads = torch.autograd.grad(y, wrt, torch.from_numpy(dy), allow_unused=True)
    return y.detach().numpy(), {t: g.numpy() for t, g in zip(case.targets, grads)}, dy


def layer(case: Gradient, target: str, dtype: Any, algorithm: str = "default", name: str = "") -> ai3.layers.Layer:
    """The gradient layer of `target` for the case's forward layer."""
    weights = {k: v.astype(dtype) for k, v in case.weights.items()}
    return ai3.layers.Layer(
        f"{case.op}_backward_{target}", case.attrs, weights, algorithm=algorithm, name=name or f"grad_{target}"
    )


def forward(case: Gradient, x: np.ndarray) -> np.ndarray:
    weights = {k: v.astype(x.dtype) for k, v in case.weights.items()}
    return ai3.layers.Layer(case.op, case.attrs, weights)(x)
