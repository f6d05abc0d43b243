"""The torch.fx mapping on its own: the LayerSpecs ai3.torch.fx makes of
torchvision's families and of small shape-juggling modules, run by a
reference interpreter written with PyTorch's own ops (one function per core
op, following core/ops/README.md), against the unswapped model, at the
traced batch size and at another one. This checks the mapping and its shape
logic (reshape's 0 / -1, slices, permutations, einsum, constants) apart from
the core's kernels, which tests/torch_models_test.py checks end to end.

Tolerance: float32, max|ref - torch| <= 1e-4 * max|torch| (the same
arithmetic in another order).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import pytest_main
import torch
import torch.nn.functional as F
import torchvision
from torch import nn

import ai3
from ai3 import spec as spec_passes
from ai3.spec import MODEL_INPUT, einsum_plan
from ai3.torch import fx, shapes

torch.set_num_threads(2)


def _t(a):
    return None if a is None else torch.as_tensor(np.asarray(a), dtype=torch.float32)


def _pads(x, padding, value=0.0):
    top, bottom, left, right = padding
    return F.pad(x, (left, right, top, bottom), value=value)


def _pad2d(s, xs):
    top, bottom, left, right = s.attrs["padding"]
    mode = s.attrs.get("mode", "constant")
    if mode == "constant":
        return F.pad(xs[0], (left, right, top, bottom), value=s.attrs.get("value", 0.0))
    return F.pad(xs[0], (left, right, top, bottom), mode=mode)


def _conv_transpose2d(s, xs):
    a = s.attrs
    top, bottom, left, right = a["padding"]
    assert (top, left) == (bottom, right), "torch's transposed convolutions pad symmetrically"
    return F.conv_transpose2d(
        xs[0],
        _t(s.weights["weight"]),
        _t(s.weights.get("bias")),
        a["stride"],
        (top, left),
        a["output_padding"],
        a["groups"],
        a["dilation"],
    )


# resize's (mode, coordinates, rounding) as F.interpolate's mode.
_INTERPOLATE = {
    ("nearest", "asymmetric", "floor"): "nearest",
    ("nearest", "half_pixel", "round_prefer_ceil"): "nearest-exact",
    ("linear", "half_pixel", "floor"): "bilinear",
    ("linear", "align_corners", "floor"): "bilinear",
}


def _resize(s, xs):
    a = s.attrs
    mode = _INTERPOLATE[(a["mode"], a["coordinate_transformation_mode"], a["nearest_mode"])]
    align = a["coordinate_transformation_mode"] == "align_corners" if mode == "bilinear" else None
    return F.interpolate(xs[0], size=a.get("size"), scale_factor=a.get("scale"), mode=mode, align_corners=align)


def _groupnorm(s, xs):
    x = xs[0]
    return F.group_norm(
        x, s.attrs["groups"] or x.shape[1], _t(s.weights.get("weight")), _t(s.weights.get("bias")), s.attrs["eps"]
    )


def _binary(fn):
    def run(s, xs):
        if len(xs) == 2:
            return fn(xs[0], xs[1])
        other = _t(s.weights["other"])
        return fn(other, xs[0]) if s.attrs.get("reverse") else fn(xs[0], other)

    return run


def _reshape(s, xs):
    x = xs[0]
    return x.reshape([x.shape[i] if d == 0 else d for i, d in enumerate(s.attrs["shape"])])


def _slice(s, xs):
    a = s.attrs
    index = [slice(None)] * xs[0].dim()
    index[a["axis"]] = slice(a["start"], a["stop"], a["step"])
    return xs[0][tuple(index)]


def _conv2d(s, xs):
    a = s.attrs
    return F.conv2d(
        _pads(xs[0], a["padding"]),
        _t(s.weights["weight"]),
        _t(s.weights.get("bias")),
        a["stride"],
        0,
        a["dilation"],
        a["groups"],
    )


def _layernorm(s, xs):
    x = xs[0]
    return F.layer_norm(
        x, x.shape[-s.attrs["axes"] :], _t(s.weights.get("weight")), _t(s.weights.get("bias")), s.attrs["eps"]
    )


def _pool(fn):
    def run(s, xs):
        a = s.attrs
        top, bottom, left, right = a["padding"]
        assert top == bottom and left == right
        extra = (
            {"dilation": a["dilation"]}
            if "dilation" in a
            else {"count_include_pad": a["count_include_pad"], "divisor_override": a["divisor_override"]}
        )
        return fn(xs[0], a["kernel"], a["stride"], (top, left), ceil_mode=a["ceil_mode"], **extra)

    return run


def _batchnorm(s, xs):
    w = {k: _t(v) for k, v in s.weights.items()}
    return F.batch_norm(xs[0], w["running_mean"], w["running_var"], w["weight"], w["bias"], False, 0.0, s.attrs["eps"])


def _multihead_attention(s, xs):
    q, k, v = xs * 3 if len(xs) == 1 else xs[:3]
    if s.attrs["batch_first"]:
        q, k, v = (t.transpose(0, 1) for t in (q, k, v))
    w = {key: _t(value) for key, value in s.weights.items()}
    out, _ = F.multi_head_attention_forward(
        q, k, v, q.shape[-1], s.attrs["num_heads"], w["in_proj_weight"], w["in_proj_bias"], None, None, False, 0.0,
        w["out_proj_weight"], w["out_proj_bias"], training=False, need_weights=False,
    )  # fmt: skip
    return out.transpose(0, 1) if s.attrs["batch_first"] else out


REFERENCE = {
    "conv2d": _conv2d,
    "linear": lambda s, xs: F.linear(xs[0], _t(s.weights["weight"]), _t(s.weights.get("bias"))),
    "relu": lambda s, xs: F.relu(xs[0]),
    "maxpool2d": _pool(F.max_pool2d),
    "avgpool2d": _pool(F.avg_pool2d),
    "adaptiveavgpool2d": lambda s, xs: F.adaptive_avg_pool2d(xs[0], s.attrs["output_size"]),
    "adaptivemaxpool2d": lambda s, xs: F.adaptive_max_pool2d(xs[0], s.attrs["output_size"]),
    "flatten": lambda s, xs: torch.flatten(xs[0], s.attrs["start_dim"], s.attrs["end_dim"]),
    "batchnorm2d": _batchnorm,
    "clamp": lambda s, xs: torch.clamp(xs[0], s.attrs["min"], s.attrs["max"]),
    "sigmoid": lambda s, xs: torch.sigmoid(xs[0]),
    "silu": lambda s, xs: F.silu(xs[0]),
    "tanh": lambda s, xs: torch.tanh(xs[0]),
    "gelu": lambda s, xs: F.gelu(xs[0], approximate=s.attrs["approximate"]),
    "hardswish": lambda s, xs: F.hardswish(xs[0]),
    "leaky_relu": lambda s, xs: F.leaky_relu(xs[0], s.attrs["alpha"]),
    "hardsigmoid": lambda s, xs: torch.clamp(s.attrs["alpha"] * xs[0] + s.attrs["beta"], 0, 1),
    "softmax": lambda s, xs: F.softmax(xs[0], s.attrs["axis"]),
    "log_softmax": lambda s, xs: F.log_softmax(xs[0], s.attrs["axis"]),
    "pad2d": _pad2d,
    "conv_transpose2d": _conv_transpose2d,
    "resize": _resize,
    "groupnorm": _groupnorm,
    "rmsnorm": lambda s, xs: F.rms_norm(
        xs[0], xs[0].shape[-s.attrs["axes"] :], _t(s.weights.get("weight")), s.attrs["eps"]
    ),
    "lrn": lambda s, xs: F.local_response_norm(
        xs[0], s.attrs["size"], s.attrs["alpha"], s.attrs["beta"], s.attrs["bias"]
    ),
    "depth_to_space": lambda s, xs: F.pixel_shuffle(xs[0], s.attrs["blocksize"]),
    "space_to_depth": lambda s, xs: F.pixel_unshuffle(xs[0], s.attrs["blocksize"]),
    "add": lambda s, xs: sum(xs[1:], xs[0]) if not s.weights else _binary(torch.add)(s, xs),
    "sub": _binary(torch.sub),
    "mul": _binary(torch.mul),
    "div": _binary(torch.div),
    "matmul": _binary(torch.matmul),
    "reshape": _reshape,
    "permute": lambda s, xs: xs[0].permute(s.attrs["dims"]),
    "slice": _slice,
    "concat": lambda s, xs: torch.cat(xs, s.attrs["axis"]),
    "layernorm": _layernorm,
    "mean": lambda s, xs: xs[0].mean(s.attrs["axes"], keepdim=s.attrs["keepdim"]),
    "roll": lambda s, xs: torch.roll(xs[0], s.attrs["shifts"], s.attrs["axes"]),
    "multihead_attention": _multihead_attention,
    # issue 17
    **{
        op: (lambda fn: lambda s, xs: fn(xs[0]))(fn)
        for op, fn in {
            "exp": torch.exp,
            "log": torch.log,
            "sqrt": torch.sqrt,
            "neg": torch.neg,
            "abs": torch.abs,
            "erf": torch.erf,
            "reciprocal": torch.reciprocal,
            "floor": torch.floor,
            "ceil": torch.ceil,
            "sign": torch.sign,
            "sin": torch.sin,
            "cos": torch.cos,
            "softsign": F.softsign,
            "mish": F.mish,
            "selu": F.selu,
        }.items()
    },  # fmt: skip
    "elu": lambda s, xs: F.elu(xs[0], s.attrs["alpha"]),
    "celu": lambda s, xs: F.celu(xs[0], s.attrs["alpha"]),
    "softplus": lambda s, xs: F.softplus(xs[0], s.attrs["beta"], s.attrs["threshold"]),
    "pow": _binary(torch.pow),
    "maximum": _binary(torch.maximum),
    "minimum": _binary(torch.minimum),
    "prelu": _binary(F.prelu),
    "reduce_sum": lambda s, xs: (
        xs[0].sum(s.attrs["axes"] or None, keepdim=s.attrs["keepdim"]) if s.attrs["axes"] else xs[0].sum()
    ),
    "reduce_max": lambda s, xs: xs[0].amax(s.attrs["axes"], keepdim=s.attrs["keepdim"]),
    "reduce_min": lambda s, xs: xs[0].amin(s.attrs["axes"], keepdim=s.attrs["keepdim"]),
    "reduce_prod": lambda s, xs: xs[0].prod(s.attrs["axes"][0], keepdim=s.attrs["keepdim"]),
    "reduce_log_sum_exp": lambda s, xs: xs[0].logsumexp(s.attrs["axes"], keepdim=s.attrs["keepdim"]),
    "tile": lambda s, xs: xs[0].tile(s.attrs["repeats"]),
    "expand": lambda s, xs: xs[0].expand(
        *[
            d if d != -1 else xs[0].shape[i - (len(s.attrs["shape"]) - xs[0].dim())]
            for i, d in enumerate(s.attrs["shape"])
        ]
    ),
}


def run_specs(specs, output, x):
    """The specs run by the reference ops."""
    out = []
    for s in specs:
        xs = [x if i == MODEL_INPUT else out[i] for i in s.inputs]
        assert s.op in REFERENCE, f"no reference for op {s.op} ({s.name})"
        out.append(REFERENCE[s.op](s, xs))
    return x if output == MODEL_INPUT else out[output]


def mapped(model, shape):
    specs, output, _ = fx.to_specs(model, shape)
    specs, output = spec_passes.remove_identities(specs, output)
    return specs, output


def assert_matches(got, want, tol, what):
    err = (got - want).abs().max().item()
    scale = want.abs().max().item()
    assert err <= tol * scale, f"{what}: max error {err:.3g} vs output scale {scale:.3g}"


# -- shape logic ---------------------------------------------------------------


@pytest.mark.parametrize(
    "in1,in2,out1,out2,want",
    [
        ((2, 3, 4), (5, 3, 4), (2, 12), (5, 12), [0, 12]),  # flatten keeps the batch
        ((2, 6, 4), (5, 6, 4), (2, 2, 3, 4), (5, 2, 3, 4), [0, 2, 3, 4]),  # shufflenet's channel groups
        ((2, 56, 56, 96), (5, 56, 56, 96), (128, 49, 96), (320, 49, 96), [-1, 49, 96]),  # swin windows
        ((2, 197, 768), (5, 197, 768), (197, 2, 768), (197, 5, 768), [197, -1, 768]),  # batch moved
        ((2, 4), (5, 4), (2, 4, 1), (5, 4, 1), [0, 4, 1]),  # unsqueeze
    ],
)
def test_reshape_target(in1, in2, out1, out2, want) -> None:
    assert shapes.reshape_target(in1, in2, out1, out2) == want


def test_reshape_target_refuses_two_batch_dims() -> None:
    with pytest.raises(ValueError, match="more than one"):
        shapes.reshape_target((2, 3), (5, 3), (1, 2, 3, 2), (1, 5, 3, 5))


@pytest.mark.parametrize(
    "index,want,reshape",
    [
        ((slice(None), 0), [(1, 0, 1, 1)], True),
        ((Ellipsis, slice(0, None, 2), slice(1, None, 2), slice(None)), [(1, 0, 5, 2), (2, 1, 7, 2)], False),
        ((slice(None), slice(None, 5), slice(None, 7)), [], False),  # whole dims: no slice
        ((slice(None), -1), [(1, 4, 5, 1)], True),
        ((None, slice(None)), [], True),
    ],
)
def test_index_slices(index, want, reshape) -> None:
    assert spec_passes.index_slices(index, (2, 5, 7, 3), (3, 5, 7, 3)) == (want, reshape)


def test_index_slices_refuses_advanced_indexing() -> None:
    # One list of evenly spaced ints along a fixed axis is a slice.
    assert spec_passes.index_slices((slice(None), [1, 3]), (2, 5), (3, 5)) == ([(1, 1, 4, 2)], False)
    with pytest.raises(ValueError, match="only ints, slices"):
        spec_passes.index_slices(([0, 1], [1, 2]), (2, 5), (3, 5))
    with pytest.raises(ValueError, match="not evenly spaced"):
        spec_passes.index_slices((slice(None), [3, 1]), (2, 5), (3, 5))
    with pytest.raises(ValueError, match="batch size"):
        spec_passes.index_slices(([0, 1],), (2, 5), (3, 5))
    with pytest.raises(ValueError, match="batch size"):
        spec_passes.index_slices(0, (2, 5), (3, 5))


def test_chunk_and_split_bounds_follow_torch() -> None:
    for size, chunks in [(10, 3), (7, 7), (5, 2), (4, 8)]:
        pieces = torch.arange(size).chunk(chunks)
        assert [(int(p[0]), int(p[-1]) + 1) for p in pieces] == shapes.chunk_bounds(size, chunks)
    assert shapes.split_bounds(10, 4) == [(0, 4), (4, 8), (8, 10)]
    assert shapes.split_bounds(10, [3, 7]) == [(0, 3), (3, 10)]


def _reshaped(t: torch.Tensor, target: list[int] | None) -> torch.Tensor:
    """The core's reshape: 0 copies the dim at that index, -1 is inferred."""
    if target is None:
        return t
    return t.reshape([t.shape[i] if d == 0 else d for i, d in enumerate(target)])


