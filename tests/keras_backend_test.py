"""ai3.keras swap_backend: Keras 3 functional graphs run whole by the core
(NHWC), against the Keras model itself (model(x, training=False)).

keras.applications models are built with weights=None, random batch-norm
statistics (so that folding them into the convolutions is really tested)
and small inputs. Outputs are compared relative to the output's scale:
max|ai3 - keras| <= 1e-4 * max|keras|.

Spec ops that the core does not have yet in this build (the issue-7 ops
land one by one) make the tests that need them skip, saying which op; once
the core has them, the same tests run.
"""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import pytest_main  # noqa: E402
import tensorflow as tf  # noqa: E402

import ai3  # noqa: E402
from ai3 import model as ai3_model  # noqa: E402
from ai3.keras import coverage, graph  # noqa: E402

L = keras.layers
TOL = 1e-4
CORE_OPS = set(ai3_model.CORE_OPS) | set(ai3_model.GRAPH_OPS) | {"identity"}


def need_ops(specs) -> None:
    """Skips the test when the core lacks an op its specs need."""
    missing = sorted({s.op for s in specs} - CORE_OPS)
    if missing:
        pytest.skip(f"this build of ai3's core lacks the op(s) {missing}")


def randomize_batchnorm(model: keras.Model, seed: int = 0) -> None:
    rng = np.random.RandomState(seed)
    for layer in _all_layers(model):
        if isinstance(layer, L.BatchNormalization):
            layer.set_weights(
                [
                    rng.uniform(0.5, 1.5, w.shape).astype(w.dtype)
                    if v.name in ("gamma", "moving_variance")
                    else (0.1 * rng.randn(*w.shape)).astype(w.dtype)
                    for v, w in zip(layer.weights, layer.get_weights())
                ]
            )


def _all_layers(model):
    for layer in model.layers:
        if isinstance(layer, keras.Model):
            yield from _all_layers(layer)
        yield layer


def inputs(shape, seed=0, dtype="float32"):
    return np.random.RandomState(seed).randn(*shape).astype(dtype)


def assert_matches(got, want, tol=TOL, what=""):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape} vs keras {want.shape}"
    err = float(np.abs(got - want).max())
    scale = float(np.abs(want).max())
    assert err <= tol * max(scale, 1e-30), f"{what}: max error {err:.3g} vs output scale {scale:.3g}"


def check(model, x, algos=None, sample_input_shape=None, **kw):
    """swap_backend(model) on x against model(x); returns the ai3.Model."""
    specs, _ = graph.to_specs(model, sample_input_shape)
    need_ops(specs)
    ai3_net = graph.swap_backend(model, algos, sample_input_shape, **kw)
    want = np.asarray(model(x, training=False))
    assert_matches(ai3_net(x), want, what=model.name)
    return ai3_net


# --------------------------------------------------------------------------
# keras.applications: every family (ai3.keras.coverage.MODELS), batch 2,
# random batch-norm statistics, logits; tolerance per model in MODELS.


@pytest.mark.parametrize("name", sorted(coverage.MODELS))
def test_application(name):
    model, x = coverage.build(name), coverage.input_for(name)
    specs, _ = graph.to_specs(model)
    need_ops(specs)
    want = np.asarray(model(x, training=False))
    net = graph.swap_backend(model)
    assert_matches(net(x), want, tol=coverage.MODELS[name].tol, what=name)


def test_coverage_rows():
    rows = coverage.coverage(["mobilenet_v2"])
    assert [(r.family, r.model) for r in rows] == [("mobilenet_v2", "MobileNetV2")]
    assert rows[0].ok, rows[0].reason


# --------------------------------------------------------------------------
# graphs


def branchy_model():
    """Branches (Add, Concatenate), a nested Functional and a nested
    Sequential, a layer shared by two calls."""
    keras.utils.set_random_seed(1)
    inner_in = keras.Input((8, 8, 6))
    y = L.Conv2D(6, 3, padding="same", name="inner_conv")(inner_in)
    y = L.BatchNormalization(name="inner_bn")(y)
    y = L.ReLU(name="inner_relu")(y)
    inner = keras.Model(inner_in, L.Add(name="inner_add")([y, inner_in]), name="inner")
    seq = keras.Sequential(
        [keras.Input((8, 8, 12)), L.Conv2D(4, 1, name="seq_conv"), L.ReLU(name="seq_relu")], name="seq"
    )

    i = keras.Input((16, 16, 3))
    x = L.Conv2D(6, 3, padding="same", activation="relu", name="stem")(i)
    x = L.MaxPooling2D(2, name="pool")(x)
    shared = L.Conv2D(6, 3, padding="same", name="shared")
    a = shared(x)
    b = shared(L.ReLU(name="pre_shared")(x))
    a = inner(a)
    b = inner(b)  # the nested model called twice too
    s = L.Add(name="sum3")([a, b, x])
    c = L.Concatenate(name="cat")([s, x])
    c = seq(c)
    c = L.Dropout(0.5, name="drop")(c)
    c = L.AveragePooling2D(2, name="avg")(c)
    c = L.Flatten(name="flat")(c)  # NHWC order, as Keras flattens
    out = L.Dense(5, name="head")(c)
    model = keras.Model(i, out, name="branchy")
    randomize_batchnorm(model)
    return model


