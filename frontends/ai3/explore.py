"""`python -m ai3 explore`: every applicable algorithm of every layer of a
model, timed, tabled and charted.

    python -m ai3 explore --model resnet18 --out results/   # torchvision
    python -m ai3 explore --keras MobileNetV2 --size 96     # keras.applications
    python -m ai3 explore --onnx net.onnx                    # an ONNX file
    python -m ai3 explore --pt2 net.pt2                      # a torch.export file
    python -m ai3 explore --keras-file net.keras             # a saved Keras model
    python -m ai3 explore --function mypkg.models:build      # a function returning a model
    bazel run //:explore -- --model squeezenet1_1 --size 64

It makes an ai3.plan with "auto" for every op (each layer timed alone on
its real input shape, algorithm by algorithm; see ai3.tuning, whose disk
cache it uses unless --no-cache), times the whole tuned ai3.Model against
the framework itself on the same input (PyTorch eager, Keras, or ONNX
Runtime) and, for a PyTorch or Keras model, against ONNX Runtime running
its ONNX export (what a CPU user would pick instead; a Keras model is
exported on Keras's torch backend, in a child process, as tf2onnx is not
among ai3's dependencies), prints the plan and those totals as rich tables,
and writes into --out:
  <name>.png        per-layer time by algorithm (log scale; layers with more
                    than one timed algorithm) and the end-to-end bars;
  <name>.plan.json  the plan (ai3.Plan.load it and pass it as a selector).

With --keras, TensorFlow's thread pool and ai3's OpenMP threads share the
cores; leave libgomp's default wait policy (see ai3.keras).
"""

from __future__ import annotations

import argparse
import functools
import os
import sys

if __name__ == "__main__":
    # Run as a file (`bazel run //:explore`), this folder is sys.path[0]: ai3's
    # own torch/keras/onnx subpackages there would shadow the frameworks.
    # (Python puts the script's real folder there: runfiles are symlinks.)
    _here = {os.path.dirname(os.path.abspath(__file__)), os.path.dirname(os.path.realpath(__file__))}
    sys.path[:] = [p for p in sys.path if os.path.realpath(p or os.curdir) not in _here]

from collections.abc import Callable, Sequence  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any

import numpy as np  # noqa: E402

from ai3 import errors, plans, tuning  # noqa: E402
from ai3.sweep import sweep  # noqa: E402,F401  (ai3.explore.sweep: many models, on Ray)


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
    which.add_argument("--pt2", help="a torch.export file (torch.export.save of an ExportedProgram)")
    which.add_argument("--keras-file", help="a saved Keras model (.keras)")
    which.add_argument("--function", help="MODULE:FUNCTION, a Python function returning a model (torch, Keras or ONNX)")
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


def _shape(args: argparse.Namespace, channels_last: bool) -> tuple[int, ...] | None:
    if args.input_shape:
        try:
            return tuple(int(d) for d in args.input_shape.split(","))
        except ValueError as e:
            raise errors.InvalidArgument(f"--input-shape must be comma-separated ints, got {args.input_shape!r}") from e
    if channels_last:
        return (args.batch, args.size, args.size, 3)
    return (args.batch, 3, args.size, args.size)


# ---- Models and their framework runners -------------------------------------------------


@dataclass
class Loaded:
    """A model to explore or sweep: `model` is what ai3.plan takes (an
    nn.Module, a keras.Model, an ONNX path), `run` the framework running it
    on a NumPy input, `shape` its input shape, `onnx` an ONNX file of it for
    ONNX Runtime (None where ai3 cannot make one), made by `export_onnx`
    when first asked for (a sweep never needs it)."""

    name: str
    framework: str
    model: Any
    run: Callable[[np.ndarray], Any]
    shape: tuple[int, ...]
    export_onnx: Callable[[], str | None] | None = None

    @functools.cached_property
    def onnx(self) -> str | None:
        return None if self.export_onnx is None else self.export_onnx()


def load_model(source: str, *, batch: int = 1, size: int = 224, input_shape: Sequence[int] | None = None) -> Loaded:
    """A model from any of the forms explore and sweep take:
      NAME                a torchvision model (weights=None)
      keras:NAME          a keras.applications model (weights=None)
      FILE.onnx           an ONNX file
      FILE.pt2            a torch.export ExportedProgram (torch.export.save)
      FILE.keras          a saved Keras model
      MODULE:FUNCTION     a Python function returning an nn.Module, a keras.Model or an ONNX ModelProto
    `input_shape` (else batch x 3 x size x size, NHWC for Keras; a file's
    own input shape where it has one) is the model's input."""
    shape = None if input_shape is None else tuple(int(d) for d in input_shape)
    if source.endswith(".onnx"):
        return _onnx_model(source, shape)
    if source.endswith(".pt2"):
        return _torch_loaded(Path(source).stem, _pt2_module(source), shape, batch, size)
    if source.endswith(".keras"):
        return _keras_loaded(Path(source).stem, _keras_file(source), shape, batch, size)
    if source.startswith("keras:"):
        name = source[len("keras:") :]
        shape = shape or (batch, size, size, 3)
        return _keras_loaded(name, _keras_application(name, shape), shape, batch, size)
    if ":" in source:
        return _from_function(source, shape, batch, size)
    return _torch_loaded(source, _torchvision(source), shape, batch, size)


