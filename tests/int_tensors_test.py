"""Integer and boolean tensors (issue 17): int64 token ids, bool and int64
attention masks, embeddings, casts, comparisons, where / masked_fill, in
the core's layers, in ai3.Model (inputs of different dtypes, NumPy int64
arrays in and out), through torch's swap_backend and through the ONNX
export of the same model (against ONNX Runtime). Float ops refuse integer
tensors with ai3.DTypeError naming the layer; an index out of range raises
naming the layer.

Tolerance: tolerances.tolerance(dtype) relative to max|reference|;
integer and bool results exactly.
"""

from __future__ import annotations

import io

import numpy as np
import pytest
import pytest_main
import torch
import torch.nn.functional as F
from tolerances import DTYPES, tolerance
from torch import nn

import ai3
import ai3.onnx
from ai3 import layers

torch.set_num_threads(2)


def _close(got, want, dtype):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    assert np.abs(got - want).max(initial=0.0) <= tolerance(dtype) * max(1.0, np.abs(want).max(initial=0.0))


class TinyEncoder(nn.Module):
    """What a BERT-style encoder does with its integer inputs: token and
    position embeddings (positions from arange, folded while tracing),
    token types, the additive mask (1 - mask) * min from an int64
    attention mask, a padding mask from the ids (ids == 0) applied by
    masked_fill, and a where."""

    def __init__(self, vocab=30, hidden=16, length=7):
        super().__init__()
        self.tok = nn.Embedding(vocab, hidden)
        self.pos = nn.Embedding(length, hidden)
        self.typ = nn.Embedding(2, hidden)
        self.q = nn.Linear(hidden, hidden)
        self.k = nn.Linear(hidden, hidden)
        self.head = nn.Linear(hidden, 3)
        self.length = length

    def forward(self, input_ids, attention_mask, token_type_ids):
        positions = torch.arange(self.length)
        h = self.tok(input_ids) + self.pos(positions) + self.typ(token_type_ids)
        mask = attention_mask[:, None, :].to(h.dtype)
        additive = (1.0 - mask) * torch.finfo(h.dtype).min
        scores = self.q(h) @ self.k(h).transpose(1, 2) + additive
        scores = scores.masked_fill(input_ids[:, None, :] == 0, -1e4)
        h = F.softmax(scores, dim=-1) @ h
        h = torch.where(token_type_ids[:, :, None] > 0, h, -h)
        return self.head(h)


def _inputs(batch=2, length=7, seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, 30, (batch, length), generator=g)
    ids[0, -2:] = 0  # padding
    mask = torch.ones(batch, length, dtype=torch.int64)
    mask[0, -2:] = 0
    types = torch.randint(0, 2, (batch, length), generator=g)
    return ids, mask, types


@pytest.mark.parametrize("dtype", DTYPES)
def test_encoder_through_swap_backend_matches_torch(dtype):
    net = TinyEncoder().to(dtype).eval()
    ids, mask, types = _inputs()
    model = ai3.swap_backend(net, sample_input_shape=[ids, mask, types])
    assert model.input_names == ["input_ids", "attention_mask", "token_type_ids"]
    assert [d.name for d in model.input_dtypes] == ["int64", "int64", "int64"]
    ops = {op for _, op, _ in model.layers()}
    assert {"gather", "cast", "equal", "where", "greater"} <= ops, ops
    for batch in (2, 5):  # the batch is free; the length was folded (arange)
        x = _inputs(batch, seed=batch)
        with torch.no_grad():
            _close(model(*x), net(*x), dtype)
        _close(model(input_ids=x[0], attention_mask=x[1], token_type_ids=x[2]), net(*x).detach(), dtype)


def test_model_inputs_keep_their_dtype_and_name_the_wrong_one():
    net = TinyEncoder().eval()
    ids, mask, types = _inputs()
    model = ai3.swap_backend(net, sample_input_shape=[ids, mask, types])
    with pytest.raises(ai3.DTypeError, match="model input 'attention_mask' is float32, the model takes int64"):
        model(ids, mask.float(), types)