def test_branches_nested_and_shared():
    model = branchy_model()
    specs, output = graph.to_specs(model)
    names = [s.name for s in specs]
    # One spec per call of the shared layer and of the nested model's layers.
    assert names.count("shared") == 1 and "shared#1" in names
    assert "inner/inner_conv" in names and "inner/inner_conv#1" in names
    assert "seq/seq_conv" in names
    assert [s.op for s in specs].count("add") == 3
    assert specs[output].name == "head"
    assert isinstance(specs[names.index("shared#1")].layer, L.Conv2D)
    ai3_net = check(model, inputs((2, 16, 16, 3)))
    assert "dropout" not in {op for _, op, _ in ai3_net.layers()}
    # The inner batch norms are folded into their convolutions.
    assert "batchnorm2d" not in {op for _, op, _ in ai3_net.layers()}


def test_tensor_sum_and_broadcast():
    keras.utils.set_random_seed(5)
    i = keras.Input((6, 6, 4))
    a = L.Conv2D(4, 3, padding="same", name="a")(i)
    check(keras.Model(i, a + i), inputs((2, 6, 6, 4)))  # keras.ops.add on KerasTensors
    g = L.GlobalAveragePooling2D(keepdims=True, name="g")(a)
    # Merge layers broadcast (squeeze-and-excitation), three inputs chain.
    model = keras.Model(i, L.Add(name="bcast")([a, g]))
    assert [s.op for s in graph.to_specs(model)[0]][-1] == "add"
    check(model, inputs((2, 6, 6, 4)))
    check(keras.Model(i, L.Multiply(name="se")([a, g, i])), inputs((2, 6, 6, 4)))
    check(keras.Model(i, L.Subtract(name="minus")([a, g])), inputs((2, 6, 6, 4)))


@pytest.mark.parametrize(
    "expr,op,reverse",
    [
        (lambda a: a + 1.5, "add", False),
        (lambda a: 2.0 - a, "sub", True),
        (lambda a: a * 0.25, "mul", False),
        (lambda a: a / 3.0, "div", False),
        (lambda a: 2.0 / (a * a + 1.0), "div", True),
    ],
)
def test_tensor_ops_with_constants(expr, op, reverse):
    i = keras.Input((5, 5, 3))
    a = L.Conv2D(3, 1, name="a")(i)
    model = keras.Model(i, expr(a))
    specs, out = graph.to_specs(model)
    assert specs[out].op == op and specs[out].attrs["reverse"] is reverse
    assert "other" in specs[out].weights
    check(model, inputs((2, 5, 5, 3)))


def test_hard_sigmoid_written_out():
    """MobileNetV3's hard_sigmoid: ReLU(6)(x + 3) * (1/6) on KerasTensors."""
    i = keras.Input((6, 6, 4))
    x = L.Conv2D(4, 1, name="c")(i)
    y = L.ReLU(6.0, name="r6")(x + 3.0) * (1.0 / 6.0)
    model = keras.Model(i, L.Multiply(name="hs")([x, y]))
    assert [s.op for s in graph.to_specs(model)[0]] == ["conv2d", "add", "clamp", "mul", "mul"]
    check(model, inputs((2, 6, 6, 4)) * 4)


def test_reshape_that_moves_no_data():
    keras.utils.set_random_seed(6)
    i = keras.Input((8, 8, 4))
    x = L.Conv2D(4, 3, padding="same", name="c")(i)
    g = L.GlobalAveragePooling2D(name="squeeze")(x)
    g = L.Reshape((1, 1, 4), name="unflatten")(g)
    g = L.Conv2D(4, 1, activation="relu", name="excite")(g)
    y = L.Reshape((8, 8, 4), name="same_shape")(x)
    model = keras.Model(i, L.Concatenate()([L.Flatten()(y), L.Flatten()(g)]))
    specs, _ = graph.to_specs(model)
    assert "squeeze/flatten" not in [s.name for s in specs]  # undone by the reshape
    check(model, inputs((2, 8, 8, 4)))


