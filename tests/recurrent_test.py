"""Recurrent layers (issue 17): ONNX's LSTM, GRU and RNN and PyTorch's
nn.LSTM, nn.GRU and nn.RNN, unrolled into core layers (ai3.recurrent).

- ONNX operators over a grid of directions, biases, initial states
  (constant and computed), peepholes, clip, input_forget,
  linear_before_reset and activations, against ONNX Runtime; layout 1,
  which ONNX Runtime refuses, against ONNX's reference implementation.
- torch's modules (several layers, both directions, batch_first) as ONNX
  exports against torch, and through ai3.swap_backend against torch, at
  the sample's shape and at others (the model is rebuilt per shape).
- What is refused, naming the node: partial sequence_lens, activations
  ai3 lacks, an unknown sequence length, nn.LSTM's proj_size; and a graph
  of fixed dims called at others raises, never truncates.

Tolerance: 1e-5 absolute (float32; the values are O(1)).
"""

from __future__ import annotations

import io

import numpy as np
import onnx
import pytest
import pytest_main
import torch
from onnx import TensorProto, helper, numpy_helper
from torch import nn
from tuning_fixtures import cache, counting  # noqa: F401 (fixtures: a private tuning cache)

import ai3
import ai3.onnx

torch.set_num_threads(2)
ort = pytest.importorskip("onnxruntime")

TOL = 1e-5
GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


def _recurrent_model(kind, rng, *, direction="forward", layout=0, bias=True, state=None, peepholes=False,
                     steps=5, batch=3, inputs=4, hidden=6, **attrs):  # fmt: skip
    """One ONNX node of `kind` (state: None, "constant" or "input") and
    the feeds it runs on."""
    gates, count = GATES[kind], 2 if direction == "bidirectional" else 1
    w = (rng.standard_normal((count, gates * hidden, inputs)) * 0.5).astype(np.float32)
    r = (rng.standard_normal((count, gates * hidden, hidden)) * 0.5).astype(np.float32)
    inits = [numpy_helper.from_array(w, "W"), numpy_helper.from_array(r, "R")]
    names = ["x", "W", "R", ""]
    if bias:
        inits.append(numpy_helper.from_array(rng.standard_normal((count, 2 * gates * hidden)).astype(np.float32), "B"))
        names[3] = "B"
    names.append("")  # sequence_lens
    x_shape = [steps, batch, inputs] if layout == 0 else [batch, steps, inputs]
    state_shape = [count, batch, hidden] if layout == 0 else [batch, count, hidden]
    graph_inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)]
    feeds = {"x": rng.standard_normal(x_shape).astype(np.float32)}
    for which in ("h0", "c0") if kind == "LSTM" else ("h0",):
        value = rng.standard_normal(state_shape).astype(np.float32)
        if state == "constant":
            inits.append(numpy_helper.from_array(value, which))
        elif state == "input":
            graph_inputs.append(helper.make_tensor_value_info(which, TensorProto.FLOAT, state_shape))
            feeds[which] = value
        names.append(which if state else "")
    if peepholes:
        inits.append(numpy_helper.from_array(rng.standard_normal((count, 3 * hidden)).astype(np.float32), "P"))
        names.append("P")
    while names[-1] == "":
        names.pop()
    if layout:
        attrs["layout"] = 1
    outputs = ["Y", "Y_h"] + (["Y_c"] if kind == "LSTM" else [])
    node = helper.make_node(kind, names, outputs, hidden_size=hidden, direction=direction, name="rnn", **attrs)
    g = helper.make_graph(
        [node], "g", graph_inputs, [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs], inits
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
    m.ir_version = 8
    return onnx.shape_inference.infer_shapes(m), feeds


def _reference(m, feeds):
    if any(a.name == "layout" and a.i == 1 for a in m.graph.node[0].attribute):
        from onnx.reference import ReferenceEvaluator  # (ONNX Runtime refuses layout 1)

        return ReferenceEvaluator(m).run(None, feeds)
    return ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)


def _close(got, want):
    for g, w in zip(got, want):
        assert np.shape(g) == np.shape(w)
        np.testing.assert_allclose(np.asarray(g), w, rtol=0, atol=TOL)


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("state", [None, "constant", "input"])
def test_onnx_operators_match_onnxruntime(kind, direction, state):
    rng = np.random.default_rng(len(kind) + len(direction))
    m, feeds = _recurrent_model(kind, rng, direction=direction, state=state)
    _close(ai3.onnx.swap_backend(m)(**feeds), _reference(m, feeds))