def _torchvision(name: str) -> Any:
    import torchvision

    try:
        return torchvision.models.get_model(name, weights=None).eval()
    except ValueError as e:
        raise errors.InvalidArgument(f"no torchvision model {name!r} ({e})") from e


def _pt2_module(path: str) -> Any:
    import torch

    if not os.path.exists(path):
        raise errors.InvalidArgument(f"no torch.export file at {path!r}")
    try:
        program = torch.export.load(path)
    except Exception as e:  # a file torch.export did not write
        raise errors.InvalidArgument(f"{path!r} is not a torch.export file: {type(e).__name__}: {e}") from e
    module = _as_modules(program.module())
    module._ai3_example_shape = tuple(program.example_inputs[0][0].shape) if program.example_inputs else None
    return module


def _as_modules(exported: Any) -> Any:
    """An exported program's module (an fx graph of ATen ops on lifted
    parameters) as the graph of torch modules and functions ai3's torch
    frontend reads: aten.conv2d / batch_norm / linear / pools on the
    program's parameters become nn.Conv2d, nn.BatchNorm2d, nn.Linear,
    nn.MaxPool2d, nn.AdaptiveAvgPool2d modules; any other aten.<f> becomes
    torch.<f> or torch.nn.functional.<f> (in-place forms out of place); the
    shape guards export adds are dropped (ai3 traces at the shape given)."""
    import torch
    from torch import fx, nn

    aten = torch.ops.aten
    graph = fx.Graph()
    root = nn.Module()
    env: dict[Any, Any] = {}

    def param(node: Any) -> Any:
        value = exported
        for part in node.target.split("."):
            value = getattr(value, part)
        return value

    def arg(a: Any) -> Any:
        return fx.node.map_arg(a, lambda n: env[n])

    def module(node: Any, make: Callable[..., Any], x: Any) -> Any:
        name = f"m{len(list(root.children()))}"
        root.add_module(name, make())
        return graph.call_module(name, (env[x],))

    def conv(x, w, b=None, stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1):
        weight = param(w)
        m = nn.Conv2d(
            weight.shape[1] * groups,
            weight.shape[0],
            tuple(weight.shape[2:]),
            tuple(stride),
            tuple(padding),
            tuple(dilation),
            groups,
            bias=b is not None,
        )
        with torch.no_grad():
            m.weight.copy_(weight)
            if b is not None:
                m.bias.copy_(param(b))
        return m

    def batch_norm(x, w, b, mean, var, training=False, momentum=0.1, eps=1e-5, *rest):
        m = nn.BatchNorm2d(param(mean).shape[0], eps=eps, momentum=momentum, affine=w is not None).eval()
        with torch.no_grad():
            m.running_mean.copy_(param(mean))
            m.running_var.copy_(param(var))
            if w is not None:
                m.weight.copy_(param(w))
                m.bias.copy_(param(b))
        return m

    def linear(x, w, b=None):
        weight = param(w)
        m = nn.Linear(weight.shape[1], weight.shape[0], bias=b is not None)
        with torch.no_grad():
            m.weight.copy_(weight)
            if b is not None:
                m.bias.copy_(param(b))
        return m

    modules = {
        aten.conv2d.default: conv,
        aten.batch_norm.default: batch_norm,
        aten.linear.default: linear,
        aten.max_pool2d.default: lambda x, k, s=(), p=0, d=1, ceil=False: nn.MaxPool2d(k, s or k, p, d, ceil_mode=ceil),
        aten.avg_pool2d.default: lambda x, k, s=(), p=0, ceil=False, pad=True, *r: nn.AvgPool2d(
            k, s or k, p, ceil, pad
        ),
        aten.adaptive_avg_pool2d.default: lambda x, size: nn.AdaptiveAvgPool2d(tuple(size)),
    }
    import torch.nn.functional as F

    for node in exported.graph.nodes:
        if node.op == "placeholder":
            env[node] = graph.placeholder(node.name)
        elif node.op == "get_attr":
            env[node] = node  # read by the module it feeds; a plain constant is kept as one below
        elif node.op == "call_module":  # export's shape guards
            continue
        elif node.op == "output":  # a flat tuple of the outputs: one tensor for one
            out = node.args[0]
            graph.output(arg(out[0] if isinstance(out, (tuple, list)) and len(out) == 1 else out))
        elif node.op == "call_function" and node.target in modules:
            env[node] = module(node, lambda: modules[node.target](*node.args, **node.kwargs), node.args[0])
        elif node.op == "call_function":
            target = node.target
            if isinstance(target, torch._ops.OpOverload):
                name = target.overloadpacket.__name__.rstrip("_")
                target = getattr(torch, name, None) or getattr(F, name, None)
                if target is None:
                    raise errors.UnsupportedOperation(
                        f"{node.name}: the exported op {node.target} has no torch function ai3 reads"
                    )
            args = fx.node.map_arg(node.args, lambda n: _constant(graph, root, exported, n, env, param))
            kwargs = fx.node.map_arg(node.kwargs, lambda n: _constant(graph, root, exported, n, env, param))
            env[node] = graph.call_function(target, args, kwargs)
    return fx.GraphModule(root, graph).eval()