def test_reshape_permute_and_cropping():
    keras.utils.set_random_seed(7)
    i = keras.Input((8, 6, 4))
    x = L.Conv2D(4, 3, padding="same", name="c")(i)
    r = L.Reshape((4, 48), name="regroup")(x)
    r = L.Permute((2, 1), name="swap")(r)
    r = L.Reshape((-1,), name="flat")(r)
    c = L.Cropping2D(((1, 2), (0, 3)), name="crop")(x)
    c = L.Cropping2D(((0, 0), (1, 0)), name="crop_left")(c)
    model = keras.Model(i, L.Concatenate()([r, L.Flatten()(c)]))
    ops = {s.name: s.op for s in graph.to_specs(model)[0]}
    assert ops["regroup"] == "reshape" and ops["swap"] == "permute" and ops["crop"] == "slice"
    check(model, inputs((2, 8, 6, 4)))
    # Any batch: the reshape copies the batch dimension.
    net = graph.swap_backend(model)
    x3 = inputs((3, 8, 6, 4), seed=1)
    assert_matches(net(x3), np.asarray(model(x3, training=False)))


def test_separable_conv():
    keras.utils.set_random_seed(8)
    i = keras.Input((11, 11, 3))
    x = L.SeparableConv2D(5, 3, strides=2, padding="same", depth_multiplier=2, activation="relu", name="sep")(i)
    x = L.SeparableConv2D(4, (3, 1), dilation_rate=(2, 1), use_bias=False, name="sep2")(x)
    model = keras.Model(i, x)
    specs, _ = graph.to_specs(model)
    assert [s.op for s in specs] == ["conv2d", "conv2d", "relu", "conv2d", "conv2d"]
    assert specs[0].attrs["groups"] == 3 and specs[0].weights["weight"].shape == (6, 1, 3, 3)
    check(model, inputs((2, 11, 11, 3)))


def test_multihead_attention():
    """Self-attention (one input) and causal cross-attention (three), as the
    core's multihead_attention in torch's layout."""
    keras.utils.set_random_seed(10)
    i = keras.Input((5, 8))
    a = L.MultiHeadAttention(num_heads=2, key_dim=4, name="self")(i, i)
    b = L.MultiHeadAttention(num_heads=4, key_dim=2, name="cross")(a, i * 2.0, use_causal_mask=True)
    model = keras.Model(i, a + b)
    rng = np.random.RandomState(1)
    for layer in model.layers:
        if isinstance(layer, L.MultiHeadAttention):
            for w in layer.weights:
                w.assign((0.3 * rng.randn(*w.shape)).astype("float32"))
    specs, _ = graph.to_specs(model)
    assert [(s.op, len(s.inputs)) for s in specs if s.op == "multihead_attention"] == [
        ("multihead_attention", 1),
        ("multihead_attention", 3),
    ]
    assert specs[2].attrs == {"num_heads": 4, "batch_first": True, "causal": True}
    check(model, inputs((2, 5, 8)))
    j = keras.Input((5, 8))
    masked = keras.Model([i, j], L.MultiHeadAttention(2, 4, name="masked")(i, i, attention_mask=j > 0))
    with pytest.raises(ai3.UnsupportedOperation):
        graph.swap_backend(masked)
    odd = keras.Model(i, L.MultiHeadAttention(2, 3, name="odd")(i, i))
    with pytest.raises(ai3.UnsupportedOperation, match="'odd'.*key_dim=3"):
        graph.swap_backend(odd)


@pytest.mark.parametrize("rank", [2, 3, 4])
def test_dense_any_rank_and_layernorm(rank):
    keras.utils.set_random_seed(9)
    shape = {2: (12,), 3: (5, 12), 4: (3, 4, 12)}[rank]
    i = keras.Input(shape)
    x = L.LayerNormalization(epsilon=1e-5, name="ln")(i)
    x = L.Dense(16, activation="gelu", name="fc1")(x)
    x = L.Dense(12, name="fc2")(x)
    x = L.LayerNormalization(axis=list(range(1, rank)), center=False, name="ln_all")(x)
    model = keras.Model(i, x)
    for layer in (model.get_layer("ln"), model.get_layer("ln_all")):
        layer.set_weights(
            [
                np.random.RandomState(k).uniform(0.5, 1.5, w.shape).astype("float32")
                for k, w in enumerate(layer.get_weights())
            ]
        )
    specs, _ = graph.to_specs(model)
    ops = [s.op for s in specs]
    assert ops[0] == "layernorm" and specs[0].attrs["axes"] == 1 and specs[-1].attrs["axes"] == rank - 1
    assert "linear" in ops and "matmul" not in ops and "gelu" in ops  # Dense is a linear at any rank
    check(model, inputs((2, *shape)))


