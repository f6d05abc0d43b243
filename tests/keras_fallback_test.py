"""Keras swap_backend refuses a model with layers ai3 lacks by listing
every one of them (the mapping goes on past the first), not only the
first; a model with one keeps its single-layer message. With
fallback=True the model runs, those layers in Keras and the rest in ai3,
and matches Keras (float32: max|ai3 - keras| <= 1e-4 * max(1, max|keras|))."""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import pytest_main  # noqa: E402

import ai3  # noqa: E402
from ai3.keras import graph  # noqa: E402

L = keras.layers


def _lacking():
    """UnitNormalization over H, W and over C (no ai3 equivalents) between
    convolutions, with a residual crossing the first."""
    i = keras.Input((8, 8, 3))
    x = L.Conv2D(4, 3, padding="same", name="c1")(i)
    u = L.UnitNormalization(axis=[1, 2], name="up")(x)
    y = L.Conv2D(4, 3, padding="same", name="c2")(u)
    y = L.Add(name="res")([y, L.Conv2D(4, 1, name="c3")(u)])
    z = L.UnitNormalization(name="most")(L.Add(name="mix")([y, u]))
    out = L.Dense(5, name="fc")(L.GlobalAveragePooling2D(name="gap")(L.ReLU(name="r")(z)))
    return keras.Model(i, out)


def test_fallback_runs_the_rest_in_ai3():
    from ai3.keras.fallback import FallbackModel

    model = _lacking()
    split = graph.swap_backend(model, sample_input_shape=(2, 8, 8, 3), fallback=True)
    assert isinstance(split, FallbackModel)
    assert [(f.name, f.op) for f in split.fallbacks()] == [("up", "UnitNormalization"), ("most", "UnitNormalization")]
    assert len(split.islands()) == 3  # c1; c2 + c3 + res; and after "most": relu, gap, fc
    for batch in (2, 3):
        x = np.random.default_rng(batch).standard_normal((batch, 8, 8, 3)).astype("float32")
        want = model(x).numpy()
        got = split(x)
        assert got.shape == want.shape
        assert np.abs(got - want).max() <= 1e-4 * max(1.0, np.abs(want).max())


def test_refusal_lists_every_unsupported_layer():
    i = keras.Input((8, 8, 3))
    x = L.Conv2D(4, 3, padding="same", name="c1")(i)
    x = L.UnitNormalization(axis=[1, 2], name="up")(x)
    x = L.Conv2D(4, 3, padding="same", name="c2")(x)
    y = L.UnitNormalization(name="most")(x)
    out = L.GlobalAveragePooling2D(name="gap")(L.ReLU(name="r")(y))
    model = keras.Model(i, out)
    with pytest.raises(graph.UnsupportedLayers) as info:
        graph.swap_backend(model, sample_input_shape=(1, 8, 8, 3))
    text = str(info.value)
    assert "2 layers have no ai3 equivalent" in text
    assert "'up'" in text and "UnitNormalization" in text and "'most'" in text
    assert [layer.name for layer, _ in info.value.layers] == ["up", "most"]
    assert isinstance(info.value, ai3.UnsupportedOperation)


def test_one_unsupported_layer_keeps_its_message():
    i = keras.Input((4, 4, 3))
    with pytest.raises(ai3.UnsupportedOperation, match="'up'.*UnitNormalization"):
        graph.swap_backend(keras.Model(i, L.UnitNormalization(name="up")(i)))


if __name__ == "__main__":
    pytest_main.run(__file__)