def _constant(graph: Any, root: Any, exported: Any, node: Any, env: dict, param: Callable[[Any], Any]) -> Any:
    """A node's value as an argument: a computed node, or a parameter read
    by a function (not a module), registered as a buffer of the new root."""
    if node.op != "get_attr":
        return env[node]
    name = node.target.replace(".", "_")
    if not hasattr(root, name):
        root.register_buffer(name, param(node).detach().clone())
    return graph.get_attr(name)


def _torch_loaded(name: str, model: Any, shape: tuple[int, ...] | None, batch: int, size: int) -> Loaded:
    import torch

    shape = shape or getattr(model, "_ai3_example_shape", None) or (batch, 3, size, size)
    model.eval()

    def run(x: np.ndarray) -> Any:
        with torch.inference_mode():
            return model(torch.from_numpy(x))

    return Loaded(name, "PyTorch", model, run, tuple(shape), lambda: _torch_onnx(name, model, shape))


def _torch_onnx(name: str, model: Any, shape: Sequence[int]) -> str | None:
    """The model exported to ONNX (TorchScript exporter) for ONNX Runtime's
    column; None (with a warning) when PyTorch cannot export it."""
    import tempfile
    import warnings

    import torch

    path = os.path.join(tempfile.mkdtemp(prefix="ai3-explore-"), f"{name}.onnx")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(model, (torch.zeros(tuple(shape)),), path, dynamo=False)
    except Exception as e:
        _no_onnx_column(name, f"torch.onnx.export failed ({type(e).__name__}: {e})")
        return None
    return path


def _no_onnx_column(name: str, why: str) -> None:
    import warnings

    warnings.warn(f"ai3 explore: no ONNX Runtime column for {name}: {why}", RuntimeWarning, stacklevel=3)


# Run with KERAS_BACKEND=torch: argv = the .keras file, the ONNX file, the input shape (JSON).
_KERAS_TORCH_EXPORT = """
import json, sys, warnings
import keras
warnings.simplefilter("ignore")
model = keras.models.load_model(sys.argv[1], compile=False)
spec = keras.InputSpec(shape=tuple(json.loads(sys.argv[3])), dtype="float32")
model.export(sys.argv[2], format="onnx", input_signature=[spec], verbose=False)
"""


