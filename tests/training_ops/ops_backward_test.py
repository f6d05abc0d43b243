"""The core's gradient ops (issue 16, the backward contract:
F_backward_<target> takes F's attributes and weights and the inputs
[grad_output, x, y]) against torch.autograd.grad of the matching torch
function, over a grid of shapes and attributes (gradients.py), in float32
and float64, both layouts where F has one, through the generic
ai3.layers.Layer; and bad input refused with an ai3.Error naming the layer."""

from __future__ import annotations

import gradients
import numpy as np
import pytest
import pytest_main

import ai3
from ai3 import layers

CASES = gradients.cases()
# Relative to the reference's largest magnitude (at least 1): the kernels
# compute in the layer's dtype (norms' sums in double).
TOL = {np.float32: 2e-5, np.float64: 1e-12}


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("case", CASES, ids=[str(c) for c in CASES])
def test_gradients_match_torch(case: gradients.Gradient, dtype: type) -> None:
    # x as ai3 sees it: rounded to the dtype first, so that torch and ai3
    # differentiate at the same point (and see the same ties).
    x = np.asarray(gradients.inputs(case, seed=1), dtype)
    rng = np.random.default_rng(2)
    y_ref, want, dy = gradients.reference(case, x.astype(np.float64), lambda s: rng.standard_normal(s))
    y = gradients.forward(case, x)  # y as F's forward produced it
    dy = np.asarray(dy, dtype)
    table = ai3.algorithms("cpu")
    for target in case.targets:
        # Every algorithm of the gradient op (most have "direct" alone).
        for algorithm in (a for a in table[f"{case.op}_backward_{target}"] if a != "custom"):
            layer = gradients.layer(case, target, dtype, algorithm)
            assert layer.algorithm == algorithm
            got = layer(dy, x, y)
            assert got.dtype == dtype and got.shape == want[target].shape, target
            scale = max(1.0, float(np.abs(want[target]).max(initial=0)))
            np.testing.assert_allclose(
                got, want[target], rtol=0, atol=TOL[dtype] * scale, err_msg=f"{case} {target} {algorithm}"
            )
        # The shape rule answers without a layer, from F's attributes and weights.
        weight_shapes = {k: v.shape for k, v in case.weights.items()}
        shapes = [dy.shape, x.shape, y.shape]
        assert layers.output_shape(layer.op, case.attrs, weight_shapes, shapes) == want[target].shape


def test_every_gradient_is_declared_with_direct_and_covered() -> None:
    table = ai3.algorithms("cpu")
    # The ops issue 16 gives gradients here (others may add theirs to the table).
    assert set(gradients.OPS) >= {
        "maxpool2d",
        "avgpool2d",
        "adaptiveavgpool2d",
        "adaptivemaxpool2d",
        "relu",
        "leaky_relu",
        "sigmoid",
        "tanh",
        "gelu",
        "silu",
        "hardswish",
        "hardsigmoid",
        "clamp",
        "softmax",
        "log_softmax",
        "batchnorm2d",
        "layernorm",
        "flatten",
        "pad2d",
    }
    for op in gradients.OPS:
        assert "direct" in table[f"{op}_backward_data"], op
    covered = {(c.op, t) for c in CASES for t in c.targets}
    gradient_ops = [name for name in table if "_backward_" in name]
    for name in gradient_ops:
        op, _, target = name.partition("_backward_")
        if op in gradients.OPS:
            assert (op, target) in covered, name
    # The gradients of the ops with weights: every trainable one.
    for op, targets in (
        ("batchnorm2d", ("weight", "bias")),
        ("layernorm", ("weight", "bias")),
        ("rmsnorm", ("weight",)),
    ):
        for t in targets:
            assert f"{op}_backward_{t}" in table
    # Each declaration takes exactly its forward's attributes and weights.
    schemas = {s["op"]: s for s in ai3._core.op_schemas()}
    for name in gradient_ops:
        op, _, target = name.partition("_backward_")
        if op in gradients.OPS:
            f, g = schemas[op], schemas[name]
            assert g["attrs"] == f["attrs"] and g["weights"] == f["weights"], name


def test_maxpool_ties_go_to_the_first_maximum() -> None:
    # Every tap ties: torch (and ai3) send each window's gradient to its
    # first tap in window order.
    x = np.ones((1, 1, 3, 3), np.float32)
    dy = np.arange(1, 5, dtype=np.float32).reshape(1, 1, 2, 2)
    got = layers.Layer("maxpool2d_backward_data", {"kernel": 2, "stride": 1})(dy, x, np.ones_like(dy))
    np.testing.assert_array_equal(got[0, 0], [[1, 2, 0], [3, 4, 0], [0, 0, 0]])


