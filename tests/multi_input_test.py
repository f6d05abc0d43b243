"""ai3.Model with several named inputs and several outputs: the core's
Model (input ids -1 - k, set_outputs) and torch's swap_backend on modules
whose forward takes several tensors (by position and by name, later
arguments left at their defaults) or returns a tuple / dict; bad calls
(wrong count, names, dtype, shape) raise ai3 errors naming the input;
deepcopy / pickle / torch.save keep such a model working.

Tolerance: tolerances.tolerance(dtype) relative to max|torch|.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
import pytest_main
import torch
import torch.nn.functional as F
from round_trips import round_trips
from tolerances import DTYPES, tolerance
from torch import nn

import ai3
import ai3.onnx
from ai3 import _core, layers

torch.set_num_threads(2)


def _close(got, want, dtype):
    assert tuple(got.shape) == tuple(want.shape)
    assert (got - want).abs().max().item() <= tolerance(dtype) * max(1.0, want.abs().max().item())


class TwoInputs(nn.Module):
    """A residual of two streams: x through a conv, y added (a broadcast
    over the batch), and a mask the caller may leave out."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.fc = nn.Linear(16, 16)

    def forward(self, x, y, scale=None):
        h = F.relu(self.conv(x)) + self.fc(y)
        return h if scale is None else h * scale


class TwoOutputs(nn.Module):
    def __init__(self, as_dict: bool):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.fc = nn.Linear(4, 2)
        self.as_dict = as_dict

    def forward(self, x):
        features = self.conv(x)
        pooled = torch.flatten(F.adaptive_avg_pool2d(F.relu(features), 1), 1)
        logits = self.fc(pooled)
        return {"logits": logits, "features": features} if self.as_dict else (logits, features, logits)


