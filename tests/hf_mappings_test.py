"""The mappings the Hugging Face models needed (tests/hf_models_test.py),
each on its own over a grid, against the framework: torch.addmm (GPT-2's
Conv1D) as linear, torch.rsqrt, indexing by aranges (HF's
mask[arange(B)[:, None, None, None], arange(S)]), sdpa with a computed bool
mask and with a constant mask, masks built from the input's shape alone
(folded to rows broadcast over the batch; an exactly causal one as the
core's causal attention), torch.where with two constant branches,
RoBERTa's position ids (int32 casts computed in int64, cumsum, int64
arithmetic), cumsum and torch.gather; in ONNX, IsNaN, Where with two
constant branches and with a constant condition, Gather by N-D constant
indices, CumSum, GatherElements and a Cast to int32, against ONNX Runtime. What they do not cover is refused with
ai3.UnsupportedOperation naming the node.

Tolerance: tolerances.tolerance(dtype) relative to max|reference|.
"""

from __future__ import annotations

import numpy as np
import pytest
import pytest_main
import torch
import torch.nn.functional as F
from tolerances import DTYPES, tolerance
from torch import nn

import ai3
import ai3.onnx

torch.set_num_threads(2)


def _close(got, want, dtype=torch.float32) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    # NaN and +-inf where the reference has them, the finite rest within tolerance
    finite = np.isfinite(want)
    np.testing.assert_array_equal(got[~finite], want[~finite])
    got, want = got[finite], want[finite]
    assert np.abs(got - want).max(initial=0.0) <= tolerance(dtype) * max(1.0, np.abs(want).max(initial=0.0))


def _check(net: nn.Module, *inputs: torch.Tensor, dtype=torch.float32, batches=(3,)) -> ai3.Model:
    """swap_backend with no fallback, then the model against torch on the
    sample and at other batch sizes."""
    net = net.eval()
    model = ai3.swap_backend(net, "default", sample_input_shape=list(inputs), dtype=dtype)
    assert isinstance(model, ai3.Model), type(model)
    for batch in (inputs[0].shape[0], *batches):
        x = [torch.cat([t] * (batch // t.shape[0] + 1))[:batch] for t in inputs]
        with torch.no_grad():
            _close(model(*x), net(*x), dtype)
    return model


class Addmm(nn.Module):
    """GPT-2's Conv1D: a (in, out) weight, x @ weight + bias."""

    def __init__(self, n_in, n_out, bias_shape, dtype, beta=1):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n_in, n_out, dtype=dtype))
        self.bias = nn.Parameter(torch.randn(bias_shape, dtype=dtype))
        self.beta = beta

    def forward(self, x):
        shape = x.size()[:-1] + (self.weight.shape[1],)
        return torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight, beta=self.beta).view(shape)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n_in,n_out", [(1, 1), (5, 3), (16, 48)])
@pytest.mark.parametrize("bias_shape", ["out", (1,)])
def test_addmm_as_linear(dtype, n_in, n_out, bias_shape):
    torch.manual_seed(n_in * n_out)
    net = Addmm(n_in, n_out, n_out if bias_shape == "out" else bias_shape, dtype)
    model = _check(net, torch.randn(2, 4, n_in, dtype=dtype), dtype=dtype)
    assert [op for _, op, _ in model.layers()].count("linear") == 1


def test_addmm_with_beta_is_refused_naming_the_node():
    with pytest.raises(ai3.UnsupportedOperation, match=r"addmm.*beta=2"):
        ai3.swap_backend(Addmm(4, 3, 3, torch.float32, beta=2).eval(), sample_input_shape=(2, 5, 4))


class RsqrtOnly(nn.Module):
    def forward(self, x):
        return torch.rsqrt(x * x + 1e-3) + (x * x + 1.0).rsqrt()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(2, 1), (2, 7), (2, 3, 5, 4)])
def test_rsqrt(dtype, shape):
    torch.manual_seed(len(shape))
    _check(RsqrtOnly().to(dtype), torch.randn(shape, dtype=dtype), dtype=dtype)


