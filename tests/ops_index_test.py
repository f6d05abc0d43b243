"""argmax / argmin (the index a classifier's or a decoder's head picks), topk
(a top-5 head, a mixture of experts' router), scatter_elements / scatter_nd
(torch.scatter and its reductions, ONNX ScatterElements and ScatterND, the
indices computed or constant) and trilu (the triangles causal masks are
cut from), run by ai3's core against
each framework's own result: PyTorch (functions and tensor methods, with and
without a dim, keepdim, ties and NaN), ONNX Runtime (ArgMax / ArgMin with
keepdims and select_last_index, TopK with ties, Trilu with and without its
k input, float and int64 inputs) and Keras (keras.ops.argmax / argmin / top_k /
triu / tril / cumsum, with and without an axis, and x[key]), over grids of shapes and attributes.
Integer results are compared exactly."""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import pytest_main  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402

import ai3  # noqa: E402
import ai3.onnx  # noqa: E402

torch.set_num_threads(2)
DTYPES = [torch.float32, torch.float64]


def _same(got, want) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    if want.dtype.kind in "iub":
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, equal_nan=True)


def _tied(shape, dtype=torch.float32, seed=0, nan=False) -> torch.Tensor:
    """Values in a few steps, so that ties are common; NaN now and then."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(-3, 4, shape, generator=g).to(dtype)
    if nan:
        x.view(-1)[::7] = float("nan")
    return x


# -- PyTorch ----------------------------------------------------------------
class Arg(nn.Module):
    def __init__(self, fn, dim, keepdim, method):
        super().__init__()
        self.fn, self.dim, self.keepdim, self.method = fn, dim, keepdim, method

    def forward(self, x):
        if self.method:
            return getattr(x, self.fn)(dim=self.dim, keepdim=self.keepdim)
        return getattr(torch, self.fn)(x, self.dim, self.keepdim)


@pytest.mark.parametrize("fn", ["argmax", "argmin"])
@pytest.mark.parametrize("dim", [0, 1, -1, None])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("method", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
def test_torch_argmax_argmin(fn, dim, keepdim, method, dtype):
    net = Arg(fn, dim, keepdim, method).eval()
    x = _tied((3, 4, 5), dtype, nan=dim == 1)
    model = ai3.swap_backend(net, "default", sample_input_shape=x.shape, dtype=dtype)
    assert isinstance(model, ai3.Model)
    _same(model(x), net(x))


class Triangle(nn.Module):
    def __init__(self, upper, diagonal, method):
        super().__init__()
        self.upper, self.diagonal, self.method = upper, diagonal, method

    def forward(self, x):
        name = "triu" if self.upper else "tril"
        if self.method:
            return getattr(x, name)(self.diagonal)
        return getattr(torch, name)(x, diagonal=self.diagonal)


@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("diagonal", [0, 1, -2, 9])
@pytest.mark.parametrize("method", [False, True])
@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 5), (2, 2, 6, 3)])
def test_torch_triu_tril(upper, diagonal, method, shape):
    net = Triangle(upper, diagonal, method).eval()
    x = torch.randn(shape)
    model = ai3.swap_backend(net, "default", sample_input_shape=shape)
    _same(model(x), net(x))


class CausalMask(nn.Module):
    """A decoder's causal mask from torch.triu of a filled matrix (as
    transformers builds one), added to scores computed from the input."""

    def forward(self, x):
        n = x.shape[-1]
        mask = torch.triu(torch.full((n, n), -1e9), diagonal=1)
        return torch.softmax(x @ x.transpose(-1, -2) + mask, -1)


def test_torch_causal_mask_from_triu():
    net = CausalMask().eval()
    x = torch.randn(2, 6, 6)
    model = ai3.swap_backend(net, "default", sample_input_shape=x.shape)
    _same(model(x), net(x))


class ArgOfIds(nn.Module):
    """argmax and triu of int64 tensors (token ids)."""

    def forward(self, ids):
        return torch.triu(ids, 1) + ids.argmax(-1, keepdim=True)


def test_torch_on_int64():
    net = ArgOfIds().eval()
    ids = torch.randint(0, 9, (3, 5, 5))
    model = ai3.swap_backend(net, "default", sample_input_shape=[ids])
    _same(model(ids), net(ids))


class TopK(nn.Module):
    """torch.topk by function or method, read by index or by field, both
    results used (values scaled, indices as a float) or one."""

    def __init__(self, k, dim, largest, method, fields):
        super().__init__()
        self.k, self.dim, self.largest, self.method, self.fields = k, dim, largest, method, fields

    def forward(self, x):
        if self.method:
            found = x.topk(self.k, dim=self.dim, largest=self.largest)
        else:
            found = torch.topk(x, self.k, self.dim, self.largest)
        values, indices = (found.values, found.indices) if self.fields else (found[0], found[1])
        return values * 2, indices


@pytest.mark.parametrize("k, dim", [(1, -1), (3, 1), (5, -1), (2, 2), (4, 1)])
@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("method, fields", [(False, False), (True, True)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64])
def test_torch_topk(k, dim, largest, method, fields, dtype):
    """Distinct values (torch leaves the order of ties unspecified), at the
    traced batch and another."""
    net = TopK(k, dim, largest, method, fields).eval()
    float_dtype = dtype if dtype.is_floating_point else None
    model = ai3.swap_backend(net, "default", sample_input_shape=[torch.zeros(2, 4, 5, dtype=dtype)], dtype=float_dtype)
    for batch in (2, 3):
        x = torch.randperm(batch * 20).reshape(batch, 4, 5).to(dtype)
        got = model(x)
        for g, w in zip(got, net(x)):
            _same(g, w)


class Router(nn.Module):
    """A mixture of experts' router: the top-2 experts' softmaxed weights
    of each token, scattered back as a dense (tokens, experts) gate."""

    def __init__(self):
        super().__init__()
        self.gate = nn.Linear(8, 6)

    def forward(self, x):
        logits = self.gate(x)
        weights, chosen = torch.topk(logits, 2, dim=-1)
        return torch.softmax(weights, -1), chosen


def test_torch_topk_router():
    torch.manual_seed(0)
    net = Router().eval()
    model = ai3.swap_backend(net, "default", sample_input_shape=(4, 8))
    x = torch.randn(7, 8)
    with torch.no_grad():
        want = net(x)
    for g, w in zip(model(x), want):
        _same(g, w)


def test_torch_topk_along_the_batch_is_refused():
    net = TopK(1, 0, True, False, False).eval()
    with pytest.raises(ai3.UnsupportedOperation, match="topk.*depends on the batch"):
        ai3.swap_backend(net, "default", sample_input_shape=(2, 4, 5))


class Scatter(nn.Module):
    """x.scatter(dim, index, src) and its reductions, the index computed
    (topk of the input) or a constant buffer, src larger than the index."""

    def __init__(self, fn, reduce, dim, constant):
        super().__init__()
        self.fn, self.reduce, self.dim, self.constant = fn, reduce, dim, constant
        self.register_buffer("fixed", torch.tensor([[0, 2, 2], [1, 0, 3]]).reshape(2, 3, 1).expand(2, 3, 4).clone())

    def forward(self, x):
        src = x * 3 - 1
        if self.constant:
            index = self.fixed if self.dim == 1 else self.fixed.transpose(1, 2)
        else:
            index = torch.topk(x, 2, dim=self.dim).indices
        if self.fn == "scatter":
            out = (
                x.scatter(self.dim, index, src)
                if self.reduce is None
                else x.scatter(self.dim, index, src, reduce=self.reduce)
            )
        elif self.fn == "scatter_add":
            out = torch.scatter_add(x, self.dim, index, src)
        else:
            out = x.scatter_reduce(self.dim, index, src, self.reduce)
        return out + 1


@pytest.mark.parametrize(
    "fn, reduce",
    [("scatter", None), ("scatter", "add"), ("scatter", "multiply"), ("scatter_add", None)]
    + [("scatter_reduce", r) for r in ("sum", "prod", "amax", "amin")],
)
@pytest.mark.parametrize("dim", [1, 2])
@pytest.mark.parametrize("constant", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
def test_torch_scatter(fn, reduce, dim, constant, dtype):
    """Distinct values (topk's order), repeated constant indices (the
    reductions meet), at the traced batch and another."""
    net = Scatter(fn, reduce, dim, constant).eval()
    model = ai3.swap_backend(net, "default", sample_input_shape=(2, 4, 4), dtype=dtype)
    for batch in (2, 3):
        x = (torch.randperm(batch * 16).reshape(batch, 4, 4) / 8).to(dtype)
        with torch.no_grad():
            want = net(x)
        _same(model(x), want)


def test_torch_scatter_of_a_number_is_refused():
    class Fill(nn.Module):
        def forward(self, x):
            return x.scatter(1, torch.argmax(x, 1, keepdim=True), 0.0)

    with pytest.raises(ai3.UnsupportedOperation, match="scatter of a number"):
        ai3.swap_backend(Fill().eval(), "default", sample_input_shape=(2, 5))


# -- ONNX, against ONNX Runtime -----------------------------------------------
def _against_ort(nodes, x: np.ndarray, out_elem: int, out_shape, inits=(), opset=17) -> None:
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    info = onnx.helper.make_tensor_value_info
    elem = onnx.helper.np_dtype_to_tensor_dtype(x.dtype)
    graph = onnx.helper.make_graph(
        nodes, "g", [info("x", elem, x.shape)], [info("y", out_elem, out_shape)], list(inits)
    )
    data = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", opset)]).SerializeToString()
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    model = ai3.onnx.swap_backend(data, "default", sample_input_shape=x.shape)
    assert isinstance(model, ai3.Model), type(model)
    _same(model(x), want)


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("keepdims", [0, 1])
@pytest.mark.parametrize("select_last_index", [0, 1])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_onnx_argmax_argmin(op, axis, keepdims, select_last_index, dtype):
    onnx = pytest.importorskip("onnx")
    node = onnx.helper.make_node(op, ["x"], ["y"], axis=axis, keepdims=keepdims, select_last_index=select_last_index)
    x = _tied((3, 4, 5), seed=axis + 7).numpy().astype(dtype)
    out_shape = list(x.shape)
    if keepdims:
        out_shape[axis] = 1
    else:
        del out_shape[axis]
    _against_ort([node], x, onnx.TensorProto.INT64, out_shape)


@pytest.mark.parametrize("axis, k", [(-1, 1), (-1, 3), (1, 4), (0, 2), (2, 5), (1, 0)])
@pytest.mark.parametrize("largest", [0, 1])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
@pytest.mark.parametrize("opset", [9, 11, 17])
def test_onnx_topk(axis, k, largest, dtype, opset):
    """Values and indices, with ties (ONNX puts the lower index first)."""
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    if opset < 11 and (largest == 0 or dtype == np.int64 or k == 0):
        pytest.skip("largest, integer inputs and k = 0 came with opset 11")
    helper, info = onnx.helper, onnx.helper.make_tensor_value_info
    x = _tied((3, 4, 5), seed=k + 3).numpy().astype(dtype)
    extra = {"largest": largest} if opset >= 11 else {}
    if opset < 10:
        node, inits = helper.make_node("TopK", ["x"], ["v", "i"], axis=axis, k=k), []
    else:
        node = helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=axis, **extra)
        inits = [onnx.numpy_helper.from_array(np.array([k], np.int64), "k")]
    out = list(x.shape)
    out[axis] = k
    elem = helper.np_dtype_to_tensor_dtype(x.dtype)
    graph = helper.make_graph(
        [node], "g", [info("x", elem, x.shape)], [info("v", elem, out), info("i", onnx.TensorProto.INT64, out)], inits
    )
    data = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]).SerializeToString()
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    got = ai3.onnx.swap_backend(data, "default", sample_input_shape=x.shape)(x)
    for g, w in zip(got, want):
        _same(g, w)


def _scatter_against_ort(node, x, indices, updates, opset, constant):
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    helper, info = onnx.helper, onnx.helper.make_tensor_value_info
    elem = helper.np_dtype_to_tensor_dtype(x.dtype)
    inputs = [info("x", elem, x.shape), info("u", elem, updates.shape)]
    inits, feed = [], {"x": x, "u": updates}
    if constant:
        inits.append(onnx.numpy_helper.from_array(indices, "i"))
    else:
        inputs.insert(1, info("i", onnx.TensorProto.INT64, indices.shape))
        feed["i"] = indices
    graph = helper.make_graph([node], "g", inputs, [info("y", elem, x.shape)], inits)
    data = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]).SerializeToString()
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feed)[0]
    model = ai3.onnx.swap_backend(data, "default")
    _same(model(**feed), want)


@pytest.mark.parametrize(
    "reduction, opset", [("none", 11), ("none", 18), ("add", 16), ("mul", 16), ("max", 18), ("min", 18)]
)
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("constant", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_onnx_scatter_elements(reduction, opset, axis, constant, dtype):
    onnx = pytest.importorskip("onnx")
    rng = np.random.default_rng(abs(axis) + opset)
    x = (rng.standard_normal((3, 4, 5)) * 9).astype(dtype)
    shape = [2, 3, 4]
    size = x.shape[axis]
    # Distinct positions per line for "none" (ONNX leaves repeats to the
    # implementation); repeats for the reductions.
    if reduction == "none":
        full = list(shape)
        full[axis] = size
        indices = np.take(np.argsort(rng.random(full), axis=axis), range(shape[axis]), axis=axis)
    else:
        indices = rng.integers(-size, size, shape)
    indices = np.ascontiguousarray(indices, dtype=np.int64)
    updates = (rng.standard_normal(indices.shape) * 9).astype(dtype)
    extra = {"reduction": reduction} if opset >= 16 else {}
    node = onnx.helper.make_node("ScatterElements", ["x", "i", "u"], ["y"], axis=axis, **extra)
    _scatter_against_ort(node, x, indices, updates, opset, constant)


@pytest.mark.parametrize("reduction, opset", [("none", 13), ("add", 16), ("mul", 16), ("max", 18), ("min", 18)])
@pytest.mark.parametrize("depth, count", [(1, 2), (2, 3), (3, 4)])
@pytest.mark.parametrize("constant", [False, True])
def test_onnx_scatter_nd(reduction, opset, depth, count, constant):
    onnx = pytest.importorskip("onnx")
    rng = np.random.default_rng(depth * 10 + count)
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    if reduction == "none":  # distinct tuples
        flat = rng.permutation(int(np.prod(x.shape[:depth])))[:count]
        indices = np.stack(np.unravel_index(flat, x.shape[:depth]), -1)
    else:
        indices = np.stack([rng.integers(0, x.shape[d], count) for d in range(depth)], -1)
    indices = indices.astype(np.int64).reshape(count, depth)
    updates = rng.standard_normal((count, *x.shape[depth:])).astype(np.float32)
    extra = {"reduction": reduction} if opset >= 16 else {}
    node = onnx.helper.make_node("ScatterND", ["x", "i", "u"], ["y"], **extra)
    _scatter_against_ort(node, x, indices, updates, opset, constant)


def test_onnx_topk_with_a_computed_k_is_refused_naming_the_node():
    onnx = pytest.importorskip("onnx")
    helper, info = onnx.helper, onnx.helper.make_tensor_value_info
    nodes = [
        helper.make_node("ArgMax", ["x"], ["k"], axis=1, keepdims=1, name="pick"),
        helper.make_node("TopK", ["x", "k"], ["v", "i"], name="best"),
    ]
    graph = helper.make_graph(nodes, "g", [info("x", onnx.TensorProto.FLOAT, (1, 4))], [info("v", 1, (1, 1))])
    data = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    with pytest.raises(ai3.UnsupportedOperation, match=r"best.*K.*constant"):
        ai3.onnx.swap_backend(data, "default", sample_input_shape=(1, 4))


@pytest.mark.parametrize("upper", [0, 1])
@pytest.mark.parametrize("k", [None, 0, 2, -1, -7])
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 6)])
def test_onnx_trilu(upper, k, dtype, shape):
    onnx = pytest.importorskip("onnx")
    inputs, inits = ["x"], []
    if k is not None:
        inputs.append("k")
        inits.append(onnx.numpy_helper.from_array(np.asarray(k, np.int64), "k"))
    node = onnx.helper.make_node("Trilu", inputs, ["y"], upper=upper)
    x = (np.random.default_rng(len(shape)).standard_normal(shape) * 9).astype(dtype)
    _against_ort([node], x, onnx.helper.np_dtype_to_tensor_dtype(x.dtype), x.shape, inits)


def test_onnx_trilu_with_a_computed_k_is_refused_naming_the_node():
    onnx = pytest.importorskip("onnx")
    info = onnx.helper.make_tensor_value_info
    nodes = [
        onnx.helper.make_node("ArgMax", ["x"], ["k"], axis=0, keepdims=0, name="pick"),
        onnx.helper.make_node("Trilu", ["x", "k"], ["y"], name="cut"),
    ]
    graph = onnx.helper.make_graph(
        nodes, "g", [info("x", onnx.TensorProto.FLOAT, (1, 4))], [info("y", onnx.TensorProto.FLOAT, (1, 4))]
    )
    data = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 17)]).SerializeToString()
    with pytest.raises(ai3.UnsupportedOperation, match=r"cut.*diagonal k.*constant"):
        ai3.onnx.swap_backend(data, "default", sample_input_shape=(1, 4))


# -- Keras --------------------------------------------------------------------
@pytest.fixture(scope="module")
def keras():
    return pytest.importorskip("keras")


def _against_keras(keras, build, shape) -> None:
    import ai3.keras

    inp = keras.Input(shape[1:])
    model = keras.Model(inp, build(keras.ops, inp))
    x = _tied(shape, seed=len(shape)).numpy()
    x.reshape(-1)[::3] += 0.5  # some ties, not all
    got = ai3.keras.swap_backend(model, {}, sample_input_shape=shape)
    want = np.asarray(model(x))
    # Keras gives indices as int32; ai3 computes integers in int64.
    _same(np.asarray(got(x)).astype(want.dtype), want)


@pytest.mark.parametrize("k", [1, 3, 6])
@pytest.mark.parametrize("output", [0, 1])
def test_keras_top_k(keras, k, output):
    """keras.ops.top_k along the last axis, values (doubled) or indices,
    with ties (TensorFlow, like ONNX, puts the lower index first)."""
    _against_keras(keras, lambda ops, x: ops.top_k(x, k)[0] * 2 if output == 0 else ops.top_k(x, k)[1], (2, 4, 6))


@pytest.mark.parametrize(
    "key",
    [(slice(None), 0), (Ellipsis, slice(1, 5, 2)), (slice(None), None, 1), (slice(None), -1, slice(2, None)),
     (slice(None), slice(None), slice(0, 1)), (slice(None), slice(-3, None))],
    ids=["int", "ellipsis-step", "newaxis", "negative", "keep-axis", "negative-slice"],
)  # fmt: skip
def test_keras_get_item(keras, key):
    """x[key] on a KerasTensor (GetItem): basic indexing as core slices and
    a reshape, at the traced batch and, without a sample shape, any."""
    _against_keras(keras, lambda ops, x: x[key] * 2, (2, 4, 6))


def test_keras_get_item_along_the_batch_is_refused(keras):
    """x[0] picks an example of a batch whose size ai3 does not fix."""
    import ai3.keras

    inp = keras.Input((4, 6))
    model = keras.Model(inp, inp[0] * 2)
    with pytest.raises(ai3.UnsupportedOperation, match="get_item.*batch"):
        ai3.keras.swap_backend(model, {})


@pytest.mark.parametrize(
    "build",
    [
        lambda ops, x: ops.cast(ops.top_k(x, 2)[1], "float32") * 2,
        lambda ops, x: ops.argmax(x, -1) * 3 + 1,  # an integer tensor, integral constants
        lambda ops, x: ops.argmax(x, -1) * 0.5,  # promoted to float32, as Keras does
        lambda ops, x: ops.cast(x, "bool"),
        lambda ops, x: ops.cast(x > 0, "float32") * x,
        lambda ops, x: ops.cast(ops.logical_and(x >= -1, ops.less(0.5, x)), "float32"),
        lambda ops, x: ops.not_equal(ops.argmax(x, -1), 2),
        lambda ops, x: ops.cast(x * 4, "int32") - 1,
    ],
    ids=[
        "indices-to-float",
        "int-times-int",
        "int-times-float",
        "float-to-bool",
        "float-to-int",
        "greater",
        "logical",
        "int-not-equal",
    ],
)
def test_keras_casts_and_integer_arithmetic(keras, build):
    _against_keras(keras, build, (2, 4, 6))


@pytest.mark.parametrize("fn", ["argmax", "argmin"])
@pytest.mark.parametrize("axis", [1, -1, None])
@pytest.mark.parametrize("keepdims", [False, True])
def test_keras_argmax_argmin(keras, fn, axis, keepdims):
    _against_keras(keras, lambda ops, t: getattr(ops, fn)(t, axis=axis, keepdims=keepdims), (2, 5, 7))


@pytest.mark.parametrize("fn", ["triu", "tril"])
@pytest.mark.parametrize("k", [0, 1, -2])
def test_keras_triu_tril(keras, fn, k):
    _against_keras(keras, lambda ops, t: getattr(ops, fn)(t, k=k), (2, 5, 7))


@pytest.mark.parametrize("axis", [1, 2, -1, None])
def test_keras_cumsum(keras, axis):
    _against_keras(keras, lambda ops, t: ops.cumsum(ops.multiply(t, 0.5), axis=axis), (2, 4, 6))


if __name__ == "__main__":
    pytest_main.run(__file__)
