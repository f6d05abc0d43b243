"""bazel run //bench:overhead — what ai3 costs per node, beyond the nodes'
arithmetic, on each path.

The method everywhere: a chain of N trivial nodes timed at N = 1 and
N = --layers (median of many calls), so that
    cost per node = (t(N) - t(1)) / (N - 1)
(the call into the runtime, argument conversion and the output are paid
once and cancel).

  1. ai3.Model: a chain of tiny ReLU layers (input (1, 16)) called from
     Python. The issue-6 target is <= 2 us per layer.
  2. ONNX Runtime running "ai3"-domain nodes (ai3.onnx.InferenceSession,
     which runs them as ai3's native op, _ort_ops.so): chains of Relu on
     (1, 64) and of 1x1 Conv 4 -> 4 on (1, 4, 8, 8), as ORT's own nodes and
     rewritten to ai3 nodes; the difference per node is what ORT -> the
     native op -> the core's layer adds over ORT's own kernel.
  3. Keras under tf.function: chains of ReLU layers on (1, 64) and of 1x1
     Conv2D 4 -> 4 on (1, 8, 8, 4), as Keras' layers and after
     ai3.keras.swap_relu / swap_conv2d (the Ai3Layer TF op).

Writes bench/results/overhead.md. On a loaded machine the microseconds
move between runs: the tables print the 1-minute load average they ran at.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_integer("threads", 2, "OpenMP threads (and ORT's / TensorFlow's intra-op threads).")
flags.DEFINE_integer("layers", 200, "Nodes in the long chains.")
flags.DEFINE_integer("calls", 2000, "Forward calls timed per ai3.Model chain (median of 5 batches of calls/5).")
flags.DEFINE_integer("reps", 5, "Timed batches of calls per in-graph chain (median).")
flags.DEFINE_list("paths", ["model", "onnx", "keras"], "Which sections to run.")
flags.DEFINE_string("results_dir", "", "Where to write overhead.md (default: bench/results).")

TARGET_US = 2.0


def us(seconds: float) -> str:
    return f"{seconds * 1e6:.1f}"


def per_call(fn: Callable[[], Any], reps: int) -> float:
    """Median seconds of one fn() call, timed in batches of calls sized to
    ~0.1 s (one call of a short chain is too short to time alone)."""
    from bench import timing

    fn()
    start = time.perf_counter()
    fn()
    calls = max(1, min(2000, int(0.1 / max(time.perf_counter() - start, 1e-7))))

    def batch() -> None:
        for _ in range(calls):
            fn()

    return timing.median_seconds(batch, reps) / calls


def slope(t: dict[int, float], count: int) -> float:
    return (t[count] - t[1]) / (count - 1)


# ---- 1. ai3.Model --------------------------------------------------------


def model_rows(count: int) -> list[list[str]]:
    import numpy as np

    from ai3 import _core
    from bench import timing

    def chain(n: int) -> Any:
        m = _core.Model()
        relu = _core.make_layer("relu", algorithm="default", name="relu")
        node = _core.MODEL_INPUT
        for _ in range(n):
            node = m.add_layer(relu, node)  # one layer object, `n` nodes
        return m

    x = np.random.default_rng(0).standard_normal((1, 16)).astype(np.float32)
    t = {}
    for n in (1, count):
        m = chain(n)
        m(x)  # plans
        batch = max(1, FLAGS.calls // 5)

        def run(m=m, batch=batch) -> None:
            for _ in range(batch):
                m(x)

        t[n] = timing.median_seconds(run, repeats=5) / batch
    per_layer = slope(t, count) * 1e6
    return [
        ["1-layer model, per forward call", f"{t[1] * 1e6:.2f} us", "", ""],
        [f"{count}-layer model, per forward call", f"{t[count] * 1e6:.2f} us", "", ""],
        ["ai3.Model overhead per layer", f"{per_layer:.3f} us", f"<= {TARGET_US} us", timing.met(per_layer, TARGET_US)],
    ]


# ---- 2. ONNX Runtime -----------------------------------------------------


def chain_model(op: str, count: int) -> Any:
    """An ONNX graph of `count` trivial `op` nodes in a row: Relu on
    (1, 64), or a 1x1 Conv 4 -> 4 channels on (1, 4, 8, 8); and its input."""
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    shape = [1, 64] if op == "Relu" else [1, 4, 8, 8]
    nodes, inits = [], []
    for i in range(count):
        src, dst = f"t{i}", ("y" if i == count - 1 else f"t{i + 1}")
        if op == "Relu":
            nodes.append(helper.make_node("Relu", [src], [dst], name=f"relu{i}"))
        else:
            w = numpy_helper.from_array(np.full((4, 4, 1, 1), 0.25, np.float32), f"w{i}")
            inits.append(w)
            nodes.append(helper.make_node("Conv", [src, f"w{i}"], [dst], name=f"conv{i}", kernel_shape=[1, 1]))
    graph = helper.make_graph(
        nodes,
        "chain",
        [helper.make_tensor_value_info("t0", onnx.TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, shape)],
        inits,
    )
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), x


def onnx_options() -> Any:
    from bench import timing

    return timing.ort_options(FLAGS.threads)


def onnx_rows(count: int, reps: int, options: Callable[[], Any] = onnx_options) -> list[list[str]]:
    """Per trivial op: ORT's and the ai3 node's us per call at 1 and `count`
    nodes, each one's slope, and what an ai3 node adds per node."""
    import onnxruntime as ort

    import ai3.onnx

    rows = []
    for op, swap in (("Relu", ai3.onnx.swap_relu), ("Conv", ai3.onnx.swap_conv2d)):
        t: dict[str, dict[int, float]] = {"ORT": {}, "ai3": {}}
        for n in (1, count):
            model, x = chain_model(op, n)
            feed = {"t0": x}
            plain = ort.InferenceSession(model.SerializeToString(), options(), providers=["CPUExecutionProvider"])
            t["ORT"][n] = per_call(lambda s=plain: s.run(None, feed), reps)
            rewritten = ai3.onnx.InferenceSession(swap(model, "default"), options())
            t["ai3"][n] = per_call(lambda s=rewritten: s.run(None, feed), reps)
            del plain, rewritten
        ort_node, ai3_node = slope(t["ORT"], count), slope(t["ai3"], count)
        rows.append(
            [
                op,
                us(t["ORT"][1]),
                us(t["ORT"][count]),
                us(t["ai3"][1]),
                us(t["ai3"][count]),
                us(ort_node),
                us(ai3_node),
                us(ai3_node - ort_node),
            ]
        )
    return rows


