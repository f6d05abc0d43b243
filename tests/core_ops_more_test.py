"""The issue-7 ops of the core (core/ops/README.md) against torch / NumPy:
broadcasting add/sub/mul/div (two inputs and the constant forms), matmul,
reshape, permute, slice, log_softmax, layernorm, gelu, hardswish,
hardsigmoid, adaptivemaxpool2d, mean and roll over small grids of shapes,
axes (negative included) and both dtypes; multi-input nodes of a core
Model built from LayerSpecs; batchnorm folded into a linear; and the
errors bad shapes and attributes raise, naming the layer."""

from __future__ import annotations

import numpy as np
import pytest
import pytest_main
import torch
import torch.nn.functional as F

import ai3
from ai3 import _core, errors, layers, model, spec
from ai3.spec import MODEL_INPUT, LayerSpec

torch.set_num_threads(2)

DTYPES = [np.float32, np.float64]


def tol(dtype) -> float:
    return 1e-11 if np.dtype(dtype) == np.float64 else 2e-5


def rand(shape, dtype, seed=0, scale=1.0):
    return np.asarray(np.random.default_rng(seed).standard_normal(shape) * scale, dtype=dtype)


def close(got, want, dtype):
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_allclose(got, want, rtol=tol(dtype), atol=tol(dtype))


# ---- add / sub / mul / div ---------------------------------------------------

BROADCASTS = [
    ((2, 3), (2, 3)),
    ((2, 3, 4), (4,)),
    ((2, 3, 4), (3, 1)),
    ((2, 1, 4), (1, 3, 1)),
    ((1, 5, 1), (3, 1, 7)),
    ((2, 8, 5, 5), (1, 8, 1, 1)),
    ((), (3,)),
    ((2, 0, 3), (1, 3)),
]
BINARY = {
    "add": (layers.Add, np.add),
    "sub": (layers.Sub, np.subtract),
    "mul": (layers.Mul, np.multiply),
    "div": (layers.Div, np.divide),
}


@pytest.mark.parametrize("op", sorted(BINARY))
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("sa,sb", BROADCASTS)
def test_binary(op, dtype, sa, sb):
    cls, ref = BINARY[op]
    a, b = rand(sa, dtype, 1), rand(sb, dtype, 2) + 3  # divisors away from 0
    close(cls(name=op)(a, b), ref(a, b), dtype)
    close(cls(b, name=op)(a), ref(a, b), dtype)  # x op constant
    close(cls(a, reverse=True, name=op)(b), ref(a, b), dtype)  # constant op x


def test_binary_torch_tensors_and_errors():
    a, b = torch.randn(2, 3), torch.randn(3)
    got = layers.Mul(name="m")(a, b)
    assert isinstance(got, torch.Tensor)
    torch.testing.assert_close(got, a * b)
    with pytest.raises(
        errors.ShapeError, match=r"add layer 'bad' \(direct\): input 0 \(2, 3\) and input 1 \(2, 2\) do not broadcast"
    ):
        layers.Add(name="bad")(np.zeros((2, 3), np.float32), np.zeros((2, 2), np.float32))
    with pytest.raises(errors.InvalidArgument, match="sub layer 's': takes 2 inputs, got 1"):
        layers.Sub(name="s")(np.zeros(3, np.float32))
    with pytest.raises(errors.DTypeError, match="input 1 is float64 but input 0 is float32"):
        layers.Add(name="a")(np.zeros(3, np.float32), np.zeros(3, np.float64))
    with pytest.raises(errors.DTypeError, match="constant operand is float64"):
        layers.Mul(np.ones(3), name="m")(np.zeros(3, np.float32))


# ---- matmul ------------------------------------------------------------------