def test_concatenate_axes():
    i = keras.Input((6, 6, 4))
    a = L.Conv2D(3, 1, name="a")(i)
    b = L.Conv2D(5, 1, name="b")(i)
    c = L.Concatenate(axis=-1)([a, b])
    d = L.Concatenate(axis=3)([b, a])
    e = L.Concatenate(axis=1)([c, d])  # along H: still NHWC memory order
    check(keras.Model(i, e), inputs((2, 6, 6, 4)))


@pytest.mark.parametrize("size", [15, 16, 17, 18])
@pytest.mark.parametrize("kernel", [2, 3, 4])
def test_same_padding_stride2(size, kernel):
    keras.utils.set_random_seed(2)
    i = keras.Input((size, size, 3))
    x = L.Conv2D(4, kernel, strides=2, padding="same")(i)
    x = L.MaxPooling2D(kernel, strides=2, padding="same")(x)
    y = L.AveragePooling2D(kernel, strides=2, padding="same")(i)
    y = L.Conv2D(4, kernel, strides=2, padding="same", dilation_rate=1)(y)
    x = L.Concatenate()([L.Flatten()(x), L.Flatten()(L.MaxPooling2D(2, padding="same")(y))])
    check(keras.Model(i, x), inputs((1, size, size, 3)))


def test_same_padding_needs_static_size():
    i = keras.Input((None, None, 3))
    x = L.Conv2D(4, 4, strides=2, padding="same", name="s2")(i)
    model = keras.Model(i, L.GlobalAveragePooling2D()(x))
    with pytest.raises(ai3.UnsupportedOperation, match="'s2'.*sample_input_shape"):
        graph.swap_backend(model)
    x = inputs((2, 21, 19, 3))
    check(model, x, sample_input_shape=x.shape)


def test_dilated_conv_same():
    i = keras.Input((20, 20, 3))
    x = L.Conv2D(4, 3, dilation_rate=2, padding="same", activation="relu")(i)
    x = L.Conv2D(2, 3, dilation_rate=(1, 3), padding="valid", use_bias=False)(x)
    check(keras.Model(i, x), inputs((2, 20, 20, 3)))


@pytest.mark.parametrize("mult,stride,padding", [(1, 1, "same"), (2, 2, "same"), (3, 1, "valid"), (1, 2, "valid")])
def test_depthwise(mult, stride, padding):
    keras.utils.set_random_seed(3)
    i = keras.Input((13, 13, 4))
    x = L.DepthwiseConv2D(3, strides=stride, padding=padding, depth_multiplier=mult, name="dw")(i)
    x = L.BatchNormalization()(x)
    x = L.ReLU()(x)
    model = keras.Model(i, x)
    model.get_layer("dw").bias.assign(np.random.RandomState(0).randn(4 * mult).astype("float32"))
    randomize_batchnorm(model)
    specs, _ = graph.to_specs(model)
    conv = specs[0]
    assert conv.op == "conv2d" and conv.attrs["groups"] == 4 and conv.weights["weight"].shape == (4 * mult, 1, 3, 3)
    check(model, inputs((2, 13, 13, 4)))


def test_grouped_conv():
    i = keras.Input((9, 9, 6))
    x = L.Conv2D(9, 3, groups=3, padding="same")(i)
    check(keras.Model(i, x), inputs((1, 9, 9, 6)))


def test_global_pooling_and_keepdims():
    i = keras.Input((7, 7, 5))
    x = L.Conv2D(6, 3)(i)
    a = L.GlobalAveragePooling2D()(x)
    b = L.Flatten()(L.GlobalAveragePooling2D(keepdims=True)(x))
    c = L.GlobalMaxPooling2D()(x)
    d = L.Flatten()(L.GlobalMaxPooling2D(keepdims=True)(x))
    check(keras.Model(i, L.Concatenate()([a, b, c, d])), inputs((3, 7, 7, 5)))


def test_leaky_relu():
    i = keras.Input((7, 7, 3))
    x = L.LeakyReLU(negative_slope=0.1)(L.Conv2D(4, 3)(i))
    model = keras.Model(i, L.LeakyReLU()(x))  # Keras' default slope, 0.3
    assert [s.attrs["alpha"] for s in graph.to_specs(model)[0] if s.op == "leaky_relu"] == [
        pytest.approx(0.1),
        pytest.approx(0.3),
    ]
    check(model, inputs((3, 7, 7, 3)))


