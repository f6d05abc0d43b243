"""`python -m ai3 explore`: every applicable algorithm of every layer of a
model, timed, tabled and charted.

    python -m ai3 explore --model resnet18 --out results/   # torchvision
    python -m ai3 explore --keras MobileNetV2 --size 96     # keras.applications
    python -m ai3 explore --onnx net.onnx                    # an ONNX file
    bazel run //:explore -- --model squeezenet1_1 --size 64

It makes an ai3.plan with "auto" for every op (each layer timed alone on
its real input shape, algorithm by algorithm; see ai3.tuning, whose disk
cache it uses unless --no-cache), times the whole tuned ai3.Model against
the framework itself on the same input (PyTorch eager, Keras, or ONNX
Runtime), prints the plan and those totals as rich tables, and writes into
--out:
  <name>.png        per-layer time by algorithm (log scale; layers with more
                    than one timed algorithm) and the end-to-end bars;
  <name>.plan.json  the plan (ai3.Plan.load it and pass it as a selector).

With --keras, TensorFlow's thread pool and ai3's OpenMP threads share the
cores; run with OMP_WAIT_POLICY=PASSIVE (as for any swapped Keras model,
see ai3.keras) or each side's idle threads spin while the other works.
"""

from __future__ import annotations

import argparse
import os
import sys

if __name__ == "__main__":
    # Run as a file (`bazel run //:explore`), this folder is sys.path[0]: ai3's
    # own torch/keras/onnx subpackages there would shadow the frameworks.
    # (Python puts the script's real folder there: runfiles are symlinks.)
    _here = {os.path.dirname(os.path.abspath(__file__)), os.path.dirname(os.path.realpath(__file__))}
    sys.path[:] = [p for p in sys.path if os.path.realpath(p or os.curdir) not in _here]

from pathlib import Path  # noqa: E402
from typing import Any, Callable, Optional, Sequence  # noqa: E402

import numpy as np  # noqa: E402

from ai3 import errors, plans, tuning  # noqa: E402


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m ai3 explore",
        description="Time every applicable ai3 algorithm of every layer of a model; print a table, "
        "write a PNG chart and the plan JSON.",
    )
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--model", help="a torchvision model name (weights=None), e.g. resnet18")
    which.add_argument("--keras", help="a keras.applications model name (weights=None), e.g. MobileNetV2")
    which.add_argument("--onnx", help="an ONNX model file")
    p.add_argument("--batch", type=int, default=1, help="batch size (default 1)")
    p.add_argument("--size", type=int, default=224, help="input height and width (default 224)")
    p.add_argument(
        "--input-shape",
        help="the full input shape, e.g. 1,3,224,224 (NCHW; NHWC for --keras); overrides --batch/--size",
    )
    p.add_argument("--out", default="ai3_explore", help="folder for the PNG and the plan JSON (default ./ai3_explore)")
    p.add_argument("--no-cache", action="store_true", help="time everything again (ignore and skip the tuning cache)")
    return p


def _out_dir(path: str) -> Path:
    """--out, relative to where `bazel run` was started when run by it."""
    base = os.environ.get("BUILD_WORKING_DIRECTORY", "")
    out = Path(path)
    if not out.is_absolute() and base:
        out = Path(base) / out
    out.mkdir(parents=True, exist_ok=True)
    return out


def _shape(args: argparse.Namespace, channels_last: bool) -> Optional[tuple[int, ...]]:
    if args.input_shape:
        try:
            return tuple(int(d) for d in args.input_shape.split(","))
        except ValueError as e:
            raise errors.InvalidArgument(f"--input-shape must be comma-separated ints, got {args.input_shape!r}") from e
    if channels_last:
        return (args.batch, args.size, args.size, 3)
    return (args.batch, 3, args.size, args.size)


# ---- Models and their framework runners -------------------------------------------------


def _torch_model(name: str) -> tuple[Any, Callable[[np.ndarray], Any]]:
    import torch
    import torchvision

    try:
        model = torchvision.models.get_model(name, weights=None).eval()
    except ValueError as e:
        raise errors.InvalidArgument(f"no torchvision model {name!r} ({e})") from e

    def run(x: np.ndarray) -> Any:
        with torch.inference_mode():
            return model(torch.from_numpy(x))

    return model, run


def _keras_model(name: str, shape: tuple[int, ...]) -> tuple[Any, Callable[[np.ndarray], Any]]:
    import keras

    make = getattr(keras.applications, name, None)
    if make is None or not callable(make):
        raise errors.InvalidArgument(f"no keras.applications model {name!r}")
    import tensorflow as tf

    model = make(weights=None, input_shape=tuple(shape[1:]))
    # A traced graph, not eager op-by-op calls: Keras at its usual speed.
    call = tf.function(lambda t: model(t, training=False))

    def run(x: np.ndarray) -> Any:
        return call(x)

    return model, run


