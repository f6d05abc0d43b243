"""conv2d's and linear's gradient ops (issue 16) against torch.autograd.

Every CPU algorithm of conv2d_backward_{data,weight,bias} and
linear_backward_{data,weight,bias} (as ai3.algorithms() lists them, plus
"default"), built through the generic ai3.layers.Layer from the forward's
attributes and weights and called on [grad_output, x, y], is compared with
torch.autograd.grad of F.conv2d / F.linear over a grid: stride, padding
(asymmetric too), dilation, groups (depthwise too), bias or not, a fused
activation, both layouts (NHWC as Keras runs it), float32 and float64; for
linear, inputs of rank 1 to 4. Then bad input: a wrong grad_output or y
shape, mixed or unsupported dtypes, an unknown algorithm.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import pytest_main
import torch
import torch.nn.functional as F

import ai3
from ai3 import errors, layers

# Per dtype, relative to the reference's largest magnitude (and at least
# 1): float32 sums in float32 (winograd's transforms lose a few bits more).
TOL = {torch.float32: 3e-4, torch.float64: 1e-9}
ACTIVATIONS = {None: None, "relu": (0.0, float("inf")), "clamp": (-0.3, 0.4)}

# n, c, h, w, k, (kh, kw), stride, padding (top, bottom, left, right),
# dilation, groups, bias, activation
CONV_CASES = [
    (2, 3, 8, 8, 4, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1, True, None),
    (2, 4, 9, 7, 6, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 2, False, "relu"),
    (1, 5, 10, 9, 3, (5, 3), (2, 1), (2, 1, 0, 1), (1, 1), 1, True, None),  # asymmetric
    (2, 4, 11, 10, 4, (3, 3), (1, 1), (2, 2, 2, 2), (2, 2), 1, True, "clamp"),  # dilated
    (2, 6, 7, 7, 6, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 6, True, None),  # depthwise
    (1, 4, 7, 6, 8, (3, 3), (2, 2), (0, 1, 1, 0), (1, 1), 4, False, None),  # multiplier 2
    (3, 8, 5, 6, 5, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1, True, "relu"),  # 1x1: a GEMM
    (1, 4, 7, 6, 3, (2, 3), (2, 1), (3, 2, 0, 4), (2, 1), 1, True, None),  # pads past the kernel
    (2, 3, 11, 10, 2, (3, 2), (3, 3), (0, 0, 1, 0), (1, 1), 1, False, None),  # rows no output reads
    (1, 16, 12, 12, 16, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1, True, None),
]
TARGETS = ("data", "weight", "bias")


def _close(got: Any, want: torch.Tensor, dtype: torch.dtype, what: str) -> None:
    got = np.asarray(got)
    want = want.detach().numpy()
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
    scale = 1.0 + float(np.abs(want).max(initial=0.0))
    err = float(np.abs(got.astype(np.float64) - want).max(initial=0.0)) / scale
    assert err <= TOL[dtype], f"{what}: relative error {err:.3g} > {TOL[dtype]}"


def _activation(z: torch.Tensor, act: str | None) -> torch.Tensor:
    """The fused activation as torch applies it (relu: torch.relu, whose
    gradient at 0 is 0, as a clamp's at its bounds)."""
    if act is None:
        return z
    lo, hi = ACTIVATIONS[act]
    return torch.relu(z) if act == "relu" else torch.nn.functional.hardtanh(z, lo, hi)


def _algorithms(op: str) -> list[str]:
    return ai3.algorithms("cpu")[op] + ["default"]


def _layer(op: str, attrs: dict[str, Any], weights: dict[str, Any], algorithm: str) -> layers.Layer | None:
    """The layer, or None where the algorithm refuses these parameters, which
    it must do with an AlgorithmNotApplicable naming the layer."""
    name = f"{op}_{algorithm}"
    try:
        return layers.Layer(op, attrs, weights, algorithm=algorithm, name=name)
    except errors.AlgorithmNotApplicable as e:
        assert algorithm == "winograd", f"{op} {algorithm} refused: {e}"
        assert name in str(e) and algorithm in str(e), e
        return None


def _to_layout(t: torch.Tensor, layout: str) -> np.ndarray:
    t = t.detach()
    return (t.permute(0, 2, 3, 1) if layout == "NHWC" else t).contiguous().numpy()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("case", CONV_CASES, ids=[f"conv{i}" for i in range(len(CONV_CASES))])
def test_conv2d_gradients_match_autograd(case: tuple, layout: str, dtype: torch.dtype) -> None:
    n, c, h, w, k, kernel, stride, pads, dilation, groups, bias, act = case
    gen = torch.Generator().manual_seed(hash((case, layout)) % 2**31)
    x = torch.randn(n, c, h, w, dtype=dtype, generator=gen, requires_grad=True)
    weight = torch.randn(k, c // groups, *kernel, dtype=dtype, generator=gen, requires_grad=True)
    b = torch.randn(k, dtype=dtype, generator=gen, requires_grad=True) if bias else None
    top, bottom, left, right = pads
    z = F.conv2d(F.pad(x, (left, right, top, bottom)), weight, b, stride, 0, dilation, groups)
    y = _activation(z, act)
    dy = torch.randn(y.shape, dtype=dtype, generator=gen)
    wants = torch.autograd.grad(y, [x, weight, z] + ([b] if bias else []), dy)
    want = {"data": wants[0].permute(0, 2, 3, 1) if layout == "NHWC" else wants[0], "weight": wants[1]}
    # The bias gradient is defined with or without a bias: the sums of the
    # gradient at the pre-activation output.
    want["bias"] = wants[3] if bias else wants[2].sum((0, 2, 3))

    attrs = {
        "stride": list(stride),
        "padding": list(pads),
        "dilation": list(dilation),
        "groups": groups,
        "layout": layout,
        "activation": ACTIVATIONS[act],
    }
    weights = {"weight": weight.detach().numpy(), "bias": None if b is None else b.detach().numpy()}
    inputs = [_to_layout(dy, layout), _to_layout(x, layout), _to_layout(y, layout)]
    for target in TARGETS:
        op = f"conv2d_backward_{target}"
        for algorithm in _algorithms(op):
            layer = _layer(op, attrs, weights, algorithm)
            if layer is not None:
                _close(layer(*inputs), want[target], dtype, f"{op} {algorithm} {layout}")


def test_conv2d_gradients_of_torch_tensors_are_torch_tensors() -> None:
    x = torch.randn(1, 2, 5, 5)
    weight = torch.randn(3, 2, 3, 3)
    y = F.conv2d(x, weight, padding=1)
    layer = layers.Layer("conv2d_backward_data", {"padding": 1}, {"weight": weight}, algorithm="default")
    dx = layer(torch.ones_like(y), x, y)
    assert isinstance(dx, torch.Tensor) and dx.shape == x.shape


# leading dims of x, in_features, out_features, bias, activation
LINEAR_CASES = [
    ((4,), 3, 5, True, None),
    ((), 7, 3, False, None),  # unbatched: x of rank 1
    ((2, 3), 6, 4, True, "relu"),
    ((2, 2, 2), 9, 1, True, "clamp"),
    ((33,), 70, 65, False, None),
    ((0,), 5, 3, True, None),  # an empty batch: zero weight and bias gradients
    ((130,), 129, 131, True, None),
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("case", LINEAR_CASES, ids=[f"linear{i}" for i in range(len(LINEAR_CASES))])
def test_linear_gradients_match_autograd(case: tuple, dtype: torch.dtype) -> None:
    lead, fin, fout, bias, act = case
    gen = torch.Generator().manual_seed(len(lead) * 1000 + fin)
    x = torch.randn(*lead, fin, dtype=dtype, generator=gen, requires_grad=True)
    weight = torch.randn(fout, fin, dtype=dtype, generator=gen, requires_grad=True)
    b = torch.randn(fout, dtype=dtype, generator=gen, requires_grad=True) if bias else None
    z = F.linear(x, weight, b)
    y = _activation(z, act)
    dy = torch.randn(y.shape, dtype=dtype, generator=gen)
    wants = torch.autograd.grad(y, [x, weight, z] + ([b] if bias else []), dy)
    want = {"data": wants[0], "weight": wants[1], "bias": wants[3] if bias else wants[2].reshape(-1, fout).sum(0)}
    attrs = {"activation": ACTIVATIONS[act]}
    weights = {"weight": weight.detach().numpy(), "bias": None if b is None else b.detach().numpy()}
    inputs = [dy.numpy(), x.detach().numpy(), y.detach().numpy()]
    for target in TARGETS:
        op = f"linear_backward_{target}"
        for algorithm in _algorithms(op):
            layer = _layer(op, attrs, weights, algorithm)
            assert layer is not None
            _close(layer(*inputs), want[target], dtype, f"{op} {algorithm} x {tuple(x.shape)}")


def test_every_gradient_op_offers_direct_and_a_default() -> None:
    table = ai3.algorithms("cpu")
    for forward in ("conv2d", "linear"):
        for target in TARGETS:
            op = f"{forward}_backward_{target}"
            assert "direct" in table[op], table.get(op)
            assert layers.schema(op)["default"]["cpu"], op
    assert {"direct", "gemm", "transposed", "winograd"} <= set(table["conv2d_backward_data"])
    assert {"direct", "gemm"} <= set(table["conv2d_backward_weight"])
    assert {"direct", "gemm"} <= set(table["linear_backward_data"]) & set(table["linear_backward_weight"])


def test_gradient_ops_take_the_forward_attributes_and_weights() -> None:
    for forward in ("conv2d", "linear"):
        fwd = layers.schema(forward)
        for target in TARGETS:
            grad = layers.schema(f"{forward}_backward_{target}")
            assert grad["attrs"] == fwd["attrs"], target
            assert grad["weights"] == fwd["weights"], target


def _conv_inputs(dtype: Any = np.float32) -> tuple[dict[str, Any], list[np.ndarray]]:
    rng = np.random.default_rng(0)
    weights = {"weight": rng.standard_normal((3, 2, 3, 3)).astype(np.float32), "bias": np.zeros(3, np.float32)}
    x = rng.standard_normal((2, 2, 6, 6)).astype(dtype)
    y = rng.standard_normal((2, 3, 6, 6)).astype(dtype)
    return weights, [y.copy(), x, y]


@pytest.mark.parametrize("target", TARGETS)
def test_conv2d_gradient_bad_input_raises_ai3_errors(target: str) -> None:
    op = f"conv2d_backward_{target}"
    weights, (dy, x, y) = _conv_inputs()
    layer = layers.Layer(op, {"padding": 1}, weights, algorithm="direct", name="g")
    with pytest.raises(errors.ShapeError, match=r"layer 'g'.*grad_output"):
        layer(dy[:, :, :5], x, y)
    with pytest.raises(errors.ShapeError, match=r"layer 'g'.*input 2 \(y\)"):
        layer(dy, x, y[:1])
    with pytest.raises(errors.ShapeError, match=r"layer 'g'.*input 1 \(x\)"):
        layer(dy, x[:, :1], y)
    with pytest.raises(errors.DTypeError, match="layer 'g'"):
        layer(dy, x.astype(np.float64), y)
    with pytest.raises(errors.DTypeError, match="layer 'g'"):
        layer(dy.astype(np.float64), x.astype(np.float64), y.astype(np.float64))  # float32 weights
    with pytest.raises(errors.DTypeError, match="layer 'g'"):
        layer(dy.astype(np.int64), x.astype(np.int64), y.astype(np.int64))
    with pytest.raises(errors.InvalidArgument, match="layer 'g'"):
        layer(dy, x)
    with pytest.raises(errors.UnknownAlgorithm, match=f"unknown {op} algorithm 'nope'"):
        layers.Layer(op, {"padding": 1}, weights, algorithm="nope", name="g")
    assert layers.output_shape(op, {"padding": 1}, {"weight": (3, 2, 3, 3)}, [(2, 3, 6, 6), (2, 2, 6, 6), (2, 3, 6, 6)])
    with pytest.raises(errors.ShapeError, match="grad_output"):
        layers.output_shape(op, {"padding": 1}, {"weight": (3, 2, 3, 3)}, [(2, 3, 6, 5), (2, 2, 6, 6), (2, 3, 6, 6)])


def test_conv2d_winograd_gradient_refused_with_the_reason() -> None:
    weight = np.zeros((2, 2, 3, 3), np.float32)
    with pytest.raises(errors.AlgorithmNotApplicable, match=r"layer 'w'.*winograd.*dilation"):
        layers.Layer("conv2d_backward_data", {"dilation": 2}, {"weight": weight}, algorithm="winograd", name="w")
    # Any stride: the transposed convolution is stride 1.
    layers.Layer(
        "conv2d_backward_data", {"stride": 2, "padding": 1}, {"weight": weight}, algorithm="winograd", name="w"
    )


@pytest.mark.parametrize("target", TARGETS)
def test_linear_gradient_bad_input_raises_ai3_errors(target: str) -> None:
    op = f"linear_backward_{target}"
    weights = {"weight": np.ones((2, 3), np.float32)}
    layer = layers.Layer(op, {}, weights, algorithm="direct", name="g")
    dy, x, y = np.ones((4, 2), np.float32), np.ones((4, 3), np.float32), np.ones((4, 2), np.float32)
    with pytest.raises(errors.ShapeError, match=r"layer 'g'.*grad_output"):
        layer(dy[:3], x, y)
    with pytest.raises(errors.ShapeError, match=r"layer 'g'.*input 1 \(x\)"):
        layer(dy, x[:, :2], y)
    with pytest.raises(errors.DTypeError, match="layer 'g'"):
        layer(dy, x, y.astype(np.float64))
    with pytest.raises(errors.UnknownAlgorithm, match=f"unknown {op} algorithm 'nope'"):
        layers.Layer(op, {}, weights, algorithm="nope", name="g")


if __name__ == "__main__":
    pytest_main.run(__file__)