def test_rescaling_and_normalization():
    i = keras.Input((8, 8, 3))
    x = L.Rescaling(1 / 127.5, offset=-1.0)(i)
    x = L.Rescaling([0.5, 2.0, 1.5], offset=[0.1, 0.0, -0.2])(x)
    x = L.Normalization(mean=[0.1, 0.2, 0.3], variance=[1.5, 0.5, 2.0])(x)
    x = L.Normalization(mean=[0.1, 0.2, 0.3], variance=[1.5, 0.5, 2.0], invert=True)(x)
    x = L.Conv2D(4, 3, name="conv")(x)
    model = keras.Model(i, x)
    specs, _ = graph.to_specs(model)
    assert [s.op for s in specs] == ["batchnorm2d"] * 4 + ["conv2d"]
    check(model, inputs((2, 8, 8, 3)) * 100)


def test_batchnorm_without_scale_or_center():
    i = keras.Input((6, 6, 3))
    x = L.Conv2D(4, 3, use_bias=False)(i)
    x = L.BatchNormalization(scale=False, epsilon=1e-3)(x)
    x = L.ReLU()(x)
    y = L.BatchNormalization(center=False, axis=3)(x)  # after a relu: not folded
    model = keras.Model(i, y)
    randomize_batchnorm(model)
    check(model, inputs((2, 6, 6, 3)))


@pytest.mark.parametrize(
    "activation,op",
    [
        ("relu", "relu"),
        ("linear", None),
        ("relu6", "clamp"),
        ("sigmoid", "sigmoid"),
        ("swish", "silu"),
        ("silu", "silu"),
        ("tanh", "tanh"),
        ("softmax", "softmax"),
        ("log_softmax", "log_softmax"),
        ("gelu", "gelu"),
        ("hard_silu", "hardswish"),
        ("hard_swish", "hardswish"),
        ("hard_sigmoid", "hardsigmoid"),
    ],
)
def test_activations(activation, op):
    i = keras.Input((5, 5, 3))
    x = L.Conv2D(4, 3, activation=activation, name="conv")(i)
    x = L.Activation(activation, name="act")(L.Flatten()(x))
    x = L.Dense(3, activation=activation, name="dense")(x)
    model = keras.Model(i, x)
    specs, _ = graph.to_specs(model)
    ops = [s.op for s in specs]
    if op is None:
        assert ops == ["conv2d", "flatten", "identity", "linear"] or ops == ["conv2d", "flatten", "linear"]
    else:
        assert ops == ["conv2d", op, "flatten", op, "linear", op]
    check(model, inputs((2, 5, 5, 3)) * 3)


def test_relu_layer_variants():
    i = keras.Input((5, 5, 3))
    x = L.ReLU(max_value=6.0)(L.Conv2D(4, 3)(i))
    x = L.Softmax()(L.Flatten()(x))
    check(keras.Model(i, x), inputs((2, 5, 5, 3)) * 4)
    leaky = keras.Model(i, L.ReLU(negative_slope=0.1, name="leaky")(i))
    with pytest.raises(ai3.UnsupportedOperation, match="'leaky'.*ReLU"):
        graph.swap_backend(leaky)


def test_zero_padding():
    i = keras.Input((9, 9, 3))
    x = L.ZeroPadding2D(((1, 2), (0, 3)), name="pad_conv")(i)
    x = L.Conv2D(4, 3, strides=2, name="conv")(x)  # the pad folds into the conv
    x = L.ReLU()(x)
    x = L.ZeroPadding2D(1, name="pad_pool")(x)
    x = L.MaxPooling2D(3, strides=2, name="pool")(x)  # after a relu: folds too
    y = L.ZeroPadding2D(((0, 1), (1, 0)), name="pad_avg")(x)
    y = L.AveragePooling2D(2, name="avg")(y)  # counts the zeros: stays a pad2d
    model = keras.Model(i, y)
    specs, out = graph.to_specs(model)
    assert [s.op for s in specs].count("pad2d") == 3
    folded, _ = graph.fold_zero_padding(specs, out)
    assert [s.op for s in folded] == ["conv2d", "relu", "maxpool2d", "pad2d", "avgpool2d"]
    assert folded[0].attrs["padding"] == (1, 2, 0, 3)
    check(model, inputs((2, 9, 9, 3)))


