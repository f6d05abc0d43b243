"""Issue 17's ops (unary math, activations, pow / maximum / minimum / prelu,
the variadic Max / Min / Mean / Sum, the reductions, tile and expand) run
by ai3's core against each framework's own result: PyTorch (swap_backend
of modules, functions and tensor methods), ONNX Runtime (single-node
graphs through ai3.onnx.swap_backend, at the opsets where axes move from
attributes to inputs) and Keras (layers, activations and merge layers),
over grids of shapes, broadcasts, axes, keepdims, both dtypes and edge
values (log(0), sqrt(-1), 1/0, NaN, infinities); then bad input, which must
raise an ai3.Error naming the layer."""

from __future__ import annotations

import math
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import pytest_main  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

import ai3  # noqa: E402
from ai3 import errors, layers  # noqa: E402

torch.set_num_threads(2)
DTYPES = [torch.float32, torch.float64]
TOL = {torch.float32: 2e-5, torch.float64: 1e-12}


def edge_input(shape, dtype, seed=0, scale=3.0):
    """Random values with the edge values in front: NaN, +-inf, +-0, -1,
    1, a large and a tiny value."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g, dtype=torch.float64) * scale
    flat = x.view(-1)
    special = [math.nan, math.inf, -math.inf, 0.0, -0.0, -1.0, 1.0, 80.0, -80.0, 1e-30]
    flat[: len(special)] = torch.tensor(special[: flat.numel()], dtype=torch.float64)
    return x.to(dtype)


class Fn(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


def run_torch(model, x):
    model = model.to(x.dtype).eval()
    with torch.inference_mode():
        want = model(x)
    net = ai3.swap_backend(model, sample_input_shape=tuple(x.shape), dtype=x.dtype)
    return net(x), want, [op for _, op, _ in net.layers()]


def assert_same(got, want, dtype, what=""):
    tol = TOL[dtype]
    torch.testing.assert_close(got, want, atol=tol, rtol=tol, equal_nan=True, msg=lambda m: f"{what}: {m}")


# -- PyTorch -------------------------------------------------------------------

UNARY = {
    "exp": [torch.exp, lambda x: x.exp()],
    "log": [torch.log, lambda x: x.log()],
    "sqrt": [torch.sqrt, lambda x: x.sqrt()],
    "neg": [torch.neg, lambda x: -x],
    "abs": [torch.abs, lambda x: abs(x), lambda x: x.abs()],
    "erf": [torch.erf, torch.special.erf],
    "reciprocal": [torch.reciprocal, lambda x: x.reciprocal()],
    "floor": [torch.floor],
    "ceil": [lambda x: x.ceil()],
    "sign": [torch.sign],
    "sin": [torch.sin],
    "cos": [lambda x: x.cos()],
    "tan": [torch.tan, lambda x: x.tan()],
    "asin": [torch.asin, torch.arcsin],
    "acos": [lambda x: x.acos(), lambda x: x.arccos()],
    "atan": [torch.atan, torch.arctan],
    "sinh": [torch.sinh],
    "cosh": [lambda x: x.cosh()],
    "asinh": [torch.asinh, lambda x: x.arcsinh()],
    "acosh": [torch.acosh],
    "atanh": [torch.atanh, torch.arctanh],
    "softsign": [F.softsign, nn.Softsign()],
    "mish": [F.mish, nn.Mish()],
    "selu": [F.selu, nn.SELU()],
}


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("op,form", [(op, i) for op, forms in UNARY.items() for i in range(len(forms))])
@pytest.mark.parametrize("shape", [(2, 3, 5, 7), (4, 33), (1, 70000)], ids=str)
def test_unary_matches_torch(op, form, shape, dtype):
    fn = UNARY[op][form]
    got, want, ops = run_torch(fn if isinstance(fn, nn.Module) else Fn(fn), edge_input(shape, dtype))
    assert ops == [op]
    # exp(80) and friends are large: the tolerance is relative.
    assert_same(got, want, dtype, f"{op} form {form}")


ACTIVATIONS = [
    (nn.ELU(), "elu"), (nn.ELU(0.3), "elu"), (nn.CELU(), "celu"), (nn.CELU(2.5), "celu"),
    (nn.Softplus(), "softplus"), (nn.Softplus(2.0, 3.0), "softplus"), (nn.Softplus(0.5, 40.0), "softplus"),
    (nn.PReLU(), "prelu"), (nn.PReLU(3), "prelu"),
    (Fn(lambda x: F.elu(x, 1.7)), "elu"), (Fn(lambda x: F.celu(x, alpha=0.4)), "celu"),
    (Fn(lambda x: F.softplus(x, beta=3, threshold=2)), "softplus"),
]  # fmt: skip


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("index", range(len(ACTIVATIONS)), ids=lambda i: repr(ACTIVATIONS[i][0]))
@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (2, 3), (2, 3, 9000)], ids=str)
def test_activations_match_torch(index, shape, dtype):
    module, op = ACTIVATIONS[index]
    if isinstance(module, nn.PReLU):
        with torch.no_grad():
            module.weight.uniform_(-0.5, 0.8)
    got, want, ops = run_torch(module, edge_input(shape, dtype))
    assert ops == [op]
    assert_same(got, want, dtype, repr(module))


class PReluFunction(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.slope = nn.Parameter(torch.linspace(-0.5, 0.5, channels))

    def forward(self, x):
        return F.prelu(x, self.slope)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_prelu_function_along_channels(dtype):
    got, want, ops = run_torch(PReluFunction(4), edge_input((2, 4, 3, 3), dtype))
    assert ops == ["prelu"]
    assert_same(got, want, dtype)


BINARY = {
    "x ** 2": (lambda x: x**2, "pow"),
    "x ** 3.5": (lambda x: torch.pow(x, 3.5), "pow"),
    "x ** -1": (lambda x: x.pow(-1), "pow"),
    "2 ** x": (lambda x: 2**x, "pow"),
    "x ** x[:, :1]": (lambda x: x ** x[:, :1], "pow"),
    "maximum": (lambda x: torch.maximum(x, x[:, :1].neg()), "maximum"),
    "maximum const": (lambda x: torch.maximum(x, torch.tensor(0.5, dtype=x.dtype)), "maximum"),
    "minimum": (lambda x: torch.minimum(x[:, :1], x.sin()), "minimum"),
    "x.maximum": (lambda x: x.maximum(x.cos()), "maximum"),
    # the remainders: the divisor's sign (%) and the dividend's (fmod)
    "x % 0.7": (lambda x: x % 0.7, "remainder"),
    "remainder": (lambda x: torch.remainder(x, x[:, :1].cos() - 2), "remainder"),
    "3 % x": (lambda x: 3.0 % (x.cos() + 2), "remainder"),
    "fmod": (lambda x: torch.fmod(x, -0.6), "fmod"),
    "x.fmod": (lambda x: x.fmod(x.sin() + 1.5), "fmod"),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", list(BINARY))
@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (3, 40000)], ids=str)
def test_binary_matches_torch(name, shape, dtype):
    fn, op = BINARY[name]
    got, want, ops = run_torch(Fn(fn), edge_input(shape, dtype, scale=1.5))
    assert op in ops
    assert_same(got, want, dtype, name)


REDUCTIONS = {
    "sum": (lambda x, d, k: x.sum(d, keepdim=k), "reduce_sum"),
    "torch.sum": (lambda x, d, k: torch.sum(x, dim=d, keepdim=k), "reduce_sum"),
    "amax": (lambda x, d, k: torch.amax(x, d, k), "reduce_max"),
    "amin": (lambda x, d, k: x.amin(d, keepdim=k), "reduce_min"),
    "logsumexp": (lambda x, d, k: torch.logsumexp(x, d, keepdim=k), "reduce_log_sum_exp"),
    "prod": (lambda x, d, k: x.prod(d if isinstance(d, int) else d[0], keepdim=k), "reduce_prod"),
}
DIMS = [1, -1, (2, 3), (0, 2), (1, 2, 3)]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dims", DIMS, ids=str)
@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_reductions_match_torch(name, dims, keepdim, dtype):
    fn, op = REDUCTIONS[name]
    if name == "prod" and not isinstance(dims, int):
        dims = dims[0]
    x = torch.randn(3, 4, 5, 6, dtype=dtype)
    if name != "prod":
        x[0, 1, 2, 3], x[1, 2, 3, 4] = math.inf, -math.inf  # NaN where inf - inf meet
    got, want, ops = run_torch(Fn(lambda t: fn(t, dims, keepdim)), x)
    assert ops == [op]
    assert_same(got, want, dtype, f"{name} {dims} keepdim={keepdim}")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_sum_of_everything_and_reductions_with_nan(dtype):
    x = edge_input((2, 3, 4), dtype)
    for fn in (lambda t: t.sum(), lambda t: torch.amax(t, (0, 1, 2)), lambda t: t.amin(dim=(0, 2))):
        got, want, _ = run_torch(Fn(fn), x)
        assert_same(got, want, dtype)


TILES = {
    "tile": lambda x: torch.tile(x, (2, 1, 3)),
    "tile fewer": lambda x: x.tile((2,)),
    "tile more": lambda x: x.tile((2, 1, 1, 2)),
    "repeat": lambda x: x.repeat(1, 2, 2),
    "repeat more": lambda x: x.repeat(2, 1, 1, 3),
    "expand": lambda x: x[:, :1].expand(-1, 5, -1) * 2,
    "expand leading": lambda x: x.sum(1, keepdim=True).expand(2, -1, 6, 4) + 1,
}


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", list(TILES))
def test_tile_repeat_expand_match_torch(name, dtype):
    got, want, ops = run_torch(Fn(TILES[name]), torch.randn(2, 3, 4, dtype=dtype))
    assert "tile" in ops or "expand" in ops
    assert_same(got, want, dtype, name)


# -- bad input -------------------------------------------------------------------

BAD = [
    ("elu", {"alpha": math.nan}, {}, (2, 3), errors.InvalidArgument, "alpha must be finite"),
    ("celu", {"alpha": 0.0}, {}, (2, 3), errors.InvalidArgument, "alpha must not be 0"),
    ("softplus", {"beta": 0.0}, {}, (2, 3), errors.InvalidArgument, "beta must be finite and not 0"),
    ("selu", {"gamma": math.inf}, {}, (2, 3), errors.InvalidArgument, "gamma must be finite"),
    ("exp", {}, {"other": np.ones(3, np.float32)}, (2, 3), errors.InvalidArgument, "unknown weight 'other'"),
    ("reduce_max", {"axes": [2]}, {}, (2, 3), errors.ShapeError, "axis 2 is out of range"),
    ("reduce_sum", {"axes": [1, -1]}, {}, (2, 3), errors.ShapeError, "is given twice"),
    ("tile", {"repeats": [1, -1]}, {}, (2, 3), errors.InvalidArgument, "repeats must be >= 0"),
    ("tile", {"repeats": [2**62, 2**62]}, {}, (2, 3), errors.ShapeError, "elements"),
    ("expand", {"shape": [4, 2]}, {}, (2, 3), errors.ShapeError, "do not broadcast"),
    ("prelu", {}, {"other": np.ones(4, np.float32)}, (2, 3, 5), errors.ShapeError, "do not broadcast"),
    ("prelu", {"reverse": True}, {"other": np.ones(3, np.float32)}, (2, 3), errors.InvalidArgument, "reverse is not defined"),
    ("pow", {}, {"other": np.ones((2, 2), np.float32)}, (2, 3), errors.ShapeError, "do not broadcast"),
]  # fmt: skip


@pytest.mark.parametrize("op,attrs,weights,shape,kind,text", BAD, ids=[f"{b[0]}:{b[5]}" for b in BAD])
def test_bad_input_raises_an_ai3_error_naming_the_layer(op, attrs, weights, shape, kind, text):
    with pytest.raises(kind) as info:
        layer = layers.Layer(op, attrs, weights, name="the_layer")
        layer(np.zeros(shape, np.float32))
    assert "the_layer" in str(info.value) and text in str(info.value), str(info.value)
    assert isinstance(info.value, errors.Error)


def test_wrong_dtype_is_refused():
    with pytest.raises(errors.Error) as info:
        layers.Layer("exp", {}, {}, name="e")(np.zeros((2, 3), np.int64))
    assert "e" in str(info.value)


# -- ONNX Runtime --------------------------------------------------------------

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

ONNX_DTYPES = {np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE, np.int64: TensorProto.INT64}


def onnx_model(nodes, x_shape, y_shape, dtype, opset, initializers=()):
    t = ONNX_DTYPES[dtype]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", t, list(x_shape))],
        [helper.make_tensor_value_info("y", t, y_shape)],
        initializer=[numpy_helper.from_array(np.asarray(v, dtype=v.dtype), name=k) for k, v in initializers],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def check_onnx(model, x, tol=None):
    try:
        session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    except Exception as e:  # noqa: BLE001 - ORT has no kernel for this dtype
        pytest.skip(f"onnxruntime cannot run it: {str(e)[:120]}")
    want = session.run(None, {"x": x})[0]
    # The output's shape, which the graph leaves open, from ORT's result.
    y = model.graph.output[0].type.tensor_type
    y.shape.Clear()
    for d in want.shape:
        y.shape.dim.add().dim_value = d
    got = np.asarray(ai3.onnx.swap_backend(model)(x))
    tol = tol or (2e-5 if x.dtype == np.float32 else 1e-12)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True)
    return got


def onnx_edge(shape, dtype, seed=0):
    return edge_input(shape, torch.float64, seed).numpy().astype(dtype)


ONNX_UNARY = {
    "Exp": {}, "Log": {}, "Sqrt": {}, "Neg": {}, "Abs": {}, "Erf": {}, "Reciprocal": {}, "Floor": {}, "Ceil": {}, "Sign": {},
    "Sin": {}, "Cos": {}, "Softsign": {}, "Mish": {}, "Elu": {"alpha": 0.7}, "Selu": {}, "Celu": {"alpha": 1.3},
    "Softplus": {}, "ThresholdedRelu": {"alpha": 0.5}, "Tan": {}, "Asin": {}, "Acos": {}, "Atan": {}, "Sinh": {},
    "Cosh": {}, "Asinh": {}, "Acosh": {}, "Atanh": {},
}  # fmt: skip


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: d.__name__)
@pytest.mark.parametrize("op", list(ONNX_UNARY))
def test_onnx_unary_matches_onnxruntime(op, dtype):
    x = onnx_edge((2, 3, 4, 5), dtype)
    if op == "Sign":
        x[0, 0, 0, 0] = 0  # NumPy's and ORT's sign(NaN) is NaN, torch's (and ai3's) 0
    model = onnx_model(
        [helper.make_node(op, ["x"], ["y"], **ONNX_UNARY[op])], x.shape, None, dtype, 18 if op == "Mish" else 17
    )
    check_onnx(model, x, 1e-4 if op == "Mish" and dtype == np.float32 else None)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: d.__name__)
@pytest.mark.parametrize("slope_shape", [(1,), (4,), (3, 1, 1), (1, 3, 1, 1), (5, 4)], ids=str)
def test_onnx_prelu(slope_shape, dtype):
    x = onnx_edge((2, 3, 5, 4), dtype)
    slope = np.linspace(-0.5, 0.7, int(np.prod(slope_shape))).reshape(slope_shape).astype(dtype)
    model = onnx_model([helper.make_node("PRelu", ["x", "s"], ["y"])], x.shape, None, dtype, 16, [("s", slope)])
    check_onnx(model, x)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: d.__name__)
@pytest.mark.parametrize("exponent", [2.0, 3.0, 0.5, -1.0, "tensor"], ids=str)
def test_onnx_pow(exponent, dtype):
    x = np.abs(onnx_edge((2, 3, 4), dtype)) + 0.5
    if exponent == "tensor":
        nodes = [helper.make_node("Neg", ["x"], ["n"]), helper.make_node("Pow", ["x", "n"], ["y"])]
        model = onnx_model(nodes, x.shape, None, dtype, 15)
    else:
        nodes = [helper.make_node("Pow", ["x", "e"], ["y"])]
        model = onnx_model(nodes, x.shape, None, dtype, 15, [("e", np.asarray(exponent, dtype))])
    check_onnx(model, x)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64], ids=lambda d: d.__name__)
@pytest.mark.parametrize("fmod", [0, 1])
def test_onnx_mod(fmod, dtype):
    """Mod: fmod=1 is C's fmod (the dividend's sign), 0 the divisor's (ONNX
    allows it for integers only); int64 by 0 is 0 in ai3, as in NumPy
    (ORT's result there is left out of the comparison)."""
    if dtype != np.int64 and not fmod:
        pytest.skip("ONNX's Mod takes fmod=0 for integers only")
    rng = np.random.default_rng(fmod)
    if dtype == np.int64:
        x = rng.integers(-50, 50, (3, 4, 5)).astype(dtype)
        divisor = np.array([-7, -3, 3, 4, 9], dtype)
    else:
        x = onnx_edge((3, 4, 5), dtype)
        divisor = np.array([-1.5, -0.3, 0.4, 2.0, 7.0], dtype)
    nodes = [helper.make_node("Mod", ["x", "d"], ["y"], fmod=fmod)]
    check_onnx(onnx_model(nodes, x.shape, None, dtype, 13, [("d", divisor)]), x)
    # a constant dividend over computed divisors x * x + 1 (none 0, where
    # ORT and NumPy differ)
    reverse = [
        helper.make_node("Mul", ["x", "x"], ["s"]),
        helper.make_node("Add", ["s", "one"], ["a"]),
        helper.make_node("Mod", ["d", "a"], ["y"], fmod=fmod),
    ]
    x[~np.isfinite(x)] = 0
    constants = [("d", divisor[:1]), ("one", np.ones(1, dtype))]
    check_onnx(onnx_model(reverse, x.shape, None, dtype, 13, constants), x)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: d.__name__)