@pytest.mark.parametrize(
    "equation",
    [
        "bij,bjk->bik",
        "B G H I D, B G H J D -> B G H I J",
        "B G H I J, B G H J D -> B G H I D",
        "nid,njd->nji",
        "ki,jk->ij",
        "binh,tnh->bnit",  # Funnel's: two free indices on the left
        "ibh,hnd->ibnd",  # XLNet's: two free indices on the right
        "bi,bj->bij",  # an outer product: nothing contracted
        "bk,bkj->bj",  # no free index on the left
        "bxyk,bkz->bzyx",
    ],
)
@pytest.mark.parametrize("unknown_batch", [False, True])
def test_einsum_plan_matches_torch(equation, unknown_batch) -> None:
    """ai3.spec.einsum_plan's permutes, reshapes and one matmul, run in
    torch, against torch.einsum; with the first letter's size unknown (the
    batch's) where it may be."""
    eq = equation.replace(" ", "")
    letters = sorted(set(eq.replace(",", "").replace("->", "")))
    size = {c: 2 + n for n, c in enumerate(letters)}
    lhs = eq.split("->")[0].split(",")
    a, b = (torch.randn([size[c] for c in t], dtype=torch.float64) for t in lhs)
    first = lhs[0][0]
    sizes = [[None if unknown_batch and c == first else size[c] for c in t] for t in lhs]
    plan = einsum_plan(equation, *sizes)
    left = _reshaped(a.permute(plan.a_perm) if plan.a_perm else a, plan.a_shape)
    right = _reshaped(b.permute(plan.b_perm) if plan.b_perm else b, plan.b_shape)
    got = _reshaped(left @ right, plan.product_shape)
    got = got.permute(plan.out_perm) if plan.out_perm else got
    torch.testing.assert_close(got, torch.einsum(equation, a, b))


