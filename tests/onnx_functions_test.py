"""ONNX ops that ai3 does not list but that ONNX defines as functions of
other ops run through their function bodies (ai3.onnx.graph's
_expand_functions, by ONNX's own inliner): the losses
(NegativeLogLikelihoodLoss, and SoftmaxCrossEntropyLoss, whose body holds
the former), Shrink, MeanVarianceNormalization, Swish and RotaryEmbedding,
over grids of their attributes, against ONNX Runtime where it has the op
at the model's opset and onnx.reference otherwise. A function whose body
needs an op ai3 does not have (AffineGrid's If) is refused naming the op
the model uses."""

from __future__ import annotations

import numpy as np
import pytest
import pytest_main

import ai3
import ai3.onnx

onnx_reference = pytest.importorskip("onnx.reference")

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
info = onnx.helper.make_tensor_value_info
F32, I64 = onnx.TensorProto.FLOAT, onnx.TensorProto.INT64


def _model(node, inputs, out_shape, opset, inits=()):
    graph = onnx.helper.make_graph([node], "g", inputs, [info("y", F32, out_shape)], list(inits))
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", opset)])
    model.ir_version = 10
    return model


def _check(model, feeds, reference="ort"):
    data = model.SerializeToString()
    if reference == "ort":
        want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    else:
        want = onnx_reference.ReferenceEvaluator(model).run(None, feeds)[0]
    shapes = [v.shape for v in feeds.values()]
    got = ai3.onnx.swap_backend(data, "default", sample_input_shape=shapes if len(shapes) > 1 else shapes[0])
    assert isinstance(got, ai3.Model), type(got)
    out = np.asarray(got(*feeds.values()))
    assert out.shape == want.shape, (out.shape, want.shape)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op", ["SoftmaxCrossEntropyLoss", "NegativeLogLikelihoodLoss"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ignore_index", [None, 1])
@pytest.mark.parametrize("shape", [(3, 5), (2, 4, 3)])
def test_losses(op, reduction, weighted, ignore_index, shape):
    rng = np.random.default_rng(len(shape) + weighted)
    n, c, rest = shape[0], shape[1], shape[2:]
    inputs = [info("x", F32, shape), info("labels", I64, (n, *rest))]
    names = ["x", "labels"]
    inits = []
    if weighted:
        names.append("w")
        inits.append(onnx.numpy_helper.from_array(rng.uniform(0.5, 2, c).astype(np.float32), "w"))
    attrs = {"reduction": reduction}
    if ignore_index is not None:
        attrs["ignore_index"] = ignore_index
    node = onnx.helper.make_node(op, names, ["y"], **attrs)
    out_shape = (n, *rest) if reduction == "none" else ()
    x = rng.standard_normal(shape).astype(np.float32)
    if op == "NegativeLogLikelihoodLoss":
        x = np.log(np.exp(x) / np.exp(x).sum(1, keepdims=True)).astype(np.float32)  # log-probabilities
    labels = rng.integers(0, c, (n, *rest)).astype(np.int64)
    _check(_model(node, inputs, out_shape, 13, inits), {"x": x, "labels": labels})


@pytest.mark.parametrize("lambd,bias", [(0.5, 0.0), (1.5, 0.2)])
def test_shrink(lambd, bias):
    node = onnx.helper.make_node("Shrink", ["x"], ["y"], lambd=lambd, bias=bias)
    x = np.linspace(-3, 3, 24, dtype=np.float32).reshape(2, 3, 4)
    _check(_model(node, [info("x", F32, x.shape)], x.shape, 17), {"x": x})


@pytest.mark.parametrize("axes", [[0, 2, 3], [2, 3], [1]])
def test_mean_variance_normalization(axes):
    node = onnx.helper.make_node("MeanVarianceNormalization", ["x"], ["y"], axes=axes)
    x = np.random.default_rng(len(axes)).standard_normal((2, 3, 4, 5)).astype(np.float32)
    _check(_model(node, [info("x", F32, x.shape)], x.shape, 17), {"x": x})


@pytest.mark.parametrize("alpha", [1.0, 0.5])
def test_swish(alpha):
    node = onnx.helper.make_node("Swish", ["x"], ["y"], alpha=alpha)
    x = np.random.default_rng(3).standard_normal((2, 7)).astype(np.float32) * 4
    _check(_model(node, [info("x", F32, x.shape)], x.shape, 24), {"x": x}, reference="onnx")


@pytest.mark.parametrize("interleaved", [0, 1])
@pytest.mark.parametrize("rotary_dim", [0, 4])
def test_rotary_embedding(interleaved, rotary_dim):
    # (batch, heads, sequence, head size) with cos / sin caches indexed by
    # constant position ids.
    b, h, s, d = 2, 3, 5, 8
    rng = np.random.default_rng(interleaved + rotary_dim)
    half = (rotary_dim or d) // 2
    angles = np.arange(16)[:, None] * (1.0 / 10000 ** (np.arange(half) / half))[None]
    inits = [
        onnx.numpy_helper.from_array(np.cos(angles).astype(np.float32), "cos"),
        onnx.numpy_helper.from_array(np.sin(angles).astype(np.float32), "sin"),
        onnx.numpy_helper.from_array(np.tile(np.arange(s) + 2, (b, 1)).astype(np.int64), "pos"),
    ]
    attrs = {"interleaved": interleaved}
    if rotary_dim:
        attrs["rotary_embedding_dim"] = rotary_dim
    node = onnx.helper.make_node("RotaryEmbedding", ["x", "cos", "sin", "pos"], ["y"], **attrs)
    x = rng.standard_normal((b, h, s, d)).astype(np.float32)
    _check(_model(node, [info("x", F32, x.shape)], x.shape, 23, inits), {"x": x}, reference="onnx")


def test_a_function_whose_body_ai3_cannot_run_is_refused_by_its_own_name():
    node = onnx.helper.make_node("AffineGrid", ["theta", "size"], ["y"], name="grid")
    size = onnx.numpy_helper.from_array(np.array([2, 1, 4, 4], np.int64), "size")
    model = _model(node, [info("theta", F32, (2, 2, 3))], (2, 4, 4, 2), 20, [size])
    with pytest.raises(ai3.UnsupportedOperation, match=r"grid.*AffineGrid"):
        ai3.onnx.swap_backend(model.SerializeToString(), "default", sample_input_shape=(2, 2, 3))


if __name__ == "__main__":
    pytest_main.run(__file__)