@pytest.mark.parametrize("op", ["Max", "Min", "Mean", "Sum"])
@pytest.mark.parametrize("arity", [1, 2, 4])
def test_onnx_variadic(op, arity, dtype):
    """Up to four operands: the input, its Neg, a slice of it (broadcast),
    a constant."""
    x = onnx_edge((2, 3, 4), dtype)
    nodes = [helper.make_node("Neg", ["x"], ["n"]), helper.make_node("Sin", ["x"], ["s"])]
    inits = [("c", np.linspace(-1, 1, 4).astype(dtype))]
    operands = ["x", "n", "s", "c"][:arity] if arity > 1 else ["n"]  # (a model must compute something)
    nodes.append(helper.make_node(op, operands, ["y"]))
    got = check_onnx(onnx_model(nodes, x.shape, None, dtype, 13, inits), x)
    assert got.shape == x.shape


REDUCE_OPS = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceSumSquare",
              "ReduceLogSumExp"]  # fmt: skip


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: d.__name__)
@pytest.mark.parametrize("opset", [13, 18])
@pytest.mark.parametrize("axes,keepdims", [([1], 1), ([-1, 0], 0), ([1, 2, 3], 1), (None, 0), (None, 1)], ids=str)
@pytest.mark.parametrize("op", REDUCE_OPS)
def test_onnx_reductions(op, axes, keepdims, opset, dtype):
    x = (np.random.RandomState(1).rand(2, 3, 4, 5) + 0.5).astype(dtype)
    attrs = {"keepdims": keepdims}
    inits = []
    inputs = ["x"]
    axes_as_input = opset >= (13 if op == "ReduceSum" else 18)
    if axes is not None:
        if axes_as_input:
            inits.append(("axes", np.asarray(axes, np.int64)))
            inputs.append("axes")
        else:
            attrs["axes"] = axes
    model = onnx_model([helper.make_node(op, inputs, ["y"], **attrs)], x.shape, None, dtype, opset, inits)
    check_onnx(model, x)


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMax"])
def test_onnx_noop_with_empty_axes(op):
    x = onnx_edge((2, 3), np.float32)
    nodes = [helper.make_node("Neg", ["x"], ["n"]), helper.make_node(op, ["n"], ["y"], noop_with_empty_axes=1)]
    np.testing.assert_array_equal(check_onnx(onnx_model(nodes, x.shape, None, np.float32, 18), x), -x)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: d.__name__)
