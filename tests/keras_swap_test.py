"""The Keras frontend's swaps (ai3.keras.swap_*): the keras.applications zoo
with every conv2d algorithm that takes NHWC, hand-built Sequential and
Functional models, conv2d parameter variants, save/load, tf.function, and
bad input. swap_backend is tested in keras_backend_test."""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras
import numpy as np
import pytest
import pytest_main
import tensorflow as tf

import ai3
import ai3.keras

tf.config.threading.set_intra_op_parallelism_threads(2)
tf.config.threading.set_inter_op_parallelism_threads(1)

# conv2d algorithms that take NHWC (smm and kn2row need NCHW).
# Every conv2d algorithm takes NHWC, Keras's layout (smm and kn2row since issue 15).
NHWC_ALGOS = ["direct", "gemm", "implicit gemm", "winograd", "guess", "smm", "kn2row"]


def rel_err(out, ref) -> float:
    out, ref = np.asarray(out), np.asarray(ref)
    return float(np.abs(out - ref).max() / max(np.abs(ref).max(), 1e-12))


def tolerance(algo: str) -> float:
    return 5e-3 if algo == "winograd" else 1e-4


# ---- The zoo --------------------------------------------------------------

ZOO = {
    "VGG16": (keras.applications.VGG16, 64),
    "ResNet50": (keras.applications.ResNet50, 64),
    "MobileNetV2": (keras.applications.MobileNetV2, 64),
    "DenseNet121": (keras.applications.DenseNet121, 64),
    "InceptionV3": (keras.applications.InceptionV3, 75),
    "EfficientNetB0": (keras.applications.EfficientNetB0, 64),
}
_zoo_cache: dict = {}


def zoo(name: str):
    """(model, x, keras output), built once per process."""
    if name not in _zoo_cache:
        fn, size = ZOO[name]
        keras.utils.set_random_seed(0)
        model = fn(weights=None, input_shape=(size, size, 3), classifier_activation=None)
        x = np.random.default_rng(0).random((1, size, size, 3), dtype=np.float32)
        _zoo_cache.clear()  # keep one model alive at a time
        _zoo_cache[name] = (model, x, model(x, training=False).numpy())
    return _zoo_cache[name]


def where_applicable(algo: str):
    return lambda layer: algo if ai3.keras.applicable(layer, algo) else "default"


@pytest.mark.parametrize("name", list(ZOO))
def test_zoo_default_every_op(name: str) -> None:
    model, x, ref = zoo(name)
    swapped = ai3.keras.swap_conv2d(model, "default")
    for op in ("linear", "relu", "maxpool2d", "avgpool2d", "adaptiveavgpool2d", "flatten"):
        if ai3.keras.layers_of(model, op):  # each swap clones the model
            swapped = ai3.keras.swap_operation(op, swapped, "default")
    assert rel_err(swapped(x, training=False), ref) < 1e-4
    chosen = ai3.keras.chosen_algorithms(swapped)
    assert sum(op == "conv2d" for _, op, _ in chosen) == len(ai3.keras.layers_of(model, "conv2d")) > 0


# Every NHWC algorithm on models covering 1x1, 3x3 (stride 1 and 2), 7x7,
# asymmetric kernels (InceptionV3) and dense stacks; the rest get "default".
@pytest.mark.parametrize("algo", NHWC_ALGOS)
@pytest.mark.parametrize("name", ["ResNet50", "InceptionV3", "VGG16", "MobileNetV2"])
def test_zoo_algorithms(name: str, algo: str) -> None:
    model, x, ref = zoo(name)
    swapped = ai3.keras.swap_conv2d(model, where_applicable(algo))
    chosen = [a for _, op, a in ai3.keras.chosen_algorithms(swapped) if op == "conv2d"]
    # (MobileNetV2's only 3x3 stride-1 convolutions are depthwise: no winograd)
    if any(ai3.keras.applicable(layer, algo) for _, layer in ai3.keras.layers_of(model, "conv2d")):
        assert algo in chosen
    assert rel_err(swapped(x, training=False), ref) < tolerance(algo)


