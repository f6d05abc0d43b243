"""swap_backend(..., fallback=True) in PyTorch: a model with ops ai3 lacks
runs split between ai3 (the supported runs of the graph, as ai3.Models)
and PyTorch (the rest), matches the model, and fallbacks() names the ops
that fell back and why; without the opt-in the refusal lists every
unsupported node.

Tolerance: tolerances.tolerance(dtype) relative to max|torch|.
"""

from __future__ import annotations

import numpy as np
import pytest
import pytest_main
import torch
import torch.nn.functional as F
import torchvision
from tolerances import DTYPES, tolerance
from torch import nn

import ai3
from ai3.torch.fallback import FallbackModule

torch.set_num_threads(2)


class Lacking(nn.Module):
    """Convolutions around two ops the core lacks (cumprod, expm1), and a
    residual that crosses the cumprod."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        y = F.relu(self.conv(x))
        z = torch.cumprod(y, dim=2)
        y = F.relu(self.conv2(z)) + y
        y = torch.flatten(F.adaptive_avg_pool2d(y, 1), 1)
        return self.fc(torch.expm1(y))


def _close(got, want, dtype):
    assert got.shape == want.shape
    assert (got - want).abs().max().item() <= tolerance(dtype) * max(1.0, want.abs().max().item())


def test_refusal_lists_every_unsupported_node():
    with pytest.raises(ai3.UnsupportedOperation) as info:
        ai3.swap_backend(Lacking().eval(), sample_input_shape=(1, 3, 8, 8))
    text = str(info.value)
    assert "2 nodes have no ai3 equivalent" in text
    assert "fx node 'cumprod'" in text and "fx node 'expm1'" in text
    assert "fallback=True" in text


@pytest.mark.parametrize("dtype", DTYPES)
def test_fallback_runs_the_rest_in_ai3(dtype):
    net = Lacking().to(dtype).eval()
    split = ai3.swap_backend(net, sample_input_shape=(2, 3, 8, 8), fallback=True)
    assert isinstance(split, FallbackModule)
    fell = {f.op: f.reason for f in split.fallbacks()}
    assert set(fell) == {"cumprod", "expm1"}
    assert all("no equivalent" in why for why in fell.values())
    ops = {op for _, op, _ in split.layers()}
    assert {"conv2d", "linear", "add"} <= ops  # the supported runs are in ai3
    assert len(split.islands()) == 3
    for batch in (2, 3):
        x = torch.randn(batch, 3, 8, 8, dtype=dtype)
        with torch.no_grad():
            _close(split(x), net(x), dtype)


def test_fallback_of_a_whole_supported_model_is_an_ai3_model():
    net = torchvision.models.resnet18(weights=None).eval()
    built = ai3.swap_backend(net, sample_input_shape=(1, 3, 64, 64), fallback=True)
    assert isinstance(built, ai3.Model) and built.fallbacks() == []


def test_fallback_of_a_torchvision_model_with_a_lacking_op():
    """GoogLeNet's eval-mode branch concatenation is supported; a model
    whose stem is swapped for a cumulative op ai3 lacks falls back there only."""
    net = torchvision.models.squeezenet1_1(weights=None).eval()

    class Stem(nn.Module):
        def forward(self, x):
            return torch.cumprod(x, dim=3) / x.shape[3]

    wrapped = nn.Sequential(Stem(), net).eval()
    split = ai3.swap_backend(wrapped, sample_input_shape=(1, 3, 64, 64), fallback=True)
    assert [f.op for f in split.fallbacks()] == ["cumprod"]
    x = torch.randn(2, 3, 64, 64)
    with torch.no_grad():
        _close(split(x), wrapped(x), torch.float32)


def test_fallback_needs_a_sample_shape():
    with pytest.raises(ai3.InvalidArgument, match="needs sample_input_shape"):
        ai3.swap_backend(Lacking().eval(), fallback=True)


class IdsThenLacking(nn.Module):
    """int64 ids through integer arithmetic and an embedding (a run whose
    input is int64), then an op ai3 lacks (cumprod), then a head."""

    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(50, 8)
        self.head = nn.Linear(8, 4)

    def forward(self, ids):
        return self.head(torch.cumprod(self.tok(ids * 2 + 1), dim=1))


def test_a_run_reading_token_ids_is_an_island():
    net = IdsThenLacking().eval()
    ids = torch.randint(0, 24, (2, 6), generator=torch.Generator().manual_seed(1))
    split = ai3.swap_backend(net, sample_input_shape=[ids], fallback=True)
    assert [(f.name, f.op) for f in split.fallbacks()] == [("cumprod", "cumprod")]
    assert len(split.islands()) == 2  # the ids' run (int64 input) and the head
    assert {"gather", "mul", "add", "linear"} <= {op for _, op, _ in split.layers()}
    for batch in (2, 3):
        x = torch.randint(0, 24, (batch, 6), generator=torch.Generator().manual_seed(batch))
        with torch.no_grad():
            _close(split(x), net(x), torch.float32)


class TinyLM(nn.Module):
    """Token ids (int64) through an embedding, a pre-norm attention block and
    a head: the embedding renormalises its rows (max_norm), which ai3 has no
    equivalent of, so the lookup falls back and the block and head run in
    ai3."""

    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(50, 32, max_norm=1.0)
        self.pos = nn.Parameter(torch.randn(1, 12, 32) * 0.1)
        self.norm1 = nn.LayerNorm(32)
        self.attn = nn.MultiheadAttention(32, 4, batch_first=True)
        self.norm2 = nn.LayerNorm(32)
        self.mlp = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 32))
        self.head = nn.Linear(32, 50)

    def forward(self, ids):
        h = self.tok(ids) + self.pos
        x = self.norm1(h)
        h = h + self.attn(x, x, x, need_weights=False)[0]
        h = h + self.mlp(self.norm2(h))
        return self.head(h)


@pytest.mark.parametrize("dtype", DTYPES)
def test_token_ids_fall_back_to_the_embedding_and_the_rest_runs_in_ai3(dtype):
    net = TinyLM().to(dtype).eval()
    ids = torch.randint(0, 50, (2, 12), generator=torch.Generator().manual_seed(0))
    with pytest.raises(ai3.UnsupportedOperation, match="Embedding"):
        ai3.swap_backend(net, sample_input_shape=[ids])
    split = ai3.swap_backend(net, sample_input_shape=[ids], fallback=True)  # an example tensor: ids are int64
    assert [(f.name, f.op) for f in split.fallbacks()] == [("tok", "tok")]
    ops = {op for _, op, _ in split.layers()}
    assert {"multihead_attention", "layernorm", "linear", "add"} <= ops  # the whole block, one island
    assert "gelu" not in ops  # fused into the MLP's first linear
    assert len(split.islands()) == 1
    for batch in (2, 5):
        x = torch.randint(0, 50, (batch, 12), generator=torch.Generator().manual_seed(batch))
        with torch.no_grad():
            _close(split(x), net(x), dtype)


def _onnx_lacking(dtype):
    """Conv -> Relu -> Round (no ai3 equivalent) -> Conv, plus a residual
    Add that crosses the Round."""
    from onnx import TensorProto, helper, numpy_helper

    elem = TensorProto.FLOAT if dtype == np.float32 else TensorProto.DOUBLE
    rng = np.random.default_rng(0)
    w1 = numpy_helper.from_array((rng.standard_normal((8, 3, 3, 3)) * 0.3).astype(dtype), "w1")
    w2 = numpy_helper.from_array((rng.standard_normal((8, 8, 3, 3)) * 0.1).astype(dtype), "w2")
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Round", ["r1"], ["cs"], name="round"),
        helper.make_node("Conv", ["cs", "w2"], ["c2"], pads=[1, 1, 1, 1], name="conv2"),
        helper.make_node("Add", ["c2", "r1"], ["y"], name="residual"),
    ]
    graph = helper.make_graph(
        nodes,
        "lacking",
        [helper.make_tensor_value_info("x", elem, ["N", 3, 8, 8])],
        [helper.make_tensor_value_info("y", elem, ["N", 8, 8, 8])],
        [w1, w2],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8  # what older onnxruntimes read
    return model


@pytest.mark.parametrize("dtype", [np.float32])  # ONNX Runtime has no float64 Conv to compare with
def test_onnx_fallback_runs_the_rest_in_ai3(dtype):
    import onnxruntime

    import ai3.onnx
    from ai3.onnx.fallback import FallbackSession

    proto = _onnx_lacking(dtype)
    with pytest.raises(ai3.UnsupportedOperation, match="Round"):
        ai3.onnx.swap_backend(proto, sample_input_shape=(2, 3, 8, 8))
    split = ai3.onnx.swap_backend(proto, sample_input_shape=(2, 3, 8, 8), fallback=True)
    assert isinstance(split, FallbackSession)
    assert [(f.name, f.op) for f in split.fallbacks()] == [("round", "Round")]
    assert len(split.islands()) == 2  # conv1+relu1, and conv2+residual (two inputs)
    session = onnxruntime.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    for batch in (2, 3):
        x = np.random.default_rng(batch).standard_normal((batch, 3, 8, 8)).astype(dtype)
        (want,) = session.run(None, {"x": x})
        got = split(x)
        np.testing.assert_allclose(
            got, want, rtol=0, atol=(1e-4 if dtype == np.float32 else 1e-10) * max(1.0, np.abs(want).max())
        )
        (again,) = split.run(None, {"x": x})
        np.testing.assert_array_equal(again, got)


if __name__ == "__main__":
    pytest_main.run(__file__)