@pytest.mark.parametrize("op,value", [("Expand", [2, 3, 4]), ("Expand", [3, 1, 1]), ("Expand", [1]), ("Tile", [2, 1, 3]),
                                      ("Tile", [1, 1, 1])])  # fmt: skip
def test_onnx_expand_and_tile(op, value, dtype):
    x = (
        np.random.RandomState(2).randn(3, 1, 4).astype(dtype)
        if op == "Expand"
        else np.random.RandomState(2).randn(2, 3, 4).astype(dtype)
    )
    model = onnx_model(
        [helper.make_node(op, ["x", "v"], ["y"])], x.shape, None, dtype, 13, [("v", np.asarray(value, np.int64))]
    )
    check_onnx(model, x)


# -- Keras ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def keras():
    return pytest.importorskip("keras")


def keras_check(keras, build, shape, tol=1e-5):
    inp = keras.Input(shape[1:])
    model = keras.Model(inp, build(inp))
    x = onnx_edge(shape, np.float32, 3)
    x[np.isnan(x) | np.isinf(x)] = 0.0  # Keras' own kernels differ on those (TF's elu(-inf) is -1)
    want = np.asarray(model(x, training=False))
    got = np.asarray(ai3.keras.swap_backend(model)(x))
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


KERAS_ACTIVATIONS = ["elu", "selu", "softplus", "softsign", "exponential", "mish"]


