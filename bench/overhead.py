"""bazel run //bench:overhead — what ai3.Model costs per layer, beyond the
layers' arithmetic.

A chain of L tiny ReLU layers (input (1, 16), float32) as one ai3.Model,
called from Python: the time per forward pass for L = 1 and L = 200 (median
of many calls), so that
    per-layer overhead = (t(200) - t(1)) / 199
(the Python call, argument conversion and the output array are paid once
and cancel). The issue-6 target is <= 2 us per layer. Writes
bench/results/overhead.md.
"""

from __future__ import annotations

import os

from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_integer("threads", 2, "OpenMP threads.")
flags.DEFINE_integer("layers", 200, "Layers in the long chain.")
flags.DEFINE_integer("calls", 2000, "Forward calls timed per chain (median of 5 batches of calls/5).")
flags.DEFINE_string("results_dir", "", "Where to write overhead.md (default: bench/results).")

TARGET_US = 2.0


def main(argv: list[str]) -> None:
    del argv
    os.environ.setdefault("OMP_NUM_THREADS", str(FLAGS.threads))
    import numpy as np

    from ai3 import _core
    from bench import timing

    def chain(count: int):
        m = _core.Model()
        relu = _core.make_layer("relu", algorithm="default", name="relu")
        node = _core.MODEL_INPUT
        for _ in range(count):
            node = m.add_layer(relu, node)  # one layer object, `count` nodes
        return m

    x = np.random.default_rng(0).standard_normal((1, 16)).astype(np.float32)
    per_call = {}
    for count in (1, FLAGS.layers):
        m = chain(count)
        m(x)  # plans
        batch = max(1, FLAGS.calls // 5)

        def run(m=m, batch=batch):
            for _ in range(batch):
                m(x)

        per_call[count] = timing.median_seconds(run, repeats=5) / batch
    per_layer_us = (per_call[FLAGS.layers] - per_call[1]) / (FLAGS.layers - 1) * 1e6
    rows = [
        ["1-layer model, per forward call", f"{per_call[1] * 1e6:.2f} us", "", ""],
        [f"{FLAGS.layers}-layer model, per forward call", f"{per_call[FLAGS.layers] * 1e6:.2f} us", "", ""],
        ["ai3.Model overhead per layer", f"{per_layer_us:.3f} us", f"<= {TARGET_US} us", timing.met(per_layer_us, TARGET_US)],
    ]
    headers = ["measurement", "value", "target", "status"]
    print(f"ai3.Model overhead: a chain of ReLU layers on a (1, 16) float32 input, {FLAGS.threads} threads\n")
    print(timing.format_table(headers, rows))
    out = timing.results_dir(FLAGS.results_dir)
    timing.write_markdown(
        os.path.join(out, "overhead.md"),
        "ai3.Model per-layer overhead",
        [("chain of tiny ReLU layers", headers, rows)],
        [
            "Heap allocations per forward after the first call are checked by //core:model_alloc_test "
            "(a correctness test, malloc counted), not here.",
        ],
    )
    print(f"\nwrote {out}/overhead.md")


if __name__ == "__main__":
    app.run(main)
