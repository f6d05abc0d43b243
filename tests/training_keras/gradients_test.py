"""Gradients through the Keras in-place swaps (ai3.keras.swap_*), against
Keras' own: tf.GradientTape with respect to the input and every trainable
variable, through each layer the swaps offer, with every algorithm of each
of its gradient ops (ai3.layers.backward_ops), float32 and float64, eager
and inside tf.function; the backward selector's forms and bad values."""

from __future__ import annotations

import functools

import keras
import keras_training_util as util
import numpy as np
import pytest
import pytest_main
import tensorflow as tf
from tuning_fixtures import cache  # noqa: F401 (fixture: "auto" tunes into a private cache)

import ai3
import ai3.keras
from ai3 import layers as core_layers
from ai3 import selection

# (Keras layer, input shape without the batch). Conv2D covers NHWC with
# strides, valid/same padding (odd and even sizes: TF's "same" puts the odd
# pixel after), dilation, groups, an asymmetric kernel, and no bias.
CONV_CASES = {
    "valid": (lambda d: keras.layers.Conv2D(4, 3, dtype=d), (7, 6, 3)),
    "same": (lambda d: keras.layers.Conv2D(4, 3, padding="same", dtype=d), (7, 6, 3)),
    "stride2_same_even": (lambda d: keras.layers.Conv2D(5, 3, strides=2, padding="same", dtype=d), (8, 8, 3)),
    "stride21_4x3": (lambda d: keras.layers.Conv2D(5, (4, 3), strides=(2, 1), dtype=d), (9, 7, 2)),
    "dilation2": (lambda d: keras.layers.Conv2D(4, 3, dilation_rate=2, padding="same", dtype=d), (9, 8, 3)),
    "groups2": (lambda d: keras.layers.Conv2D(6, 3, groups=2, padding="same", dtype=d), (6, 6, 4)),
    "1x1_no_bias": (lambda d: keras.layers.Conv2D(4, 1, use_bias=False, dtype=d), (5, 5, 3)),
    "3x3_no_bias_stride2": (lambda d: keras.layers.Conv2D(3, 3, strides=2, use_bias=False, dtype=d), (9, 9, 2)),
    "depthwise": (lambda d: keras.layers.DepthwiseConv2D(3, depth_multiplier=2, padding="same", dtype=d), (6, 7, 3)),
}

OTHER_CASES = {
    "Dense": (lambda d: keras.layers.Dense(7, dtype=d), (12,)),
    "Dense_no_bias": (lambda d: keras.layers.Dense(3, use_bias=False, dtype=d), (5,)),
    "MaxPooling2D": (lambda d: keras.layers.MaxPooling2D(3, strides=2, padding="same", dtype=d), (9, 8, 3)),
    "MaxPooling2D_valid": (lambda d: keras.layers.MaxPooling2D(2, dtype=d), (6, 6, 2)),
    "AveragePooling2D": (lambda d: keras.layers.AveragePooling2D(2, padding="valid", dtype=d), (8, 6, 3)),
    "AveragePooling2D_same": (
        lambda d: keras.layers.AveragePooling2D(3, strides=2, padding="same", dtype=d),
        (7, 8, 2),
    ),
    "GlobalAveragePooling2D": (lambda d: keras.layers.GlobalAveragePooling2D(dtype=d), (5, 6, 3)),
    "GlobalMaxPooling2D": (lambda d: keras.layers.GlobalMaxPooling2D(keepdims=True, dtype=d), (5, 6, 3)),
    "Flatten": (lambda d: keras.layers.Flatten(dtype=d), (3, 4, 2)),
    "ZeroPadding2D": (lambda d: keras.layers.ZeroPadding2D(((1, 2), (0, 1)), dtype=d), (4, 4, 2)),
    "BatchNormalization": (lambda d: keras.layers.BatchNormalization(epsilon=1e-3, dtype=d), (5, 5, 4)),
    "LayerNormalization": (lambda d: keras.layers.LayerNormalization(dtype=d), (6, 8)),
    "Conv2DTranspose": (lambda d: keras.layers.Conv2DTranspose(4, 3, strides=2, dtype=d), (4, 5, 3)),
    "Conv2DTranspose_same_no_bias": (
        lambda d: keras.layers.Conv2DTranspose(2, 3, strides=2, padding="same", use_bias=False, dtype=d),
        (4, 4, 3),
    ),
    "UpSampling2D_bilinear": (lambda d: keras.layers.UpSampling2D(2, interpolation="bilinear", dtype=d), (3, 4, 2)),
    "UpSampling2D": (lambda d: keras.layers.UpSampling2D((2, 3), dtype=d), (3, 4, 2)),
    "GroupNormalization": (lambda d: keras.layers.GroupNormalization(2, dtype=d), (4, 5, 6)),
    "ELU": (lambda d: keras.layers.ELU(dtype=d), (4, 6)),
    "ReLU": (lambda d: keras.layers.ReLU(dtype=d), (4, 5, 3)),
    "ReLU(max_value)": (lambda d: keras.layers.ReLU(max_value=0.5, dtype=d), (4, 5, 3)),
    "LeakyReLU": (lambda d: keras.layers.LeakyReLU(negative_slope=0.05, dtype=d), (4, 6)),
    "Softmax": (lambda d: keras.layers.Softmax(axis=-1, dtype=d), (3, 7)),
    **{
        f"Activation({name})": (lambda d, name=name: keras.layers.Activation(name, dtype=d), (4, 6))
        for name in (
            "relu",
            "relu6",
            "sigmoid",
            "tanh",
            "silu",
            "gelu",
            "softmax",
            "log_softmax",
            "hard_silu",
            "hard_sigmoid",
        )
    },
}

