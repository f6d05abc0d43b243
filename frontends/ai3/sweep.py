"""`ai3 sweep`: every applicable algorithm of every layer of many models,
timed on Ray workers, into the tuning cache and a dataset.

    python -m ai3 sweep --model resnet18 --model mobilenet_v2 --batch 1 --size 224 \\
        --dataset sweep.csv --png sweep.png
    python -m ai3 sweep --model keras:MobileNetV2 --model net.onnx --address ray://head:10001
    ai3.sweep.sweep(["resnet18", "net.pt2"], batches=[1, 8], dtypes=["float32"])

A model is anything ai3.explore takes (ai3.explore.load_model): a
torchvision name, keras:<keras.applications name>, an .onnx, .pt2 or
.keras file, or module:function returning a model. Each (model, batch,
size, dtype) is one task: a Ray actor (a timing worker) builds the model
with ai3.plan(..., "auto"), which times each applicable algorithm of each
layer on its real input shape (ai3.tuning), in each layout the layout pass
tries (ai3.layouts: every layout plan is built and timed whole), then
makes the frontend's in-place swap (swap_conv2d, swap_linear) with "auto"
on a copy of the model, whose per-layer cache keys are the framework's own
(`via` torch or keras), and returns what the tuning cache answered or was
given (tuning.observe). With --reps N each task is timed N times, each an
independent "auto" with a fresh tuning cache of its own; a layer's time per algorithm
is the median over the runs (the dataset's `seconds`; `run_seconds` lists
the runs), so one slow sample under load no longer picks the winner, and
two runs' winners side by side are the noise ceiling of "auto" as a label
(bench/predict_quality.py).

Timing workers: each is pinned to its own cores (os.sched_setaffinity,
OMP_NUM_THREADS), and Ray is told each needs that many CPUs, so timings
running side by side never share a core. The default is one worker with
every core of this machine (on 2 cores: one timing worker at a time); the
driver (this process) does the merging and writing around it.

Results: merged into this process's tuning cache in its usual format and
keys (tuning.cache_store), so a later "auto" on the same layers is a cache
hit; and appended to the dataset (CSV), one row per (layer, algorithm):
the layer's parameters, input shape, dtype, layout, device, build and
machine, the algorithm, its median time, samples, note and workspace.
A task's rows are written when it finishes (the file is flushed), and a
sweep skips the tasks whose rows the dataset already has, so an
interrupted sweep resumes where it stopped (an interrupted task's layers
tuned before the interruption are tuning-cache hits the second time).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import os
import secrets
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DATASET_COLUMNS = (
    "task",
    "model",
    "frontend",
    "model_input_shape",
    "op",
    "layer",
    "layer_input_shape",
    "dtype",
    "layout",
    "device",
    "via",
    "params",
    "key_digest",
    "build",
    "machine",
    "algorithms",
    "algorithm",
    "seconds",
    "samples",
    "note",
    "workspace_bytes",
    "chosen",
    "run_seconds",
)


@dataclass(frozen=True)
class Task:
    """One (model, input shape, dtype) of a sweep."""

    model: str
    batch: int
    size: int
    dtype: str
    input_shape: tuple[int, ...] | None = None  # overrides batch/size

    @property
    def id(self) -> str:
        shape = "x".join(map(str, self.input_shape)) if self.input_shape else f"b{self.batch}s{self.size}"
        return f"{self.model}|{shape}|{self.dtype}"


def tasks(
    models: Sequence[str],
    batches: Sequence[int] = (1,),
    sizes: Sequence[int] = (224,),
    dtypes: Sequence[str] = ("float32",),
    input_shape: Sequence[int] | None = None,
) -> list[Task]:
    shape = None if input_shape is None else tuple(int(d) for d in input_shape)
    return [Task(m, b, s, d, shape) for m in models for b in batches for s in sizes for d in dtypes]


# ---- On a timing worker -----------------------------------------------------------


def _timed_runs(task: Task, loaded: Any, reps: int, in_place: bool) -> list[tuple[dict[str, Any], list[Any], str]]:
    """Every (key, results, layer name) the task's timing gave, `reps`
    results per key where reps > 1. One run is ai3.plan(..., "auto") (each
    layer in each layout the layout pass tries, and the layout plans whole)
    and (with `in_place`), per op with a choice, the frontend's in-place swap with "auto"
    (swap_conv2d & co.: their own cache keys, `via` the framework), so a
    later in-place "auto" is a cache hit too (in the first run only: those
    are the same shapes again, timed through the framework's layer). With
    reps > 1 every run has a fresh tuning cache of its own (each one times
    afresh, an independent "auto"), and merge_results takes the medians."""
    import copy

    from ai3 import frontend, plans, tuning

    found: dict[str, tuple[dict[str, Any], list[Any], str]] = {}
    for run in range(reps):
        with _fresh_cache(reps > 1), tuning.observe() as seen:
            plans.plan(loaded.model, loaded.shape, "auto", dtype=task.dtype)
            if run == 0 and in_place:
                _in_place_auto(frontend, copy, loaded, task.dtype)
        first: set[str] = set()
        for key, result, name in seen:
            digest = tuning.key_digest(key)
            if digest in first:  # a layer met twice in one run (a repeated block): a cache hit the second time
                continue
            first.add(digest)
            found.setdefault(digest, (key, [], name))[1].append(result)
    return list(found.values())


@contextlib.contextmanager
def _fresh_cache(fresh: bool) -> Any:
    """While open (if `fresh`), a tuning cache of its own in a temporary
    folder: a run times every layer afresh, independent of the others,
    and a layer repeated in the model is a hit within the run."""
    import shutil

    from ai3 import tuning

    if not fresh:
        yield
        return
    saved = os.environ.get(tuning.ENV_CACHE_DIR)
    folder = tempfile.mkdtemp(prefix="ai3-sweep-run-")
    os.environ[tuning.ENV_CACHE_DIR] = folder
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(tuning.ENV_CACHE_DIR, None)
        else:
            os.environ[tuning.ENV_CACHE_DIR] = saved
        shutil.rmtree(folder, ignore_errors=True)


def _in_place_auto(frontend: Any, copy: Any, loaded: Any, dtype: str) -> None:
    """The frontend's in-place swap with "auto" of each op that has more
    than one algorithm, leaving the model as it is."""
    import warnings

    from ai3 import errors, tuning

    if dtype != "float32" or loaded.framework == "onnx":  # the swaps' own dtype; ONNX has no in-place model
        return
    front = frontend.of(loaded.model, "ai3 sweep")
    for op in frontend.SWAP_SHORTHANDS:
        if len(tuning.known_algorithms(op)) < 2:
            continue
        try:
            # A torch swap edits the model it is given; the Keras one returns a copy.
            model = copy.deepcopy(loaded.model) if front.name == "torch" else loaded.model
            front.swap_operation(op, model, "auto", loaded.shape)
        except errors.Error as e:  # a model this swap refuses: its plan rows stand
            warnings.warn(f"ai3 sweep: {loaded.name}: in-place swap of {op} with 'auto' failed: {e}", stacklevel=2)


def merge_results(results: Sequence[Any]) -> tuple[Any, dict[str, list[float | None]]]:
    """One TuneResult from several independent timings of a layer: each
    algorithm's median over the runs (a run's slow sample no longer decides
    the winner), and the fastest of those as the choice; also each
    algorithm's per-run seconds (None where a run did not time it)."""
    import numpy as np

    from ai3 import tuning

    if len(results) == 1:
        only = results[0]
        return only, {m.algorithm: [m.seconds] for m in only.measurements}
    per_run: dict[str, list[float | None]] = {}
    merged: dict[str, Any] = {}
    for result in results:
        for m in result.measurements:
            per_run.setdefault(m.algorithm, []).append(m.seconds)
            merged.setdefault(m.algorithm, [])
            merged[m.algorithm].append(m)
    measurements = []
    for algorithm, ms in merged.items():
        timed = [m for m in ms if m.timed]
        if not timed:
            measurements.append(ms[0])
            continue
        # Stopped early only where every run stopped it (it never came close).
        full = [m for m in timed if m.note != tuning.STOPPED_EARLY]
        measurements.append(
            tuning.Measurement(
                algorithm,
                float(np.median([m.seconds for m in timed])),
                sum(m.samples for m in timed),
                "" if full else tuning.STOPPED_EARLY,
                timed[0].workspace_bytes,
            )
        )
    contenders = [m for m in measurements if m.timed and m.note != tuning.STOPPED_EARLY]
    choice = min(contenders, key=lambda m: m.seconds).algorithm if contenders else results[0].choice
    return tuning.TuneResult(choice, measurements), per_run


