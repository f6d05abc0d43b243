"""Bad input at the frontends' entry points (PyTorch and ONNX; Keras in
bad_input_keras_test): every error a user sees is an ai3.Error subclass
whose message names the layer or node and says what was wrong, never a bare
IndexError/KeyError/ValueError nor an ai3.Error carrying Python's own
message."""

from __future__ import annotations

import re

import numpy as np
import onnx
import pytest
import pytest_main
import torch
from onnx import TensorProto, helper, numpy_helper
from torch import nn

import ai3
import ai3.onnx

# Messages Python itself writes: an ai3.Error must say what was wrong in
# ai3's words, not pass one of these on.
PYTHON_MESSAGES = re.compile(
    r"index out of range|not enough values to unpack|too many values to unpack|object has no attribute|"
    r"unhashable type|object is not (subscriptable|iterable|callable)|unsupported operand|"
    r"takes \d+ positional argument|missing \d+ required|^\W*\d+\W*$|^'[^']*'$"
)


def check(call, *, names=(), cls=ai3.Error):
    """`call()` raises an ai3.Error subclass (`cls`) whose message contains
    every string in `names` and none of Python's own messages."""
    with pytest.raises(ai3.Error) as info:
        call()
    e = info.value
    assert isinstance(e, cls), f"{type(e).__name__}: {e}"
    message = str(e)
    for name in names:
        assert name in message, f"{name!r} not in {message!r}"
    assert not PYTHON_MESSAGES.search(message), f"Python's own message reached the user: {message!r}"
    return message


def net():
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.Conv2d(4, 4, 3), nn.Flatten(), nn.Linear(4 * 6 * 6, 2)
    ).eval()


X = torch.randn(1, 3, 8, 8)

# ---- Selectors ------------------------------------------------------------


@pytest.mark.parametrize(
    "selector",
    [
        "no-such-algorithm",
        ["gemm"],  # too short
        ["gemm", "gemm", "gemm"],  # too long
        [3, "gemm"],
        3,
        lambda conv: 42,
        lambda conv: None,
        lambda conv: ["gemm"],
        lambda conv: "no-such-algorithm",
        lambda conv: 1 / 0,
        lambda conv, shape: "gemm",  # needs sample_input_shape
        {"conv2d": "gemm"},  # a mapping is swap_backend's form, not swap_conv2d's
    ],
)
def test_swap_conv2d_rejects_junk_selectors(selector):
    check(lambda: ai3.swap_conv2d(net(), selector))


@pytest.mark.parametrize(
    "algos",
    [
        {"conv2d": "no-such-algorithm"},
        {"conv2d": lambda conv: 7},
        {"no_such_op": "gemm"},
        {"conv2d": ["gemm"]},
    ],
)
def test_swap_backend_rejects_junk_selectors(algos):
    check(lambda: ai3.swap_backend(net(), algos))


def test_inapplicable_algorithm_names_layer_algorithm_and_reason():
    strided = nn.Sequential(nn.Conv2d(3, 4, 3, stride=2)).eval()
    message = check(
        lambda: ai3.swap_conv2d(strided, "winograd"), names=("'0'", "winograd"), cls=ai3.AlgorithmNotApplicable
    )
    assert "stride" in message
    check(
        lambda: ai3.swap_backend(strided, {"conv2d": "winograd"}),
        names=("'0'", "winograd"),
        cls=ai3.AlgorithmNotApplicable,
    )


# ---- Models and inputs ----------------------------------------------------


@pytest.mark.parametrize("model", [None, "resnet18", 3, nn.Conv2d])
def test_not_a_model(model):
    check(lambda: ai3.swap_backend(model))
    check(lambda: ai3.swap_conv2d(model))


@pytest.mark.parametrize(
    "x, cls",
    [
        (torch.randn(1, 5, 8, 8), ai3.ShapeError),  # channels
        (torch.randn(3, 8, 8), ai3.ShapeError),  # rank
        (torch.randn(1, 3, 2, 2), ai3.ShapeError),  # smaller than the kernel
        (torch.tensor(1.0), ai3.ShapeError),  # 0-d
        (torch.zeros(1, 3, 8, 8, dtype=torch.int64), ai3.DTypeError),
        (torch.zeros(1, 3, 8, 8, dtype=torch.float16), ai3.DTypeError),
        (torch.zeros(1, 3, 8, 8, dtype=torch.bool), ai3.DTypeError),
        ("an image", ai3.Error),
        (None, ai3.Error),
    ],
)
def test_model_rejects_bad_inputs(x, cls):
    model = ai3.swap_backend(net())
    check(lambda: model(x), cls=cls)


