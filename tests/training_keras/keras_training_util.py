"""What the Keras training tests share: a model's gradients under
tf.GradientTape (eager or in a tf.function), and the error measure."""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from typing import Any

import numpy as np
import tensorflow as tf

tf.config.threading.set_intra_op_parallelism_threads(2)
tf.config.threading.set_inter_op_parallelism_threads(1)

# Tolerances per dtype (relative to the reference's largest magnitude);
# winograd's transforms cost a few digits in float32. Keras' own float64
# gradients are not exact to float64's last digits (LeakyReLU's slope and
# GELU's constants are float32 values: errors of 1e-9 against the float64
# formula), hence 1e-8.
TOLERANCE = {"float32": 1e-4, "float64": 1e-8}
WINOGRAD_TOLERANCE = {"float32": 5e-3, "float64": 1e-9}


def rel_err(out: Any, ref: Any) -> float:
    out, ref = np.asarray(out), np.asarray(ref)
    assert out.shape == ref.shape, (out.shape, ref.shape)
    return float(np.abs(out - ref).max() / max(np.abs(ref).max(), 1e-12))


def gradients(model: Any, x: np.ndarray, weight: np.ndarray, *, graph: bool = False, training: bool = False) -> list:
    """[d/dx, d/dw for each trainable weight] of sum(model(x) * weight), the
    gradient flowing back being `weight` (so every output element counts
    differently); in a tf.function with `graph`."""

    def run(x: Any) -> list:
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = tf.reduce_sum(model(x, training=training) * weight)
        return tape.gradient(loss, [x, *model.trainable_weights])

    if graph:
        run = tf.function(run)
    return [None if g is None else g.numpy() for g in run(tf.constant(x))]