@pytest.mark.parametrize(
    "kind,options",
    [
        ("LSTM", {"peepholes": True, "state": "constant"}),
        ("LSTM", {"peepholes": True, "direction": "bidirectional", "state": "input"}),
        ("LSTM", {"clip": 0.7}),
        ("LSTM", {"input_forget": 1}),
        ("LSTM", {"bias": False, "steps": 1}),
        ("LSTM", {"activations": ["Relu", "Tanh", "Sigmoid"]}),
        ("GRU", {"linear_before_reset": 1}),
        ("GRU", {"linear_before_reset": 1, "direction": "bidirectional", "state": "constant"}),
        ("GRU", {"clip": 0.5, "activations": ["Sigmoid", "Relu"]}),
        ("RNN", {"activations": ["Relu"]}),
        ("RNN", {"direction": "bidirectional", "activations": ["Tanh", "Relu"], "state": "constant"}),
        ("LSTM", {"layout": 1, "direction": "bidirectional", "state": "constant"}),
        ("GRU", {"layout": 1, "direction": "reverse", "state": "input"}),
        ("RNN", {"layout": 1}),
    ],
)
def test_onnx_operator_options_match(kind, options):
    rng = np.random.default_rng(7)
    m, feeds = _recurrent_model(kind, rng, **options)
    _close(ai3.onnx.swap_backend(m)(**feeds), _reference(m, feeds))


def _torch_module(cls, rng_seed=0, **kwargs):
    torch.manual_seed(rng_seed)
    return cls(4, 6, **kwargs).eval()


def _outputs(result):
    """torch's (output, h_n) / (output, (h_n, c_n)) flattened."""
    out, state = result
    return [out, *(state if isinstance(state, tuple) else (state,))]


@pytest.mark.parametrize("cls", [nn.LSTM, nn.GRU, nn.RNN])
@pytest.mark.parametrize("batch_first", [False, True])
def test_torch_exports_match_torch_at_every_shape(cls, batch_first):
    """Two bidirectional layers exported with dynamic axes: built for one
    shape, called at another (rebuilt for it)."""
    m = _torch_module(cls, num_layers=2, bidirectional=True, batch_first=batch_first)
    x = torch.randn(3, 5, 4)
    f = io.BytesIO()
    torch.onnx.export(
        m, (x,), f, opset_version=17, dynamo=False, input_names=["x"], dynamic_axes={"x": {0: "a", 1: "b"}}
    )
    model = ai3.onnx.swap_backend(f.getvalue(), sample_input_shape=(3, 5, 4))
    for sample in (x, torch.randn(6, 2, 4)):
        with torch.no_grad():
            want = [t.numpy() for t in _outputs(m(sample))]
        _close(model(sample.numpy()), want)


class _Classifier(nn.Module):
    """A sequence classifier as tutorials write it: a zero initial state of
    the batch's size, the last step's output, a linear head."""

    def __init__(self, cls, bidirectional):
        super().__init__()
        self.cls = cls
        self.rnn = _torch_module(cls, num_layers=2, batch_first=True, bidirectional=bidirectional)
        self.head = nn.Linear(12 if bidirectional else 6, 3)

    def forward(self, x):
        h0 = torch.zeros(self.rnn.num_layers * (2 if self.rnn.bidirectional else 1), x.size(0), 6)
        state = (h0, torch.zeros_like(h0)) if self.cls is nn.LSTM else h0
        out, last = self.rnn(x, state)
        h_n = last[0] if self.cls is nn.LSTM else last
        return self.head(out[:, -1]) + h_n.sum(0).sum(-1, keepdim=True)


@pytest.mark.parametrize("cls", [nn.LSTM, nn.GRU, nn.RNN])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_torch_swap_backend_matches_torch_at_every_shape(cls, bidirectional):
    m = _Classifier(cls, bidirectional).eval()
    model = ai3.swap_backend(m, sample_input_shape=(3, 5, 4))
    for x in (torch.randn(3, 5, 4), torch.randn(2, 9, 4)):
        with torch.no_grad():
            want = m(x)
        np.testing.assert_allclose(model(x).numpy(), want.numpy(), rtol=0, atol=TOL)


class _SequenceFirst(nn.Module):
    """torch's default layout, (T, N, F): a zero initial state of the
    batch's size (dim 1), the last step by an int index along dim 0."""

    def __init__(self, cls):
        super().__init__()
        self.cls = cls
        self.rnn = _torch_module(cls, num_layers=2, bidirectional=True)
        self.head = nn.Linear(12, 3)

    def forward(self, x):
        h0 = torch.zeros(4, x.size(1), 6)
        out, _ = self.rnn(x, (h0, torch.zeros_like(h0)) if self.cls is nn.LSTM else h0)
        return self.head(out[-1])