@pytest.mark.parametrize("algo", ["winograd"])
def test_plain_name_not_applicable(algo: str) -> None:
    model = keras.Sequential(
        [
            keras.Input((16, 16, 3)),
            keras.layers.Conv2D(4, 3, padding="same", name="s1"),
            keras.layers.Conv2D(4, 3, strides=2, padding="same", name="s2"),
        ]
    )
    with pytest.raises(ai3.AlgorithmNotApplicable, match="conv2d layer '(s1|s2)'"):
        ai3.keras.swap_conv2d(model, algo)
    if algo == "winograd":  # only the stride-2 layer refuses it
        with pytest.raises(ai3.AlgorithmNotApplicable, match="conv2d layer 's2'"):
            ai3.keras.swap_conv2d(model, algo)
        swapped = ai3.keras.swap_conv2d(model, where_applicable(algo))
        assert [a for _, _, a in ai3.keras.chosen_algorithms(swapped)][0] == "winograd"


# ---- Hand-built models ------------------------------------------------------


def sequential() -> keras.Model:
    keras.utils.set_random_seed(1)
    return keras.Sequential(
        [
            keras.Input((16, 16, 3)),
            keras.layers.Conv2D(8, 3, padding="same", activation="relu"),
            keras.layers.MaxPooling2D(),
            keras.layers.Conv2D(8, 2, strides=2, padding="same"),
            keras.layers.ReLU(),
            keras.layers.AveragePooling2D(3, strides=2, padding="same"),
            keras.layers.Flatten(),
            keras.layers.Dense(5),
        ]
    )


def functional() -> keras.Model:
    """Branches, a nested sub-model, a shared layer, Activation("relu")."""
    keras.utils.set_random_seed(2)
    sub_in = keras.Input((8, 8, 8))
    sub_out = keras.layers.Conv2D(8, 3, padding="same", name="sub_conv")(sub_in)
    sub = keras.Model(sub_in, keras.layers.ReLU(name="sub_relu")(sub_out), name="sub")
    shared = keras.layers.Conv2D(8, 1, name="shared")
    inp = keras.Input((16, 16, 3))
    a = keras.layers.Conv2D(8, 3, strides=2, padding="same", name="stem")(inp)
    a = keras.layers.Activation("relu", name="act")(a)
    b1 = shared(sub(a))
    b2 = shared(keras.layers.MaxPooling2D(3, strides=1, padding="same")(a))
    c = keras.layers.Add()([b1, b2])
    c = keras.layers.Concatenate()([c, a])
    c = keras.layers.GlobalAveragePooling2D()(c)
    out = keras.layers.Dense(4, activation="softmax")(c)
    return keras.Model(inp, out)


def swap_all(model: keras.Model, algo: str = "default") -> keras.Model:
    out = ai3.keras.swap_conv2d(model, algo)
    for op in ("linear", "relu", "maxpool2d", "avgpool2d", "adaptiveavgpool2d", "flatten"):
        out = ai3.keras.swap_operation(op, out, "default")
    return out


@pytest.mark.parametrize("build", [sequential, functional])
@pytest.mark.parametrize("algo", ["direct", "gemm", "implicit gemm", "guess", "default"])
def test_hand_built(build, algo: str) -> None:
    model = build()
    x = np.random.default_rng(3).standard_normal((3, 16, 16, 3), dtype=np.float32)
    ref = model(x).numpy()
    swapped = swap_all(model, algo)
    assert rel_err(swapped(x), ref) < 1e-4
    kinds = {type(layer).__module__ for layer in swapped._flatten_layers(include_self=False)}
    assert "ai3.keras.layers" in kinds


def test_functional_structure() -> None:
    model = functional()
    swapped = swap_all(model)
    names = [p for p, _ in ai3.keras.layers_of(model, "conv2d")]
    assert names == ["stem", "sub/sub_conv", "shared"]
    chosen = {p: (op, a) for p, op, a in ai3.keras.chosen_algorithms(swapped)}
    assert chosen["act"][0] == "relu" and chosen["sub/sub_relu"][0] == "relu"
    assert chosen["shared"][0] == "conv2d"
    # the shared layer is still one layer, called twice
    shared = swapped.get_layer("shared")
    assert isinstance(shared, ai3.keras.layers.Layer) and shared.op == "conv2d"
    assert len(shared._inbound_nodes) == 2
    assert isinstance(swapped.get_layer("sub"), keras.Model)


