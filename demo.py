"""./bazelw run //:demo — what ai3 is for, in under a minute on 2 cores.

resnet18 (torchvision, weights=None, batch 1, 224x224, float32):
  1. ai3.plan with "auto" for conv2d: each convolution is timed alone on its
     real input shape with every algorithm that can take it, and the fastest
     is kept (the other ops keep "default"); then, as "auto" does on the CPU,
     the model is built under each layout plan (NCHW kept, NHWC where it
     pays, NHWC convolutions; ai3.layouts), the moved convolutions re-timed
     in NHWC, and whole forward passes decide. The timings go to ai3's
     tuning cache, so a second run re-times nothing;
  2. the plan's ai3.Model (the whole network run by the core) and the plan as
     a selector of ai3.swap_conv2d (the PyTorch model, its convolutions
     swapped in place);
  3. timed against PyTorch itself and ONNX Runtime on the model's ONNX
     export, with the largest difference of outputs from PyTorch's;
  4. prints the plan (per layer: the candidates' times and the choice) and
     the end-to-end table, and writes explore's chart (ai3_demo/resnet18.png,
     relative to where it was started) and the plan as JSON, and where the
     demo's time went.

Where the time goes (cold tuning cache, resnet18, measured as CPU seconds
since wall time on a loaded machine says nothing): about 22 s of CPU in
all, of which ai3.plan ~12 s (timing ~20 convolutions x 7 algorithms, then
the layout plans' whole-model passes), imports ~5 s, the chart ~2 s, ONNX
export + ORT session and the end-to-end timing ~1 s each, with
OMP_WAIT_POLICY=PASSIVE; under OpenMP's default (idle threads spin for a
while), ~57 s of CPU on a loaded machine, the spinning's share of which a
quiet 2-core machine does not spend waiting. The demo prints this
breakdown for its own run. ai3's default budget per algorithm and
layer is about 0.1 s of repetitions (tuning.TARGET_SECONDS, at least
MIN_REPS calls after a warm-up); the demo gives each --timing_budget_ms
(20 ms by default), which keeps every algorithm's warm-up and 3 timed
calls and cuts the slow ones short as usual: the same measurement with
fewer repeats (~15% less planning CPU).
"""

from __future__ import annotations

import os
import time

from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_string("model", "resnet18", "A torchvision classification model name (weights=None).")
flags.DEFINE_integer("size", 224, "Input height and width.")
flags.DEFINE_integer("threads", 2, "Threads for PyTorch, ONNX Runtime and ai3.")
flags.DEFINE_string("out", "ai3_demo", "Folder for the chart and the plan (relative to where bazel run started).")
flags.DEFINE_integer(
    "timing_budget_ms", 20, 'Timed repetitions per algorithm and layer under "auto" (ai3\'s default: 100 ms).'
)


class Phases:
    """Wall and CPU seconds per phase of the demo, printed at the end."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, float, float]] = []
        self._mark = (time.monotonic(), time.process_time())

    def done(self, name: str) -> None:
        now = (time.monotonic(), time.process_time())
        self.rows.append((name, now[0] - self._mark[0], now[1] - self._mark[1]))
        self._mark = now


def main(argv: list[str]) -> None:
    del argv
    phases = Phases()
    os.environ.setdefault("OMP_NUM_THREADS", str(FLAGS.threads))
    import copy

    import numpy as np
    import onnxruntime as ort
    import torch
    from rich.console import Console
    from rich.table import Table

    import ai3
    from ai3 import explore, tuning
    from bench import zoo

    tuning.TARGET_SECONDS = FLAGS.timing_budget_ms / 1e3
    torch.set_num_threads(FLAGS.threads)
    console = Console(width=120)
    model = zoo.build(FLAGS.model)
    shape = (1, 3, FLAGS.size, FLAGS.size)
    x = torch.randn(shape)
    load = os.getloadavg()[0]
    console.print(
        f"[bold]{FLAGS.model}[/bold], input {shape}, float32, {FLAGS.threads} threads "
        f"(1-minute load average {load:.1f}: timings on a busy machine are noisy)"
    )

    phases.done("imports, model")

    console.print(
        'planning: every conv2d timed with every applicable algorithm ("auto", '
        f"{FLAGS.timing_budget_ms} ms of repetitions each), then the layout plans ..."
    )
    plan = ai3.plan(model, shape, {"conv2d": "auto"})
    backend = plan.model
    swapped = ai3.swap_conv2d(copy.deepcopy(model), plan)
    phases.done('ai3.plan ("auto")')

    options = ort.SessionOptions()
    options.intra_op_num_threads = FLAGS.threads
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(zoo.export_onnx(model, x), options, providers=["CPUExecutionProvider"])
    x_np = x.numpy()
    phases.done("ONNX export, ORT session")

    with torch.inference_mode():
        want = model(x).numpy()
        runners = {
            "PyTorch": lambda: model(x),
            "ONNX Runtime": lambda: session.run(None, {"input": x_np})[0],
            "ai3 (auto), whole net": lambda: backend(x_np),
            "ai3 swap_conv2d(plan)": lambda: swapped(x),
        }
        rows = []
        for name, run in runners.items():
            out = run()
            diff = float(np.abs(np.asarray(out) - want).max())
            seconds, _, _ = tuning.measure(lambda _x, run=run: run(), x_np)
            plan.end_to_end[name] = seconds
            rows.append((name, seconds, diff))
    phases.done("end-to-end timing")

    console.print(plan.table())
    table = Table(title=f"{FLAGS.model} end to end (median of repeated runs)")
    for column in ("runner", "ms", "vs PyTorch", "max |out - PyTorch|"):
        table.add_column(column, justify="left" if column == "runner" else "right")
    torch_s = plan.end_to_end["PyTorch"]
    for name, seconds, diff in rows:
        table.add_row(name, f"{seconds * 1e3:.1f}", f"{seconds / torch_s:.2f}x", f"{diff:.1e}")
    console.print(table)

    out = explore._out_dir(FLAGS.out)  # explore's own rule for where bazel run writes
    png, plan_json = out / f"{FLAGS.model}.png", out / f"{FLAGS.model}.plan.json"
    explore.chart(plan, FLAGS.model, png)
    plan.save(plan_json)
    phases.done("chart, plan file")
    console.print(f"chart: {png}")
    console.print(f"plan:  {plan_json}   (ai3.Plan.load it and pass it as a selector)")
    wall = sum(r[1] for r in phases.rows)
    cpu = sum(r[2] for r in phases.rows)
    console.print(
        f"demo took {wall:.0f} s ({cpu:.0f} s of CPU; 1-minute load average now {os.getloadavg()[0]:.1f}): "
        + ", ".join(f"{name} {w:.0f} s ({c:.0f} s CPU)" for name, w, c in phases.rows)
    )


if __name__ == "__main__":
    app.run(main)