MATMULS = [
    ((5,), (5,)),
    ((5,), (5, 3)),
    ((4, 5), (5,)),
    ((4, 5), (5, 3)),
    ((2, 4, 5), (5, 3)),
    ((2, 4, 5), (2, 5, 3)),
    ((2, 1, 4, 5), (3, 5, 6)),
    ((2, 3, 17, 8), (2, 3, 8, 17)),
    ((2, 70, 80), (80, 90)),
    ((2, 3, 0), (2, 0, 4)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("sa,sb", MATMULS)
def test_matmul(dtype, sa, sb):
    a, b = rand(sa, dtype, 3), rand(sb, dtype, 4)
    want = torch.matmul(torch.from_numpy(a), torch.from_numpy(b)).numpy()
    t = 1e-10 if dtype == np.float64 else 1e-4
    np.testing.assert_allclose(layers.Matmul(name="mm")(a, b), want, rtol=t, atol=t)
    np.testing.assert_allclose(layers.Matmul(b, name="mm")(a), want, rtol=t, atol=t)


def test_matmul_errors():
    with pytest.raises(errors.ShapeError, match=r"matmul layer 'mm' \(direct\): cannot multiply \(2, 3\) by \(4, 5\)"):
        layers.Matmul(name="mm")(np.zeros((2, 3), np.float32), np.zeros((4, 5), np.float32))
    with pytest.raises(errors.ShapeError, match="do not broadcast"):
        layers.Matmul(name="mm")(np.zeros((2, 3, 4), np.float32), np.zeros((3, 4, 5), np.float32))


# ---- shape ops ---------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "shape,target,want",
    [
        ((2, 3, 4), [2, 12], (2, 12)),
        ((2, 3, 4), [-1, 4], (6, 4)),
        ((2, 3, 4), [0, -1], (2, 12)),
        ((2, 3, 4), [0, 0, 2, 2], (2, 3, 2, 2)),
        ((5,), [1, 5, 1], (1, 5, 1)),
    ],
)
def test_reshape(dtype, shape, target, want):
    x = rand(shape, dtype)
    close(layers.Reshape(target, name="r")(x), x.reshape(want), dtype)


def test_reshape_errors():
    with pytest.raises(
        errors.ShapeError,
        match=r"reshape layer 'r' \(direct\): cannot reshape input \(2, 3\) \(6 elements\) to \(4, -1\)",
    ):
        layers.Reshape([4, -1], name="r")(np.zeros((2, 3), np.float32))
    with pytest.raises(errors.InvalidArgument, match="more than one -1"):
        layers.Reshape([-1, -1], name="r")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "dims", [(0, 2, 3, 1), (0, 3, 1, 2), (3, 2, 1, 0), (0, 1, 3, 2), (-4, -2, -1, -3), (1, 0, 2, 3)]
)
def test_permute(dtype, dims):
    x = rand((2, 3, 40, 35), dtype)
    close(layers.Permute(dims, name="p")(x), np.transpose(x, dims), dtype)


def test_permute_errors():
    with pytest.raises(errors.InvalidArgument, match=r"permute layer 'p': dims \[0, 0, 1\] is not a permutation"):
        layers.Permute([0, 0, 1], name="p")
    with pytest.raises(errors.ShapeError, match="has rank 2"):
        layers.Permute([2, 0, 1], name="p")(np.zeros((2, 3), np.float32))