def test_original_unchanged() -> None:
    model = functional()
    x = np.random.default_rng(4).standard_normal((2, 16, 16, 3), dtype=np.float32)
    ref = model(x).numpy()
    before = [(type(l), [w.copy() for w in l.get_weights()]) for l in model._flatten_layers(include_self=False)]
    swapped = swap_all(model, "gemm")
    swapped.layers[1].set_weights([w * 0 for w in swapped.layers[1].get_weights()])
    after = [(type(l), l.get_weights()) for l in model._flatten_layers(include_self=False)]
    assert [t for t, _ in before] == [t for t, _ in after]
    for (_, wb), (_, wa) in zip(before, after):
        assert all(np.array_equal(a, b) for a, b in zip(wa, wb))
    assert np.array_equal(model(x).numpy(), ref)
    assert not any(isinstance(l, ai3.keras.layers.Layer) for l in model._flatten_layers())


# ---- conv2d parameters ---------------------------------------------------------

CONV_CASES = {
    "same_even_kernel_stride2": dict(filters=6, kernel_size=4, strides=2, padding="same"),
    "same_even_kernel_odd_input": dict(filters=6, kernel_size=(2, 4), strides=(2, 3), padding="same"),
    "dilation": dict(filters=6, kernel_size=3, dilation_rate=2, padding="same"),
    "dilation_valid": dict(filters=6, kernel_size=3, dilation_rate=(2, 3)),
    "groups": dict(filters=8, kernel_size=3, groups=2, padding="same"),
    "no_bias": dict(filters=6, kernel_size=3, use_bias=False),
    "fused_activation": dict(filters=6, kernel_size=3, activation="swish", padding="same"),
    "1x1": dict(filters=6, kernel_size=1),
}


@pytest.mark.parametrize("algo", ["direct", "gemm", "implicit gemm", "guess", "winograd"])
@pytest.mark.parametrize("case", list(CONV_CASES))
def test_conv2d_params(case: str, algo: str) -> None:
    keras.utils.set_random_seed(5)
    layer = keras.layers.Conv2D(**CONV_CASES[case])
    model = keras.Sequential([keras.Input((13, 11, 4)), layer])
    x = np.random.default_rng(6).standard_normal((2, 13, 11, 4), dtype=np.float32)
    ref = model(x).numpy()
    if not ai3.keras.applicable(layer, algo):
        with pytest.raises(ai3.AlgorithmNotApplicable):
            ai3.keras.swap_conv2d(model, algo)
        return
    swapped = ai3.keras.swap_conv2d(model, algo)
    assert rel_err(swapped(x), ref) < tolerance(algo)


def test_float64() -> None:
    keras.utils.set_random_seed(7)
    model = keras.Sequential(
        [
            keras.Input((9, 9, 3), dtype="float64"),
            keras.layers.Conv2D(4, 3, padding="same", dtype="float64"),
            keras.layers.Flatten(dtype="float64"),
            keras.layers.Dense(3, dtype="float64"),
        ]
    )
    x = np.random.default_rng(8).standard_normal((2, 9, 9, 3))
    ref = model(x).numpy()
    swapped = swap_all(model, "direct")
    out = swapped(x).numpy()
    assert out.dtype == np.float64
    assert rel_err(out, ref) < 1e-12


def test_channels_first_refused_unless_kept() -> None:
    model = keras.Sequential([keras.Input((3, 8, 8)), keras.layers.Conv2D(4, 3, data_format="channels_first")])
    with pytest.raises(ai3.UnsupportedOperation, match="channels_first"):
        ai3.keras.swap_conv2d(model, "direct")
    kept = ai3.keras.swap_conv2d(model, "keep")
    assert type(kept.layers[0]) is keras.layers.Conv2D


def test_non_default_relu_not_swapped() -> None:
    model = keras.Sequential([keras.Input((4,)), keras.layers.ReLU(6.0), keras.layers.ReLU()])
    assert len(ai3.keras.layers_of(model, "relu")) == 1
    swapped = ai3.keras.swap_relu(model)
    assert type(swapped.layers[0]) is keras.layers.ReLU
    assert isinstance(swapped.layers[1], ai3.keras.layers.Layer) and swapped.layers[1].op == "relu"
    x = np.linspace(-10, 10, 8, dtype=np.float32).reshape(2, 4)
    np.testing.assert_array_equal(swapped(x).numpy(), model(x).numpy())


# ---- Every single-layer op of the Keras mapping, in place --------------------------