@pytest.mark.parametrize("dtype", DTYPES)
def test_two_inputs_by_position_and_by_name(dtype):
    net = TwoInputs().to(dtype).eval()
    model = ai3.swap_backend(net, sample_input_shape=[(2, 3, 16, 16), (2, 4, 16, 16)])
    assert model.input_names == ["x", "y"]
    for batch in (2, 5):  # also at a batch size it was not traced at
        x, y = torch.randn(batch, 3, 16, 16, dtype=dtype), torch.randn(batch, 4, 16, 16, dtype=dtype)
        with torch.no_grad():
            want = net(x, y)
        _close(model(x, y), want, dtype)
        _close(model(y=y, x=x), want, dtype)
        _close(model(x, y=y), want, dtype)
        np.testing.assert_allclose(model(x.numpy(), y.numpy()), want.numpy(), rtol=0, atol=tolerance(dtype) * 10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("as_dict", [False, True], ids=["tuple", "dict"])
def test_several_outputs(as_dict, dtype):
    net = TwoOutputs(as_dict).to(dtype).eval()
    model = ai3.swap_backend(net, sample_input_shape=(2, 3, 10, 10))
    x = torch.randn(3, 3, 10, 10, dtype=dtype)
    with torch.no_grad():
        want = net(x)
    got = model(x)
    if as_dict:
        assert isinstance(got, dict) and list(got) == ["logits", "features"]
        for k in want:
            _close(got[k], want[k], dtype)
    else:
        assert isinstance(got, tuple) and len(got) == 3
        for g, w in zip(got, want):
            _close(g, w, dtype)


def test_bad_calls_name_the_input():
    net = TwoInputs().eval()
    model = ai3.swap_backend(net, sample_input_shape=[(1, 3, 16, 16), (1, 4, 16, 16)])
    x, y = torch.randn(1, 3, 16, 16), torch.randn(1, 4, 16, 16)
    with pytest.raises(ai3.InvalidArgument, match=r"takes 2 inputs \(x, y\), got 3"):
        model(x, y, y)
    with pytest.raises(ai3.InvalidArgument, match="'y' not given"):
        model(x)
    with pytest.raises(ai3.InvalidArgument, match="no input named 'mask'"):
        model(x, mask=y)
    with pytest.raises(ai3.InvalidArgument, match="'x' was given twice"):
        model(x, y, x=x)
    with pytest.raises(ai3.DTypeError, match="model input 'y' is float64"):
        model(x, y.double())
    with pytest.raises(ai3.ShapeError):
        model(x, torch.randn(1, 4, 16, 9))
    with pytest.raises(ai3.InvalidArgument, match="model input 'y' must be"):
        model(x, [1.0])


@pytest.mark.parametrize("dtype", DTYPES)
def test_round_trips_keep_several_inputs_and_outputs(dtype):
    net = TwoInputs().to(dtype).eval()
    model = ai3.swap_backend(net, sample_input_shape=[(1, 3, 16, 16), (1, 4, 16, 16)])
    x, y = torch.randn(2, 3, 16, 16, dtype=dtype), torch.randn(2, 4, 16, 16, dtype=dtype)
    want = model(x, y)
    for how, copied in round_trips(model).items():
        assert copied.input_names == ["x", "y"], how
        assert torch.equal(copied(x=x, y=y), want), how
    two = ai3.swap_backend(TwoOutputs(True).to(dtype).eval(), sample_input_shape=(1, 3, 8, 8))
    x = torch.randn(1, 3, 8, 8, dtype=dtype)
    want = two(x)
    for how, copied in round_trips(two).items():
        got = copied(x)
        assert list(got) == ["logits", "features"], how
        assert all(torch.equal(got[k], want[k]) for k in want), how


class Outputs(dict):
    """A dict subclass built from keywords, as Hugging Face's ModelOutput."""


def _decorated(forward):
    """A decorator taking (*args, **kwargs), as Hugging Face's forwards
    have (merge_with_config_defaults): it reads a keyword argument."""

    @functools.wraps(forward)
    def wrapper(self, *args, **kwargs):
        kwargs.setdefault("scale", None)
        return forward(self, *args, **kwargs)

    return wrapper


class Decorated(TwoInputs):
    @_decorated
    def forward(self, x, y=None, scale=None):
        h = F.relu(self.conv(x)) + (0 if y is None else self.fc(y))
        return Outputs(h=h if scale is None else h * scale, conv=self.conv(x))


@pytest.mark.parametrize("dtype", DTYPES)
def test_inputs_by_name_and_decorated_forward(dtype):
    """A mapping sample_input_shape names forward's arguments (the others at
    their defaults); a decorated forward traces as called; a dict subclass
    comes back as that class, also through a round trip."""
    net = Decorated().to(dtype).eval()
    x, y = torch.randn(2, 3, 16, 16, dtype=dtype), torch.randn(2, 4, 16, 16, dtype=dtype)
    with torch.no_grad():
        want = net(x, y=y)
    for sample in ({"y": (2, 4, 16, 16), "x": (2, 3, 16, 16)}, [(2, 3, 16, 16), (2, 4, 16, 16)]):
        model = ai3.swap_backend(net, sample_input_shape=sample)
        assert model.input_names == (["y", "x"] if isinstance(sample, dict) else ["x", "y"])
        got = model(x=x, y=y)
        assert type(got) is Outputs and list(got) == ["h", "conv"]
        for k in want:
            _close(got[k], want[k], dtype)
    for how, copied in round_trips(model).items():
        assert type(copied(x, y)) is Outputs, how
    # One named input: y stays at its default.
    only_x = ai3.swap_backend(net, sample_input_shape={"x": torch.randn(1, 3, 16, 16, dtype=dtype)})
    with torch.no_grad():
        _close(only_x(x=x)["h"], net(x)["h"], dtype)


def test_inputs_by_name_refuse_bad_names():
    net = TwoInputs().eval()
    with pytest.raises(ai3.InvalidArgument, match="TwoInputs.forward has no argument 'z'; it takes x, y, scale"):
        ai3.swap_backend(net, sample_input_shape={"x": (1, 3, 16, 16), "z": (1, 4, 16, 16)})
    with pytest.raises(ai3.InvalidArgument, match="not an argument name"):
        ai3.swap_backend(net, sample_input_shape={"x)": (1, 3, 16, 16)})
    with pytest.raises(ai3.InvalidArgument, match="empty mapping"):
        ai3.swap_backend(net, sample_input_shape={})


def _onnx_two_inputs(dtype):
    """An ONNX graph of two inputs and two outputs: relu(conv(x) + y), and
    the sum itself."""
    from onnx import TensorProto, helper, numpy_helper

    elem = TensorProto.FLOAT if dtype == np.float32 else TensorProto.DOUBLE
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(dtype), "w")
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c", "y"], ["sum"]),
        helper.make_node("Relu", ["sum"], ["out"]),
    ]
    graph = helper.make_graph(
        nodes,
        "two",
        [
            helper.make_tensor_value_info("x", elem, ["N", 3, 8, 8]),
            helper.make_tensor_value_info("y", elem, ["N", 4, 8, 8]),
        ],
        [
            helper.make_tensor_value_info("out", elem, ["N", 4, 8, 8]),
            helper.make_tensor_value_info("sum", elem, ["N", 4, 8, 8]),
        ],
        [w],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8  # what older onnxruntimes read
    return model


@pytest.mark.parametrize("dtype", [np.float32])  # ONNX Runtime has no float64 Conv to compare with
def test_onnx_two_inputs_two_outputs_match_onnxruntime(dtype):
    import onnxruntime

    proto = _onnx_two_inputs(dtype)
    model = ai3.onnx.swap_backend(proto, sample_input_shape=[(2, 3, 8, 8), (2, 4, 8, 8)])
    assert model.input_names == ["x", "y"]
    session = onnxruntime.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(1)
    for batch in (2, 3):
        x, y = rng.standard_normal((batch, 3, 8, 8)).astype(dtype), rng.standard_normal((batch, 4, 8, 8)).astype(dtype)
        want = session.run(None, {"x": x, "y": y})
        got = model(y=y, x=x)
        assert isinstance(got, tuple) and len(got) == 2
        for g, w in zip(got, want):
            np.testing.assert_allclose(
                g, w, rtol=0, atol=(1e-4 if dtype == np.float32 else 1e-10) * max(1.0, np.abs(w).max())
            )
    with pytest.raises(ai3.ShapeError, match="has 2 inputs"):
        ai3.onnx.swap_backend(proto, sample_input_shape=(2, 3, 8, 8))


def test_onnx_inputs_by_name():
    """sample_input_shape as ONNX Runtime's feeds: a mapping from the graph's
    input names, in any order, of shapes or example arrays (also for a model
    of one input); names it lacks or has too many are refused by name."""
    proto = _onnx_two_inputs(np.float32)
    x, y = np.ones((2, 3, 8, 8), np.float32), np.ones((2, 4, 8, 8), np.float32)
    want = ai3.onnx.swap_backend(proto, sample_input_shape=[(2, 3, 8, 8), (2, 4, 8, 8)])(x, y)
    for sample in ({"y": y, "x": x}, {"x": (2, 3, 8, 8), "y": (2, 4, 8, 8)}, [x, y]):
        model = ai3.onnx.swap_backend(proto, sample_input_shape=sample)
        assert model.input_names == ["x", "y"]
        assert all(np.array_equal(g, w) for g, w in zip(model(x, y), want))
    with pytest.raises(ai3.ShapeError, match="sample_input_shape leaves out 'y'; the model's inputs are 'x', 'y'"):
        ai3.onnx.swap_backend(proto, sample_input_shape={"x": x})
    with pytest.raises(ai3.ShapeError, match="sample_input_shape names no input 'z'"):
        ai3.onnx.swap_backend(proto, sample_input_shape={"x": x, "y": y, "z": y})
    one = _onnx_two_inputs(np.float32)
    one.graph.node[1].input[1] = "c"  # conv(x) + conv(x): y is no longer read
    del one.graph.input[1]
    model = ai3.onnx.swap_backend(one, sample_input_shape={"x": x})
    assert model(x)[0].shape == (2, 4, 8, 8)  # (its two outputs)
    assert ai3.onnx.swap_backend(one, sample_input_shape=x)(x)[0].shape == (2, 4, 8, 8)


def _relu():
    return layers.Layer("relu", {}, {}, algorithm="default", name="r")._core_layer


def test_core_model_of_two_inputs_and_outputs():
    m = _core.Model()
    m.set_input_count(2)
    assert m.input_count == 2 and _core.Model.input_id(1) == -2
    a = m.add_layer(_relu(), _core.Model.input_id(1))
    s = m.add_add([_core.MODEL_INPUT, a], "sum")
    m.set_outputs([s, a, s])
    x, y = np.random.default_rng(0).standard_normal((2, 3, 5)).astype(np.float32)
    outs = m.run([x, y])
    np.testing.assert_array_equal(outs[0], x + np.maximum(y, 0))
    np.testing.assert_array_equal(outs[1], np.maximum(y, 0))
    np.testing.assert_array_equal(outs[2], outs[0])
    assert m.output_shapes([[3, 5], [3, 5]]) == [[3, 5]] * 3
    # A second call reuses the plan and gives the same results.
    again = m.run([x, y])
    assert all(np.array_equal(p, q) for p, q in zip(outs, again))


@pytest.mark.parametrize("fusion", [True, False])
def test_core_residual_add_of_the_second_input(fusion):
    """relu(x) + y with the sum written in place over relu's result: the
    in-place add reads model input 1 (its id, -2, is no sentinel)."""
    m = _core.Model()
    m.set_input_count(2)
    r = m.add_layer(_relu(), _core.MODEL_INPUT)
    m.add_add([r, _core.Model.input_id(1)], "sum")
    m.set_fusion(fusion)
    x, y = np.random.default_rng(1).standard_normal((2, 4, 6)).astype(np.float32)
    (out,) = m.run([x, y])
    np.testing.assert_array_equal(out, np.maximum(x, 0) + y)
    assert m.fused_into(1) == (r if fusion else -1)


def test_core_model_refuses_bad_inputs():
    m = _core.Model()
    with pytest.raises(ai3.InvalidArgument, match="-1 is the model input"):
        m.add_layer(_relu(), -2)
    m.set_input_count(2)
    r = m.add_layer(_relu(), -2)
    m.add_add([-1, r], "sum")
    with pytest.raises(ai3.InvalidArgument, match="reads model input 1"):
        m.set_input_count(1)
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(ai3.InvalidArgument, match="takes 2 inputs, got 1"):
        m.run([x])
    # Inputs may differ in dtype (int64 token ids beside floats, issue 17);
    # the node that cannot mix them refuses, naming what it read.
    with pytest.raises(ai3.DTypeError, match=r"add node 'sum': node 0 'r' is float64; add takes inputs of one dtype"):
        m.run([x, x.astype(np.float64)])
    with pytest.raises(ai3.ShapeError, match=r"\(model input 0\) has shape \(2, 3\)"):
        m.run([x, np.zeros((2, 4), np.float32)])
    with pytest.raises(ai3.InvalidArgument, match="is not a node"):
        m.set_outputs([-1])


if __name__ == "__main__":
    pytest_main.run(__file__)