SLICES = [
    (1, 0, 2, 1),
    (1, 1, None, 1),
    (-1, None, -1, 2),
    (2, -3, None, 1),
    (1, None, None, -1),
    (2, 5, 0, -2),
    (0, 10, 20, 1),
    (-2, -100, 100, 3),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("axis,start,stop,step", SLICES)
def test_slice(dtype, axis, start, stop, step):
    x = rand((2, 4, 7), dtype)
    index = [slice(None)] * 3
    index[axis] = slice(start, stop, step)
    close(layers.Slice(axis, start, stop, step, name="s")(x), x[tuple(index)], dtype)


def test_slice_errors():
    with pytest.raises(errors.InvalidArgument, match="step cannot be 0"):
        layers.Slice(0, 0, 1, 0, name="s")
    with pytest.raises(errors.ShapeError, match=r"slice layer 's' \(direct\): axis 3 is out of range"):
        layers.Slice(3, 0, 1, name="s")(np.zeros((2, 3), np.float32))


# ---- normalisation and activations -------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("axis", [-1, 0, 1, 2, -2])
def test_log_softmax(dtype, axis):
    x = rand((2, 5, 7), dtype, scale=10)
    close(layers.LogSoftmax(axis, name="ls")(x), F.log_softmax(torch.from_numpy(x), dim=axis).numpy(), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,axes", [((2, 7, 16), 1), ((2, 3, 4, 5), 2), ((3, 8), 1)])
@pytest.mark.parametrize("affine", [True, False])
def test_layernorm(dtype, shape, axes, affine):
    x = rand(shape, dtype, 5) + 4
    norm = shape[-axes:]
    w, b = (rand(norm, dtype, 6), rand(norm, dtype, 7)) if affine else (None, None)
    tw = None if w is None else torch.from_numpy(w)
    tb = None if b is None else torch.from_numpy(b)
    want = F.layer_norm(torch.from_numpy(x), norm, tw, tb, eps=1e-6).numpy()
    close(layers.LayerNorm(w, b, axes=axes, eps=1e-6, name="ln")(x), want, dtype)


def test_layernorm_errors():
    with pytest.raises(
        errors.ShapeError,
        match=r"layernorm layer 'ln' \(direct\): input \(2, 5\) ends in \(5,\) but the weights are shaped \(4,\)",
    ):
        layers.LayerNorm(np.ones(4, np.float32), name="ln")(np.zeros((2, 5), np.float32))


@pytest.mark.parametrize("dtype", DTYPES)
def test_activations(dtype):
    x = rand((3, 50, 7), dtype, scale=5)
    t = torch.from_numpy(x)
    close(layers.GELU(name="g")(x), F.gelu(t).numpy(), dtype)
    close(layers.GELU("tanh", name="g")(x), F.gelu(t, approximate="tanh").numpy(), dtype)
    close(layers.Hardswish(name="h")(x), F.hardswish(t).numpy(), dtype)
    close(layers.Hardsigmoid(name="h")(x), F.hardsigmoid(t).numpy(), dtype)
    close(layers.Hardsigmoid(0.2, 0.5, name="h")(x), np.clip(0.2 * x + 0.5, 0, 1), dtype)
    with pytest.raises(errors.InvalidArgument, match="gelu layer 'g': approximate must be 'none' or 'tanh'"):
        layers.GELU("erf", name="g")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("size", [(1, 1), (3, 4), (7, 7), (9, 2)])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_adaptivemaxpool2d(dtype, size, layout):
    x = rand((2, 3, 7, 9), dtype)
    want = F.adaptive_max_pool2d(torch.from_numpy(x), size).numpy()
    if layout == "NHWC":
        x, want = np.ascontiguousarray(x.transpose(0, 2, 3, 1)), want.transpose(0, 2, 3, 1)
    close(layers.AdaptiveMaxPool2d(size, layout=layout, name="p")(x), want, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("axes", [[2, 3], [-1, -2], [1], [0, 2], [], [-1]])
@pytest.mark.parametrize("keepdim", [False, True])
def test_mean(dtype, axes, keepdim):
    x = rand((2, 3, 5, 6), dtype)
    dims = axes if axes else list(range(4))
    close(
        layers.Mean(axes, keepdim, name="m")(x),
        torch.mean(torch.from_numpy(x), dim=dims, keepdim=keepdim).numpy(),
        dtype,
    )


def test_mean_errors():
    with pytest.raises(
        errors.ShapeError,
        match=r"mean layer 'm' \(direct\): axis 1 \(dimension 1\) is given twice|axis -1 \(dimension 1\) is given twice",
    ):
        layers.Mean([1, -1], name="m")(np.zeros((2, 3), np.float32))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "shifts,axes", [([3], [1]), ([-3, -3], [1, 2]), ([1, 2], [0, -1]), ([10], [-1]), ([1, 1], [2, 2])]
)
def test_roll(dtype, shifts, axes):
    x = rand((2, 6, 5, 3), dtype)
    close(layers.Roll(shifts, axes, name="r")(x), torch.roll(torch.from_numpy(x), shifts, axes).numpy(), dtype)


def test_roll_errors():
    with pytest.raises(errors.InvalidArgument, match="roll layer 'r': shifts and axes must have one length >= 1"):
        layers.Roll([1, 2], [0], name="r")


# ---- graphs of multi-input layers ----------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_model_with_multi_input_nodes(dtype):
    """A tiny attention-like block from LayerSpecs: q = x Wq, scores = q k^T
    (matmul of two nodes), a broadcast bias (constant add), log_softmax, a
    residual sub of two nodes, layernorm, mean; checked against torch."""
    rng = np.random.default_rng(0)
    wq = rng.standard_normal((8, 8))
    bias = rng.standard_normal((1, 5, 5))
    g, b = rng.standard_normal(5), rng.standard_normal(5)
    specs = [
        LayerSpec("q", "matmul", [MODEL_INPUT], weights={"other": wq}),
        LayerSpec("kt", "permute", [MODEL_INPUT], {"dims": [0, 2, 1]}),
        LayerSpec("scores", "matmul", [0, 1]),
        LayerSpec("bias", "add", [2], weights={"other": bias}),
        LayerSpec("p", "log_softmax", [3], {"axis": -1}),
        LayerSpec("res", "sub", [4, 2]),
        LayerSpec("ln", "layernorm", [5], {"axes": 1, "eps": 1e-5}, {"weight": g, "bias": b}),
        LayerSpec("gelu", "gelu", [6], {"approximate": "tanh"}),
        LayerSpec("m", "mean", [7], {"axes": [1], "keepdim": False}),
    ]
    m = model.build(specs, len(specs) - 1, "default", dtype=np.dtype(dtype), layout="NCHW")
    x = rand((2, 5, 8), dtype)
    t = torch.from_numpy(x.astype(np.float64))
    s = (t @ torch.from_numpy(wq)) @ t.transpose(1, 2)
    r = F.log_softmax(s + torch.from_numpy(bias), -1) - s
    want = F.gelu(F.layer_norm(r, (5,), torch.from_numpy(g), torch.from_numpy(b)), approximate="tanh").mean(1)
    np.testing.assert_allclose(
        m(x), want.numpy(), rtol=1e-4 if dtype == np.float32 else 1e-10, atol=1e-4 if dtype == np.float32 else 1e-10
    )
    assert [op for _, op, _ in m.layers()][:3] == ["matmul", "permute", "matmul"]


def test_add_node_kinds_and_bad_input_count():
    """3+ same-shape inputs stay the graph's add node, 2 become a
    broadcasting add layer; a layer given the wrong number of inputs is
    refused naming it."""
    specs = [
        LayerSpec("a", "relu", [MODEL_INPUT]),
        LayerSpec("b", "add", [MODEL_INPUT, 0, 0]),
        LayerSpec("c", "add", [1, MODEL_INPUT]),
    ]
    m = model.build(specs, 2, "default", dtype=np.dtype(np.float32), layout="NCHW")
    x = rand((2, 3), np.float32)
    close(m(x), x + 2 * np.maximum(x, 0) + x, np.float32)
    core = _core.Model()
    with pytest.raises(errors.InvalidArgument, match="matmul layer 'mm': takes 2 inputs, got 1"):
        core.add_layer(layers.Matmul(name="mm")._core_layer, [MODEL_INPUT])


def _batchnorm1d(channels):
    """An eval-mode float64 BatchNorm1d with random statistics and affine
    parameters, and its weights as a batchnorm2d spec takes them."""
    bn = torch.nn.BatchNorm1d(channels).double().eval()
    with torch.no_grad():
        bn.running_mean.uniform_(-1, 1)
        bn.running_var.uniform_(0.5, 2)
        bn.weight.uniform_(-1, 1)
        bn.bias.uniform_(-1, 1)
    w = {k: v.detach().numpy() for k, v in bn.state_dict().items() if k != "num_batches_tracked"}
    return bn, w


@pytest.mark.parametrize("dtype", DTYPES)
def test_fold_batchnorm_into_linear(dtype):
    lin = torch.nn.Linear(6, 4).double()
    bn, w = _batchnorm1d(4)
    specs = [
        LayerSpec(
            "fc",
            "linear",
            [MODEL_INPUT],
            weights={"weight": lin.weight.detach().numpy().copy(), "bias": lin.bias.detach().numpy().copy()},
        ),
        LayerSpec("bn", "batchnorm2d", [0], {"eps": bn.eps}, w, input_shape=(3, 4)),
        LayerSpec("out", "relu", [1]),
    ]
    folded, out = spec.fold_batchnorm(specs, 2)
    assert [s.op for s in folded] == ["linear", "relu"] and folded[0].attrs["folded_batchnorm"] == "bn"
    m = model.build(folded, out, "default", dtype=np.dtype(dtype), layout="NCHW")
    x = rand((3, 6), dtype)
    want = torch.relu(bn(lin(torch.from_numpy(x).double()))).detach().numpy()
    np.testing.assert_allclose(
        m(x), want, rtol=1e-4 if dtype == np.float32 else 1e-10, atol=1e-5 if dtype == np.float32 else 1e-10
    )
    # (N, C, L) after a linear normalises dim 1, not the features: no fold;
    # it runs as a rank-3 batchnorm2d (the core's takes any rank >= 2).
    specs[1].input_shape = (3, 4, 5)
    kept, _ = spec.fold_batchnorm(specs, 2)
    assert [s.op for s in kept] == ["linear", "batchnorm2d", "relu"]


class _ScaledBlock(torch.nn.Module):
    """A layer scale (a constant times a conv's or linear's output
    features) in the forms spec.fold_constant_scale folds, and forms it
    must leave alone."""

    def __init__(self, form: str):
        super().__init__()
        self.form = form
        self.conv = torch.nn.Conv2d(4, 6, 3, padding=1)
        self.fc = torch.nn.Linear(6, 6)
        g = torch.Generator().manual_seed(1)
        shapes = {"spatial": (1, 5, 5), "scalar": ()}
        self.gamma = torch.nn.Parameter(torch.rand(shapes.get(form, (6, 1, 1)), generator=g) + 0.5)

    def forward(self, x):
        y = self.conv(x)
        if self.form in ("conv", "spatial", "scalar"):
            return self.gamma * y + 1.0  # conv -> mul -> add
        z = self.fc(y.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)  # ConvNeXt's channels-last linear
        if self.form == "read twice":  # the linear's output also feeds the add: no fold
            return self.gamma * z + z
        return self.gamma * z + y


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "form, folds", [("linear", True), ("conv", True), ("scalar", True), ("spatial", False), ("read twice", False)]
)
def test_fold_constant_scale(dtype, form, folds):
    """A constant scale of a conv's or linear's output features (also through
    permutes) becomes part of its weights, and the model still matches
    torch; a scale over other dims, or of an output something else reads,
    stays a mul."""
    m = _ScaledBlock(form).to(torch.float64 if dtype == np.float64 else torch.float32).eval()
    ai = ai3.swap_backend(m, "default", sample_input_shape=(2, 4, 5, 5), dtype=dtype)
    assert ("mul" not in {op for _, op, _ in ai.layers()}) == folds
    x = rand((2, 4, 5, 5), dtype)
    with torch.no_grad():
        want = m.to(torch.float64)(torch.from_numpy(x).double()).numpy()
    close(ai(x), want, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 4), (3, 4, 5)])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_batchnorm1d_unfolded(dtype, shape, layout):
    """A batchnorm on a rank-2/3 input that cannot fold (its input is the
    model input) runs as BatchNorm1d: channels dim 1 (NCHW models) or last
    (NHWC)."""
    bn, w = _batchnorm1d(4)
    in_shape = shape if layout == "NCHW" else (shape[0],) + shape[2:] + (4,)
    specs = [LayerSpec("bn", "batchnorm2d", [MODEL_INPUT], {"eps": bn.eps}, w, input_shape=in_shape)]
    specs, out = spec.fold_batchnorm(specs, 0, layout=layout)
    m = model.build(specs, out, "default", dtype=np.dtype(dtype), layout=layout)
    x = rand(in_shape, dtype)
    t = torch.from_numpy(x).double()
    want = bn(t if layout == "NCHW" else t.movedim(-1, 1))
    want = (want if layout == "NCHW" else want.movedim(1, -1)).detach().numpy()
    close(m(x), want, dtype)


def test_algorithms_listed():
    ops = {op for op, _, _ in ai3._core.algorithms()}
    for op in (
        "add",
        "sub",
        "mul",
        "div",
        "matmul",
        "reshape",
        "permute",
        "slice",
        "log_softmax",
        "layernorm",
        "gelu",
        "hardswish",
        "hardsigmoid",
        "adaptivemaxpool2d",
        "mean",
        "roll",
    ):
        assert op in ops and op in model.CORE_OPS, op


if __name__ == "__main__":
    pytest_main.run(__file__)
