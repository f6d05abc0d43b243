"""bazel run //bench:keras_models — keras.applications models, Keras vs ai3.

For each model (weights=None, float32, 224x224, InceptionV3 299x299,
classifier_activation=None, batch 1 by default), timed side by side in
alternating rounds (timing.alternating_seconds): the latency of a
tf.function of `model(x, training=False)` (Keras' usual inference path: one
traced graph, no Python per layer), the same for the model after
ai3.keras.swap_conv2d (every keras.layers.Conv2D on ai3's op with the chosen
algorithm; other layers stay Keras'), and of the whole model as an
ai3.Model from ai3.keras.swap_backend (NHWC), with ratios (below 1: ai3
faster) and the largest output differences relative to the output's scale.
All in this one process with the same thread settings and libgomp's
default wait policy (see main). Issue-15 targets, met / NOT met per row:
  - swap_backend <= 0.8x Keras;
  - swap_conv2d <= 1.0x Keras.
Every row not met is profiled: ai3.Model.profile of the swap_backend model
and TensorFlow's profiler on the swap_conv2d model and on Keras itself, by
kind of node (convs split by kind) with the top 5 nodes.

Writes bench/results/keras_models.md, keras_models.png and
keras_models_profiles.md.
A quick smoke run: bazel run //bench:keras_models -- --models=MobileNetV2 --reps=3
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable
from typing import Any

from absl import app, flags

from bench import timing

FLAGS = flags.FLAGS
timing.define_model_flags(
    ["VGG16", "ResNet50", "MobileNetV2", "DenseNet121", "InceptionV3", "EfficientNetB0"],
    "keras.applications model names.",
    ["1"],
    "Threads for TensorFlow (intra-op) and ai3 (OpenMP).",
    "keras_models",
)
flags.DEFINE_string("conv2d", "auto", "The conv2d selector for swap_conv2d and swap_backend.")
flags.DEFINE_bool("eager", False, "Time model(x, training=False) eagerly instead of a tf.function of it.")

INPUT_SIZE = {"InceptionV3": 299}
SWAP_BACKEND_TARGET = 0.8
SWAP_CONV2D_TARGET = 1.0
NAN = float("nan")


def main(argv: list[str]) -> None:
    del argv
    os.environ.setdefault("OMP_NUM_THREADS", str(FLAGS.threads))
    # ai3's OpenMP threads and TensorFlow's own pool share the cores.
    # libgomp's default wait (spin a bounded while, then sleep) is left as
    # it is: OMP_WAIT_POLICY=PASSIVE, which this bench used to set, woke the
    # team from sleep at every swapped layer (swap_conv2d, same process and
    # scheme, 2-core Xeon: MobileNetV2 0.88-1.04x Keras against 0.73-0.86x
    # by default, EfficientNetB0 0.92-1.01x against 0.68-0.80x, ResNet50,
    # VGG16 and DenseNet121 unchanged); ACTIVE spins without end beside
    # TensorFlow's threads. ai3.keras's module doc says the same to users.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import keras
    import numpy as np
    import tensorflow as tf

    import ai3.keras
    from bench import profiles

    tf.config.threading.set_intra_op_parallelism_threads(FLAGS.threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)

    def runner(m: Any, x: Any) -> Callable[[], Any]:
        if FLAGS.eager:
            return lambda: m(x, training=False)
        f = tf.function(lambda t: m(t, training=False))
        return lambda: f(x)

    ms = lambda s: "-" if math.isnan(s) else f"{s * 1e3:.1f}"  # noqa: E731
    ratio = lambda a, b: "-" if math.isnan(a) or math.isnan(b) else f"{a / b:.2f}"  # noqa: E731
    err = lambda e: "-" if math.isnan(e) else f"{e:.1e}"  # noqa: E731
    rows, groups, entries = [], [], []
    chart: dict[str, list[float]] = {"keras": [], "ai3 swap_conv2d": [], "ai3 swap_backend": []}
    for name in FLAGS.models:
        size = INPUT_SIZE.get(name, 224)
        keras.utils.set_random_seed(0)
        model = getattr(keras.applications, name)(weights=None, input_shape=(size, size, 3), classifier_activation=None)
        kinds = profiles.keras_conv_kinds(model)
        for batch in (int(b) for b in FLAGS.batches):
            notes: list[str] = []
            shape = (batch, size, size, 3)
            x_np = np.random.default_rng(0).random(shape, dtype=np.float32)
            x = tf.constant(x_np)
            run_keras = runner(model, x)
            want = run_keras().numpy()
            scale = max(float(np.abs(want).max()), 1e-12)
            # Each side is built and checked first, then all are timed side
            # by side (timing.alternating_seconds).
            sides: dict[str, Any] = {"keras": run_keras}

            err_sc = NAN
            run_sc = None
            swapped = timing.attempt(
                notes, "swap_conv2d", lambda: ai3.keras.swap_conv2d(model, FLAGS.conv2d, sample_input_shape=shape)
            )
            if swapped is not None:
                run_sc = runner(swapped, x)
                got = timing.attempt(notes, "swap_conv2d run", lambda: run_sc().numpy())
                if got is not None:
                    err_sc = float(np.abs(got - want).max()) / scale
                    sides["swap_conv2d"] = run_sc

            err_sb = NAN
            backend = timing.attempt(
                notes,
                "swap_backend",
                lambda: ai3.keras.swap_backend(model, {"conv2d": FLAGS.conv2d}, sample_input_shape=shape),
            )
            if backend is not None:
                err_sb = float(np.abs(np.asarray(backend(x_np)) - want).max()) / scale
                sides["swap_backend"] = functools.partial(backend, x_np)
            seconds = timing.alternating_seconds(sides, FLAGS.reps, FLAGS.rounds)
            keras_s = seconds["keras"]
            sc_s, sb_s = (seconds.get(side, NAN) for side in ("swap_conv2d", "swap_backend"))
            sides.clear()

            sb_status = "NOT met" if math.isnan(sb_s) else timing.met(sb_s / keras_s, SWAP_BACKEND_TARGET)
            sc_status = "NOT met" if math.isnan(sc_s) else timing.met(sc_s / keras_s, SWAP_CONV2D_TARGET)
            rows.append(
                [
                    name,
                    str(batch),
                    ms(keras_s),
                    ms(sc_s),
                    ratio(sc_s, keras_s),
                    err(err_sc),
                    ms(sb_s),
                    ratio(sb_s, keras_s),
                    err(err_sb),
                    sb_status,
                    sc_status,
                    "; ".join(notes),
                ]
            )
            groups.append(f"{name} b{batch}")
            for key, t in zip(chart, (keras_s, sc_s, sb_s)):
                chart[key].append(t * 1e3)

            missed, sides = [], []
            if FLAGS.profile and backend is not None and sb_status != "met":
                missed.append(f"swap_backend {sb_s / keras_s:.2f}x Keras (target <= {SWAP_BACKEND_TARGET}x)")
                sides.append(
                    profiles.guarded(
                        lambda: profiles.ai3_breakdown(backend, x_np, kinds, FLAGS.profile_reps), "ai3.Model.profile"
                    )
                )
            if FLAGS.profile and not FLAGS.eager and run_sc is not None and not math.isnan(sc_s) and sc_status != "met":
                missed.append(f"swap_conv2d {sc_s / keras_s:.2f}x Keras (target <= {SWAP_CONV2D_TARGET}x)")
                sides.append(
                    profiles.guarded(
                        lambda: profiles.tf_breakdown(
                            run_sc, kinds, FLAGS.profile_reps, "TensorFlow profiler, swap_conv2d model"
                        ),
                        "TensorFlow profiler, swap_conv2d model",
                    )
                )
                sides[-1].note = sides[-1].note or f"profiler on; unprofiled {sc_s * 1e3:.1f} ms"
            if sides and not FLAGS.eager:
                sides.append(
                    profiles.guarded(
                        lambda: profiles.tf_breakdown(
                            run_keras, kinds, FLAGS.profile_reps, "TensorFlow profiler, Keras model"
                        ),
                        "TensorFlow profiler, Keras model",
                    )
                )
                sides[-1].note = sides[-1].note or f"profiler on; unprofiled {keras_s * 1e3:.1f} ms"
            if sides:
                entries.append(profiles.Entry(f"{name}, batch {batch}: " + ", ".join(missed), sides))
                print(profiles.render(entries[-1]), flush=True)
            swapped = backend = run_sc = None  # frees it before the next model
            print(f"{name} batch {batch} done", flush=True)
    mode = "eager" if FLAGS.eager else "tf.function"
    title = (
        f"keras.applications models, float32, {FLAGS.threads} threads, Keras {mode}, conv2d '{FLAGS.conv2d}'; "
        f"ms: the fastest of {FLAGS.rounds} alternating blocks' medians of {FLAGS.reps}; err is relative to the output's max"
    )
    headers = [
        "model",
        "batch",
        "keras ms",
        "swap_conv2d ms",
        "/keras",
        "rel err",
        "swap_backend ms",
        "/keras",
        "rel err",
        f"swap_backend <= {SWAP_BACKEND_TARGET}x",
        f"swap_conv2d <= {SWAP_CONV2D_TARGET}x",
        "note",
    ]
    print(f"\n{title}\n")
    print(timing.format_table(headers, rows))
    counts = {col: sum(r[col] == "met" for r in rows) for col in (9, 10)}
    summary = (
        f"swap_backend <= {SWAP_BACKEND_TARGET}x Keras met on {counts[9]} of {len(rows)} rows; "
        f"swap_conv2d <= {SWAP_CONV2D_TARGET}x Keras met on {counts[10]} of {len(rows)} rows"
    )
    profiles.write_results(
        FLAGS.results_dir,
        "keras_models",
        summary,
        (
            f"keras.applications: Keras ({mode}), ai3.keras.swap_conv2d and ai3.keras.swap_backend",
            [(title, headers, rows)],
            [f"issue 15 targets: {summary}; the rows not met are profiled in keras_models_profiles.md."],
        ),
        (
            "Keras models: where the time goes on rows not meeting their issue-15 targets",
            entries,
            [
                "ai3.Model side: the core's per-node clock. TensorFlow sides: tf.profiler host trace, op kernel time per node "
                "(the profiler's own overhead is inside the forward time)."
            ],
        ),
        ("Keras models: latency (ms, lower is better)", groups, chart),
    )


if __name__ == "__main__":
    app.run(main)