# (Keras layer, input shape without the batch): each maps to one core layer
# (ai3.keras.graph.MAPPING), swapped by swap_operation of that op.
SINGLE_LAYER_CASES = {
    "Conv2D": (lambda: keras.layers.Conv2D(6, 3, strides=2, padding="same"), (11, 10, 4)),
    "DepthwiseConv2D": (lambda: keras.layers.DepthwiseConv2D(3, depth_multiplier=2, padding="same"), (9, 9, 3)),
    "Dense": (lambda: keras.layers.Dense(7), (12,)),
    "BatchNormalization": (lambda: keras.layers.BatchNormalization(epsilon=1e-3), (5, 5, 4)),
    "LayerNormalization": (lambda: keras.layers.LayerNormalization(), (6, 8)),
    "ReLU": (lambda: keras.layers.ReLU(), (4, 5, 3)),
    "ReLU(max_value)": (lambda: keras.layers.ReLU(max_value=0.5), (4, 5, 3)),
    "LeakyReLU": (lambda: keras.layers.LeakyReLU(), (4, 5, 3)),
    "LeakyReLU(0.05)": (lambda: keras.layers.LeakyReLU(negative_slope=0.05), (6,)),
    "Softmax": (lambda: keras.layers.Softmax(axis=-1), (3, 7)),
    "MaxPooling2D": (lambda: keras.layers.MaxPooling2D(3, strides=2, padding="same"), (9, 8, 3)),
    "AveragePooling2D": (lambda: keras.layers.AveragePooling2D(2, padding="valid"), (8, 6, 3)),
    "GlobalAveragePooling2D": (lambda: keras.layers.GlobalAveragePooling2D(keepdims=True), (5, 6, 3)),
    "GlobalMaxPooling2D": (lambda: keras.layers.GlobalMaxPooling2D(keepdims=True), (5, 6, 3)),
    "Flatten": (lambda: keras.layers.Flatten(), (3, 4, 2)),
    "ZeroPadding2D": (lambda: keras.layers.ZeroPadding2D(((1, 2), (0, 1))), (4, 4, 2)),
    "Permute": (lambda: keras.layers.Permute((2, 1)), (3, 5)),
    "Cropping2D": (lambda: keras.layers.Cropping2D(((0, 0), (1, 2))), (5, 6, 2)),
    # issue 17 (helper N2)
    "Conv2DTranspose": (lambda: keras.layers.Conv2DTranspose(5, 3, strides=2, padding="same"), (5, 4, 3)),
    "Conv2DTranspose(valid)": (lambda: keras.layers.Conv2DTranspose(4, (2, 3), strides=(2, 1)), (4, 5, 3)),
    "GroupNormalization": (lambda: keras.layers.GroupNormalization(groups=2), (4, 5, 6)),
    "UpSampling2D": (lambda: keras.layers.UpSampling2D((2, 3)), (3, 4, 2)),
    "UpSampling2D(bilinear)": (lambda: keras.layers.UpSampling2D(2, interpolation="bilinear"), (3, 4, 2)),
    "Resizing": (lambda: keras.layers.Resizing(7, 5), (4, 6, 2)),
    **{
        f"Activation({name})": (lambda name=name: keras.layers.Activation(name), (4, 6))
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
    # issue 17
    "ELU": (lambda: keras.layers.ELU(), (4, 5, 3)),
    "ELU(0.4)": (lambda: keras.layers.ELU(0.4), (6,)),
    "ReLU(threshold)": (lambda: keras.layers.ReLU(threshold=0.5), (4, 5, 3)),
    **{
        f"Activation({name})": (lambda name=name: keras.layers.Activation(name), (4, 6))
        for name in ("elu", "selu", "softplus", "softsign", "exponential", "mish")
    },
}


@pytest.mark.parametrize("case", list(SINGLE_LAYER_CASES))
def test_every_single_layer_op_in_place(case: str) -> None:
    from ai3.keras import graph

    make, shape = SINGLE_LAYER_CASES[case]
    keras.utils.set_random_seed(14)
    layer = make()
    model = keras.Sequential([keras.Input(shape), layer])
    rng = np.random.default_rng(15)
    # non-trivial weights everywhere (a batch norm's statistics too)
    model.set_weights([rng.uniform(0.5, 1.5, w.shape).astype(w.dtype) for w in model.get_weights()])
    (step,) = graph.map_layer(layer, (None, *shape))
    swapped = ai3.keras.swap_operation(step.op, model, "default")
    new = swapped.layers[0]
    assert isinstance(new, ai3.keras.layers.Layer) and new.op == step.op
    assert [w.name for w in new.weights] == [w.name for w in layer.weights]
    assert all(np.array_equal(a, b) for a, b in zip(new.get_weights(), model.get_weights()))
    f = tf.function(lambda t: swapped(t), input_signature=[tf.TensorSpec([None, *shape], tf.float32)])
    for batch in (1, 3):
        x = rng.standard_normal((batch, *shape), dtype=np.float32)
        ref = model(x).numpy()
        assert rel_err(swapped(x), ref) < 1e-5, "eager"
        assert rel_err(f(x), ref) < 1e-5, "tf.function"
    assert tuple(f.get_concrete_function().structured_outputs.shape) == tuple(model.outputs[0].shape)


def test_layer_variables_are_the_weights(tmp_path) -> None:
    """The generic layer's variables are the model's weights: get/set,
    trainable lists and saved weights see them; model.predict runs it."""
    model = sequential()
    swapped = swap_all(model, "gemm")
    assert [(w.name, tuple(w.shape), w.trainable) for w in swapped.weights] == [
        (w.name, tuple(w.shape), w.trainable) for w in model.weights
    ]
    assert len(swapped.trainable_weights) == len(model.trainable_weights)
    x = np.random.default_rng(16).standard_normal((2, 16, 16, 3), dtype=np.float32)
    path = str(tmp_path / "w.weights.h5")
    swapped.save_weights(path)
    other = swap_all(sequential(), "direct")
    other.set_weights([w * 0 for w in other.get_weights()])
    other.load_weights(path)
    assert rel_err(other(x), model(x)) < 1e-4
    assert rel_err(other.predict(x, batch_size=1, verbose=0), model(x)) < 1e-4


# ---- Running: tf.function, batch sizes, weights, save/load ----------------------------


def test_tf_function_and_batch_sizes() -> None:
    model = functional()
    swapped = swap_all(model, "gemm")
    f = tf.function(
        lambda t: swapped(t, training=False), input_signature=[tf.TensorSpec([None, 16, 16, 3], tf.float32)]
    )
    rng = np.random.default_rng(9)
    for batch in (1, 5, 2):
        x = rng.standard_normal((batch, 16, 16, 3), dtype=np.float32)
        ref = model(x).numpy()
        assert rel_err(f(x), ref) < 1e-4
        assert rel_err(swapped(x), ref) < 1e-4
    # a graph with unknown spatial size: "same" padding is computed per call
    g = tf.function(
        lambda t: swapped.get_layer("stem")(t), input_signature=[tf.TensorSpec([None, None, None, 3], tf.float32)]
    )
    for h, w in ((16, 16), (9, 12)):
        x = rng.standard_normal((2, h, w, 3), dtype=np.float32)
        assert rel_err(g(x), model.get_layer("stem")(x)) < 1e-4


def test_set_weights_rebuilds() -> None:
    model = sequential()
    swapped = ai3.keras.swap_conv2d(model, "gemm")
    swapped = ai3.keras.swap_linear(swapped, "gemm")
    x = np.random.default_rng(10).standard_normal((2, 16, 16, 3), dtype=np.float32)
    first = swapped(x).numpy()
    new = [w * 0.5 + 0.01 for w in model.get_weights()]
    model.set_weights(new)
    swapped.set_weights(new)
    second = swapped(x).numpy()
    assert not np.allclose(first, second)
    assert rel_err(second, model(x).numpy()) < 1e-4
    # in place through the variable as well, eagerly and in a tf.function
    f = tf.function(lambda t: swapped(t))
    assert rel_err(f(x), model(x)) < 1e-4
    conv = swapped.layers[0]
    conv.kernel.assign(conv.kernel * 2.0)
    model.layers[0].kernel.assign(model.layers[0].kernel * 2.0)
    assert rel_err(swapped(x), model(x)) < 1e-4
    conv.bias.assign_add(tf.ones_like(conv.bias))
    model.layers[0].bias.assign_add(tf.ones_like(model.layers[0].bias))
    assert rel_err(f(x), model(x)) < 1e-4
    assert rel_err(swapped(x), model(x)) < 1e-4


def test_save_load_round_trip(tmp_path) -> None:
    model = functional()
    algos = ["direct", "winograd", "gemm"]  # stem (stride 2) cannot take winograd
    swapped = ai3.keras.swap_conv2d(model, ["gemm", "winograd", "direct"])
    swapped = ai3.keras.swap_linear(swapped, "direct")
    x = np.random.default_rng(11).standard_normal((2, 16, 16, 3), dtype=np.float32)
    out = swapped(x).numpy()
    path = str(tmp_path / "swapped.keras")
    swapped.save(path)
    loaded = keras.models.load_model(path)
    np.testing.assert_allclose(loaded(x).numpy(), out, rtol=0, atol=1e-6)
    assert ai3.keras.chosen_algorithms(loaded) == ai3.keras.chosen_algorithms(swapped)
    assert [a for _, op, a in ai3.keras.chosen_algorithms(loaded) if op == "conv2d"] == ["gemm", "winograd", "direct"]
    assert algos  # (documentation of the order above)


# ---- Selectors -------------------------------------------------------------------


def test_selector_forms() -> None:
    model = sequential()
    x = np.random.default_rng(12).standard_normal((2, 16, 16, 3), dtype=np.float32)
    ref = model(x).numpy()
    s = ai3.keras.swap_conv2d(model, ["direct", "keep"])
    assert isinstance(s.layers[0], ai3.keras.layers.Layer) and s.layers[0].op == "conv2d"
    assert type(s.layers[2]) is keras.layers.Conv2D
    assert rel_err(s(x), ref) < 1e-4
    s = ai3.keras.swap_conv2d(model, lambda layer: "gemm" if layer.strides == (1, 1) else "direct")
    assert [a for _, op, a in ai3.keras.chosen_algorithms(s) if op == "conv2d"] == ["gemm", "direct"]
    seen = []

    def by_shape(layer, input_shape):
        seen.append(input_shape)
        return "implicit gemm"

    s = ai3.keras.swap_conv2d(model, by_shape, sample_input_shape=(7, 16, 16, 3))
    assert seen == [(7, 16, 16, 3), (7, 8, 8, 8)]
    assert rel_err(s(x), ref) < 1e-4


def test_bad_selectors() -> None:
    model = sequential()
    with pytest.raises(ai3.InvalidSelector):
        ai3.keras.swap_conv2d(model, 3)
    with pytest.raises(ai3.InvalidSelector, match="lists 1 algorithms but the model has 2"):
        ai3.keras.swap_conv2d(model, ["direct"])
    with pytest.raises(ai3.InvalidSelector):
        ai3.keras.swap_conv2d(model, lambda layer: 5)
    with pytest.raises(ai3.UnknownAlgorithm):
        ai3.keras.swap_conv2d(model, "nope")
    with pytest.raises(ai3.InvalidSelector, match="sample_input_shape"):
        ai3.keras.swap_conv2d(model, lambda layer, shape: "direct")
    with pytest.raises(ai3.UnsupportedOperation, match="unknown op"):
        ai3.keras.swap_operation("softmax3d", model, "direct")
    with pytest.raises(ai3.InvalidArgument):
        ai3.keras.swap_conv2d("not a model", "direct")


# ---- Bad input ---------------------------------------------------------------------


def test_bad_input() -> None:
    model = sequential()
    swapped = swap_all(model, "gemm")
    x = np.random.default_rng(13).standard_normal((2, 16, 16, 3), dtype=np.float32)
    with pytest.raises(ai3.ShapeError, match="conv2d layer 'conv2d"):
        swapped(np.zeros((2, 16, 16, 4), np.float32))
    conv = swapped.layers[0]
    for dtype in (tf.float16, tf.int32, tf.float64):
        with pytest.raises(ai3.DTypeError, match="conv2d layer"):
            conv(tf.cast(x, dtype))
    dense = swapped.layers[-1]
    with pytest.raises(ai3.ShapeError, match="linear layer"):
        dense(tf.zeros((2, 7)))
    with pytest.raises(ai3.DTypeError):
        swapped.layers[3](tf.zeros((2, 3), tf.int32))  # relu
    # in a traced graph, the shape function reports the same error
    with pytest.raises(ai3.ShapeError, match="conv2d layer"):
        tf.function(lambda t: conv(t), autograph=False).get_concrete_function(
            tf.TensorSpec([None, 8, 8, 5], tf.float32)
        )


if __name__ == "__main__":
    pytest_main.run(__file__)