def run_task(task: Task, reps: int = 1, in_place: bool = True) -> dict[str, Any]:
    """Times every layer of one task's model (in this process), `reps`
    times (see _timed_runs); returns the rows and the cache entries for the
    driver."""
    from ai3 import explore, predict, tuning

    loaded = explore.load_model(task.model, batch=task.batch, size=task.size, input_shape=task.input_shape)
    frontend_name = _frontend_name(loaded.model)
    build, mach = tuning.build_id(), json.dumps(predict.machine(), sort_keys=True)
    rows, entries = [], []
    for key, results, name in _timed_runs(task, loaded, reps, in_place):
        digest = tuning.key_digest(key)
        result, per_run = merge_results(results)
        entries.append((key, result.to_json()))
        algorithms = json.dumps(
            tuning.known_algorithms(key["op"], key.get("device", "cpu")) if key["op"] != "layout_plan" else []
        )
        params = "{}" if key["op"] == "layout_plan" else json.dumps(key.get("params"), sort_keys=True)
        for m in result.measurements:
            rows.append(
                {
                    "task": task.id,
                    "model": task.model,
                    "frontend": frontend_name,
                    "model_input_shape": json.dumps(list(loaded.shape)),
                    "op": key["op"],
                    "layer": name,
                    "layer_input_shape": json.dumps(key.get("input_shape")),
                    "dtype": key.get("dtype"),
                    "layout": key.get("layout"),
                    "device": key.get("device", "cpu"),
                    "via": key.get("via", "core"),
                    "params": params,
                    "key_digest": digest,
                    "build": build,
                    "machine": mach,
                    "algorithms": algorithms,
                    "algorithm": m.algorithm,
                    "seconds": "" if m.seconds is None else repr(m.seconds),
                    "samples": m.samples,
                    "note": m.note,
                    "workspace_bytes": "" if m.workspace_bytes is None else m.workspace_bytes,
                    "chosen": int(m.algorithm == result.choice),
                    "run_seconds": json.dumps(per_run.get(m.algorithm, [])),
                }
            )
    return {"task": task.id, "build": build, "rows": rows, "entries": entries, "cores": sorted(os.sched_getaffinity(0))}