@pytest.mark.parametrize("equation", ["ibh,hnd->ibnd", "nhij,hjkl->nhikl", "bij,jk->bik"])
def test_einsum_with_a_parameter_on_the_right_matches_torch(equation) -> None:
    """The right operand a parameter, arranged once as the matmul's constant
    (with a shared batch index, 'h', its reshape keeps that dim), at the
    sample's batch and another."""
    lhs = equation.split("->")[0].split(",")
    size = {c: 2 + n for n, c in enumerate(sorted(set("".join(lhs))))}

    class E(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = nn.Parameter(torch.randn([size[c] for c in lhs[1]]))

        def forward(self, x):
            return torch.einsum(equation, x, self.w)

    m = E()
    shape = [size[c] for c in lhs[0]]
    model = ai3.swap_backend(m, sample_input_shape=shape)
    for batch in (shape[0], shape[0] + 2):
        x = torch.randn(batch, *shape[1:])
        torch.testing.assert_close(model(x), m(x))


@pytest.mark.parametrize("equation", ["ii->i", "bij,bjk,bkl->bil", "bij,bk->bi", "i...,ij->j"])
def test_einsum_that_is_not_one_matmul_is_refused(equation) -> None:
    with pytest.raises(ValueError):
        einsum_plan(equation, [2, 3], [3, 4])


# -- small modules ---------------------------------------------------------------


class ShapeArithmetic(nn.Module):
    """size()/shape arithmetic, view/permute/transpose, chunk, getitem,
    roll, mean, matmul, constants (a parameter read in forward)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.scale = nn.Parameter(torch.randn(8, 1, 1))
        self.norm = nn.LayerNorm(8)
        self.fc = nn.Linear(8, 6)

    def forward(self, x):
        x = self.conv(x) * self.scale + 0.5
        b, c, h, w = x.size()
        x = x.view(b, 2, c // 2, h, w).transpose(1, 2).contiguous().view(b, -1, h, w)  # channel shuffle
        x = torch.roll(x, shifts=(1, -2), dims=(2, 3))
        left, right = x.chunk(2, dim=1)
        x = torch.cat([right, left], 1)
        t = self.norm(x.flatten(2).transpose(1, 2))  # (b, h*w, c)
        attn = F.softmax(t @ t.transpose(-2, -1) / math.sqrt(t.shape[-1]), dim=-1)
        t = torch.einsum("bij,bjd->bid", attn, t)
        t = F.gelu(self.fc(t)) - t[:, :, :6]
        return t.mean(1)[:, 1:5] / 2.0


class ClassToken(nn.Module):
    """ViT's pattern: a class token expanded along the batch and
    concatenated in front, a position embedding, the token taken back."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Conv2d(3, 16, 4, stride=4)
        self.cls = nn.Parameter(torch.randn(1, 1, 16))
        self.pos = nn.Parameter(torch.randn(1, 5, 16))

    def forward(self, x):
        x = self.proj(x).reshape(x.shape[0], 16, -1).permute(0, 2, 1)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        return F.hardswish(x[:, 0]) + F.hardsigmoid(x[:, 1])


class WindowPad(nn.Module):
    """swin's pattern: channels-last windows padded to a multiple of the
    window with F.pad over dims 1 and 2, then cropped back."""

    def forward(self, x):
        x = x.permute(0, 2, 3, 1)
        _, h, w, _ = x.shape
        x = F.pad(x, (0, 0, 0, (4 - w % 4) % 4, 0, (4 - h % 4) % 4))
        return torch.sigmoid(x)[:, :h, :w, :].permute(0, 3, 1, 2)


class Resampling(nn.Module):
    """Issue 17's modules and functions: transposed convs, pad modes,
    interpolation, group / instance / RMS norms, LRN, pixel shuffles."""

    def __init__(self) -> None:
        super().__init__()
        self.up = nn.ConvTranspose2d(3, 8, 3, stride=2, padding=1, output_padding=1)
        self.gn = nn.GroupNorm(4, 8)
        self.pad = nn.ReflectionPad2d(1)
        self.ups = nn.Upsample(scale_factor=2, mode="bilinear")
        self.shuffle = nn.PixelShuffle(2)
        self.norm = nn.RMSNorm(6, eps=1e-6)
        self.w = nn.Parameter(torch.randn(8, 2, 3, 3))

    def forward(self, x):
        x = self.pad(self.gn(self.up(x)))
        x = F.conv_transpose2d(x, self.w, stride=1, padding=1, groups=4)
        x = F.local_response_norm(F.instance_norm(x), 3)
        x = F.interpolate(self.ups(x), size=(10, 12), mode="nearest-exact")
        x = F.pixel_unshuffle(self.shuffle(F.pad(x, (1, 1, 0, 2), mode="replicate")), 2)
        return self.norm(F.group_norm(x, 2, eps=1e-3)[..., :6])


class MathOps(nn.Module):
    """Issue 17's functions and methods: unary math, activations, pow,
    maximum, reductions over dims, tile, repeat and expand."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.act = nn.Sequential(
            nn.ELU(0.5), nn.Softplus(2.0, 5.0), nn.PReLU(4), nn.SELU(), nn.CELU(), nn.Mish(), nn.Softsign()
        )
        self.slope = nn.Parameter(torch.rand(4) * 0.5)

    def forward(self, x):
        x = self.act(self.conv(x))
        y = torch.exp(-x.abs()) + torch.sqrt(x * x + 1).log() - torch.erf(x).neg() + x.sin() * torch.cos(x)
        y = (
            torch.maximum(y, x) ** 2
            + 2 ** torch.minimum(x, y)
            + torch.reciprocal(y.abs() + 1)
            + torch.sign(x) * torch.floor(x)
            + x.ceil()
        )
        y = F.elu(y, 0.3) + F.celu(y, 1.5) + F.softplus(y) + F.prelu(y, self.slope) + F.selu(y)
        s = y.sum(dim=(2, 3), keepdim=True) + torch.amax(y, dim=-1, keepdim=True) - y.amin(dim=2, keepdim=True)
        s = s + torch.logsumexp(y, dim=1, keepdim=True) + y.prod(1, keepdim=True)
        t = s.expand(-1, -1, 4, 4).tile((1, 1, 2, 1)) + torch.tile(s, (1, 2, 1, 1)).repeat(1, 2, 1, 1)[:, :4, :1, :1]
        return t.sum(1) + y.sum()


@pytest.mark.parametrize(
    "cls,shape",
    [
        (ShapeArithmetic, (2, 3, 6, 6)),
        (ClassToken, (2, 3, 8, 8)),
        (WindowPad, (1, 3, 5, 7)),
        (Resampling, (2, 3, 4, 5)),
        (MathOps, (2, 3, 4, 4)),
    ],
    ids=["shapes", "class_token", "window_pad", "resampling", "math_ops"],
)
def test_small_modules_map_exactly(cls, shape) -> None:
    torch.manual_seed(0)
    model = cls().eval()
    specs, output = mapped(model, shape)
    for batch in (shape[0], shape[0] + 3):
        x = torch.randn((batch,) + tuple(shape[1:]))
        with torch.no_grad():
            assert_matches(run_specs(specs, output, x), model(x), 1e-5, f"{cls.__name__} batch {batch}")


def test_sizes_make_no_layers() -> None:
    specs, _ = mapped(ShapeArithmetic().eval(), (2, 3, 6, 6))
    ops = [s.op for s in specs]
    assert "size" not in ops and ops.count("reshape") >= 2
    reshapes = [s.attrs["shape"] for s in specs if s.op == "reshape"]
    assert [0, 2, 4, 6, 6] in reshapes and [0, 8, 6, 6] in reshapes, reshapes


def test_batch_dependent_control_flow_is_refused() -> None:
    class M(nn.Module):
        def forward(self, x):
            return x * 2 if x.shape[0] > 2 else x

    with pytest.raises(ai3.UnsupportedOperation, match="batch size"):
        fx.to_specs(M().eval(), (2, 3))


def test_unknown_function_is_named() -> None:
    class M(nn.Module):
        def forward(self, x):
            return torch.cumprod(x, 1)

    with pytest.raises(ai3.UnsupportedOperation, match="fx node 'cumprod'.*cumprod"):
        fx.to_specs(M().eval(), (2, 3))


def test_shape_arithmetic_without_sample_shape_asks_for_one() -> None:
    with pytest.raises(ai3.UnsupportedOperation, match="sample_input_shape"):
        fx.to_specs(ShapeArithmetic().eval())


def test_tracing_leaves_the_model_as_it_was() -> None:
    model = torchvision.models.swin_t(weights=None).eval()
    before = set(vars(model))
    fx.to_specs(model, (1, 3, 224, 224))
    assert set(vars(model)) == before


# -- torchvision families --------------------------------------------------------

FAMILIES = {
    "mobilenet_v3_small": ({}, 64),
    "shufflenet_v2_x0_5": ({}, 64),
    "mnasnet0_5": ({}, 64),
    "efficientnet_b0": ({}, 64),
    "regnet_x_400mf": ({}, 64),
    "convnext_tiny": ({}, 64),
    "vit_b_16": ({"image_size": 32}, 32),
    "swin_t": ({}, 64),  # windows padded (F.pad on channels-last dims)
    "maxvit_t": ({}, 224),
}


@pytest.mark.parametrize("name", list(FAMILIES))
def test_torchvision_family_maps_exactly(name) -> None:
    kwargs, size = FAMILIES[name]
    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(weights=None, **kwargs).eval()
    specs, output = mapped(model, (1, 3, size, size))
    x = torch.randn(2, 3, size, size)  # another batch size than traced
    with torch.no_grad():
        assert_matches(run_specs(specs, output, x), model(x), 1e-4, name)


if __name__ == "__main__":
    pytest_main.run(__file__)
