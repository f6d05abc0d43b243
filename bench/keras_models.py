"""bazel run //bench:keras_models — keras.applications models, Keras vs ai3.

For each model (weights=None, batch 1, float32, 224x224, InceptionV3 299x299,
classifier_activation=None): the median latency of a tf.function of
`model(x, training=False)` (Keras' usual inference path: one traced graph,
no Python per layer), the same for the model after ai3.keras.swap_conv2d
(every keras.layers.Conv2D on ai3's op with the chosen algorithm; other
layers stay Keras'), the ratio (below 1 means ai3 is faster) and the
largest output difference relative to the output's scale. Both run in this
one process with the same thread settings, and OMP_WAIT_POLICY=PASSIVE
(see main).
"""

from __future__ import annotations

import os

from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_list(
    "models",
    ["VGG16", "ResNet50", "MobileNetV2", "DenseNet121", "InceptionV3", "EfficientNetB0"],
    "keras.applications model names.",
)
flags.DEFINE_integer("batch", 1, "Batch size.")
flags.DEFINE_integer("threads", 2, "Threads for TensorFlow (intra-op) and ai3 (OpenMP).")
flags.DEFINE_integer("repeats", 5, "Timed runs per measurement (median kept).")
flags.DEFINE_string("conv2d", "default", "The conv2d algorithm for swap_conv2d.")
flags.DEFINE_string("results_dir", "", "Where to write keras_models.md / .png (default: bench/results).")
flags.DEFINE_bool("eager", False, "Time model(x, training=False) eagerly instead of a tf.function of it.")

INPUT_SIZE = {"InceptionV3": 299}


def main(argv: list[str]) -> None:
    del argv
    os.environ.setdefault("OMP_NUM_THREADS", str(FLAGS.threads))
    # ai3's OpenMP threads and TensorFlow's own pool share the cores: with
    # OpenMP's default active waiting, each side's idle threads spin while
    # the other works (a 1x1 conv measured 19 ms instead of 3 ms in a
    # tf.function). Must be set before libgomp loads (import ai3).
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import keras
    import numpy as np
    import tensorflow as tf

    import ai3.keras
    from bench import timing

    tf.config.threading.set_intra_op_parallelism_threads(FLAGS.threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    rows = []
    for name in FLAGS.models:
        keras.utils.set_random_seed(0)
        size = INPUT_SIZE.get(name, 224)
        model = getattr(keras.applications, name)(weights=None, input_shape=(size, size, 3), classifier_activation=None)
        x = tf.constant(np.random.default_rng(0).random((FLAGS.batch, size, size, 3), dtype=np.float32))
        swapped = ai3.keras.swap_conv2d(model, FLAGS.conv2d)

        def runner(m):
            if FLAGS.eager:
                return lambda: m(x, training=False)
            f = tf.function(lambda t: m(t, training=False))
            return lambda: f(x)

        run_keras, run_ai3 = runner(model), runner(swapped)
        want = run_keras().numpy()
        got = run_ai3().numpy()
        err = float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-12))
        keras_s = timing.median_seconds(run_keras, FLAGS.repeats)
        ai3_s = timing.median_seconds(run_ai3, FLAGS.repeats)
        rows.append([name, f"{keras_s * 1e3:.1f}", f"{ai3_s * 1e3:.1f}", f"{ai3_s / keras_s:.2f}", f"{err:.1e}"])
        print(f"{name} done", flush=True)
    mode = "eager" if FLAGS.eager else "tf.function"
    print(
        f"\nkeras.applications models, batch {FLAGS.batch}, float32, {FLAGS.threads} threads, {mode}, "
        f"conv2d '{FLAGS.conv2d}'; ms are medians; err is relative to the output's max\n"
    )
    headers = ["model", "keras ms", "swap_conv2d ms", "ratio", "rel err"]
    print(timing.format_table(headers, rows))
    # The Keras analogue of issue 6's swap_conv2d row: never slower than the
    # unswapped model.
    targets = [[r[0], "swap_conv2d <= 1.0x Keras", f"{r[3]}x", timing.met(float(r[3]), 1.0)] for r in rows]
    print("\ntargets")
    print(timing.format_table(["model", "target", "measured", "status"], targets))
    out = timing.results_dir(FLAGS.results_dir)
    timing.write_markdown(
        os.path.join(out, "keras_models.md"),
        f"keras.applications: Keras ({mode}) and ai3.keras.swap_conv2d",
        [("targets", ["model", "target", "measured", "status"], targets), ("latency (ms, medians)", headers, rows)],
        [],
    )
    chart = {"keras": [float(r[1]) for r in rows], "ai3 swap_conv2d": [float(r[2]) for r in rows]}
    timing.bar_chart(os.path.join(out, "keras_models.png"), "Keras models: latency (ms, lower is better)", [r[0] for r in rows], chart, "ms", log=True)
    print(f"\nwrote {out}/keras_models.md and keras_models.png")


if __name__ == "__main__":
    app.run(main)