def test_non_contiguous_and_strided_inputs_match_or_say_so():
    model = ai3.swap_backend(net())
    ref = net()(X)
    for x in (
        X.permute(0, 1, 3, 2).contiguous().permute(0, 1, 3, 2),
        torch.randn(1, 3, 16, 8)[:, :, ::2],
        X.to(memory_format=torch.channels_last),
    ):
        got = torch.as_tensor(model(x))
        torch.testing.assert_close(got, net()(x), rtol=1e-4, atol=1e-5)
    assert ref.shape == (1, 2)


@pytest.mark.parametrize("shape", [(), (1, 0, 8, 8), (1, -3, 8, 8), "abc", (1.5, 3, 8, 8)])
def test_bad_sample_input_shapes(shape):
    check(lambda: ai3.swap_backend(net(), sample_input_shape=shape))
    check(lambda: ai3.swap_conv2d(net(), "auto", sample_input_shape=shape))


@pytest.mark.parametrize(
    "module",
    [
        nn.AvgPool2d(3, stride=(1, 2, 3)),
        nn.MaxPool2d(3, padding=(1, 2, 3)),
        nn.MaxPool2d(2, return_indices=True),
    ],
    ids=["stride3", "padding3", "indices"],
)
def test_layer_parameters_ai3_cannot_take(module):
    seq = nn.Sequential(module).eval()
    check(lambda: ai3.swap_backend(seq), names=("'0'",))


def test_torch_pooling_forms_pytorch_accepts():
    for module in (
        nn.AvgPool2d(3, stride=(), padding=(1,)),
        nn.MaxPool2d((3,), stride=(2,), padding=(1,)),
        nn.AvgPool2d([3, 2], stride=[1]),
    ):
        seq = nn.Sequential(module).eval()
        ref = seq(X)
        torch.testing.assert_close(torch.as_tensor(ai3.swap_backend(seq)(X)), ref)
        ai3.swap_avgpool2d(seq)
        ai3.swap_maxpool2d(seq)
        torch.testing.assert_close(seq(X), ref)


def test_swapped_module_rejects_bad_inputs_naming_the_layer():
    module = ai3.swap_conv2d(net(), "gemm")
    for x in (torch.randn(1, 5, 8, 8), torch.tensor(2.0), torch.zeros(1, 3, 8, 8, dtype=torch.int32)):
        with pytest.raises((ai3.Error, RuntimeError)) as info:
            module(x)
        # Through torch.library the core's error may arrive wrapped by torch's
        # dispatcher: it must still be the ai3 error, or carry its message.
        message = str(info.value)
        assert "conv2d layer '0'" in message, message
        assert not PYTHON_MESSAGES.search(message), message


# ---- Malformed ONNX files -------------------------------------------------


def onnx_model() -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1], name="conv")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])],
        [w],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def truncated(tmp_path):
    path = tmp_path / "truncated.onnx"
    path.write_bytes(onnx_model().SerializeToString()[:40])
    return str(path)


def garbage(tmp_path):
    path = tmp_path / "garbage.onnx"
    path.write_bytes(np.random.default_rng(1).bytes(300))
    return str(path)


def missing(tmp_path):
    return str(tmp_path / "no-such-file.onnx")


def missing_weight(tmp_path):
    m = onnx_model()
    del m.graph.initializer[:]
    return m


def dangling_input(tmp_path):
    m = onnx_model()
    m.graph.node[0].input[0] = "nowhere"
    return m


def bad_attribute(tmp_path):
    m = onnx_model()
    m.graph.node[0].attribute.append(helper.make_attribute("strides", [0, 0]))
    return m


def wrong_weight_rank(tmp_path):
    m = onnx_model()
    m.graph.initializer[0].CopyFrom(numpy_helper.from_array(np.ones((4, 27), np.float32), "w"))
    return m


@pytest.mark.parametrize(
    "make",
    [truncated, garbage, missing, missing_weight, dangling_input, bad_attribute, wrong_weight_rank],
    ids=lambda f: f.__name__,
)
def test_malformed_onnx_models(make, tmp_path):
    model = make(tmp_path)
    check(lambda: ai3.onnx.swap_backend(model))

    def rewritten_and_run():
        # The in-graph rewrite reads only what it rewrites: attributes the
        # core can't take surface when ORT first runs the node, as an
        # ai3.Error naming it.
        session = ai3.onnx.InferenceSession(ai3.onnx.swap_conv2d(model, "gemm"))
        session.run(None, {"x": np.zeros((1, 3, 8, 8), np.float32)})

    check(rewritten_and_run)


def test_onnx_node_named_in_errors():
    model = onnx_model()
    check(lambda: ai3.onnx.swap_conv2d(model, "no-such-algorithm"), names=("conv",))
    check(lambda: ai3.onnx.swap_backend(model)(np.zeros((1, 5, 8, 8), np.float32)), names=("conv",), cls=ai3.ShapeError)


if __name__ == "__main__":
    pytest_main.run(__file__)