def _onnx_model(path: str, shape: Optional[tuple[int, ...]]) -> tuple[Any, Callable[[np.ndarray], Any], tuple[int, ...]]:
    import onnx
    import onnxruntime as ort

    if not os.path.exists(path):
        raise errors.InvalidArgument(f"no ONNX file at {path!r}")
    model = onnx.load(path)
    inits = {t.name for t in model.graph.initializer}
    graph_input = next(i for i in model.graph.input if i.name not in inits)
    dims = [d.dim_value if d.HasField("dim_value") else None for d in graph_input.type.tensor_type.shape.dim]
    if shape is None or len(shape) != len(dims):
        shape = tuple(d or 1 for d in dims)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])

    def run(x: np.ndarray) -> Any:
        return session.run(None, {graph_input.name: x})

    return path, run, shape


# ---- Timing end to end and the chart -----------------------------------------------------


def _end_to_end(plan: plans.Plan, framework: str, run_framework: Callable[[np.ndarray], Any], shape, dtype) -> dict[str, float]:
    x = np.random.default_rng(0).standard_normal(shape).astype(dtype)
    ai3_seconds, _, _ = tuning.measure(plan.model, x)
    framework_seconds, _, _ = tuning.measure(run_framework, x)
    return {"ai3 (auto)": ai3_seconds, framework: framework_seconds}


def chart(plan: plans.Plan, title: str, path: Path) -> None:
    """Per-layer time by algorithm and the end-to-end bars, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    layers = [lp for lp in plan.layers if sum(m.timed for m in lp.measurements) > 1]
    algorithms = sorted({m.algorithm for lp in layers for m in lp.measurements if m.timed})
    fig, (ax, ax_total) = plt.subplots(
        1, 2, figsize=(max(8.0, 0.45 * len(layers) + 4), 5.5), gridspec_kw={"width_ratios": [max(3, len(layers) // 3), 1]}
    )
    width = 0.8 / max(1, len(algorithms))
    colors = plt.get_cmap("tab10")
    for k, algorithm in enumerate(algorithms):
        xs, ys = [], []
        for i, lp in enumerate(layers):
            t = lp.time_of(algorithm)
            if t is not None:
                xs.append(i + (k - (len(algorithms) - 1) / 2) * width)
                ys.append(t * 1e3)
        ax.bar(xs, ys, width=width, label=algorithm, color=colors(k % 10))
    for i, lp in enumerate(layers):  # the choice, marked on top
        t = lp.time_of(lp.choice)
        if t is not None:
            ax.plot([i], [t * 1e3], marker="v", color="black", markersize=4)
    ax.set_xticks(range(len(layers)))
    ax.set_xticklabels([lp.name for lp in layers], rotation=90, fontsize=6)
    ax.set_yscale("log")
    ax.set_ylabel("time per layer (ms, log)")
    ax.set_title(f"{title}: per-layer time by algorithm (▼ = chosen)")
    if algorithms:
        ax.legend(fontsize=7, ncol=2)
    names = list(plan.end_to_end)
    ax_total.bar(names, [plan.end_to_end[n] * 1e3 for n in names], color=["tab:green", "tab:gray"][: len(names)])
    ax_total.set_ylabel("end to end (ms)")
    ax_total.set_title("whole model")
    ax_total.tick_params(axis="x", labelsize=8, rotation=20)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _summary(plan: plans.Plan) -> Any:
    from rich.table import Table

    table = Table(title="end to end (median)")
    table.add_column("runner")
    table.add_column("ms", justify="right")
    table.add_column("vs ai3", justify="right")
    ours = plan.end_to_end.get("ai3 (auto)")
    for name, seconds in plan.end_to_end.items():
        table.add_row(name, f"{seconds * 1e3:.3f}", "" if not ours else f"{seconds / ours:.2f}x")
    return table


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = _parser().parse_args(argv)
    if args.no_cache:
        os.environ[tuning.ENV_CACHE_DIR] = ""
    from rich.console import Console

    console = Console()
    if not console.is_terminal:  # a log or a pipe: room for the candidates column
        console = Console(width=160)
    if args.model:
        name, framework = args.model, "PyTorch"
        shape = _shape(args, channels_last=False)
        model, run_framework = _torch_model(args.model)
    elif args.keras:
        name, framework = args.keras, "Keras"
        shape = _shape(args, channels_last=True)
        model, run_framework = _keras_model(args.keras, shape)
    else:
        name, framework = Path(args.onnx).stem, "ONNX Runtime"
        model, run_framework, shape = _onnx_model(args.onnx, _shape(args, False) if args.input_shape else None)
    console.print(f"[bold]ai3 explore[/bold] {name} ({framework}), input {shape}")
    plan = plans.plan(model, shape, "auto")
    plan.end_to_end = _end_to_end(plan, framework, run_framework, shape, plan.dtype)
    console.print(plan.table())
    console.print(_summary(plan))
    out = _out_dir(args.out)
    png, js = out / f"{name}.png", out / f"{name}.plan.json"
    chart(plan, name, png)
    plan.save(js)
    console.print(f"wrote {png} and {js}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
