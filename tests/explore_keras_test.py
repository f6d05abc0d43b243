"""`python -m ai3 explore --keras-file`: a saved .keras model explored like a
keras.applications one (PNG chart, plan JSON, the end-to-end panel with
ONNX Runtime running the model's export, which computes what Keras does)."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import pytest_main
from tuning_fixtures import cache  # noqa: F401 (fixture)

import ai3
from ai3 import explore


@pytest.fixture(autouse=True)
def outside_bazel_run(cache, monkeypatch):
    monkeypatch.delenv("BUILD_WORKING_DIRECTORY", raising=False)


def test_explore_a_saved_keras_model(tmp_path):
    model = keras.Sequential(
        [
            keras.Input((16, 16, 3)),
            keras.layers.Conv2D(8, 3, padding="same", activation="relu"),
            keras.layers.MaxPooling2D(),
            keras.layers.Conv2D(8, 3),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(4),
        ]
    )
    path = tmp_path / "small.keras"
    model.save(path)
    loaded = explore.load_model(str(path))
    assert loaded.shape == (1, 16, 16, 3) and loaded.framework == "Keras"
    out = tmp_path / "out"
    assert explore.main(["--keras-file", str(path), "--out", str(out)]) == 0
    plan = ai3.Plan.load(out / "small.plan.json")
    # ONNX Runtime too: the model exported on Keras's torch backend, the same weights.
    assert plan.frontend == "keras" and set(plan.end_to_end) == {"ai3 (auto)", "Keras", "ONNX Runtime"}
    x = np.random.default_rng(0).standard_normal(loaded.shape).astype(np.float32)
    (ort_out,) = explore._ort_runner(loaded.onnx)(x)
    np.testing.assert_allclose(ort_out, np.asarray(loaded.run(x)), rtol=1e-4, atol=1e-4)
    assert (out / "small.png").stat().st_size > 1000
    with pytest.raises(ai3.InvalidArgument, match="no saved Keras model"):
        explore.load_model(str(tmp_path / "missing.keras"))


if __name__ == "__main__":
    pytest_main.run(__file__)
