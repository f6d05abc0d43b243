"""Which keras.applications families ai3.keras.swap_backend runs, and how
closely: the zoo of tests/keras_backend_test.py and the Keras column of the
README's coverage table (tools/coverage_table.py, which reads `FRONTEND`,
`FAMILIES` and `coverage()`; rows follow ai3.torch.coverage's Row).

Every family keras.applications (Keras 3.15) builds with weights=None, one
model each, at the smallest input it takes (32x32; InceptionV3 and
InceptionResNetV2 75x75, Xception 71x71), batch 2, with random batch-norm
statistics so that folding them into the convolutions is really checked.
`MODELS` adds the other sizes of a family that the tests also run (VGG19,
MobileNetV3Large). Tolerances are relative to the output's scale:
max|ai3 - keras| <= tol * max|keras| in float32 (1e-4: float32 summed in
another order through up to a few hundred layers).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

FRONTEND = "Keras"


@dataclass(frozen=True)
class Zoo:
    constructor: str  # keras.applications.<constructor>
    size: int  # input height and width
    tol: float = 1e-4


@dataclass(frozen=True)
class Row:
    family: str
    model: str
    ok: bool
    reason: str


# family (torchvision's name where the architecture is the same) -> model.
FAMILIES: dict[str, Zoo] = {
    "vgg": Zoo("VGG16", 32),
    "resnet": Zoo("ResNet50", 32),
    "resnet_v2": Zoo("ResNet50V2", 32),
    "inception_v3": Zoo("InceptionV3", 75),
    "inception_resnet_v2": Zoo("InceptionResNetV2", 75),
    "xception": Zoo("Xception", 71),
    "mobilenet": Zoo("MobileNet", 32),
    "mobilenet_v2": Zoo("MobileNetV2", 32),
    "mobilenet_v3": Zoo("MobileNetV3Small", 32),
    "densenet": Zoo("DenseNet121", 32),
    "nasnet": Zoo("NASNetMobile", 32),
    "efficientnet": Zoo("EfficientNetB0", 32),
    "efficientnet_v2": Zoo("EfficientNetV2B0", 32),
    "convnext": Zoo("ConvNeXtTiny", 32),
}

# Every model the tests run: the families' and a second size of two.
MODELS: dict[str, Zoo] = {z.constructor: z for z in FAMILIES.values()}
MODELS.update({"VGG19": Zoo("VGG19", 32), "MobileNetV3Large": Zoo("MobileNetV3Large", 32)})


def randomize_batchnorm(model: Any, seed: int = 0) -> None:
    """Random moving statistics, scale and offset in every
    BatchNormalization (weights=None leaves mean 0, variance 1)."""
    import keras

    rng = np.random.RandomState(seed)

    def layers(m):
        for layer in m.layers:
            if isinstance(layer, keras.Model):
                yield from layers(layer)
            yield layer

    for layer in layers(model):
        if isinstance(layer, keras.layers.BatchNormalization):
            layer.set_weights(
                [
                    rng.uniform(0.5, 1.5, w.shape).astype(w.dtype)
                    if v.name in ("gamma", "moving_variance")
                    else (0.1 * rng.randn(*w.shape)).astype(w.dtype)
                    for v, w in zip(layer.weights, layer.get_weights())
                ]
            )


def build(name: str, seed: int = 0) -> Any:
    """keras.applications.<name>(weights=None) at MODELS[name]'s size, with
    no classifier activation (logits compare more tightly than a softmax)."""
    import keras

    zoo = MODELS[name]
    keras.utils.set_random_seed(seed)
    model = getattr(keras.applications, zoo.constructor)(
        weights=None, input_shape=(zoo.size, zoo.size, 3), classifier_activation=None
    )
    randomize_batchnorm(model, seed)
    return model


def input_for(name: str, batch: int = 2, seed: int = 1) -> np.ndarray:
    size = MODELS[name].size
    return np.random.RandomState(seed).randn(batch, size, size, 3).astype(np.float32)


def relative_error(got: Any, want: Any) -> float:
    got, want = np.asarray(got), np.asarray(want)
    return float(np.abs(got - want).max()) / max(float(np.abs(want).max()), 1e-30)


def check_model(name: str, algos: Any | None = None) -> tuple[bool, str]:
    """(ok, reason): swap_backend of the model against Keras on one batch."""
    import ai3
    from ai3.keras import graph

    zoo = MODELS[name]
    model, x = build(name), input_for(name)
    want = np.asarray(model(x, training=False))
    try:
        got = graph.swap_backend(model, algos)(x)
    except ai3.Error as e:
        return False, f"{type(e).__name__}: {e}"
    if np.asarray(got).shape != want.shape:
        return False, f"output shape {np.asarray(got).shape}, Keras {want.shape}"
    err = relative_error(got, want)
    if err > zoo.tol:
        return False, f"max error {err:.2g} x output scale (tolerance {zoo.tol:g})"
    return True, f"max error {err:.1g} x output scale"


def coverage(families: list[str] | None = None, log: Any = None) -> list[Row]:
    rows = []
    for family in families or list(FAMILIES):
        start = time.perf_counter()
        try:
            ok, reason = check_model(FAMILIES[family].constructor)
        except Exception as e:  # one broken family must not stop the table
            ok, reason = False, f"{type(e).__name__}: {e}"
        rows.append(Row(family, FAMILIES[family].constructor, ok, reason))
        if log is not None:
            log(f"{FRONTEND} {family}: {'ok' if ok else 'FAILS'} ({time.perf_counter() - start:.0f} s) {reason}")
    return rows


__all__ = ["FAMILIES", "FRONTEND", "MODELS", "Row", "build", "check_model", "coverage", "input_for"]