def test_sequential_model():
    keras.utils.set_random_seed(4)
    model = keras.Sequential(
        [
            keras.Input((12, 12, 3)),
            L.Conv2D(4, 3, activation="relu"),
            L.MaxPooling2D(),
            L.Flatten(),
            L.Dropout(0.2),
            L.Dense(10),
        ]
    )
    check(model, inputs((3, 12, 12, 3)))
    unbuilt = keras.Sequential([L.Conv2D(4, 3), L.GlobalAveragePooling2D(), L.Dense(2)])
    with pytest.raises(ai3.InvalidArgument, match="sample_input_shape"):
        graph.swap_backend(unbuilt)
    x = inputs((2, 10, 10, 3))
    ai3_net = graph.swap_backend(unbuilt, sample_input_shape=x.shape)
    assert_matches(ai3_net(x), unbuilt(x, training=False))


def test_float64_override():
    model = branchy_model()
    x = inputs((1, 16, 16, 3))
    ai3_net = graph.swap_backend(model, dtype="float64")
    assert ai3_net.dtype == np.float64
    assert_matches(ai3_net(x.astype(np.float64)), model(x, training=False), tol=1e-5)


# --------------------------------------------------------------------------
# selectors, inputs, errors


def small_model():
    keras.utils.set_random_seed(5)
    i = keras.Input((10, 10, 3))
    x = L.Conv2D(4, 3, padding="same", activation="relu", name="c1")(i)
    x = L.Conv2D(4, 3, name="c2")(x)
    x = L.MaxPooling2D(name="mp")(x)
    x = L.Flatten(name="fl")(x)
    x = L.Dense(6, name="d1")(x)
    return keras.Model(i, x, name="small")


def test_selector_string_and_dict():
    model, x = small_model(), inputs((2, 10, 10, 3))
    net = check(model, x, "direct")
    assert net.algorithms("conv2d") == ["direct", "direct"]
    net = check(model, x, {"conv2d": ["gemm", "direct"], "linear": "gemm", "relu": "direct"})
    assert net.algorithms("conv2d") == ["gemm", "direct"]
    assert net.algorithms("linear") == ["gemm"]
    with pytest.raises(ai3.InvalidSelector, match="2 conv2d layers"):
        graph.swap_backend(model, {"conv2d": ["direct"]})
    with pytest.raises(ai3.InvalidSelector):
        graph.swap_backend(model, {"nope": "direct"})
    with pytest.raises(ai3.UnknownAlgorithm, match="'c1'"):
        graph.swap_backend(model, "no-such-algorithm")


def test_selector_callables():
    model = small_model()
    seen = []

    def by_layer(layer):
        seen.append(layer)
        return "gemm" if layer.name == "c1" else "direct"

    x = inputs((2, 10, 10, 3))
    net = check(model, x, by_layer)
    assert [l.name for l in seen] == ["c1", "c2"]
    assert all(isinstance(l, L.Conv2D) for l in seen)
    assert net.algorithms("conv2d") == ["gemm", "direct"]

    shapes = {}

    def by_shape(layer, shape):
        shapes[layer.name] = shape
        return "direct"

    # Without a sample input shape, the graph's own shapes (batch None).
    check(model, x, {"conv2d": by_shape})
    assert shapes == {"c1": (None, 10, 10, 3), "c2": (None, 10, 10, 4)}
    net = check(model, x, {"conv2d": by_shape, "linear": lambda layer: "gemm"}, sample_input_shape=(2, 10, 10, 3))
    assert shapes == {"c1": (2, 10, 10, 3), "c2": (2, 10, 10, 4)}
    specs, _ = graph.to_specs(model, (7, 10, 10, 3))
    assert {s.name: s.input_shape for s in specs}["d1"] == (7, 64)
    assert graph.to_specs(model)[0][0].input_shape == (None, 10, 10, 3)

    # A model whose height and width are unknown: no shape to give the
    # selector but the graph's, with None in it.
    i = keras.Input((None, None, 3))
    dynamic = keras.Model(i, L.Conv2D(2, 3, name="c")(i))
    graph.swap_backend(dynamic, {"conv2d": by_shape})
    assert shapes["c"] == (None, None, None, 3)
    check(dynamic, x, {"conv2d": by_shape}, sample_input_shape=x.shape)
    assert shapes["c"] == (2, 10, 10, 3)


# Every conv2d algorithm takes NHWC (smm and kn2row since issue 15).
NHWC_CONV = [a for a in ai3.algorithms()["conv2d"] if a != "custom"]


@pytest.mark.parametrize("algorithm", NHWC_CONV)
def test_conv_algorithms_nhwc(algorithm):
    model, x = small_model(), inputs((2, 10, 10, 3))
    net = graph.swap_backend(model, algorithm)
    assert net.algorithms("conv2d") == [algorithm] * 2
    assert_matches(net(x), model(x, training=False), tol=5e-3 if algorithm == "winograd" else TOL, what=algorithm)


