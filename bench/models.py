"""bazel run //bench:models — torchvision models: PyTorch eager, ONNX
Runtime and ai3, in one process.

For each model (weights=None, eval mode, float32, 2 threads) and each batch
(1 and 8 by default): the latency (timed side by side in alternating
rounds, timing.alternating_seconds) of PyTorch eager, of ONNX Runtime
on the model's own ONNX export at that batch, of the PyTorch model after
ai3.swap_conv2d and of the whole network as an ai3.Model from
ai3.swap_backend (both with --algos, "auto" by default: each conv measured
on its real shape, results cached on disk; swap_backend gives linear and the attention ops
the same selector, bench.zoo.swap_algos), the ratios and the largest
output differences. Target columns, met / NOT met per row:
  - issue 15: swap_backend <= 0.9x ONNX Runtime;
  - issue 6: swap_conv2d never slower than the unswapped model (<= 1.0x).
For every row whose issue-15 target is not met, a profile of where the time
goes (ai3.Model.profile beside ONNX Runtime's own profile, by kind of node
with convolutions split by kind, and the top 5 nodes).
Writes bench/results/models.md, models.png and models_profiles.md. A stage
that fails (e.g. an op swap_backend cannot take) leaves its cells "-" and
says why in the note column.

A quick smoke run: bazel run //bench:models -- --models=resnet18 --batches=1 --reps=3

On a shared, loaded machine set OMP_WAIT_POLICY=PASSIVE: with OpenMP's
default spin-waiting, ai3's and PyTorch's threads fight the other load and
both run tens of times slower (the tables record the policy they ran under).
"""

from __future__ import annotations

import copy
import functools
import math
import os
from typing import Any

from absl import app, flags

from bench import timing
from bench.zoo import MODELS

FLAGS = flags.FLAGS
timing.define_model_flags(
    MODELS,
    "torchvision model names (weights=None).",
    ["1", "8"],
    "Threads for PyTorch, ONNX Runtime and ai3.",
    "models",
)
flags.DEFINE_string(
    "algos",
    "auto",
    'The conv2d selector for both swaps, and linear\'s for swap_backend ("auto", "default", an algorithm name).',
)

ORT_TARGET = 0.9  # issue 15: swap_backend <= 0.9x ONNX Runtime
SWAP_CONV2D_TARGET = 1.0  # issue 6: swap_conv2d <= 1.0x the unswapped model
NAN = float("nan")