@pytest.mark.parametrize("name", KERAS_ACTIVATIONS)
def test_keras_activations(keras, name):
    keras_check(keras, lambda t: keras.layers.Dense(6, activation=name)(keras.layers.Activation(name)(t)), (2, 4, 5))


@pytest.mark.parametrize("which", ["ELU", "ELU(0.4)", "PReLU", "PReLU shared", "ReLU(threshold)"])
def test_keras_layers(keras, which):
    L = keras.layers

    def build(t):
        if which.startswith("ELU"):
            return L.ELU(0.4)(t) if "0.4" in which else L.ELU()(t)
        if which == "ReLU(threshold)":
            return L.ReLU(threshold=0.5)(t)
        layer = L.PReLU(shared_axes=[1, 2]) if "shared" in which else L.PReLU()
        y = layer(t)
        layer.set_weights(
            [np.random.RandomState(0).uniform(-0.5, 0.5, w.shape).astype("float32") for w in layer.get_weights()]
        )
        return y

    keras_check(keras, build, (2, 5, 6, 3))


@pytest.mark.parametrize("merge", ["Maximum", "Minimum", "Average"])
def test_keras_merges(keras, merge):
    L = keras.layers
    keras_check(keras, lambda t: getattr(L, merge)()([t, L.Dense(4)(t), L.Activation("tanh")(t)]), (3, 2, 4))


def test_keras_mod(keras):
    keras_check(keras, lambda t: keras.layers.Dense(4)(t) % 0.7, (3, 2, 4))


KERAS_TRIG = ["sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "arcsinh", "arccosh", "arctanh"]


@pytest.mark.parametrize("name", KERAS_TRIG)
def test_keras_trig_ops(keras, name):
    # keras.ops on the input, then a Dense so that the model computes more;
    # the inverse functions on 0.9 sin(x) (in their domain, away from +-1
    # where they amplify a last-bit difference of the input) or 1 + x^2.
    fn = getattr(keras.ops, name)

    def build(t):
        if name in ("arcsin", "arccos", "arctanh"):
            t = keras.ops.multiply(keras.ops.sin(t), 0.9)
        elif name == "arccosh":
            t = keras.ops.add(keras.ops.multiply(t, t), 1.0)
        return keras.layers.Dense(3)(fn(t))

    keras_check(keras, build, (2, 4, 5), tol=1e-4)


if __name__ == "__main__":
    pytest_main.run(__file__)