CASES = {**{f"Conv2D_{k}": v for k, v in CONV_CASES.items()}, **OTHER_CASES}
# Cases whose Keras reference is less exact than the dtype: TF's bilinear
# resize gradient computes its weights in float32 even for float64 (it is
# 1.7e-7 from torch's float64 gradient, which ai3's matches to 1e-12 in
# //tests/training_ops).
TOLERANCE = {("UpSampling2D_bilinear", "float64"): 1e-6}


def single_layer(case: str, dtype: str, seed: int = 0):
    """(plain Keras model of the one layer, the core op it swaps as, input shape)."""
    from ai3.keras import graph

    make, shape = CASES[case]
    keras.utils.set_random_seed(seed)
    layer = make(dtype)
    model = keras.Sequential([keras.Input(shape, dtype=dtype), layer])
    rng = np.random.default_rng(seed)
    # non-trivial weights everywhere (a batch norm's statistics too)
    model.set_weights([rng.uniform(0.5, 1.5, w.shape).astype(w.dtype) for w in model.get_weights()])
    steps = graph.map_layer(layer, (None, *shape))  # the swap's op runs first
    return model, steps[0].op, shape


def inputs(shape: tuple, batch: int, dtype: str, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    # distinct values keep max-pooling's argmax unambiguous
    x = rng.permutation(batch * int(np.prod(shape))).reshape((batch, *shape)) / (batch * np.prod(shape))
    return (x * 4 - 2 + rng.uniform(-1e-3, 1e-3, x.shape)).astype(dtype)


def check(model, swapped, shape, dtype: str, tol: float, batches=(1, 3), graph_too: bool = True) -> None:
    for batch in batches:
        x = inputs(shape, batch, dtype, seed=batch)
        out_shape = model(x).shape
        w = np.random.default_rng(batch + 10).standard_normal(out_shape).astype(dtype)
        ref = util.gradients(model, x, w)
        for graph in (False, True) if graph_too else (False,):
            got = util.gradients(swapped, x, w, graph=graph)
            assert len(got) == len(ref)
            for i, (g, r) in enumerate(zip(got, ref)):
                what = "input" if i == 0 else swapped.trainable_weights[i - 1].name
                assert util.rel_err(g, r) < tol, f"d/d{what}, batch {batch}, {'tf.function' if graph else 'eager'}"


def require_gradients(op: str) -> dict:
    grads = core_layers.backward_ops(op)
    if "data" not in grads:
        pytest.skip(f"the core has no {op}_backward_data yet (issue 16)")
    return grads


def require_layer_gradients(layer) -> None:
    """Skips unless the core has every gradient a swapped layer's steps need:
    the data gradient of each, and that of each trainable weight."""
    for step in layer.steps:
        grads = require_gradients(step["op"])
        trained = {w["name"] for w in step["weights"] if "index" in w and layer.variable_specs[w["index"]]["trainable"]}
        if trained - set(grads):
            pytest.skip(f"the core lacks gradients of {step['op']} for {sorted(trained - set(grads))} (issue 16)")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", list(CASES))
def test_default_gradients(case: str, dtype: str) -> None:
    """ "default" for the forward and every gradient op."""
    model, op, shape = single_layer(case, dtype)
    swapped = ai3.keras.swap_operation(op, model, "default")
    layer = swapped.layers[0]
    assert isinstance(layer, ai3.keras.layers.Layer)
    require_layer_gradients(layer)
    check(model, swapped, shape, dtype, TOLERANCE.get((case, dtype), util.TOLERANCE[dtype]))


def gradient_algorithm_cases():
    """(case, target, algorithm) for every algorithm of each gradient op of
    the conv2d, linear and pooling cases (the ops with several)."""
    out = []
    for case in [f"Conv2D_{k}" for k in CONV_CASES] + [
        "Dense",
        "Dense_no_bias",
        "MaxPooling2D",
        "AveragePooling2D_same",
    ]:
        out.append(case)
    return out


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", gradient_algorithm_cases())
def test_every_gradient_algorithm(case: str, dtype: str) -> None:
    """Each algorithm of each gradient op, on its own ("default" for the
    other gradients), where it takes the layer; winograd's forward too."""
    model, op, shape = single_layer(case, dtype)
    grads = require_gradients(op)
    require_layer_gradients(ai3.keras.swap_operation(op, model, "default").layers[0])
    ran = 0
    for target, grad_op in grads.items():
        for algorithm in selection.known_algorithms(grad_op):
            try:
                swapped = ai3.keras.swap_operation(op, model, "default", backward={f"backward_{target}": algorithm})
            except ai3.AlgorithmNotApplicable:
                continue
            tol = (util.WINOGRAD_TOLERANCE if "winograd" in algorithm else util.TOLERANCE)[dtype]
            check(model, swapped, shape, dtype, tol, batches=(2,), graph_too=False)
            ran += 1
    assert ran >= len(grads)


def test_unknown_spatial_size() -> None:
    """A tf.function traced for any height and width: the "same" padding of
    the gradient ops is resolved per call from x (their input 1), and the
    gradients keep the shapes TensorFlow expects."""
    model, op, shape = single_layer("Conv2D_stride2_same_even", "float32")
    require_gradients(op)
    swapped = ai3.keras.swap_conv2d(model, "default")
    layer, plain = swapped.layers[0], model.layers[0]

    def grads(m):
        @tf.function(input_signature=[tf.TensorSpec([None, None, None, 3]), tf.TensorSpec([None, None, None, 5])])
        def run(x, w):
            with tf.GradientTape() as tape:
                tape.watch(x)
                loss = tf.reduce_sum(m(x) * w)
            return tape.gradient(loss, [x, *m.trainable_weights])

        return run

    got, ref = grads(layer), grads(plain)
    for h, w in ((8, 8), (7, 10)):
        x = inputs((h, w, 3), 2, "float32", h)
        g = np.random.default_rng(w).standard_normal(plain(x).shape).astype(np.float32)
        for a, b in zip(got(x, g), ref(x, g)):
            assert util.rel_err(a, b) < util.TOLERANCE["float32"], (h, w)


def test_tape_around_a_tf_function() -> None:
    """A tape around a whole tf.function: TensorFlow differentiates its
    graph with tf.gradients, which asks for every input's gradient; the
    moving statistics of a swapped batch norm have none and get None."""
    keras.utils.set_random_seed(4)
    plain = keras.Sequential(
        [
            keras.Input((6, 6, 3)),
            keras.layers.Conv2D(4, 3, padding="same"),
            keras.layers.BatchNormalization(),
            keras.layers.ReLU(),
        ]
    )
    rng = np.random.default_rng(4)
    plain.set_weights([rng.uniform(0.5, 1.5, w.shape).astype(w.dtype) for w in plain.get_weights()])
    swapped = plain
    for op in ("conv2d", "batchnorm2d", "relu"):
        require_gradients(op)
        swapped = ai3.keras.swap_operation(op, swapped, "default")
    x = tf.constant(inputs((6, 6, 3), 2, "float32", 4))

    def grads(m):
        f = tf.function(lambda t: tf.reduce_sum(tf.square(m(t, training=False))))
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = f(x)
        return tape.gradient(loss, [x, *m.trainable_weights])

    for a, b in zip(grads(swapped), grads(plain)):
        assert util.rel_err(a, b) < util.TOLERANCE["float32"]


def test_forward_winograd_backward_gemm() -> None:
    """The selector beside the forward one: swap_conv2d(m, "winograd",
    backward=...) in each form gives the same gradients."""
    model, op, shape = single_layer("Conv2D_same", "float32")
    grads = require_gradients(op)
    first = next(iter(selection.known_algorithms(grads["data"])))
    forms = [
        dict(algos="winograd", backward="default"),
        dict(algos="winograd", backward=first),
        dict(algos={"forward": "winograd", "backward_data": first}),
        dict(algos="winograd", backward=lambda layer: "default"),
        dict(algos="winograd", backward=["default"]),
    ]
    if "gemm" in selection.known_algorithms(grads["data"]):  # the issue's own example
        forms.append(dict(algos="winograd", backward="gemm"))
    for form in forms:
        swapped = ai3.keras.swap_conv2d(model, **form)
        layer = swapped.layers[0]
        assert layer.algorithm == "winograd"
        check(model, swapped, shape, "float32", util.WINOGRAD_TOLERANCE["float32"], batches=(2,), graph_too=False)
    swapped = ai3.keras.swap_conv2d(model, {"forward": "direct", "backward_data": first})
    assert swapped.layers[0].backward["data"] == first
    # a layer without a bias has no bias gradient to choose for
    model, _, _ = single_layer("Conv2D_1x1_no_bias", "float32")
    swapped = ai3.keras.swap_conv2d(model, "direct", backward={"backward_bias": "direct"})
    assert "bias" not in swapped.layers[0].backward


def test_backward_auto() -> None:
    """ "auto" times each gradient op's algorithms on the layer's shape."""
    model, op, shape = single_layer("Conv2D_same", "float32")
    grads = require_gradients(op)
    swapped = ai3.keras.swap_conv2d(model, "direct", sample_input_shape=(2, *shape), backward="auto")
    chosen = swapped.layers[0].backward
    for target, grad_op in grads.items():
        assert chosen[target] in selection.known_algorithms(grad_op)
    check(model, swapped, shape, "float32", util.WINOGRAD_TOLERANCE["float32"], batches=(2,), graph_too=False)


def test_record_backward() -> None:
    """What ai3.plan(..., backward=) asks of the frontend: the gradient ops'
    selections and timings of every swappable layer, the model untouched."""
    from ai3 import tuning

    model = keras.Sequential(
        [
            keras.Input((8, 8, 3)),
            keras.layers.Conv2D(4, 3, name="c"),
            keras.layers.Flatten(),
            keras.layers.Dense(2, name="d"),
        ]
    )
    for op in ("conv2d", "linear"):
        require_gradients(op)
    found = tuning.Recording()
    ai3.keras.record_backward(model, "auto", (2, 8, 8, 3), recorder=found)
    selected = {(op, name): choice for op, name, _, choice in found.selected}
    for op, name in (("conv2d", "c"), ("linear", "d")):
        for grad_op in core_layers.backward_ops(op).values():
            assert selected[(grad_op, name)] in selection.known_algorithms(grad_op), (grad_op, name)
    assert {op for op, *_ in found.tuned} >= {"conv2d_backward_data", "linear_backward_weight"}
    assert all(type(layer).__module__.startswith("keras") for layer in model.layers)


def test_save_load_keeps_backward(tmp_path) -> None:
    model, op, shape = single_layer("Conv2D_same", "float32")
    grads = require_gradients(op)
    name = selection.known_algorithms(grads["data"])[-1]
    swapped = ai3.keras.swap_conv2d(model, "gemm", backward={"backward_data": name})
    path = str(tmp_path / "m.keras")
    swapped.save(path)
    loaded = keras.models.load_model(path)
    assert loaded.layers[0].backward == swapped.layers[0].backward
    check(model, loaded, shape, "float32", util.TOLERANCE["float32"], batches=(2,), graph_too=False)


@pytest.mark.parametrize("op", ["relu", "conv2d"])
def test_bad_backward_selectors(op: str) -> None:
    require_gradients(op)
    make = {
        "relu": lambda name: keras.layers.ReLU(name=name),
        "conv2d": lambda name: keras.layers.Conv2D(3, 3, name=name),
    }[op]
    model = keras.Sequential([keras.Input((8, 8, 3)), make("l1"), make("l2")])
    swap = functools.partial(ai3.keras.swap_operation, op, model)
    with pytest.raises(ai3.InvalidSelector):
        swap("default", backward=3)
    with pytest.raises(ai3.UnknownAlgorithm, match=f"{op} layer 'l1'.*'nope'"):
        swap("default", backward="nope")
    with pytest.raises(ai3.UnknownAlgorithm, match="nope"):
        swap("default", backward={"backward_data": "nope"})
    with pytest.raises(ai3.InvalidSelector, match="lists 1 algorithms but the model has 2"):
        swap("default", backward=["default"])
    with pytest.raises(ai3.InvalidSelector, match="backward_nothing"):
        swap("default", backward={"backward_nothing": "direct"})
    with pytest.raises(ai3.InvalidSelector, match="key"):
        swap("default", backward={"weights": "direct"})
    with pytest.raises(ai3.InvalidSelector, match="once"):
        swap({"forward": "default"}, backward="default")
    with pytest.raises(ai3.InvalidSelector, match="twice"):
        swap("default", backward={"forward": "default"})
    with pytest.raises(ai3.InvalidSelector, match="keep"):
        swap("default", backward="keep")
    with pytest.raises(ai3.InvalidSelector):
        swap("default", backward=lambda layer: 7)
    with pytest.raises(ai3.InvalidSelector, match="sample_input_shape"):
        swap("default", backward=lambda layer, shape: "default")
    with pytest.raises(ai3.InvalidSelector, match="sample_input_shape"):
        swap("default", backward="auto")

    with pytest.raises(ai3.InvalidSelector):
        ai3.keras.layers.Layer("conv2d", [{"op": "conv2d", "attrs": {}, "weights": []}], [], backward={"data": 3})


def test_every_op_swapped_in_place_has_its_gradients() -> None:
    """Every op a Keras layer swaps to in place (graph.MAPPING's entries
    with an op) has the gradients of its input and of each of its weights,
    so fit() runs through any swapped layer. (A gradient that reaches a core
    layer without one raises naming the layer: checked in torch, whose
    swaps reach ops without gradients, //tests/training_torch.)"""
    from ai3.keras import graph

    ops = {entry.op for entry in graph.MAPPING.values() if entry.op}
    for op in sorted(ops):
        weights = {w["name"] for w in core_layers.schema(op)["weights"]}
        trainable = weights - {"running_mean", "running_var"}
        assert {"data", *trainable} <= set(core_layers.backward_ops(op)), op
    # A backward name no gradient op of the layer has is refused, listing them.
    model = keras.Sequential([keras.Input((4, 6, 3)), keras.layers.Conv2DTranspose(2, 3, name="up")])
    with pytest.raises(ai3.UnknownAlgorithm, match="backward 'nope'.*gemm"):
        ai3.keras.swap_operation("conv_transpose2d", model, "default", backward="nope")


def test_bad_gradient_input_raises_ai3_error() -> None:
    """The gradient op checks what it is given: a grad_output of the wrong
    shape is an ai3.ShapeError naming the layer, not a crash."""
    model, op, shape = single_layer("ReLU", "float32")
    require_gradients(op)
    x = tf.constant(inputs(shape, 2, "float32", 0))
    y = ai3.keras.ops.layer(
        [x], [], op="relu", attrs="{}", weights_layout="[]", same="", algorithm="default", layer_name="r"
    )
    with pytest.raises(ai3.ShapeError, match="relu_backward_data layer 'r'"):
        ai3.keras.ops.layer(
            [tf.zeros((2, 1)), x, y],
            [],
            op="relu_backward_data",
            attrs="{}",
            weights_layout="[]",
            same="",
            algorithm="default",
            layer_name="r",
        )
    with pytest.raises(ai3.InvalidArgument, match="relu_backward_data layer 'r'"):
        ai3.keras.ops.layer(
            [x],
            [],
            op="relu_backward_data",
            attrs="{}",
            weights_layout="[]",
            same="",
            algorithm="default",
            layer_name="r",
        )


if __name__ == "__main__":
    pytest_main.run(__file__)
