"""A Keras model swapped in place (ai3's TF op inside Keras) and its
swap_backend ai3.Model, each called from 8 Python threads at once and from
a thread pool: results identical to serial calls, no crash, no deadlock."""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras
import numpy as np
import pytest
import pytest_main
import tensorflow as tf
from concurrency import assert_same_as_serial

import ai3


@pytest.fixture(scope="module")
def model():
    keras.utils.set_random_seed(0)
    return keras.applications.MobileNetV2(weights=None, input_shape=(64, 64, 3), classifier_activation=None)


# Two inputs: each thread starts at its own one, so 8 threads still interleave
# calls on different inputs, at half the eager Keras calls of four (eager
# MobileNetV2 with "gemm" costs about 0.6 s a call here: its depthwise layers
# are hundreds of one-channel GEMMs each).
def inputs(count=2):
    rng = np.random.default_rng(0)
    return [rng.random((2, 64, 64, 3), dtype=np.float32) for _ in range(count)]


@pytest.mark.parametrize("algo", ["default", "gemm", "implicit gemm"])
def test_swapped_keras_model_from_threads(model, algo):
    swapped = ai3.keras.swap_conv2d(model, algo)
    assert_same_as_serial(lambda x: swapped(x, training=False), inputs())


def test_swapped_keras_model_in_tf_function_from_threads(model):
    swapped = ai3.keras.swap_conv2d(model)
    run = tf.function(lambda x: swapped(x, training=False))
    assert_same_as_serial(run, inputs())


def test_keras_swap_backend_from_threads(model):
    assert_same_as_serial(ai3.keras.swap_backend(model), inputs())


if __name__ == "__main__":
    pytest_main.run(__file__)