BAD = [
    # (op, attrs, weights, shapes of [dy, x, y], error, message)
    ("relu", {}, {}, [(2, 3), (2, 3), (2, 4)], ai3.ShapeError, r"input 2 \(y, the forward's output\) is \(2, 4\)"),
    ("relu", {}, {}, [(3, 3), (2, 3), (2, 3)], ai3.ShapeError, r"input 0 \(grad_output\) is \(3, 3\)"),
    ("maxpool2d", {"kernel": 2}, {}, [(1, 1, 2, 2), (1, 1, 4), (1, 1, 2, 2)], ai3.ShapeError, r"rank-4"),
    (
        "maxpool2d",
        {"kernel": 2},
        {},
        [(1, 1, 3, 3), (1, 1, 4, 4), (1, 1, 3, 3)],
        ai3.ShapeError,
        r"forward gives \(1, 1, 2, 2\)",
    ),
    ("softmax", {"axis": 2}, {}, [(2, 3), (2, 3), (2, 3)], ai3.ShapeError, r"axis 2 is out of range"),
    (
        "batchnorm2d",
        {},
        {"weight": (3,), "bias": (3,), "running_mean": (3,), "running_var": (3,)},
        [(1, 4, 2, 2), (1, 4, 2, 2), (1, 4, 2, 2)],
        ai3.ShapeError,
        r"has 4 channels, the layer expects 3",
    ),
    ("layernorm", {}, {"weight": (3,)}, [(2, 4), (2, 4), (2, 4)], ai3.ShapeError, r"ends in \(4,\)"),
    ("rmsnorm", {}, {"weight": (3,)}, [(2, 4), (2, 4), (2, 4)], ai3.ShapeError, r"ends in \(4,\)"),
    (
        "pad2d",
        {"padding": 1},
        {},
        [(1, 1, 2, 2), (1, 1, 2, 2), (1, 1, 2, 2)],
        ai3.ShapeError,
        r"forward gives \(1, 1, 4, 4\)",
    ),
    # This session's gradients: each checks x with its forward's rule and y,
    # dy against the forward's output for x.
    ("mean", {"axes": [1]}, {}, [(2,), (2, 3), (2, 3)], ai3.ShapeError, r"forward gives \(2,\)"),
    ("reduce_max", {"axes": [3]}, {}, [(2,), (2, 3), (2,)], ai3.ShapeError, r"axis 3"),
    ("tile", {"repeats": [2]}, {}, [(2, 3), (2, 3), (2, 6)], ai3.ShapeError, r"input 0 \(grad_output\) is \(2, 3\)"),
    ("expand", {"shape": [4, 3]}, {}, [(4, 3), (2, 3), (4, 3)], ai3.ShapeError, r"broadcast|incompatible"),
    (
        "resize",
        {"size": [4, 4]},
        {},
        [(1, 1, 4, 5), (1, 1, 2, 2), (1, 1, 4, 4)],
        ai3.ShapeError,
        r"input 0 \(grad_output\) is \(1, 1, 4, 5\)",
    ),
    ("lrn", {"size": 3}, {}, [(2, 4), (2, 4), (2, 4)], ai3.ShapeError, r"rank"),
    (
        "conv_transpose2d",
        {"stride": [2, 2]},
        {"weight": (3, 2, 3, 3)},
        [(1, 2, 9, 9), (1, 4, 4, 4), (1, 2, 9, 9)],
        ai3.ShapeError,
        r"channels",
    ),
]


@pytest.mark.parametrize("op,attrs,weight_shapes,shapes,error,message", BAD, ids=[b[0] for b in BAD])
def test_bad_shapes_name_the_layer(op, attrs, weight_shapes, shapes, error, message) -> None:
    weights = {k: np.ones(s, np.float32) for k, s in weight_shapes.items()}
    layer = layers.Layer(f"{op}_backward_data", attrs, weights, name="g")
    arrays = [np.ones(s, np.float32) for s in shapes]
    with pytest.raises(error, match=rf"{op}_backward_data layer 'g'.*{message}"):
        layer(*arrays)
    with pytest.raises(error, match=message):
        layers.output_shape(f"{op}_backward_data", attrs, weight_shapes, shapes)


def test_bad_dtypes_and_counts_name_the_layer() -> None:
    layer = layers.Layer("sigmoid_backward_data", name="g")
    x = np.ones((2, 3), np.float32)
    for wrong in (np.int64, np.float16):
        with pytest.raises(ai3.Error, match=r"sigmoid_backward_data layer 'g'"):
            layer(x.astype(wrong), x.astype(wrong), x.astype(wrong))
    with pytest.raises(ai3.DTypeError, match=r"layer 'g'.*input 1 is float64 but input 0 is float32"):
        layer(x, x.astype(np.float64), x)
    with pytest.raises(ai3.InvalidArgument, match=r"layer 'g'.*takes 3 inputs, got 2"):
        layer(x, x)
    # Non-contiguous inputs are read as the values they hold.
    dy = np.ones((3, 2), np.float32).T
    np.testing.assert_allclose(layer(dy, x, x * 0.5), np.full((2, 3), 0.25, np.float32))


def test_weight_gradients_need_the_weight() -> None:
    with pytest.raises(ai3.InvalidArgument, match=r"layernorm_backward_weight layer 'g'.*no weight"):
        layers.Layer("layernorm_backward_weight", {}, {"bias": np.ones(3, np.float32)}, name="g")
    with pytest.raises(ai3.InvalidArgument, match=r"layernorm_backward_bias layer 'g'.*no bias"):
        layers.Layer("layernorm_backward_bias", {}, {"weight": np.ones(3, np.float32)}, name="g")
    with pytest.raises(ai3.InvalidArgument, match=r"rmsnorm_backward_weight layer 'g'.*no weight"):
        layers.Layer("rmsnorm_backward_weight", {}, {}, name="g")
    with pytest.raises(ai3.InvalidArgument, match=r"groupnorm_backward_bias layer 'g'.*no bias"):
        layers.Layer("groupnorm_backward_bias", {"groups": 2}, {"weight": np.ones(4, np.float32)}, name="g")
    with pytest.raises(ai3.Error, match=r"batchnorm2d_backward_weight layer 'g'"):
        layers.Layer("batchnorm2d_backward_weight", {}, {"weight": np.ones(3, np.float32)}, name="g")


if __name__ == "__main__":
    pytest_main.run(__file__)