def test_inapplicable_algorithm_is_refused_naming_the_layer():
    with pytest.raises(ai3.AlgorithmNotApplicable, match="'c1'"):
        graph.swap_backend(small_model(), "custom")


def test_public_entry_point():
    import ai3.keras

    model, x = small_model(), inputs((2, 10, 10, 3))
    net = ai3.keras.swap_backend(model, {"conv2d": "direct"})
    assert isinstance(net, ai3.Model) and net.layout == "NHWC"
    assert_matches(net(x), model(x, training=False))


def test_batch_different_from_sample():
    model = small_model()
    net = graph.swap_backend(model, "direct", sample_input_shape=(2, 10, 10, 3))
    for n in (1, 5):
        x = inputs((n, 10, 10, 3), seed=n)
        assert_matches(net(x), model(x, training=False), what=f"batch {n}")


def test_numpy_torch_and_tf_inputs():
    import torch

    model = small_model()
    net = graph.swap_backend(model)
    x = inputs((2, 10, 10, 3))
    want = np.asarray(model(x, training=False))
    got = net(x)
    assert isinstance(got, np.ndarray)
    assert_matches(got, want)
    t = net(torch.from_numpy(x))
    assert isinstance(t, torch.Tensor)
    assert_matches(t.numpy(), want)
    # A tf.Tensor goes in through NumPy (ai3.Model takes NumPy and torch).
    tx = tf.constant(x)
    assert_matches(net(tx.numpy()), model(tx, training=False))
    # A non-contiguous (transposed) NumPy view is made contiguous.
    xt = np.ascontiguousarray(x.transpose(0, 2, 1, 3)).transpose(0, 2, 1, 3)
    assert_matches(net(xt), want)


def test_bad_inputs():
    model = small_model()
    net = graph.swap_backend(model)
    with pytest.raises(ai3.Error):
        net(inputs((2, 10, 10, 5)))  # wrong channel count
    with pytest.raises(ai3.Error):
        net(inputs((10, 10, 3)))  # no batch axis
    with pytest.raises(ai3.DTypeError):
        net(inputs((2, 10, 10, 3), dtype="float64"))
    with pytest.raises(ai3.InvalidArgument):
        net([[1.0]])
    with pytest.raises(ai3.InvalidArgument, match="keras.Model"):
        graph.swap_backend(L.Conv2D(3, 3))
    with pytest.raises(ai3.ShapeError):
        graph.swap_backend(model, sample_input_shape=(1, 12, 12, 3))
    with pytest.raises(ai3.DTypeError):
        graph.swap_backend(model, dtype="int32")


def test_unsupported_layers_and_models():
    i = keras.Input((4, 4, 3))
    x = L.Conv2D(3, 1, name="c")(i)
    unit = keras.Model(i, L.UnitNormalization(name="unit")(x))
    with pytest.raises(ai3.UnsupportedOperation, match="'unit'.*UnitNormalization"):
        graph.swap_backend(unit)
    leaky = keras.Model(i, L.Activation("leaky_relu", name="g")(i))
    with pytest.raises(ai3.UnsupportedOperation, match="'g'.*leaky_relu"):
        graph.swap_backend(leaky)
    rms = keras.Model(i, L.LayerNormalization(rms_scaling=True, name="rms")(i))
    with pytest.raises(ai3.UnsupportedOperation, match="'rms'.*rms_scaling"):
        graph.swap_backend(rms)
    middle_ln = keras.Model(i, L.LayerNormalization(axis=[1, 2], name="mid")(i))
    with pytest.raises(ai3.UnsupportedOperation, match="'mid'.*trailing axes"):
        graph.swap_backend(middle_ln)

    i2 = keras.Input((4, 4, 3))
    two_in = keras.Model([i, i2], L.Add()([i, i2]))
    with pytest.raises(ai3.UnsupportedOperation, match="2 inputs"):
        graph.swap_backend(two_in)
    two_out = keras.Model(i, [L.ReLU()(i), L.ReLU()(i)])
    with pytest.raises(ai3.UnsupportedOperation, match="2 outputs"):
        graph.swap_backend(two_out)

    j = keras.Input((3, 8, 8))
    cf = keras.Model(j, L.Conv2D(2, 3, data_format="channels_first", name="cf_conv")(j))
    with pytest.raises(ai3.UnsupportedOperation, match="'cf_conv'.*channels_first"):
        graph.swap_backend(cf)

    k = keras.Input((6,))
    dense_bn = keras.Model(k, L.BatchNormalization(name="bn1d")(L.Dense(4)(k)))
    xk = np.random.default_rng(0).standard_normal((2, 6)).astype("float32")
    # Rank-2 batchnorm is BatchNorm1d now (folded into the Dense here).
    np.testing.assert_allclose(graph.swap_backend(dense_bn)(xk), dense_bn(xk).numpy(), rtol=1e-5, atol=1e-5)

    class Sub(keras.Model):
        def call(self, x):
            return x

    with pytest.raises(ai3.UnsupportedOperation, match="subclassed"):
        graph.swap_backend(Sub())


