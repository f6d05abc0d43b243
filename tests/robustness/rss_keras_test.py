"""Long runs in the Keras frontend: the resident memory stays flat over
1,000 forwards of a swapped Keras model and of its swap_backend ai3.Model,
and over 200 swap / drop cycles."""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras
import numpy as np
import pytest
import pytest_main
from concurrency import assert_flat_rss

import ai3


@pytest.fixture(scope="module")
def model():
    keras.utils.set_random_seed(0)
    inp = keras.Input((32, 32, 3))
    a = keras.layers.Conv2D(16, 3, padding="same", activation="relu")(inp)
    b = keras.layers.DepthwiseConv2D(3, padding="same")(a)
    c = keras.layers.Conv2D(16, 1)(b) + a
    out = keras.layers.Dense(10)(keras.layers.GlobalAveragePooling2D()(c))
    return keras.Model(inp, out)


X = np.random.default_rng(0).random((2, 32, 32, 3), dtype=np.float32)


def test_swapped_keras_forwards(model):
    swapped = ai3.keras.swap_conv2d(model, "default")
    assert_flat_rss(lambda: swapped(X, training=False), count=1000, warmup=50, what="swapped Keras model forward")


def test_keras_swap_backend_forwards(model):
    ai3_model = ai3.keras.swap_backend(model)
    assert_flat_rss(lambda: ai3_model(X), count=1000, warmup=50, what="ai3.keras.swap_backend forward")


def test_keras_swap_cycles(model):
    def cycle():
        ai3.keras.swap_conv2d(model, "gemm")(X, training=False)

    # Keras keeps per-model bookkeeping (names, the global graph's uid
    # counters) a little while after a model is dropped: clear_session is
    # what a long-running Keras program calls, and the test does too.
    def cycle_and_clear():
        cycle()
        keras.backend.clear_session(free_memory=False)

    assert_flat_rss(cycle_and_clear, count=200, warmup=20, what="keras swap_conv2d + forward, dropped")


if __name__ == "__main__":
    pytest_main.run(__file__)