class ArangeIndex(nn.Module):
    """HF's padding mask: mask[arange(B)[:, None, None, None], kv[None, None, None, :]]."""

    def __init__(self, as_bool: bool, kv: torch.Tensor | None = None):
        super().__init__()
        self.as_bool = as_bool
        self.kv = kv

    def forward(self, x, mask):
        m = mask.to(torch.bool) if self.as_bool else mask
        kv = torch.arange(mask.shape[1]) if self.kv is None else self.kv
        picked = m[torch.arange(mask.size(0))[:, None, None, None], kv[None, None, None, :]]
        return torch.where(picked, x, -x) if self.as_bool else x * picked.to(x.dtype)


@pytest.mark.parametrize("as_bool", [True, False])
@pytest.mark.parametrize("length", [1, 6])
def test_indexing_by_aranges_is_a_reshape(as_bool, length):
    mask = torch.ones(2, length, dtype=torch.int64)
    mask[0, length // 2 :] = 0
    x = torch.randn(2, 3, length, length)
    model = _check(ArangeIndex(as_bool), x, mask)
    assert "gather" not in {op for _, op, _ in model.layers()}


def test_indexing_by_other_tensors_is_refused_naming_the_node():
    mask = torch.ones(2, 5, dtype=torch.int64)
    with pytest.raises(ai3.UnsupportedOperation, match=r"getitem.*in order"):
        ai3.swap_backend(
            ArangeIndex(True, torch.arange(4, -1, -1)).eval(), sample_input_shape=[torch.randn(2, 3, 5, 5), mask]
        )


class BoolMaskAttention(nn.Module):
    """sdpa with a bool mask computed from an int64 padding mask (True = take part)."""

    def __init__(self, causal_too: bool, scale: float | None):
        super().__init__()
        self.causal_too = causal_too
        self.scale = scale

    def forward(self, q, k, v, mask):
        keep = mask[:, None, None, :].to(torch.bool)
        if self.causal_too:
            keep = keep & torch.ones(q.shape[2], k.shape[2], dtype=torch.bool).tril()
        return F.scaled_dot_product_attention(q, k, v, attn_mask=keep, scale=self.scale)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("causal_too", [False, True])
@pytest.mark.parametrize("scale", [None, 0.5])
@pytest.mark.parametrize("padding", ["right", "left"])
@pytest.mark.parametrize("heads,length,dim", [(1, 1, 4), (4, 6, 8)])
def test_sdpa_with_a_computed_bool_mask(dtype, causal_too, scale, padding, heads, length, dim):
    """Left padding under a causal mask leaves the padded queries no key:
    torch's sdpa gives those rows 0."""
    torch.manual_seed(heads + length)
    q, k, v = (torch.randn(2, heads, length, dim, dtype=dtype) for _ in range(3))
    mask = torch.ones(2, length, dtype=torch.int64)
    if padding == "right":
        mask[0, (length + 1) // 2 :] = 0
    else:
        mask[0, : length // 2] = 0
    _check(BoolMaskAttention(causal_too, scale).to(dtype), q, k, v, mask, dtype=dtype)


class ConstantMaskAttention(nn.Module):
    """sdpa with a mask built from shapes and parameters only (T5's decoder)."""

    def __init__(self, length, kv_length, heads, as_bool, scale, dtype, diagonal=0):
        super().__init__()
        self.diagonal = diagonal  # below 0: the first rows keep no key
        self.bias = nn.Parameter(torch.randn(1, heads, length, kv_length, dtype=dtype))
        self.as_bool = as_bool
        self.scale = scale

    def forward(self, q, k, v):
        causal = torch.ones(q.shape[2], k.shape[2], dtype=torch.bool).tril(self.diagonal)
        lowest = torch.tensor(torch.finfo(q.dtype).min, dtype=q.dtype)
        mask = causal if self.as_bool else self.bias + torch.where(causal, 0.0, lowest)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=self.scale)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("as_bool", [True, False])
@pytest.mark.parametrize("scale", [None, 1.0])
@pytest.mark.parametrize("heads,length,kv_length,dim", [(1, 1, 1, 2), (4, 5, 7, 8)])
def test_sdpa_with_a_constant_mask(dtype, as_bool, scale, heads, length, kv_length, dim):
    torch.manual_seed(heads + kv_length)
    net = ConstantMaskAttention(length, kv_length, heads, as_bool, scale, dtype)
    q = torch.randn(2, heads, length, dim, dtype=dtype)
    k, v = (torch.randn(2, heads, kv_length, dim, dtype=dtype) for _ in range(2))
    model = _check(net, q, k, v, dtype=dtype)
    ops = {op for _, op, _ in model.layers()}
    # Written out as sdpa's definition, except a bool mask that is exactly
    # causal (1 x 1 here), which runs as the core's causal attention.
    assert ("softmax" in ops) != (as_bool and length == kv_length), ops


@pytest.mark.parametrize("dtype", DTYPES)
def test_sdpa_with_a_constant_bool_mask_that_keeps_no_key_in_some_rows(dtype):
    torch.manual_seed(0)
    net = ConstantMaskAttention(5, 7, 2, True, None, dtype, diagonal=-2)
    q = torch.randn(2, 2, 5, 4, dtype=dtype)
    k, v = (torch.randn(2, 2, 7, 4, dtype=dtype) for _ in range(2))
    _check(net, q, k, v, dtype=dtype)


class ShapeBuiltMask(nn.Module):
    """A decoder's mask built from the input's shape alone, as transformers
    builds one without an attention mask: position ids arange(S) expanded
    along the batch, their diff and cumsum (the packed-sequence check),
    indexed per batch row by arange(B), and a causal (or windowed)
    comparison of positions, into sdpa."""

    def __init__(self, window, as_float):
        super().__init__()
        self.window, self.as_float = window, as_float
        self.register_buffer("positions", torch.arange(8)[None])

    def forward(self, x):
        b, s = x.shape[0], x.shape[-2]
        pos = self.positions[:, :s].expand(b, -1)
        packed = (torch.diff(pos, prepend=pos[:, :1] - 1, dim=-1) != 1).cumsum(-1)
        rows = torch.arange(b)[:, None, None, None]
        q, k = pos[rows, torch.arange(s)[:, None]], pos[rows, torch.arange(s)[None, :]]
        mask = (k <= q) & (packed[rows, torch.arange(s)[:, None]] == packed[rows, torch.arange(s)[None, :]])
        if self.window:
            mask = mask & (q - k < self.window)
        if self.as_float:
            mask = torch.zeros(mask.shape).masked_fill(~mask, float("-inf"))
        return F.scaled_dot_product_attention(x, x * 0.5, x, attn_mask=mask)


@pytest.mark.parametrize("window", [None, 3])
@pytest.mark.parametrize("as_float", [False, True])
def test_masks_built_from_the_shape_alone(window, as_float):
    net = ShapeBuiltMask(window, as_float)
    model = _check(net, torch.randn(2, 4, 8, 16), batches=(3, 1))
    ops = [layer[1] for layer in model.layers()]
    # Exactly causal: the core's causal attention; windowed: written out.
    assert ("attention" in ops) == (window is None), ops


class BatchDependentValues(nn.Module):
    """A tensor whose values depend on the batch size (arange(B) as data),
    not a row broadcast over it: not folded, refused naming the node."""

    def forward(self, x):
        return x + torch.arange(x.shape[0])[:, None].float()


def test_a_value_that_depends_on_the_batch_size_is_refused():
    with pytest.raises(ai3.UnsupportedOperation, match="arange"):
        ai3.swap_backend(BatchDependentValues(), "default", sample_input_shape=(2, 5))


class WhereConstants(nn.Module):
    """T5: where(mask, position_bias, finfo.min), the bias a parameter."""

    def __init__(self, shape, other, dtype):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(shape, dtype=dtype))
        self.other = other

    def forward(self, x, mask):
        return x + torch.where(mask[:, None, :].to(torch.bool), self.bias, self.other)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("other", [0.0, -1e4, float("-inf"), "min"])
@pytest.mark.parametrize("bias_shape", [(1, 1, 5), (1, 3, 5), (3, 1)])
def test_where_with_two_constant_branches(dtype, other, bias_shape):
    torch.manual_seed(len(bias_shape))
    other = torch.finfo(dtype).min if other == "min" else other
    mask = torch.ones(2, 5, dtype=torch.int64)
    mask[0, 3:] = 0
    _check(WhereConstants(bias_shape, other, dtype), torch.randn(2, 3, 5, dtype=dtype), mask, dtype=dtype)


class Positions(nn.Module):
    """RoBERTa's position ids from its padding: the mask as int32, its
    cumsum (int64 in torch) cast back with type_as, times the mask, plus
    the padding index, as int64."""

    def __init__(self, pad: int = 1):
        super().__init__()
        self.pad = pad

    def forward(self, ids):
        mask = ids.ne(self.pad).int()
        incremental = (torch.cumsum(mask, dim=1).type_as(mask) + 0) * mask
        return incremental.long() + self.pad


def test_roberta_position_ids():
    ids = torch.randint(2, 50, (2, 9))
    ids[0, -3:] = 1  # padded on the right
    ids[1, :2] = 1  # and on the left
    _check(Positions(), ids)


class Cumsum(nn.Module):
    def __init__(self, dim, dtype=None, method=False, from_bool=False):
        super().__init__()
        self.dim, self.dtype, self.method, self.from_bool = dim, dtype, method, from_bool

    def forward(self, x):
        if self.from_bool:
            x = x > 0
        return x.cumsum(self.dim) if self.method else torch.cumsum(x, self.dim, dtype=self.dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [0, 1, -1, 2])
@pytest.mark.parametrize("method", [False, True])
def test_cumsum(dtype, dim, method):
    _check(Cumsum(dim, method=method), torch.randn(2, 5, 7, dtype=dtype), dtype=dtype)


@pytest.mark.parametrize("to", [torch.float64, torch.int64, None])
def test_cumsum_of_bools_and_to_a_dtype(to):
    # Of bools: an int64 count, or the dtype asked for.
    _check(Cumsum(-1, dtype=to, from_bool=True), torch.randn(2, 3, 8))


class Gather(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x, index):
        return torch.gather(x.relu(), self.dim, index)


class GatherConstant(nn.Module):
    """torch.gather of a constant, or of a constant (1, N) row expanded
    along the batch (RoBERTa's buffered token types, gathered by position)."""

    def __init__(self, dim, source):
        super().__init__()
        self.dim, self.source = dim, source
        self.register_buffer("table", torch.randn(4, 9))
        self.register_buffer("row", torch.arange(9).unsqueeze(0) * 3)

    def forward(self, index):
        if self.source == "constant":
            return self.table.gather(self.dim, index)
        return torch.gather(self.row.expand(index.shape[0], -1), self.dim, index)


@pytest.mark.parametrize(
    "dim,index_shape,high",
    [
        (2, (2, 4, 5), 9),
        (-1, (2, 3, 12), 9),  # longer than the data along dim
        (1, (2, 3, 9), 4),
        (0, (2, 4, 9), 2),
    ],
)
def test_gather(dim, index_shape, high):
    _check(Gather(dim), torch.randn(2, 4, 9), torch.randint(0, high, index_shape), batches=(2,) if dim == 0 else (3,))


@pytest.mark.parametrize(
    "source,dim,index_shape,high", [("constant", 1, (2, 6), 9), ("constant", 0, (2, 9), 4), ("row", 1, (2, 7), 9)]
)
def test_gather_of_constants(source, dim, index_shape, high):
    # (A constant's rows bound the batch: 4 here.)
    _check(GatherConstant(dim, source), torch.randint(0, high, index_shape), batches=(3,))


@pytest.mark.parametrize("op", ["add", "sub", "mul", "maximum", "minimum"])
def test_int64_arithmetic_with_tensors_and_numbers(op):
    class Arithmetic(nn.Module):
        def forward(self, a, b):
            return getattr(torch, op)(a, b) + 2 - (a * 5)

    a, b = torch.randint(-50, 50, (2, 6)), torch.randint(-50, 50, (2, 6))
    _check(Arithmetic(), a, b)


# -- ONNX, against ONNX Runtime ---------------------------------------------
def _onnx_model(nodes, inputs, outputs, initializers=()):
    onnx = pytest.importorskip("onnx")
    graph = onnx.helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    return onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 17)])


