""" "auto" and plans in the Keras and ONNX frontends: the swapped models still
compute what the framework does, only applicable algorithms are picked,
and a plan reproduces its choices. (PyTorch: tuning_test.py, plan_test.py.)"""

from __future__ import annotations

import keras
import numpy as np
import pytest
import pytest_main
import torch
from torch import nn
from tuning_fixtures import cache, counting  # noqa: F401 (fixtures)

import ai3
import ai3.keras
import ai3.onnx

# ---- Keras (NHWC) -------------------------------------------------------------------

KERAS_SHAPE = (2, 12, 12, 3)


def keras_model():
    keras.utils.set_random_seed(0)
    inp = keras.Input(KERAS_SHAPE[1:])
    x = keras.layers.Conv2D(8, 3, padding="same")(inp)
    x = keras.layers.ReLU()(x)
    x = keras.layers.Conv2D(8, 3, strides=2, padding="same")(x)  # no winograd
    x = keras.layers.Flatten()(x)
    return keras.Model(inp, keras.layers.Dense(4)(x))


def test_keras_swap_conv2d_auto_matches_keras(counting):
    model = keras_model()
    x = np.random.default_rng(0).standard_normal(KERAS_SHAPE).astype(np.float32)
    swapped = ai3.keras.swap_conv2d(model, "auto", KERAS_SHAPE)
    chosen = ai3.keras.chosen_algorithms(swapped)
    assert [op for _, op, _ in chosen] == ["conv2d", "conv2d"]
    assert chosen[1][2] != "winograd"
    assert counting.calls > 0
    np.testing.assert_allclose(swapped(x).numpy(), model(x).numpy(), rtol=1e-4, atol=1e-4)


def test_keras_swap_backend_auto_every_op_and_plan(counting, tmp_path):
    model = keras_model()
    x = np.random.default_rng(1).standard_normal(KERAS_SHAPE).astype(np.float32)
    built = ai3.keras.swap_backend(model, ai3.selection.EveryOp("auto"), KERAS_SHAPE)
    np.testing.assert_allclose(built(x), model(x).numpy(), rtol=1e-4, atol=1e-4)
    plan = ai3.plan(model, KERAS_SHAPE)
    assert plan.frontend == "keras"
    plan.save(tmp_path / "k.json")
    timed = counting.calls
    again = ai3.keras.swap_backend(model, ai3.Plan.load(tmp_path / "k.json"), KERAS_SHAPE)
    assert counting.calls == timed
    assert again.layers() == plan.model.layers()


def test_keras_auto_needs_the_input_shape():
    with pytest.raises(ai3.InvalidSelector, match="sample_input_shape"):
        ai3.keras.swap_conv2d(keras_model(), "auto")


# ---- ONNX (in-graph swaps and swap_backend) ----------------------------------------------

ONNX_SHAPE = (1, 3, 12, 12)


@pytest.fixture(scope="module")
def onnx_file(tmp_path_factory):
    torch.manual_seed(0)
    net = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(8, 8, 3, stride=2, padding=1),
        nn.Flatten(),
        nn.Linear(8 * 6 * 6, 4),
    ).eval()
    path = tmp_path_factory.mktemp("onnx") / "tiny.onnx"
    torch.onnx.export(net, (torch.randn(ONNX_SHAPE),), str(path), input_names=["x"], dynamo=False)
    return str(path), net


def onnx_algorithms(model):
    return [
        next(a.s.decode() for a in n.attribute if a.name == "algorithm") for n in model.graph.node if n.domain == "ai3"
    ]


def run_session(model, x):
    return ai3.onnx.InferenceSession(model).run(None, {"x": x})[0]


def test_onnx_rewrite_auto_matches_torch(onnx_file, counting):
    path, net = onnx_file
    x = np.random.default_rng(0).standard_normal(ONNX_SHAPE).astype(np.float32)
    expected = net(torch.from_numpy(x)).detach().numpy()
    convs = ai3.onnx.swap_conv2d(path, "auto")  # shapes from the model itself
    chosen = onnx_algorithms(convs)
    assert len(chosen) == 2 and chosen[1] != "winograd"
    assert all(a in ai3.algorithms()["conv2d"] for a in chosen)
    assert counting.calls > 0
    np.testing.assert_allclose(run_session(convs, x), expected, rtol=1e-4, atol=1e-4)
    linear = ai3.onnx.swap_linear(path, ["auto"], ONNX_SHAPE)
    np.testing.assert_allclose(run_session(linear, x), expected, rtol=1e-4, atol=1e-4)


def shared_bias_model():
    """Two convs whose biases reach them through an Identity of one shared
    initializer and through a Constant node, as torch.onnx.export writes
    equal parameters (e.g. vgg11's zero biases with weights=None)."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(3)
    w1 = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w1")
    w2 = numpy_helper.from_array(rng.standard_normal((4, 4, 3, 3)).astype(np.float32), "w2")
    shared = numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "b_shared")
    constant = numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "b_value")
    nodes = [
        helper.make_node("Identity", ["b_shared"], ["b1"]),
        helper.make_node("Constant", [], ["b2"], value=constant),
        helper.make_node("Conv", ["x", "w1", "b1"], ["h"], pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["h", "w2", "b2"], ["y"], pads=[1, 1, 1, 1]),
    ]
    graph = helper.make_graph(
        nodes,
        "shared_bias",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 9, 9])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 9, 9])],
        initializer=[w1, w2, shared],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_onnx_auto_times_convs_whose_bias_is_a_constant_expression(counting):
    import onnxruntime as ort

    model = shared_bias_model()
    x = np.random.default_rng(4).standard_normal((1, 3, 9, 9)).astype(np.float32)
    expected = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[
        0
    ]
    convs = ai3.onnx.swap_conv2d(model, "auto")
    assert len(onnx_algorithms(convs)) == 2 and counting.calls > 0
    np.testing.assert_allclose(run_session(convs, x), expected, rtol=1e-4, atol=1e-4)


def test_onnx_plan_drives_swap_backend_and_rewrite(onnx_file, counting):
    path, net = onnx_file
    x = np.random.default_rng(2).standard_normal(ONNX_SHAPE).astype(np.float32)
    plan = ai3.plan(path, ONNX_SHAPE)
    assert plan.frontend == "onnx"
    np.testing.assert_allclose(plan.model(x), net(torch.from_numpy(x)).detach().numpy(), rtol=1e-4, atol=1e-4)
    timed = counting.calls
    rewritten = ai3.onnx.swap_conv2d(path, plan)
    assert onnx_algorithms(rewritten) == [c for _, _, c in plan.choices("conv2d")]
    assert counting.calls == timed


if __name__ == "__main__":
    pytest_main.run(__file__)