def _frontend_name(model: Any) -> str:
    from ai3 import frontend

    return frontend.of(model, "ai3 sweep").name


def _worker_class(ray: Any) -> Any:
    @ray.remote
    class TimingWorker:
        """A Ray actor that times tasks on the cores it was pinned to."""

        def __init__(self, cores: Sequence[int] | None):
            if cores:
                os.sched_setaffinity(0, set(cores))
            # Ray runs its workers at nice 15 (so they never starve the
            # raylet): under other load a timing worker would then get a
            # sliver of its cores. Back to normal priority where allowed.
            with contextlib.suppress(OSError):
                os.setpriority(os.PRIO_PROCESS, 0, 0)

        def run(self, task: Task, reps: int, in_place: bool) -> dict[str, Any]:
            return run_task(task, reps, in_place)

    return TimingWorker


# ---- The dataset ----------------------------------------------------------------------


def read_dataset(path: str | os.PathLike) -> list[dict[str, str]]:
    if not os.path.exists(path):
        return []
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _append(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    new = not path.exists() or path.stat().st_size == 0
    with open(path, "a", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=DATASET_COLUMNS)
        if new:
            writer.writeheader()
        writer.writerows(rows)
        f.flush()
        os.fsync(f.fileno())


# ---- The driver ----------------------------------------------------------------------------


def _start_ray(address: str | None, cpus: int) -> Any:
    import ray

    if ray.is_initialized():
        return ray
    if address:
        ray.init(address=address, log_to_driver=False)
    else:
        # A short session folder: Ray's socket paths must fit in 107 bytes,
        # and a test's TMPDIR may be long.
        temp = tempfile.mkdtemp(prefix="ai3ray", dir="/tmp")
        # Ray (2.60) turns token authentication on for a new local cluster
        # and saves a token in ~/.ray, which fails where the home folder is
        # read-only (a sandboxed test, some containers). Unless the user set
        # up authentication, this cluster -- ai3's own, gone with the
        # process -- gets a fresh token in the environment instead, which
        # its workers inherit: authentication stays on, nothing is written.
        if not any(k in os.environ for k in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")):
            if not os.path.exists(os.path.expanduser("~/.ray/auth_token")):
                os.environ["RAY_AUTH_TOKEN"] = secrets.token_hex(32)
        env = {"PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        ray.init(
            num_cpus=cpus,
            include_dashboard=False,
            log_to_driver=False,
            _temp_dir=temp,
            object_store_memory=80 * 1024 * 1024,
            runtime_env={"env_vars": env},
            _system_config={"worker_niceness": 0},
        )
    return ray


def sweep(
    models: Sequence[str],
    *,
    batches: Sequence[int] = (1,),
    sizes: Sequence[int] = (224,),
    dtypes: Sequence[str] = ("float32",),
    input_shape: Sequence[int] | None = None,
    dataset: str | os.PathLike = "ai3_sweep.csv",
    png: str | os.PathLike | None = None,
    address: str | None = None,
    workers: int | None = None,
    cores_per_worker: int | None = None,
    reps: int = 1,
    in_place: bool = True,
    progress: bool | None = None,
) -> dict[str, Any]:
    """Runs a sweep (see the module doc); returns a summary: tasks run and
    skipped, rows written, cache entries merged."""
    from ai3 import errors, tuning

    if not models:
        raise errors.InvalidArgument("ai3 sweep: give at least one model")
    if reps < 1:
        raise errors.InvalidArgument(f"ai3 sweep: reps must be at least 1, got {reps}")
    path = Path(dataset)
    path.parent.mkdir(parents=True, exist_ok=True)
    done = {r["task"] for r in read_dataset(path)}
    todo = [t for t in tasks(models, batches, sizes, dtypes, input_shape) if t.id not in done]
    skipped = len(tasks(models, batches, sizes, dtypes, input_shape)) - len(todo)
    cores = sorted(os.sched_getaffinity(0))
    if workers is None:
        workers = 1 if cores_per_worker is None else max(1, len(cores) // cores_per_worker)
    if cores_per_worker is None:
        cores_per_worker = max(1, len(cores) // workers)
    if not address and workers * cores_per_worker > len(cores):
        raise errors.InvalidArgument(
            f"ai3 sweep: {workers} workers x {cores_per_worker} cores need {workers * cores_per_worker} cores; "
            f"this machine has {len(cores)}: timings that share a core disturb each other"
        )
    summary = {
        "tasks": len(todo),
        "skipped": skipped,
        "rows": 0,
        "merged": 0,
        "foreign": 0,
        "workers": workers,
        "worker_cores": [],
    }
    if todo:
        ray = _start_ray(address, workers * cores_per_worker)
        worker_class = _worker_class(ray)
        env = {"OMP_NUM_THREADS": str(cores_per_worker), "AI3_NO_PROGRESS": "1"}
        if tuning.cache_dir() is not None:
            env[tuning.ENV_CACHE_DIR] = str(tuning.cache_dir())
        pool = [
            worker_class.options(num_cpus=cores_per_worker, runtime_env={"env_vars": env}).remote(
                None if address else cores[i * cores_per_worker : (i + 1) * cores_per_worker]
            )
            for i in range(workers)
        ]
        try:
            _drive(ray, pool, todo, path, summary, progress, (reps, in_place))
        finally:
            for actor in pool:
                ray.kill(actor)
    if png is not None:
        summary_png(read_dataset(path), Path(png))
    return summary


def _drive(
    ray: Any,
    pool: list,
    todo: list[Task],
    path: Path,
    summary: dict[str, Any],
    progress: bool | None,
    how: tuple[int, bool],
) -> None:
    """Hands tasks to idle workers; merges and writes each result as it comes."""
    from ai3 import tuning

    show = tuning._show_progress() if progress is None else progress
    queue = list(todo)
    running: dict[Any, tuple[Any, Task]] = {}
    with _progress(show, len(todo)) as bar:
        while queue or running:
            for actor in pool:
                if queue and actor not in {a for a, _ in running.values()}:
                    task = queue.pop(0)
                    running[actor.run.remote(task, *how)] = (actor, task)
            bar(f"timing {', '.join(t.id for _, t in running.values())}", 0)
            ready, _ = ray.wait(list(running), num_returns=1)
            for ref in ready:
                _, task = running.pop(ref)
                result = ray.get(ref)
                if result["build"] == tuning.build_id():
                    for key, data in result["entries"]:
                        tuning.cache_store(key, tuning.TuneResult.from_json(data))
                    summary["merged"] += len(result["entries"])
                else:  # another build's times: rows only, its cache folder is another
                    summary["foreign"] += 1
                if result["cores"] not in summary["worker_cores"]:
                    summary["worker_cores"].append(result["cores"])
                _append(path, result["rows"])
                summary["rows"] += len(result["rows"])
                bar(f"done {task.id}", 1)


def _progress(show: bool, total: int) -> Any:
    if not show:
        return contextlib.nullcontext(lambda description, advance: None)

    @contextlib.contextmanager
    def bar() -> Any:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        with Progress(
            TextColumn("[bold]ai3 sweep[/bold] {task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
        ) as p:
            job = p.add_task("", total=total)
            yield lambda description, advance: p.update(job, description=description, advance=advance)

    return bar()


# ---- The summary chart ------------------------------------------------------------------------


def winners(rows: Sequence[dict[str, str]]) -> dict[str, list[tuple[str, dict[str, Any], str]]]:
    """Per op, (the layer's key digest, its key fields, the measured-fastest
    algorithm) of each distinct layer the core ran (layout plans and the
    in-place swaps' keys, the same layers in a framework's terms, left
    out; an algorithm cut short or failed never wins)."""
    from ai3 import predict

    return {
        op: [(la.digest, la.key, la.fastest) for la in layers] for op, layers in predict.dataset_layers(rows).items()
    }


def row_key(r: dict[str, str]) -> dict[str, Any]:
    """The tuning-cache key fields a dataset row records of its layer."""
    return {
        "op": r["op"],
        "params": json.loads(r["params"]),
        "input_shape": json.loads(r["layer_input_shape"]),
        "dtype": r["dtype"],
        "layout": r["layout"],
        "via": r.get("via", "core"),
    }


def summary_png(rows: Sequence[dict[str, str]], path: Path) -> None:
    """Per op with a choice (conv2d, linear), which algorithm wins where:
    conv2d layers by input channels x output spatial size (marker: the
    kernel), linear layers by in x out features; colour: the winner."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ai3 import predict

    won = winners(rows)
    fig, axes = plt.subplots(1, 3, figsize=(17, 5.5), gridspec_kw={"width_ratios": [3, 2, 2]})
    algorithms = sorted({a for op in ("conv2d", "linear") for _, _, a in won.get(op, [])})
    colour = {a: plt.get_cmap("tab10")(i % 10) for i, a in enumerate(algorithms)}
    ax = axes[0]
    markers = {"1x1": "o", "3x3": "s", "depthwise": "^", "other": "D"}
    seen: set[tuple[str, str]] = set()
    for _, key, algorithm in won.get("conv2d", []):
        g = predict.conv_geometry(
            key["params"]["attrs"], key["params"]["weights"]["weight"], key["input_shape"], key["layout"]
        )
        kind = (
            "depthwise"
            if g.groups > 1 and g.groups == g.c_in
            else "1x1"
            if g.kh == g.kw == 1
            else "3x3"
            if g.kh == g.kw == 3
            else "other"
        )
        ho, wo = g.out_hw
        label = f"{algorithm}" if (algorithm, "") not in seen else None
        seen.add((algorithm, ""))
        ax.scatter(
            g.c_in * (1.1 if key["layout"] == "NHWC" else 1.0),
            ho * wo,
            color=colour[algorithm],
            marker=markers[kind],
            s=40,
            alpha=0.8,
            edgecolors="black" if key["layout"] == "NHWC" else "none",
            label=label,
        )
    for kind, marker in markers.items():
        ax.scatter([], [], color="gray", marker=marker, label=kind)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("input channels (NHWC layers outlined, nudged right)")
    ax.set_ylabel("output pixels (h x w)")
    ax.set_title(f"conv2d: fastest algorithm per layer ({len(won.get('conv2d', []))} layers)")
    ax.legend(fontsize=7, ncol=2)
    ax = axes[1]
    for _, key, algorithm in won.get("linear", []):
        out_f, in_f = key["params"]["weights"]["weight"][:2]
        ax.scatter(in_f, out_f, color=colour[algorithm], s=50, label=algorithm)
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles))
    if unique:
        ax.legend(unique.values(), unique.keys(), fontsize=7)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("in features")
    ax.set_ylabel("out features")
    ax.set_title(f"linear: fastest algorithm ({len(won.get('linear', []))} layers)")
    ax = axes[2]
    ops = [op for op in ("conv2d", "linear") if won.get(op)]
    bottom = [0] * len(ops)
    for a in algorithms:
        counts = [sum(1 for _, _, w in won[op] if w == a) for op in ops]
        ax.bar(ops, counts, bottom=bottom, color=colour[a], label=a)
        bottom = [b + c for b, c in zip(bottom, counts)]
    ax.set_ylabel("layers won")
    ax.set_title("wins per algorithm")
    ax.legend(fontsize=7)
    models = sorted({r["model"] for r in rows})
    fig.suptitle(f"ai3 sweep: {', '.join(models)}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


# ---- The command line --------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m ai3 sweep", description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--model",
        action="append",
        required=True,
        help="a model (repeatable): torchvision name, keras:<name>, .onnx/.pt2/.keras file, module:function",
    )
    p.add_argument("--batch", type=int, action="append", help="batch sizes (repeatable; default 1)")
    p.add_argument("--size", type=int, action="append", help="input heights/widths (repeatable; default 224)")
    p.add_argument("--dtype", action="append", help="dtypes (repeatable; default float32)")
    p.add_argument("--input-shape", help="one full input shape for every model, e.g. 1,3,224,224")
    p.add_argument("--dataset", default="ai3_sweep.csv", help="the dataset CSV (appended to; default ai3_sweep.csv)")
    p.add_argument("--png", help="write the summary chart here")
    p.add_argument("--address", help="an existing Ray cluster (default: a local Ray started here)")
    p.add_argument("--workers", type=int, help="timing workers (default: one)")
    p.add_argument("--cores-per-worker", type=int, help="cores each worker is pinned to (default: all / workers)")
    p.add_argument(
        "--reps",
        type=int,
        default=1,
        help="independent 'auto' timings of each model (each with a fresh tuning cache), merged by median (default 1)",
    )
    p.add_argument(
        "--no-in-place",
        action="store_true",
        help="skip the in-place swaps' cache keys (ai3.plan's only: a later in-place 'auto' then times)",
    )
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    shape = None if not args.input_shape else [int(d) for d in args.input_shape.split(",")]
    start = time.perf_counter()
    summary = sweep(
        args.model,
        batches=args.batch or [1],
        sizes=args.size or [224],
        dtypes=args.dtype or ["float32"],
        input_shape=shape,
        dataset=args.dataset,
        png=args.png,
        address=args.address,
        workers=args.workers,
        cores_per_worker=args.cores_per_worker,
        reps=args.reps,
        in_place=not args.no_in_place,
    )
    load = os.getloadavg()[0]
    print(
        f"ai3 sweep: {summary['tasks']} tasks timed ({summary['skipped']} already in {args.dataset}), "
        f"{summary['rows']} rows written, {summary['merged']} cache entries merged, "
        f"{time.perf_counter() - start:.1f} s, load average {load:.1f}"
    )
    if args.png:
        print(f"wrote {args.png}")
    return 0


__all__ = [
    "DATASET_COLUMNS",
    "Task",
    "merge_results",
    "read_dataset",
    "run_task",
    "summary_png",
    "sweep",
    "tasks",
    "winners",
]