def _against_ort(model, feeds: dict[str, np.ndarray]) -> None:
    ort = pytest.importorskip("onnxruntime")
    data = model.SerializeToString()
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    shapes = [tuple(v.shape) for v in feeds.values()]
    got = ai3.onnx.swap_backend(data, "default", sample_input_shape=shapes if len(shapes) > 1 else shapes[0])
    assert isinstance(got, ai3.Model), type(got)
    out = np.asarray(got(*feeds.values()))
    if want.dtype == np.bool_:
        np.testing.assert_array_equal(out, want)
    else:
        _close(out, want)


@pytest.mark.parametrize("shape", [(3,), (2, 4), (2, 3, 5)])
def test_onnx_isnan(shape):
    onnx = pytest.importorskip("onnx")
    x = np.random.default_rng(len(shape)).standard_normal(shape).astype(np.float32)
    x.reshape(-1)[:: max(1, x.size // 3)] = np.nan
    x.reshape(-1)[1] = np.inf
    info = onnx.helper.make_tensor_value_info
    # Where(IsNaN(x), 0, x): the guard the sdpa export writes after its softmax.
    nodes = [
        onnx.helper.make_node("IsNaN", ["x"], ["nan"]),
        onnx.helper.make_node("Where", ["nan", "zero", "x"], ["y"]),
    ]
    zero = onnx.numpy_helper.from_array(np.zeros((), np.float32), "zero")
    model = _onnx_model(nodes, [info("x", 1, shape)], [info("y", 1, shape)], [zero])
    _against_ort(model, {"x": x})


@pytest.mark.parametrize("x_value,y_value", [(0.0, float("-inf")), ("bias", np.finfo(np.float32).min), (2.0, "bias")])
@pytest.mark.parametrize("cond_shape", [(2, 1, 5), (2, 3, 5)])
def test_onnx_where_with_two_constant_branches(x_value, y_value, cond_shape):
    onnx = pytest.importorskip("onnx")
    rng = np.random.default_rng(len(cond_shape))
    bias = rng.standard_normal((1, 3, 5)).astype(np.float32)

    def const(v):
        return bias if isinstance(v, str) else np.asarray(v, np.float32)

    info = onnx.helper.make_tensor_value_info
    nodes = [
        onnx.helper.make_node("Cast", ["m"], ["c"], to=onnx.TensorProto.BOOL),
        onnx.helper.make_node("Where", ["c", "a", "b"], ["w"]),
        onnx.helper.make_node("Add", ["x", "w"], ["y"]),
    ]
    inits = [onnx.numpy_helper.from_array(const(x_value), "a"), onnx.numpy_helper.from_array(const(y_value), "b")]
    model = _onnx_model(
        nodes,
        [info("x", 1, (2, 3, 5)), info("m", onnx.TensorProto.INT64, cond_shape)],
        [info("y", 1, (2, 3, 5))],
        inits,
    )
    m = rng.integers(0, 2, cond_shape).astype(np.int64)
    _against_ort(model, {"x": rng.standard_normal((2, 3, 5)).astype(np.float32), "m": m})


@pytest.mark.parametrize("cond", ["all", "none", "causal", "row"])
@pytest.mark.parametrize("other", ["computed", -np.inf, "constant tensor"])
@pytest.mark.parametrize("x_is_computed", [True, False])
def test_onnx_where_with_a_constant_condition(cond, other, x_is_computed):
    # What folding leaves: a constant condition beside a computed branch
    # (a causal Where(tril, scores, -inf); the expanded Attention's all-False
    # guard); the computed branch holds NaN and infinities.
    onnx = pytest.importorskip("onnx")
    rng = np.random.default_rng(len(cond))
    shape = (2, 4, 4)
    c = {
        "all": np.ones((4, 4), bool),
        "none": np.zeros((1, 4), bool),
        "causal": np.tril(np.ones((4, 4), bool)),
        "row": np.array([[True], [False], [True], [False]]),
    }[cond]
    info = onnx.helper.make_tensor_value_info
    nodes = [onnx.helper.make_node("Tanh", ["x"], ["t"]), onnx.helper.make_node("Mul", ["x", "t"], ["u"])]
    inits = [onnx.numpy_helper.from_array(c, "c")]
    if other == "computed":
        branches = ["t", "u"]
    else:
        value = np.asarray(other, np.float32) if other != "constant tensor" else rng.standard_normal((4, 1))
        inits.append(onnx.numpy_helper.from_array(value.astype(np.float32), "k"))
        branches = ["u", "k"]
    if not x_is_computed:
        branches.reverse()
    nodes.append(onnx.helper.make_node("Where", ["c", *branches], ["y"]))
    model = _onnx_model(nodes, [info("x", 1, shape)], [info("y", 1, shape)], inits)
    x = rng.standard_normal(shape).astype(np.float32)
    x.reshape(-1)[[0, 5, 10, 15, 21]] = [np.nan, np.inf, -np.inf, 0.0, np.nan]
    if other != "computed" and cond == ("none" if x_is_computed else "all"):
        # The condition picks the constant everywhere: nothing is computed.
        with pytest.raises(ai3.UnsupportedOperation, match="not computed from its input"):
            _against_ort(model, {"x": x})
        return
    _against_ort(model, {"x": x})


@pytest.mark.parametrize(
    "data_shape,axis,indices",
    [
        ((16, 1), 0, np.arange(16).reshape(2, 1, 1, 8)),  # the export of HF's mask[arange(B)[...], arange(S)]
        ((4, 6), 1, np.arange(1, 6, 2).reshape(1, 3)),
        ((3, 8, 2), 1, np.arange(8).reshape(2, 2, 2)),
    ],
)
def test_onnx_gather_by_nd_constant_indices_in_a_run(data_shape, axis, indices):
    onnx = pytest.importorskip("onnx")
    info = onnx.helper.make_tensor_value_info
    out_shape = data_shape[:axis] + indices.shape + data_shape[axis + 1 :]
    nodes = [
        onnx.helper.make_node("Relu", ["x"], ["r"]),
        onnx.helper.make_node("Gather", ["r", "i"], ["y"], axis=axis),
    ]
    inits = [onnx.numpy_helper.from_array(indices.astype(np.int64), "i")]
    model = _onnx_model(nodes, [info("x", 1, data_shape)], [info("y", 1, out_shape)], inits)
    _against_ort(model, {"x": np.random.default_rng(0).standard_normal(data_shape).astype(np.float32)})


def test_onnx_gather_by_nd_indices_out_of_order_is_refused_naming_the_node():
    onnx = pytest.importorskip("onnx")
    info = onnx.helper.make_tensor_value_info
    nodes = [
        onnx.helper.make_node("Relu", ["x"], ["r"]),
        onnx.helper.make_node("Gather", ["r", "i"], ["y"], axis=0, name="pick"),
    ]
    inits = [onnx.numpy_helper.from_array(np.array([[3, 0], [1, 2]], np.int64), "i")]
    model = _onnx_model(nodes, [info("x", 1, (4, 2))], [info("y", 1, (2, 2, 2))], inits)
    with pytest.raises(ai3.UnsupportedOperation, match=r"pick.*evenly spaced"):
        ai3.onnx.swap_backend(model.SerializeToString(), sample_input_shape=(4, 2))


@pytest.mark.parametrize("exclusive", [0, 1])
@pytest.mark.parametrize("reverse", [0, 1])
@pytest.mark.parametrize("axis,elem", [(1, 1), (-1, 1), (0, 7), (2, 7)])
def test_onnx_cumsum(exclusive, reverse, axis, elem):
    onnx = pytest.importorskip("onnx")
    info = onnx.helper.make_tensor_value_info
    shape = (2, 3, 5)
    nodes = [onnx.helper.make_node("CumSum", ["x", "axis"], ["y"], exclusive=exclusive, reverse=reverse)]
    inits = [onnx.numpy_helper.from_array(np.asarray(axis, np.int64), "axis")]
    model = _onnx_model(nodes, [info("x", elem, shape)], [info("y", elem, shape)], inits)
    rng = np.random.default_rng(axis + 5)
    x = rng.standard_normal(shape).astype(np.float32) if elem == 1 else rng.integers(-9, 9, shape).astype(np.int64)
    _against_ort(model, {"x": x})


@pytest.mark.parametrize(
    "data_shape,axis,index_shape,constant",
    [
        ((3, 4), 1, (3, 4), False),
        ((3, 4), 0, (2, 4), False),
        ((2, 3, 5), -1, (2, 3, 7), False),
        ((2, 3, 5), 1, (2, 2, 5), True),
        ((4, 6), 1, (4, 3), True),
    ],
)
def test_onnx_gather_elements(data_shape, axis, index_shape, constant):
    onnx = pytest.importorskip("onnx")
    info = onnx.helper.make_tensor_value_info
    rng = np.random.default_rng(len(index_shape))
    size = data_shape[axis]
    index = rng.integers(-size, size, index_shape).astype(np.int64)  # negative ones count from the end
    data = rng.standard_normal(data_shape).astype(np.float32)
    out = info("y", 1, index_shape)
    if constant:
        nodes = [onnx.helper.make_node("GatherElements", ["data", "i"], ["y"], axis=axis)]
        inits = [onnx.numpy_helper.from_array(data, "data")]
        model = _onnx_model(nodes, [info("i", onnx.TensorProto.INT64, index_shape)], [out], inits)
        _against_ort(model, {"i": index})
    else:
        nodes = [
            onnx.helper.make_node("Relu", ["x"], ["r"]),
            onnx.helper.make_node("GatherElements", ["r", "i"], ["y"], axis=axis),
        ]
        inputs = [info("x", 1, data_shape), info("i", onnx.TensorProto.INT64, index_shape)]
        _against_ort(_onnx_model(nodes, inputs, [out]), {"x": data, "i": index})


def test_onnx_cast_to_int32_computes_in_int64():
    # RoBERTa's export: Cast(Not(Equal(ids, pad)), INT32), CumSum, Mul, Cast(INT64), Add.
    onnx = pytest.importorskip("onnx")
    info = onnx.helper.make_tensor_value_info
    h = onnx.helper
    nodes = [
        h.make_node("Equal", ["ids", "pad"], ["eq"]),
        h.make_node("Not", ["eq"], ["keep"]),
        h.make_node("Cast", ["keep"], ["mask"], to=onnx.TensorProto.INT32),
        h.make_node("CumSum", ["mask", "axis"], ["count"]),
        h.make_node("Mul", ["count", "mask"], ["kept"]),
        h.make_node("Cast", ["kept"], ["long"], to=onnx.TensorProto.INT64),
        h.make_node("Add", ["long", "pad"], ["y"]),
    ]
    inits = [
        onnx.numpy_helper.from_array(np.asarray(1, np.int64), "pad"),
        onnx.numpy_helper.from_array(np.asarray(1, np.int64), "axis"),
    ]
    model = _onnx_model(nodes, [info("ids", 7, (2, 9))], [info("y", 7, (2, 9))], inits)
    ids = np.random.default_rng(3).integers(2, 50, (2, 9)).astype(np.int64)
    ids[0, -3:] = 1
    _against_ort(model, {"ids": ids})


class MultiQuery(nn.Module):
    """Falcon's attention: a fused qkv projection split by list indices
    (qkv[..., [-2], :] keeps its axis), one key/value head that sdpa
    broadcasts to the query heads."""

    def __init__(self, heads=4, head_size=8):
        super().__init__()
        self.heads, self.head_size = heads, head_size
        self.qkv = nn.Linear(heads * head_size, (heads + 2) * head_size)

    def forward(self, x):
        b, s, _ = x.shape
        fused = self.qkv(x).view(b, s, self.heads + 2, self.head_size)
        q = fused[..., :-2, :].transpose(1, 2)
        k = fused[..., [-2], :].transpose(1, 2)
        v = fused[..., [-1], :].transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return y.transpose(1, 2).reshape(b, s, -1)


@pytest.mark.parametrize("dtype", DTYPES)
def test_list_indices_and_sdpa_broadcast_over_heads(dtype):
    torch.manual_seed(0)
    _check(MultiQuery().to(dtype), torch.randn(2, 5, 32, dtype=dtype), dtype=dtype)


@pytest.mark.parametrize(
    "index,match",
    [
        (lambda x: x[..., [0, 2, 1], :], "not evenly spaced"),
        (lambda x: x[:, [0], [1]], "only ints, slices"),
    ],
)
def test_other_list_indices_are_refused_naming_the_node(index, match):
    class M(nn.Module):
        def forward(self, x):
            return index(x)

    with pytest.raises(ai3.UnsupportedOperation, match=match):
        ai3.swap_backend(M(), sample_input_shape=(2, 4, 3, 5))


if __name__ == "__main__":
    pytest_main.run(__file__)
