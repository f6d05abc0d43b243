"""bazel run //bench:recovery — how a forward pass recovers after an idle
gap, ai3 beside ONNX Runtime, call by call and (for ai3) node by node.

The model benches time each side in blocks that start after an idle gap of
timing.PAUSE_S, then make one warm-up call and keep the median of the next
five (timing.alternating_seconds). After any gap, whatever ran in it, both
runtimes run slower for a few calls, and the bench's window sees part of
that. It is not the caches alone: with one core kept busy through the gap
and nothing evicted, efficientnet_b0 still recovered over 4-5 calls in
both runtimes, by about the same amounts (2-core Xeon VM); the idle core,
the hypervisor or both. A runtime that touches more bytes per forward
pays more on top. This prints, per model:
  - each call's time after the gap, the mean over --rounds gaps, for ORT and
    ai3 (swap_backend with --algos), beside the window the model benches
    keep (the median of calls 2 to 6) and the last call's time;
  - ai3's --top nodes whose first calls exceed their last the most (the
    core's per-node clock, Model.set_profiling), with each call's time.

Measured with it (squeezenet1_1, b1, "auto"): the winograd 3x3 convs at
13x13 come back from about 2x their steady time; winograd keeps its weights
transformed, 4x the raw ones. (Run by "guess", the same convs came back
from about 1.1x, in a run of this per-node clock outside the bench.)

Writes bench/results/recovery.md.
"""

from __future__ import annotations

import functools
import os
import statistics
import time
from typing import Any

from absl import app, flags

from bench import timing

FLAGS = flags.FLAGS
flags.DEFINE_list(
    "models", ["squeezenet1_1", "mobilenet_v2", "efficientnet_b0", "googlenet"], "torchvision model names."
)
flags.DEFINE_integer("batch", 1, "Batch size.")
flags.DEFINE_integer("threads", 2, "Threads for ONNX Runtime and ai3.")
flags.DEFINE_string("algos", "auto", "The selector for swap_backend's conv2d and linear.")
flags.DEFINE_integer("calls", 7, "Calls timed after each gap.")
flags.DEFINE_integer("rounds", 6, "Gaps per side; each call's time is the mean over them.")
flags.DEFINE_integer("top", 8, "ai3 nodes listed per model.")
flags.DEFINE_string("results_dir", "", "Where to write recovery.md (default: bench/results).")

# The calls of a block the model benches keep the median of (after one
# warm-up call): calls 2 to 6, counted from 1.
BENCH_WINDOW = slice(1, 6)


def calls_after_gap(run: Any, calls: int, each: Any = None) -> list[float]:
    """Seconds of `calls` calls of run() after an idle gap of
    timing.PAUSE_S; each() runs after every call (untimed)."""
    time.sleep(timing.PAUSE_S)
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
        if each is not None:
            each()
    return times


def means(per_round: list[list[float]]) -> list[float]:
    return [statistics.fmean(call) for call in zip(*per_round)]


def main(argv: list[str]) -> None:
    del argv
    os.environ.setdefault("OMP_NUM_THREADS", str(FLAGS.threads))
    import onnxruntime as ort
    import torch

    import ai3
    from bench import zoo

    torch.set_num_threads(FLAGS.threads)
    calls = max(FLAGS.calls, BENCH_WINDOW.stop)
    headers = ["runtime"] + [f"call {i + 1} ms" for i in range(calls)] + ["bench window / last"]
    sections = []
    for name in FLAGS.models:
        model = zoo.build(name)
        shape = zoo.input_shape(name, FLAGS.batch)
        x = torch.randn(*shape)
        session = ort.InferenceSession(
            zoo.export_onnx(model, x), timing.ort_options(FLAGS.threads), providers=["CPUExecutionProvider"]
        )
        ort_call = functools.partial(session.run, None, {"input": x.numpy()})
        backend = ai3.swap_backend(model, zoo.swap_algos(FLAGS.algos), sample_input_shape=shape)
        ai3_call = functools.partial(backend, x)
        for _ in range(5):
            ort_call()
            ai3_call()
        core = backend._core
        layers = backend.layers()
        # Each side's block comes after the other's, as in the model benches.
        # ai3 runs with its per-node clock on (two clock reads a node); the
        # clock accumulates, so a node's time in one call is a difference.
        ort_rounds: list[list[float]] = []
        ai3_rounds: list[list[float]] = []
        node_rounds: list[list[list[float]]] = []  # [round][call][node]
        readings: list[list[float]] = []

        def read_clock() -> None:
            readings.append([core.node_seconds(i) for i in range(len(layers))])

        core.set_profiling(True)
        try:
            for _ in range(FLAGS.rounds):
                ort_rounds.append(calls_after_gap(ort_call, calls))
                readings.clear()
                read_clock()
                ai3_rounds.append(calls_after_gap(ai3_call, calls, read_clock))
                node_rounds.append(
                    [[a - b for a, b in zip(after, before)] for before, after in zip(readings, readings[1:])]
                )
        finally:
            core.set_profiling(False)
        rows = []
        for label, per_round in (("ONNX Runtime", ort_rounds), (f"ai3 swap_backend('{FLAGS.algos}')", ai3_rounds)):
            m = means(per_round)
            window = statistics.fmean(statistics.median(r[BENCH_WINDOW]) for r in per_round)
            rows.append([label] + [f"{t * 1e3:.2f}" for t in m] + [f"{window / m[-1]:.2f}"])
        sections.append((f"{name}, batch {FLAGS.batch}: each call after a {timing.PAUSE_S} s gap", headers, rows))
        # node_rounds[round][call][node] -> per node, the mean per call.
        node_means = [
            [statistics.fmean(node_rounds[r][c][i] for r in range(FLAGS.rounds)) for c in range(calls)]
            for i in range(len(layers))
        ]
        order = sorted(range(len(layers)), key=lambda i: node_means[i][-1] - node_means[i][0])[: FLAGS.top]
        node_rows = [
            [layers[i][0], layers[i][1], layers[i][2]]
            + [f"{t * 1e3:.3f}" for t in node_means[i]]
            + [f"{node_means[i][0] / node_means[i][-1]:.2f}" if node_means[i][-1] > 0 else "-"]
            for i in order
        ]
        sections.append(
            (
                f"{name}: ai3's nodes that recover the most (per-node clock)",
                ["node", "op", "algorithm"] + [f"call {i + 1} ms" for i in range(calls)] + ["first / last"],
                node_rows,
            )
        )
        for heading, hdrs, rs in sections[-2:]:
            print(f"\n{heading}\n{timing.format_table(hdrs, rs)}", flush=True)
    path = os.path.join(timing.results_dir(FLAGS.results_dir), "recovery.md")
    timing.write_markdown(
        path,
        "Recovery after an idle gap: ONNX Runtime and ai3, call by call",
        sections,
        [
            f"{FLAGS.threads} threads, float32; each call's time is the mean over {FLAGS.rounds} gaps; "
            "each side's block follows the other's, as in //bench:models.",
            "bench window / last: the median of calls 2-6 (what //bench:models keeps of a block) over the last "
            "call's time.",
        ],
    )
    print(f"\nwrote {path}")


if __name__ == "__main__":
    app.run(main)
