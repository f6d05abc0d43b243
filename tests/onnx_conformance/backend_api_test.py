"""ai3.onnx.backend as ONNX's backend API defines it (prepare / run,
run_model, run_node, supports_device) on small hand-built models against
ONNX Runtime (several inputs, several outputs), and its refusals: an
output ai3 does not compute, a non-float input, an unknown device or keyword, each an ai3.Error naming what it
refuses."""

from __future__ import annotations

import numpy as np
import pytest
import pytest_main

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import ai3  # noqa: E402
import ai3.onnx.backend as backend  # noqa: E402


def _model(nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def _info(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def _conv_relu(rng):
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["y"])]
    return _model(nodes, [_info("x", [2, 3, 6, 6])], [_info("y", [2, 4, 6, 6])], [w])


def _ort(m, feeds):
    return ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)


def test_prepare_run_and_run_model():
    rng = np.random.default_rng(0)
    m = _conv_relu(rng)
    x = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
    (want,) = _ort(m, {"x": x})
    rep = backend.prepare(m, "CPU", algos={"conv2d": "gemm"})
    assert rep.model.algorithms("conv2d") == ["gemm"]
    for inputs in ([x], (x,), {"x": x}, x):
        out = rep.run(inputs)
        assert len(out) == 1
        np.testing.assert_allclose(out[0], want, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(out["y"], want, rtol=1e-5, atol=1e-5)  # by the output's name
    (got,) = backend.run_model(m.SerializeToString(), [x])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    with pytest.raises(ai3.InvalidArgument, match="one input 'x'"):
        rep.run([x, x])
    with pytest.raises(ai3.InvalidArgument, match="one input 'x'"):
        rep.run({"z": x})


def test_run_node_with_constant_operands():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 3, 5, 5)).astype(np.float32)
    w = rng.standard_normal((2, 3, 3, 3)).astype(np.float32)
    b = rng.standard_normal(2).astype(np.float32)
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], strides=[2, 2])
    (got,) = backend.run_node(node, [x, w, b])
    m = _model(
        [node], [_info("x", [1, 3, 5, 5]), _info("w", [2, 3, 3, 3]), _info("b", [2])], [_info("y", [1, 2, 2, 2])]
    )
    (want,) = _ort(m, {"x": x, "w": w, "b": b})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_inputs_after_the_first_are_bound_per_run():
    # As ONNX's backend tests feed weights, exponents and shapes: the inputs
    # after the first are bound as constants when run; each new set of
    # values prepares the model again.
    add = _model(
        [helper.make_node("Pow", ["a", "b"], ["y"])], [_info("a", [2, 3]), _info("b", [2, 3])], [_info("y", [2, 3])]
    )
    rep = backend.prepare(add)
    rng = np.random.default_rng(0)
    a = rng.random((2, 3), dtype=np.float32) + 0.5
    for b in (np.full((2, 3), 2.0, np.float32), rng.random((2, 3), dtype=np.float32)):
        np.testing.assert_allclose(rep.run([a, b])[0], a**b, rtol=1e-5)
        np.testing.assert_allclose(rep.run({"b": b, "a": a})[0], a**b, rtol=1e-5)
    with pytest.raises(ai3.InvalidArgument, match="takes 2 inputs"):
        rep.run([a])
    with pytest.raises(ai3.InvalidArgument, match="takes inputs"):
        rep.run({"a": a})


def test_several_outputs_come_back_in_order():
    split = _model(
        [helper.make_node("Split", ["x", "s"], ["y", "z"], axis=1), helper.make_node("Relu", ["z"], ["r"])],
        [_info("x", [2, 5])],
        [_info("r", [2, 3]), _info("y", [2, 2])],
        [numpy_helper.from_array(np.array([2, 3], np.int64), "s")],
    )
    x = np.random.default_rng(3).standard_normal((2, 5)).astype(np.float32)
    want = _ort(split, {"x": x})
    out = backend.prepare(split).run([x])
    assert len(out) == 2
    np.testing.assert_allclose(out["r"], want[0], rtol=1e-6)
    np.testing.assert_allclose(out["y"], want[1], rtol=1e-6)
    np.testing.assert_allclose(out[0], want[0], rtol=1e-6)


def test_refusals_name_the_input_or_output():
    # Dropout's mask (a BOOL output) is not computed by ai3: refused, named.
    dropout = _model(
        [helper.make_node("Dropout", ["x"], ["y", "mask"])],
        [_info("x", [2, 3])],
        [_info("y", [2, 3]), _info("mask", [2, 3], TensorProto.BOOL)],
    )
    with pytest.raises(ai3.UnsupportedOperation, match="Dropout.*outputs \\['mask'\\]"):
        backend.prepare(dropout)
    ints = _model(
        [helper.make_node("Relu", ["x"], ["y"])],
        [_info("x", [2, 3], TensorProto.INT64)],
        [_info("y", [2, 3], TensorProto.INT64)],
    )
    # int64 inputs enter (token ids, issue 17); the float op refuses them,
    # naming the layer.
    with pytest.raises(ai3.DTypeError, match=r"relu layer .*input is int64; relu takes float32 or float64"):
        backend.prepare(ints).run([np.zeros((2, 3), np.int64)])


def test_identity_graph_returns_its_input():
    m = _model([helper.make_node("Identity", ["x"], ["y"])], [_info("x", [2, 3])], [_info("y", [2, 3])])
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    (y,) = backend.prepare(m).run([x])
    np.testing.assert_array_equal(y, x)
    assert y is not x


def test_devices_and_keywords():
    assert backend.supports_device("CPU")
    assert not backend.supports_device("CUDA")
    assert not backend.supports_device("TPU")
    m = _conv_relu(np.random.default_rng(2))
    with pytest.raises(ai3.UnsupportedOperation, match="CPU"):
        backend.prepare(m, "CUDA")
    with pytest.raises(ai3.InvalidArgument, match="algoz"):
        backend.prepare(m, "CPU", algoz="gemm")
    with pytest.raises(ai3.InvalidArgument, match="not a valid ONNX model"):
        backend.prepare(b"garbage")


if __name__ == "__main__":
    pytest_main.run(__file__)