def _keras_onnx(name: str, model: Any, shape: Sequence[int]) -> str | None:
    """The Keras model in ONNX for ONNX Runtime's column. Keras exports ONNX
    from its TensorFlow backend only through tf2onnx, which ai3 does not
    depend on; from its torch backend it exports through torch.onnx. So the
    model is saved (.keras: architecture and weights, whichever backend) and
    a child process on the torch backend loads it and exports it: the same
    model and weights. None (with a warning) where that fails."""
    import json
    import subprocess
    import tempfile

    folder = tempfile.mkdtemp(prefix="ai3-explore-")
    saved, path = os.path.join(folder, f"{name}.keras"), os.path.join(folder, f"{name}.onnx")
    try:
        model.save(saved)
    except Exception as e:
        _no_onnx_column(name, f"the model cannot be saved as .keras ({type(e).__name__}: {e})")
        return None
    env = {**os.environ, "KERAS_BACKEND": "torch"}
    try:
        done = subprocess.run(
            [sys.executable, "-c", _KERAS_TORCH_EXPORT, saved, path, json.dumps(list(shape))],
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
    except subprocess.TimeoutExpired:
        _no_onnx_column(name, "the export on Keras's torch backend took over 15 minutes")
        return None
    if done.returncode != 0 or not os.path.exists(path):
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        _no_onnx_column(name, f"the export on Keras's torch backend failed ({last})")
        return None
    return path


def _keras_application(name: str, shape: Sequence[int]) -> Any:
    import keras

    make = getattr(keras.applications, name, None)
    if make is None or not callable(make):
        raise errors.InvalidArgument(f"no keras.applications model {name!r}")
    return make(weights=None, input_shape=tuple(shape[1:]))


def _keras_file(path: str) -> Any:
    import keras

    if not os.path.exists(path):
        raise errors.InvalidArgument(f"no saved Keras model at {path!r}")
    try:
        return keras.models.load_model(path, compile=False)
    except Exception as e:
        raise errors.InvalidArgument(f"{path!r} is not a saved Keras model: {type(e).__name__}: {e}") from e


def _keras_loaded(name: str, model: Any, shape: tuple[int, ...] | None, batch: int, size: int) -> Loaded:
    import tensorflow as tf

    if shape is None:
        own = tuple(model.input_shape)
        shape = (batch, *(size if d is None else int(d) for d in own[1:]))
    # A traced graph, not eager op-by-op calls: Keras at its usual speed.
    call = tf.function(lambda t: model(t, training=False))

    def run(x: np.ndarray) -> Any:
        return call(x)

    return Loaded(name, "Keras", model, run, tuple(shape), lambda: _keras_onnx(name, model, shape))


def _from_function(source: str, shape: tuple[int, ...] | None, batch: int, size: int) -> Loaded:
    import importlib

    module_name, _, function = source.partition(":")
    try:
        make = getattr(importlib.import_module(module_name), function)
    except (ImportError, AttributeError) as e:
        raise errors.InvalidArgument(f"cannot find {source!r} (MODULE:FUNCTION): {type(e).__name__}: {e}") from e
    model = make()
    kind = type(model).__module__
    if hasattr(model, "SerializeToString") and kind.startswith("onnx"):
        import tempfile

        path = os.path.join(tempfile.mkdtemp(prefix="ai3-explore-"), f"{function}.onnx")
        with open(path, "wb") as f:
            f.write(model.SerializeToString())
        return _onnx_model(path, shape, name=function)
    if "keras" in sys.modules and isinstance(model, sys.modules["keras"].Model):
        return _keras_loaded(function, model, shape, batch, size)
    if "torch" in sys.modules and isinstance(model, sys.modules["torch"].nn.Module):
        return _torch_loaded(function, model, shape, batch, size)
    raise errors.InvalidArgument(
        f"{source!r} returned a {type(model).__name__}; explore takes an nn.Module, a keras.Model or an ONNX ModelProto"
    )


def _onnx_model(path: str, shape: tuple[int, ...] | None, name: str | None = None) -> Loaded:
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

    return Loaded(name or Path(path).stem, "ONNX Runtime", path, run, tuple(shape))


def _ort_runner(path: str) -> Callable[[np.ndarray], Any]:
    import onnxruntime as ort

    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    return lambda x: session.run(None, {name: x})


# ---- Timing end to end and the chart -----------------------------------------------------


def _end_to_end(plan: plans.Plan, loaded: Loaded, dtype) -> dict[str, float]:
    """ai3's tuned model, the model's own framework and ONNX Runtime (what a
    CPU user would pick instead), timed in turn on one input."""
    x = np.random.default_rng(0).standard_normal(loaded.shape).astype(dtype)
    runners = {"ai3 (auto)": plan.model, loaded.framework: loaded.run}
    if loaded.onnx is not None and loaded.framework != "ONNX Runtime" and np.dtype(dtype) == np.float32:
        runners["ONNX Runtime"] = _ort_runner(loaded.onnx)
    return {name: tuning.measure(run, x)[0] for name, run in runners.items()}


def chart(plan: plans.Plan, title: str, path: Path) -> None:
    """Per-layer time by algorithm and the end-to-end bars, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    layers = [lp for lp in plan.layers if sum(m.timed for m in lp.measurements) > 1]
    algorithms = sorted({m.algorithm for lp in layers for m in lp.measurements if m.timed})
    fig, (ax, ax_total) = plt.subplots(
        1,
        2,
        figsize=(max(8.0, 0.45 * len(layers) + 4), 5.5),
        gridspec_kw={"width_ratios": [max(3, len(layers) // 3), 1]},
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


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.no_cache:
        os.environ[tuning.ENV_CACHE_DIR] = ""
    from rich.console import Console

    console = Console()
    if not console.is_terminal:  # a log or a pipe: room for the candidates column
        console = Console(width=160)
    source = args.model or args.onnx or args.pt2 or args.keras_file or args.function or f"keras:{args.keras}"
    shape = _shape(args, channels_last=bool(args.keras)) if args.input_shape or args.model or args.keras else None
    loaded = load_model(source, batch=args.batch, size=args.size, input_shape=shape)
    name, framework, model, shape = loaded.name, loaded.framework, loaded.model, loaded.shape
    console.print(f"[bold]ai3 explore[/bold] {name} ({framework}), input {shape}")
    plan = plans.plan(model, shape, "auto")
    plan.end_to_end = _end_to_end(plan, loaded, plan.dtype)
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
