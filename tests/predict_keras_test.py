""" "predict" through the Keras frontend: the in-place swap (a "same"-padded
conv resolved from the input size, as the core sees it) and swap_backend."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import pytest_main
from predict_rows import synthetic_dataset
from tuning_fixtures import cache, per_layer_convs  # noqa: F401

import ai3
from ai3 import predict

SHAPE = (1, 16, 16, 16)


@pytest.fixture(autouse=True)
def selector(tmp_path, monkeypatch):
    path = tmp_path / "selector.json"
    predict.train(synthetic_dataset()).save(path)
    monkeypatch.setenv(predict.ENV_SELECTOR, str(path))


def small():
    return keras.Sequential(
        [
            keras.Input(SHAPE[1:]),
            keras.layers.Conv2D(16, 3, padding="same"),
            keras.layers.Conv2D(32, 1),
        ]
    )


def test_predict_in_place_keras():
    model = small()
    x = np.random.default_rng(0).standard_normal(SHAPE).astype(np.float32)
    want = model(x).numpy()
    swapped = ai3.keras.swap_conv2d(model, "predict", sample_input_shape=SHAPE)
    assert [layer.algorithm for layer in swapped.layers] == ["winograd", "gemm"]
    np.testing.assert_allclose(swapped(x).numpy(), want, rtol=1e-4, atol=1e-4)


def test_predict_keras_swap_backend(per_layer_convs):
    built = ai3.keras.swap_backend(small(), {"conv2d": "predict"}, sample_input_shape=SHAPE)
    assert sorted(a for _, op, a in built.layers() if op == "conv2d") == ["gemm", "winograd"]


if __name__ == "__main__":
    pytest_main.run(__file__)