def test_mixed_precision_needs_dtype():
    policy = keras.mixed_precision.dtype_policy()
    keras.mixed_precision.set_dtype_policy("mixed_float16")
    try:
        i = keras.Input((6, 6, 3))
        model = keras.Model(i, L.Conv2D(2, 3)(i))
    finally:
        keras.mixed_precision.set_dtype_policy(policy)
    with pytest.raises(ai3.DTypeError, match="float16"):
        graph.swap_backend(model)
    x = inputs((1, 6, 6, 3))
    net = graph.swap_backend(model, dtype="float32")
    assert_matches(net(x), np.asarray(model(x, training=False), dtype=np.float32), tol=5e-3)


# --------------------------------------------------------------------------
# Recurrent layers (issue 17): LSTM, GRU and SimpleRNN, alone and in a
# Bidirectional, unrolled by ai3.recurrent (tests/recurrent_test.py has the
# ONNX operators and torch's modules).


def _recurrent_cases():
    cases = []
    for cls in (L.LSTM, L.GRU, L.SimpleRNN):
        cases += [
            (cls, {}),
            (cls, {"return_sequences": True}),
            (cls, {"return_state": True}),
            (cls, {"go_backwards": True}),
            (cls, {"bidirectional": "concat", "return_sequences": True}),
            (cls, {"bidirectional": "sum"}),
            (cls, {"bidirectional": "concat", "return_state": True}),
        ]
    return cases + [
        (L.GRU, {"reset_after": False, "return_sequences": True}),
        (L.SimpleRNN, {"activation": "relu"}),
        (L.LSTM, {"use_bias": False}),
    ]


@pytest.mark.parametrize("cls,options", _recurrent_cases(), ids=lambda v: getattr(v, "__name__", str(v)))
def test_recurrent_layers(cls, options):
    """Each output (the states of return_state concatenated with it)
    against Keras."""
    options = dict(options)
    merge = options.pop("bidirectional", None)
    layer = cls(6, **options)
    if merge:
        layer = L.Bidirectional(layer, merge_mode=merge)
    x_in = keras.Input((5, 4))
    out = layer(x_in)
    if isinstance(out, (list, tuple)):
        out = L.Concatenate()(list(out))
    check(keras.Model(x_in, out), inputs((3, 5, 4)))


def test_recurrent_stack_of_any_length():
    """A stacked classifier on sequences of unknown length: built for the
    sample's, and for each other length it is called with."""
    x_in = keras.Input((None, 4))
    h = L.LSTM(8, return_sequences=True)(x_in)
    h = L.Bidirectional(L.GRU(5))(h)
    model = keras.Model(x_in, L.Dense(3)(h))
    ai3_net = check(model, inputs((2, 6, 4)), sample_input_shape=(2, 6, 4))
    for shape in ((5, 6, 4), (2, 9, 4)):
        x = inputs(shape, seed=1)
        assert_matches(ai3_net(x), np.asarray(model(x, training=False)), what=str(shape))
    with pytest.raises(ai3.UnsupportedOperation, match="sequence length"):
        graph.swap_backend(model)


def test_recurrent_refusals_name_the_layer():
    x_in = keras.Input((5, 4))
    with pytest.raises(ai3.UnsupportedOperation, match="go_backwards"):
        graph.swap_backend(keras.Model(x_in, L.LSTM(6, go_backwards=True, return_sequences=True)(x_in)))
    with pytest.raises(ai3.UnsupportedOperation, match="merge_mode"):
        graph.swap_backend(keras.Model(x_in, L.Bidirectional(L.GRU(6), merge_mode="mul")(x_in)))
    with pytest.raises(ai3.UnsupportedOperation, match="hard_sigmoid|activation"):
        graph.swap_backend(keras.Model(x_in, L.GRU(6, recurrent_activation="hard_sigmoid")(x_in)))


if __name__ == "__main__":
    pytest_main.run(__file__)
