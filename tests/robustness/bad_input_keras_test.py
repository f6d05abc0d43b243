"""Bad input at the Keras frontend's entry points: every error is an
ai3.Error subclass naming the layer, never Python's own message (the
PyTorch and ONNX cases are in bad_input_test)."""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras
import numpy as np
import pytest
import pytest_main
from bad_input_test import PYTHON_MESSAGES, check

import ai3


def model():
    keras.utils.set_random_seed(0)
    inp = keras.Input((8, 8, 3))
    a = keras.layers.Conv2D(4, 3, padding="same", name="conv_a")(inp)
    b = keras.layers.Conv2D(4, 3, strides=2, name="conv_b")(a)
    return keras.Model(inp, keras.layers.Flatten()(b) * 2.0)


X = np.random.default_rng(0).random((1, 8, 8, 3), dtype=np.float32)


@pytest.mark.parametrize(
    "selector",
    [
        "no-such-algorithm",
        ["gemm"],
        3,
        lambda layer: 42,
        lambda layer: None,
        lambda layer: "nope",
        lambda layer, shape: "gemm",
    ],
)
def test_junk_selectors(selector):
    check(lambda: ai3.keras.swap_conv2d(model(), selector))


def test_inapplicable_algorithm_names_the_layer():
    check(
        lambda: ai3.keras.swap_conv2d(model(), "winograd"), names=("conv_b", "winograd"), cls=ai3.AlgorithmNotApplicable
    )
    check(
        lambda: ai3.keras.swap_backend(model(), {"conv2d": "winograd"}),
        names=("conv_b",),
        cls=ai3.AlgorithmNotApplicable,
    )


@pytest.mark.parametrize("not_a_model", [None, "ResNet50", keras.layers.Dense(3)])
def test_not_a_model(not_a_model):
    check(lambda: ai3.keras.swap_conv2d(not_a_model))
    check(lambda: ai3.keras.swap_backend(not_a_model))


def test_subclassed_model_is_refused_by_name():
    class Net(keras.Model):
        def __init__(self):
            super().__init__()
            self.conv = keras.layers.Conv2D(2, 3)

        def call(self, x):
            return self.conv(x)

    net = Net()
    net(X)
    check(lambda: ai3.keras.swap_conv2d(net), names=("Net",), cls=ai3.UnsupportedOperation)


@pytest.mark.parametrize(
    "x", [np.zeros((1, 8, 8, 5), np.float32), np.zeros((1, 8, 8, 3), np.int64), np.zeros((8, 3), np.float32)]
)
def test_swap_backend_model_rejects_bad_inputs(x):
    check(lambda: ai3.keras.swap_backend(model())(x))


def test_swapped_model_rejects_bad_inputs_as_keras_does():
    # Keras checks a model's input against its InputSpec before any layer
    # runs: the swapped model must refuse what the original refuses, the same way.
    original = model()
    swapped = ai3.keras.swap_conv2d(original, "gemm")
    bad = np.zeros((1, 8, 8, 5), np.float32)
    with pytest.raises(Exception) as expected:
        original(bad)
    with pytest.raises(type(expected.value)) as got:
        swapped(bad)
    assert not PYTHON_MESSAGES.search(str(got.value)), str(got.value)


if __name__ == "__main__":
    pytest_main.run(__file__)
