"""bench/profiles.py, Keras side: conv kinds by Keras layer name, which
must be the node names of ai3.keras.swap_backend's model and the paths in
TensorFlow's op events, and TensorFlow's profile of a tf.function."""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import pytest_main  # noqa: E402
import tensorflow as tf  # noqa: E402

import ai3.keras  # noqa: E402
from bench import profiles  # noqa: E402

L = keras.layers
SHAPE = (1, 16, 16, 3)


@pytest.fixture(scope="module")
def model():
    keras.utils.set_random_seed(0)
    x = keras.Input(SHAPE[1:])
    y = L.Conv2D(8, 3, padding="same", activation="relu", name="stem")(x)
    y = L.DepthwiseConv2D(3, padding="same", name="dw")(y)
    y = L.Conv2D(16, 1, name="pw")(y)
    return keras.Model(x, L.GlobalAveragePooling2D(name="gap")(y))


def test_keras_kinds_name_the_nodes_of_swap_backend(model) -> None:
    kinds = profiles.keras_conv_kinds(model)
    assert kinds == {"stem": "3x3 conv", "dw": "depthwise 3x3 conv", "pw": "1x1 conv"}
    backend = ai3.keras.swap_backend(model, {"conv2d": "default"}, sample_input_shape=SHAPE)
    assert {name for name, op, _ in backend.layers() if op == "conv2d"} <= set(kinds)
    b = profiles.ai3_breakdown(backend, np.zeros(SHAPE, np.float32), kinds, repeats=2)
    assert {"3x3 conv", "1x1 conv"} <= set(b.by_kind), b.by_kind


def test_tf_breakdown_finds_the_convs_of_keras_and_of_swap_conv2d(model) -> None:
    x = tf.constant(np.random.default_rng(0).random(SHAPE, dtype=np.float32))
    kinds = profiles.keras_conv_kinds(model)
    for m, prefix in ((model, ""), (ai3.keras.swap_conv2d(model, "default"), "ai3 node: ")):
        f = tf.function(lambda t, m=m: m(t, training=False))
        f(x)
        b = profiles.tf_breakdown(lambda f=f: f(x), kinds, repeats=2)
        assert b.forward_seconds > 0 and b.nodes, b.note
        assert prefix + "1x1 conv" in b.by_kind, b.by_kind


if __name__ == "__main__":
    pytest_main.run(__file__)