def test_onnx_export_matches_onnxruntime():
    ort = pytest.importorskip("onnxruntime")
    net = TinyEncoder().eval()
    ids, mask, types = _inputs()
    buf = io.BytesIO()
    names = ["input_ids", "attention_mask", "token_type_ids"]
    torch.onnx.export(
        net, (ids, mask, types), buf, input_names=names, output_names=["logits"], dynamo=False, opset_version=17
    )
    model = ai3.onnx.swap_backend(buf.getvalue(), sample_input_shape=[tuple(ids.shape)] * 3)
    feeds = dict(zip(names, (t.numpy() for t in (ids, mask, types))))
    want = ort.InferenceSession(buf.getvalue(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    _close(model(*feeds.values()), want, np.float32)
    with torch.no_grad():
        _close(want, net(ids, mask, types), np.float32)


def test_numpy_int64_in_and_out_of_the_core():
    """A gather of int64 data by int64 indices: int64 in, int64 out."""
    table = np.arange(12, dtype=np.int64).reshape(4, 3) * 10
    emb = layers.Layer("gather", {"axis": 0}, {"other": table}, name="emb")
    ids = np.array([[3, -1], [0, 2]], np.int64)
    got = emb(ids)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, table[ids])
    both = layers.Layer("gather", {"axis": 1}, {}, name="g")
    np.testing.assert_array_equal(both(table, np.array([2, 0], np.int64)), table[:, [2, 0]])
    cmp = layers.Layer("less", {}, {}, name="lt")(np.array([1, 5], np.int64), np.array([3, 3], np.int64))
    assert cmp.dtype == np.bool_ and cmp.tolist() == [True, False]


def test_cast_rounds_toward_zero_and_maps_nan_like_torch():
    x = np.array([2.7, -2.7, 0.5, -0.5, 1e19, -1e19, np.nan, np.inf], np.float32)
    got = layers.Layer("cast", {"to": "int64"}, {}, name="c")(x)
    want = torch.from_numpy(x).to(torch.int64).numpy()  # x86: INT64_MIN past the range
    np.testing.assert_array_equal(got, want)
    assert layers.Layer("cast", {"to": "bool"}, {}, name="b")(x).tolist() == (x != 0).tolist()


def test_float_ops_refuse_integer_tensors_naming_the_layer():
    with pytest.raises(ai3.DTypeError, match=r"relu layer 'act'.*input is int64; relu takes float32 or float64"):
        layers.Layer("relu", {}, {}, name="act")(np.zeros((2, 3), np.int64))
    with pytest.raises(ai3.DTypeError, match=r"add layer 'plus'.*input 0 is bool"):
        layers.Layer("add", {}, {}, name="plus")(np.zeros(3, np.bool_), np.zeros(3, np.bool_))
    with pytest.raises(ai3.DTypeError, match=r"gather layer 'emb'.*indices are float32; gather takes int64"):
        layers.Layer("gather", {"axis": 0}, {"other": np.zeros((4, 2), np.float32)}, name="emb")(
            np.zeros(2, np.float32)
        )
    with pytest.raises(ai3.DTypeError, match=r"where layer 'w'.*takes a bool condition"):
        layers.Layer("where", {}, {}, name="w")(
            np.zeros(2, np.float32), np.zeros(2, np.float32), np.zeros(2, np.float32)
        )


def test_index_out_of_range_raises_naming_the_layer():
    emb = layers.Layer("gather", {"axis": 0}, {"other": np.ones((4, 2), np.float32)}, name="wte")
    for bad in (4, -5, 2**62):
        with pytest.raises(
            ai3.InvalidArgument, match=rf"gather layer 'wte'.*index {bad} .*out of range for axis 0 of size 4"
        ):
            emb(np.array([0, bad], np.int64))


class NotEmbeddable(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(10, 4, max_norm=1.0)

    def forward(self, ids):
        return self.tok(ids)


def test_embedding_with_max_norm_is_refused_naming_the_node():
    with pytest.raises(ai3.UnsupportedOperation, match=r"tok.*max_norm"):
        ai3.swap_backend(NotEmbeddable().eval(), sample_input_shape=[torch.zeros(2, 3, dtype=torch.int64)])


# ONNX graphs whose inputs and outputs are declared narrower than the core
# keeps them (ai3.Model.narrow_inputs): TF exports' int32 ids, uint8 images,
# float16 models. They run widened (int64, float32) and return the declared
# types, as ONNX Runtime's do.


def _onnx_graph(nodes, inputs, outputs, inits=()):
    from onnx import helper

    g = helper.make_graph(nodes, "narrow", inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def _ort_run(m, feeds):
    ort = pytest.importorskip("onnxruntime")
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def test_uint8_image_and_int32_ids_run_widened_and_return_declared_types():
    """A uint8 image normalised in the graph (Cast, Sub, Div, Conv) and
    int32 token ids through an embedding Gather and an int32 Add, with an
    int32 output: the ai3.Model takes the arrays of the declared types and
    returns each output in its declared type, equal to ONNX Runtime's."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(3)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    table = rng.standard_normal((50, 6)).astype(np.float32)
    nodes = [
        helper.make_node("Cast", ["image"], ["f"], to=TensorProto.FLOAT),
        helper.make_node("Sub", ["f", "mean"], ["centred"]),
        helper.make_node("Div", ["centred", "std"], ["normed"]),
        helper.make_node("Conv", ["normed", "w"], ["features"], pads=[1, 1, 1, 1]),
        helper.make_node("Gather", ["table", "ids"], ["embedded"]),
        helper.make_node("Add", ["ids", "one"], ["next_ids"]),
    ]
    inits = [
        numpy_helper.from_array(np.array([[[123.0]], [[117.0]], [[104.0]]], np.float32), "mean"),
        numpy_helper.from_array(np.array([[[58.0]], [[57.0]], [[57.5]]], np.float32), "std"),
        numpy_helper.from_array(w, "w"),
        numpy_helper.from_array(table, "table"),
        numpy_helper.from_array(np.array(1, np.int32), "one"),
    ]
    m = _onnx_graph(
        nodes,
        [
            helper.make_tensor_value_info("image", TensorProto.UINT8, [1, 3, 8, 8]),
            helper.make_tensor_value_info("ids", TensorProto.INT32, [2, 5]),
        ],
        [
            helper.make_tensor_value_info("features", TensorProto.FLOAT, [1, 4, 8, 8]),
            helper.make_tensor_value_info("embedded", TensorProto.FLOAT, [2, 5, 6]),
            helper.make_tensor_value_info("next_ids", TensorProto.INT32, [2, 5]),
        ],
        inits,
    )
    image = rng.integers(0, 256, (1, 3, 8, 8)).astype(np.uint8)
    ids = rng.integers(0, 49, (2, 5)).astype(np.int32)
    model = ai3.onnx.swap_backend(m)
    got = model(image, ids)
    want = _ort_run(m, {"image": image, "ids": ids})
    assert [g.dtype for g in got] == [np.float32, np.float32, np.int32]
    _close(got[0], want[0], np.float32)
    _close(got[1], want[1], np.float32)
    np.testing.assert_array_equal(got[2], want[2])
    # The declared types, and the wider ones the core keeps, are taken;
    # another type is refused naming the input.
    np.testing.assert_array_equal(model(image, ids.astype(np.int64))[2], want[2])
    with pytest.raises(ai3.DTypeError, match="'ids'"):
        model(image, ids.astype(np.int16))


def test_narrow_integer_outputs_wrap_as_their_type():
    """uint8 + 200 computed in int64 and returned as uint8 wraps modulo 256,
    as the uint8 addition ONNX Runtime runs does."""
    from onnx import TensorProto, helper, numpy_helper

    m = _onnx_graph(
        [helper.make_node("Add", ["x", "c"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.UINT8, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, [2, 4])],
        [numpy_helper.from_array(np.array(200, np.uint8), "c")],
    )
    x = np.array([[0, 1, 55, 56], [100, 200, 250, 255]], np.uint8)
    got = ai3.onnx.swap_backend(m)(x)
    assert got.dtype == np.uint8
    np.testing.assert_array_equal(got, _ort_run(m, {"x": x})[0])


def test_float16_model_computes_in_float32_and_returns_float16():
    """A float16 graph (input, weights and output): ai3 computes it in
    float32 and returns float16, within float16's rounding of ONNX
    Runtime's result."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(4)
    w = (rng.standard_normal((5, 3, 3, 3)) * 0.2).astype(np.float16)
    b = rng.standard_normal(5).astype(np.float16)
    m = _onnx_graph(
        [
            helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["c"], ["y"]),
        ],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [1, 3, 6, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [1, 5, 6, 6])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")],
    )
    x = rng.standard_normal((1, 3, 6, 6)).astype(np.float16)
    model = ai3.onnx.swap_backend(m)
    assert model.dtype == np.float32
    got = model(x)
    assert got.dtype == np.float16
    want = _ort_run(m, {"x": x})[0]
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2e-3, atol=2e-3)


if __name__ == "__main__":
    pytest_main.run(__file__)
