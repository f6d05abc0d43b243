"""Models written at opsets 7 to 10 (the classic ONNX model zoo's), read by
ai3.onnx through ONNX's version converter (graph.load converts them to
opset 13), against ONNX Runtime on the original file. Each net is
conv / batch norm / relu / max and average pool / flatten / gemm / softmax,
written with onnx.helper in that opset's own forms (BatchNormalization's
`spatial` before 9, Dropout's `ratio`, Pad's `pads` and `value` attributes);
nothing is downloaded."""

from __future__ import annotations

import numpy as np
import pytest
import pytest_main

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import ai3  # noqa: E402
from ai3.onnx import graph  # noqa: E402

OPSETS = (7, 8, 9, 10)


def _f(name, array):
    return numpy_helper.from_array(np.asarray(array, dtype=np.float32), name)


def small_net(opset: int, rng) -> onnx.ModelProto:
    c, k, classes = 3, 4, 5
    bn_attrs = {"epsilon": 1e-3}
    if opset < 9:
        bn_attrs["spatial"] = 1
    drop_attrs = {"ratio": 0.5} if opset < 12 else {}
    nodes = [
        helper.make_node("Pad", ["x"], ["p"], mode="constant", pads=[0, 0, 1, 1, 0, 0, 1, 1], value=0.0),
        helper.make_node("Conv", ["p", "w", "b"], ["c"], kernel_shape=[3, 3], strides=[1, 1], name="conv"),
        helper.make_node("BatchNormalization", ["c", "s", "bb", "mean", "var"], ["bn"], **bn_attrs),
        helper.make_node("Relu", ["bn"], ["r"]),
        helper.make_node("MaxPool", ["r"], ["m"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node(
            "AveragePool", ["m"], ["a"], kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1], count_include_pad=1
        ),
        helper.make_node("Dropout", ["a"], ["d"], **drop_attrs),
        helper.make_node("Flatten", ["d"], ["f"], axis=1),
        helper.make_node("Gemm", ["f", "gw", "gb"], ["g"], transB=1, alpha=1.0, beta=1.0),
        helper.make_node("Softmax", ["g"], ["y"], axis=1),
    ]
    inits = [
        _f("w", rng.standard_normal((k, c, 3, 3)) * 0.3),
        _f("b", rng.standard_normal(k)),
        _f("s", rng.uniform(0.5, 1.5, k)),
        _f("bb", rng.standard_normal(k)),
        _f("mean", rng.standard_normal(k) * 0.1),
        _f("var", rng.uniform(0.5, 2.0, k)),
        _f("gw", rng.standard_normal((classes, k * 4 * 4)) * 0.2),
        _f("gb", rng.standard_normal(classes)),
    ]
    g = helper.make_graph(
        nodes,
        f"net{opset}",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, c, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, classes])],
        initializer=inits,
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 4 if opset < 9 else 5  # what exporters of that time wrote
    onnx.checker.check_model(m)
    return m


def run_ort(m, x):
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


@pytest.mark.parametrize("opset", OPSETS)
def test_old_opset_matches_onnxruntime(opset):
    rng = np.random.default_rng(opset)
    m = small_net(opset, rng)
    x = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    model = graph.swap_backend(m)
    ops = [op for _, op, _ in model.layers()]
    assert "conv2d" in ops and "linear" in ops and "softmax" in ops
    np.testing.assert_allclose(model(x), run_ort(m, x), rtol=1e-4, atol=1e-6)
    # The user's model is left at its own opset.
    assert graph.opset_of(m) == opset


@pytest.mark.parametrize("opset", OPSETS)
def test_old_opset_through_the_rewrites(opset):
    """The in-graph route shares the loading: the converted model's convs
    become ai3 nodes that ONNX Runtime runs."""
    rng = np.random.default_rng(10 + opset)
    m = small_net(opset, rng)
    x = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    swapped = ai3.onnx.swap_conv2d(m, "direct")
    assert graph.opset_of(swapped) == graph.CONVERTED_OPSET
    sess = ai3.onnx.InferenceSession(swapped)
    np.testing.assert_allclose(sess.run(None, {"x": x})[0], run_ort(m, x), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("opset", OPSETS)
def test_old_softmax_of_a_rank4_map(opset):
    """The classic zoo's squeezenet head: a Softmax (axis 1) of the
    (N, C, 1, 1) pooled map, which before opset 13 is a softmax over
    C*H*W; the converter writes it out, ai3 runs it."""
    rng = np.random.default_rng(20 + opset)
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("GlobalAveragePool", ["r"], ["g"]),
        helper.make_node("Softmax", ["g"], ["y"], axis=1, name="softmax"),
    ]
    g = helper.make_graph(
        nodes,
        "head",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 5, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 6, 1, 1])],
        initializer=[_f("w", rng.standard_normal((6, 3, 1, 1)))],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 4
    x = rng.standard_normal((2, 3, 5, 5)).astype(np.float32)
    np.testing.assert_allclose(graph.swap_backend(m)(x), run_ort(m, x), rtol=1e-5, atol=1e-7)


def test_unconvertible_model_is_refused_clearly():
    """A model the converter cannot take raises ai3.UnsupportedOperation
    naming the opset and the converter's reason: an opset-7
    BatchNormalization with spatial=0 (per-position statistics), which
    opset 9 dropped and no adapter rewrites."""
    stats = [_f(n, np.ones((3, 4, 4))) for n in ("s", "b", "mean", "var")]
    nodes = [helper.make_node("BatchNormalization", ["x", "s", "b", "mean", "var"], ["y"], spatial=0, name="bn")]
    g = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 4, 4])],
        initializer=stats,
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 7)])
    m.ir_version = 4
    onnx.checker.check_model(m)
    with pytest.raises(ai3.UnsupportedOperation, match="opset 7.*version converter.*spatial"):
        graph.swap_backend(m)
    with pytest.raises(ai3.UnsupportedOperation, match="opset 7.*version converter"):
        ai3.onnx.swap_conv2d(m, "direct")


if __name__ == "__main__":
    pytest_main.run(__file__)