def main(argv: list[str]) -> None:
    del argv
    os.environ.setdefault("OMP_NUM_THREADS", str(FLAGS.threads))
    import onnxruntime as ort
    import torch

    import ai3
    from bench import profiles, zoo

    torch.set_num_threads(FLAGS.threads)

    options = functools.partial(timing.ort_options, FLAGS.threads)

    ms = lambda s: "-" if math.isnan(s) else f"{s * 1e3:.1f}"  # noqa: E731
    ratio = lambda a, b: "-" if math.isnan(a) or math.isnan(b) else f"{a / b:.2f}"  # noqa: E731
    err = lambda e: "-" if math.isnan(e) else f"{e:.1e}"  # noqa: E731
    batches = [int(b) for b in FLAGS.batches]
    rows, groups, entries = [], [], []
    chart: dict[str, list[float]] = {"pytorch": [], "onnxruntime": [], "ai3 swap_conv2d": [], "ai3 swap_backend": []}
    for name in FLAGS.models:
        model = zoo.build(name)
        for batch in batches:
            notes: list[str] = []
            shape = zoo.input_shape(name, batch)
            x = torch.randn(*shape)
            # Each side is built and checked first, then all are timed side
            # by side (timing.alternating_seconds).
            sides: dict[str, Any] = {}

            def eager() -> Any:
                with torch.inference_mode():
                    return model(x)

            want = eager()
            sides["torch"] = eager

            onnx_bytes = timing.attempt(notes, "ONNX export", lambda: zoo.export_onnx(model, x))
            feed = {"input": x.numpy()}
            if onnx_bytes is not None:
                session = timing.attempt(
                    notes,
                    "ORT",
                    lambda: ort.InferenceSession(onnx_bytes, options(), providers=["CPUExecutionProvider"]),
                )
                if session is not None:
                    sides["ORT"] = functools.partial(session.run, None, feed)

            # Swap outside inference_mode: parameters copied inside it become
            # inference tensors, which have no version counter for ai3's cache.
            err_sc = NAN
            swapped = timing.attempt(
                notes,
                "swap_conv2d",
                lambda: ai3.swap_conv2d(copy.deepcopy(model), FLAGS.algos, sample_input_shape=shape),
            )
            if swapped is not None:

                def swapped_eager(swapped: Any = swapped) -> Any:
                    with torch.inference_mode():
                        return swapped(x)

                err_sc = (swapped_eager() - want).abs().max().item()
                sides["swap_conv2d"] = swapped_eager

            err_sb = NAN
            backend = timing.attempt(
                notes,
                "swap_backend",
                lambda: ai3.swap_backend(model, zoo.swap_algos(FLAGS.algos), sample_input_shape=shape),
            )
            if backend is not None:
                # "auto" chose both end to end
                decision = backend.layout_decision
                convs = f", conv2d algorithms of '{decision.conv2d}'" if decision.conv2d else ""
                notes.append(f"layout plan {decision.plan}{convs}, graph fusion {'on' if decision.fusion else 'off'}")
                err_sb = (backend(x) - want).abs().max().item()
                sides["swap_backend"] = functools.partial(backend, x)
            seconds = timing.alternating_seconds(sides, FLAGS.reps, FLAGS.rounds)
            torch_s = seconds["torch"]
            ort_s, sc_s, sb_s = (seconds.get(side, NAN) for side in ("ORT", "swap_conv2d", "swap_backend"))
            sides.clear()  # frees the session and the swapped copy before the next model

            ort_ratio = sb_s / ort_s if not (math.isnan(sb_s) or math.isnan(ort_s)) else NAN
            status = (
                "NOT met" + (" (unsupported)" if math.isnan(sb_s) else "")
                if math.isnan(ort_ratio)
                else timing.met(ort_ratio, ORT_TARGET)
            )
            sc_status = "-" if math.isnan(sc_s) else timing.met(sc_s / torch_s, SWAP_CONV2D_TARGET)
            rows.append(
                [
                    name,
                    str(batch),
                    ms(torch_s),
                    ms(ort_s),
                    ms(sc_s),
                    ratio(sc_s, torch_s),
                    ratio(sc_s, ort_s),
                    err(err_sc),
                    ms(sb_s),
                    ratio(sb_s, ort_s),
                    ratio(sb_s, torch_s),
                    err(err_sb),
                    status,
                    sc_status,
                    "; ".join(notes),
                ]
            )
            groups.append(f"{name} b{batch}")
            for key, s in zip(chart, (torch_s, ort_s, sc_s, sb_s)):
                chart[key].append(s * 1e3)
            if FLAGS.profile and backend is not None and not math.isnan(ort_ratio) and status != "met":
                title = f"{name}, batch {batch}: swap_backend {ort_ratio:.2f}x ORT (target <= {ORT_TARGET}x)"
                sides = [
                    profiles.guarded(
                        lambda: profiles.ai3_breakdown(
                            backend, x, profiles.torch_conv_kinds(model), FLAGS.profile_reps
                        ),
                        "ai3.Model.profile",
                    ),
                    profiles.guarded(
                        lambda: profiles.ort_breakdown(onnx_bytes, feed, options, FLAGS.profile_reps),
                        "ONNX Runtime profile",
                    ),
                ]
                entries.append(
                    profiles.Entry(title, sides, profiles.torch_conv_flops(model, x), profiles.sgemm_ceiling_gflops())
                )
                print(profiles.render(entries[-1]), flush=True)
            backend = None  # frees it before the next model
            print(f"{name} batch {batch} done", flush=True)
    headers = [
        "model",
        "batch",
        "torch ms",
        "ORT ms",
        "swap_conv2d ms",
        "/torch",
        "/ORT",
        "max err",
        "swap_backend ms",
        "/ORT",
        "/torch",
        "max err",
        f"swap_backend <= {ORT_TARGET}x ORT",
        f"swap_conv2d <= {SWAP_CONV2D_TARGET}x torch (issue 6)",
        "note",
    ]
    others = zoo.other_selectors(FLAGS.algos)
    title = f"torchvision models, float32, {FLAGS.threads} threads, conv2d '{FLAGS.algos}' (swap_backend: {others} too); ms: the fastest of {FLAGS.rounds} alternating blocks' medians of {FLAGS.reps}"
    print(f"\n{title}\n")
    print(timing.format_table(headers, rows))
    met_count = sum(r[12] == "met" for r in rows)
    summary = f"swap_backend <= {ORT_TARGET}x ORT met on {met_count} of {len(rows)} rows"
    profiles.write_results(
        FLAGS.results_dir,
        "models",
        summary,
        (
            "torchvision models: PyTorch eager, ONNX Runtime and ai3",
            [(title, headers, rows)],
            [
                f"issue 15 targets: {summary}; the rows not met are profiled in models_profiles.md.",
                "ORT runs the model's own ONNX export (opset 17) at that batch; every column is measured in this one process.",
            ],
        ),
        (
            "torchvision models: where the time goes on rows not meeting swap_backend <= 0.9x ORT",
            entries,
            [
                "ai3 side: ai3.Model.profile (the core's per-node clock inside whole forward passes); ORT side: "
                "SessionOptions.enable_profiling kernel times, first run dropped. ORT fuses and re-lays-out (NCHWc) "
                "its graph, so its node list is not ai3's; compare the kinds."
            ],
        ),
        (f"{title.split(';')[0]}: latency (ms, lower is better)", groups, chart),
    )


if __name__ == "__main__":
    app.run(main)