@pytest.mark.parametrize("cls", [nn.LSTM, nn.GRU, nn.RNN])
def test_torch_sequence_first_matches_torch_at_every_shape(cls):
    """batch_first=False: the input's dim 0 is time, not the batch, so the
    model is built for the sample's shape and other shapes (another length,
    another batch) run in a model built for them."""
    m = _SequenceFirst(cls).eval()
    model = ai3.swap_backend(m, sample_input_shape=(5, 3, 4))
    for x in (torch.randn(5, 3, 4), torch.randn(8, 3, 4), torch.randn(5, 1, 4)):
        with torch.no_grad():
            want = m(x)
        np.testing.assert_allclose(model(x).numpy(), want.numpy(), rtol=0, atol=TOL)


def test_torch_time_axis_following_the_batch_is_refused():
    """A batch-first layer fed the model input transposed: its time axis is
    the input's dim 0, taken for the batch, and its steps are unrolled."""

    class Transposed(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.GRU(4, 6, batch_first=True)

        def forward(self, x):
            return self.rnn(x.transpose(0, 1))[0]

    with pytest.raises(ai3.UnsupportedOperation, match="rnn.*sequence length that depends"):
        ai3.swap_backend(Transposed().eval(), sample_input_shape=(5, 2, 4))


def test_torch_module_results_as_model_outputs():
    """A model returning the module's output, h_n and c_n (a flat tuple);
    the module's own nested (output, (h_n, c_n)) is refused by name."""

    class Flat(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = _torch_module(nn.LSTM, num_layers=2, batch_first=True)

        def forward(self, x):
            out, (h, c) = self.rnn(x)
            return out, h, c

    m = Flat().eval()
    model = ai3.swap_backend(m, sample_input_shape=(3, 5, 4))
    for x in (torch.randn(3, 5, 4), torch.randn(4, 2, 4)):
        with torch.no_grad():
            want = m(x)
        _close([t.numpy() for t in model(x)], [t.numpy() for t in want])

    class Nested(Flat):
        def forward(self, x):
            return self.rnn(x)

    with pytest.raises(ai3.UnsupportedOperation, match="nests a tuple"):
        ai3.swap_backend(Nested().eval(), sample_input_shape=(3, 5, 4))


def test_auto_times_the_unrolled_linear_layers(counting):
    """The unrolled layers carry their input shapes, so "auto" times each
    linear (the input projection over the whole sequence, the recurrent
    ones at (1, N, H)) in every frontend's lowering."""
    m = _Classifier(nn.LSTM, True).eval()
    model = ai3.swap_backend(m, {"linear": "auto"}, sample_input_shape=(3, 5, 4))
    assert counting.calls > 0
    x = torch.randn(3, 5, 4)
    with torch.no_grad():
        want = m(x)
    np.testing.assert_allclose(model(x).numpy(), want.numpy(), rtol=0, atol=TOL)
    calls = counting.calls
    onnx_model, feeds = _recurrent_model("GRU", np.random.default_rng(3), direction="bidirectional")
    _close(ai3.onnx.swap_backend(onnx_model, {"linear": "auto"})(**feeds), _reference(onnx_model, feeds))
    assert counting.calls > calls


def test_refusals_name_the_node():
    rng = np.random.default_rng(1)
    m, _ = _recurrent_model("LSTM", rng, activations=["HardSigmoid", "Tanh", "Tanh"])
    with pytest.raises(ai3.UnsupportedOperation, match="'rnn'.*HardSigmoid|'rnn'.*hardsigmoid"):
        ai3.onnx.swap_backend(m)
    m, _ = _recurrent_model("GRU", rng)
    lens = numpy_helper.from_array(np.array([5, 4, 5], np.int32), "lens")
    m.graph.initializer.append(lens)
    m.graph.node[0].input.append("lens")
    with pytest.raises(ai3.UnsupportedOperation, match="'rnn'.*sequence_lens"):
        ai3.onnx.swap_backend(m)
    m, _ = _recurrent_model("RNN", rng)
    m.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "steps"
    with pytest.raises(ai3.UnsupportedOperation, match="'rnn'.*sequence length"):
        ai3.onnx.swap_backend(m)

    class Projected(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.LSTM(4, 6, proj_size=3, batch_first=True)

        def forward(self, x):
            return self.rnn(x)[0]

    with pytest.raises(ai3.UnsupportedOperation, match="rnn.*proj_size"):
        ai3.swap_backend(Projected().eval(), sample_input_shape=(2, 5, 4))


def test_fixed_dims_called_at_other_shapes_raise():
    """A graph that fixes its sequence length, called with another: refused
    (as ONNX Runtime refuses it), never a truncated result."""
    m, feeds = _recurrent_model("LSTM", np.random.default_rng(2))
    model = ai3.onnx.swap_backend(m)
    with pytest.raises(ai3.ShapeError):
        model(np.zeros((7, 3, 4), np.float32))


if __name__ == "__main__":
    pytest_main.run(__file__)