ONNX_HEADERS = [
    "node",
    "ORT 1 node us",
    "ORT N us",
    "ai3 1 node us",
    "ai3 N us",
    "ORT us/node",
    "ai3 us/node",
    "extra us per ai3 node",
]


# ---- 3. Keras / TensorFlow -----------------------------------------------


def keras_rows(count: int, reps: int) -> list[list[str]]:
    import keras
    import numpy as np
    import tensorflow as tf

    import ai3.keras

    rows = []
    for op, swap in (("ReLU", ai3.keras.swap_relu), ("Conv2D 1x1", ai3.keras.swap_conv2d)):
        t: dict[str, dict[int, float]] = {"Keras": {}, "ai3": {}}
        for n in (1, count):
            shape = (1, 64) if op == "ReLU" else (1, 8, 8, 4)
            keras.utils.set_random_seed(0)
            layer = (lambda: keras.layers.ReLU()) if op == "ReLU" else (lambda: keras.layers.Conv2D(4, 1))
            model = keras.Sequential([keras.Input(shape[1:])] + [layer() for _ in range(n)])
            x = tf.constant(np.random.default_rng(0).standard_normal(shape).astype(np.float32))
            for side, m in (("Keras", model), ("ai3", swap(model, "default"))):
                f = tf.function(lambda v, m=m: m(v, training=False))
                t[side][n] = per_call(lambda f=f: f(x), reps)
        keras_node, ai3_node = slope(t["Keras"], count), slope(t["ai3"], count)
        rows.append(
            [
                op,
                us(t["Keras"][1]),
                us(t["Keras"][count]),
                us(t["ai3"][1]),
                us(t["ai3"][count]),
                us(keras_node),
                us(ai3_node),
                us(ai3_node - keras_node),
            ]
        )
    return rows


KERAS_HEADERS = [
    "layer",
    "Keras 1 layer us",
    "Keras N us",
    "ai3 1 layer us",
    "ai3 N us",
    "Keras us/layer",
    "ai3 us/layer",
    "extra us per ai3 layer",
]


def main(argv: list[str]) -> None:
    del argv
    os.environ.setdefault("OMP_NUM_THREADS", str(FLAGS.threads))
    # As in bench/keras_models.py: ai3's OpenMP team beside ORT's / TF's pool.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    from bench import timing

    count = FLAGS.layers
    sections, notes = [], []
    if "model" in FLAGS.paths:
        title = f"ai3.Model: a chain of ReLU layers on a (1, 16) float32 input, {FLAGS.threads} threads"
        sections.append((title, ["measurement", "value", "target", "status"], model_rows(count)))
    if "onnx" in FLAGS.paths:
        title = (
            f"ONNX Runtime: chains of 1 and N = {count} trivial nodes, ORT's own and as ai3 nodes "
            f"(ai3.onnx.InferenceSession), us per run (median), {FLAGS.threads} threads"
        )
        sections.append((title, ONNX_HEADERS, onnx_rows(count, FLAGS.reps)))
        notes.append(
            "ONNX: an ai3 node is ai3's native op (_ort_ops.so): ORT calls it with its own buffers, and it runs "
            "the node's core layer, built once when the session was made, on them (no Python, no copies). "
            "A 1x1 Conv node's extra time is ai3's OpenMP team waking under the OMP_WAIT_POLICY=PASSIVE this "
            "bench sets (beside ORT's pool): the same tiny conv's core call takes about 2 us with the default "
            "policy and about 50 us under PASSIVE."
        )
    if "keras" in FLAGS.paths:
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(FLAGS.threads)
        tf.config.threading.set_inter_op_parallelism_threads(1)
        title = (
            f"Keras under tf.function: chains of 1 and N = {count} trivial layers, Keras' own and swapped to ai3's "
            f"Ai3Layer op, us per call (median), {FLAGS.threads} threads"
        )
        sections.append((title, KERAS_HEADERS, keras_rows(count, FLAGS.reps)))
    load = os.getloadavg()[0]
    for title, headers, rows in sections:
        print(f"\n{title}\n")
        print(timing.format_table(headers, rows))
    print(f"\n1-minute load average at the end: {load:.1f}")
    out = timing.results_dir(FLAGS.results_dir)
    timing.write_markdown(
        os.path.join(out, "overhead.md"),
        "ai3's per-node overhead",
        sections,
        notes
        + [
            f"1-minute load average at the end of the run: {load:.1f}.",
            "Heap allocations per forward after the first call are checked by //core:model_alloc_test "
            "(a correctness test, malloc counted), not here.",
        ],
    )
    print(f"\nwrote {out}/overhead.md")


if __name__ == "__main__":
    app.run(main)
