"""Measured selection ("auto") and its disk cache.

For one layer, `tune` builds the layer with every algorithm of its op that
this build offers, drops those the core refuses (AlgorithmNotApplicable, or
an error on the layer's real input shape), times the rest on a random input
of the layer's input shape and dtype, and keeps the fastest. Timing is in
ROUNDS interleaved rounds: each round times every candidate still in the
race once (`measure`: one untimed warm-up call, which allocates the
workspace and lets a math library JIT its kernels, then repeated calls
whose median is the round's time), in an order rotated from round to round,
and a candidate's time is the median of its rounds. A burst of load from
another process then falls on one round of each candidate rather than on
all of one candidate's samples, which on a shared machine made "auto" keep
whichever algorithm ran in a quiet moment (resnet18's 7x7 and 14x14 3x3
convs picked kn2row or gemm, 2-3x slower than guess in the model). When the
runner-up ends within RECHECK_MARGIN of the winner, the two are timed
against each other for RECHECK_ROUNDS more rounds before the choice is
made. Tuning time is bounded: each round gives an algorithm about
TARGET_SECONDS of repetitions (at least MIN_REPS, at most MAX_REPS), and an
algorithm whose first timed call is SLOW_FACTOR times slower than the best
so far is not timed further (it cannot win; its samples are kept, marked).

What a candidate is timed as is the frontend's to say (`Tunable.make_layer`):
ai3.Model's layers are built from the spec as the model will run it, so a
convolution the layout pass moves to NHWC, with the activation fused into
it, is timed again in that form (ai3.layouts).

Results are cached on disk, one small JSON file per tuned layer, under

    $AI3_CACHE_DIR                        if set (an empty value: no cache)
    $XDG_CACHE_HOME/ai3/tuning            else, if XDG_CACHE_HOME is set
    ~/.cache/ai3/tuning                   else

in a folder per build (a hash of ai3._core's file, ai3's version and the
list of algorithms: a rebuilt core, e.g. with a new custom algorithm, tunes
afresh), and a file per key: the op, the layer's parameters (attributes and
weight shapes, never weight values), the input shape, dtype, layout, device
and how the layer is run (the core directly, or a framework's swapped
layer). A changed shape is another key, so it is tuned again. A file that
does not parse, or whose content does not match its key or this build, is
ignored with a warning and rewritten. Files are written to a temporary file
in the same folder and renamed into place (os.replace), so concurrent
processes never see half a file; two processes tuning the same layer at
once both write a complete answer.

A progress bar (rich) shows on stderr while layers are timed, unless stderr
is not a terminal or AI3_NO_PROGRESS is set to a non-empty value other than
"0".
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ai3 import _core, errors

ENV_CACHE_DIR = "AI3_CACHE_DIR"
ENV_NO_PROGRESS = "AI3_NO_PROGRESS"
CACHE_FORMAT = 1

WARMUP_CALLS = 1
MIN_REPS = 3
MAX_REPS = 10
ROUNDS = 3  # interleaved rounds per candidate (see the module doc)
TARGET_SECONDS = 0.04  # of timed repetitions per algorithm and round
SLOW_FACTOR = 3.0  # a first sample this many times the best: stop timing it
RECHECK_MARGIN = 0.15  # a runner-up within 15% of the winner is timed again
RECHECK_ROUNDS = 2  # ... against the winner alone, this many more rounds

# Notes on measurements that are not a plain median.
NOT_APPLICABLE = "not applicable"
FAILED = "failed"
STOPPED_EARLY = "stopped early"


@dataclass
class Measurement:
    """One algorithm's outcome on one layer."""

    algorithm: str
    seconds: float | None = None  # median of the timed calls; None if not run
    samples: int = 0
    note: str = ""  # "", STOPPED_EARLY, or NOT_APPLICABLE/FAILED + ": why"
    workspace_bytes: int | None = None  # when the core reports it

    @property
    def timed(self) -> bool:
        return self.seconds is not None


@dataclass
class TuneResult:
    """What tuning one layer found: the choice and every measurement."""

    choice: str
    measurements: list[Measurement] = field(default_factory=list)
    cached: bool = False
    # A whole-model choice's algorithm per layer of one op, where the choice
    # is such a list (ai3.layouts.IN_MODEL's convs); else None.
    selection: list[str] | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"choice": self.choice, "measurements": [asdict(m) for m in self.measurements]}
        if self.selection is not None:
            data["selection"] = list(self.selection)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any], cached: bool = False) -> TuneResult:
        selection = data.get("selection")
        if selection is not None and not (isinstance(selection, list) and all(isinstance(a, str) for a in selection)):
            raise ValueError(f"its selection {selection!r} is not a list of algorithm names")
        return cls(
            choice=str(data["choice"]),
            measurements=[Measurement(**m) for m in data["measurements"]],
            cached=cached,
            selection=selection,
        )


# ---- What a layer to tune looks like ----------------------------------------


@dataclass
class Tunable:
    """What `tune` needs of a layer. `make_layer(algorithm)` returns
    something callable on a NumPy array of `input_shape` and `dtype` that
    runs the layer with that algorithm (raising ai3 errors when it cannot),
    optionally with an `algorithm` attribute ("default" resolved).
    `params` describes the layer for the cache key (JSON-able: attributes
    and weight shapes); `via` says what runs it ("core", "torch", "keras")."""

    op: str
    name: str
    make_layer: Callable[[str], Any]
    params: dict[str, Any]
    input_shape: tuple[int, ...]
    dtype: str = "float32"
    layout: str = "NCHW"
    device: str = "cpu"
    via: str = "core"
    # Choices besides the core's algorithms that make_layer also builds,
    # e.g. ("torch",): PyTorch's own layer, which an in-place swap may keep.
    extra: tuple[str, ...] = ()


def jsonable(value: Any) -> Any:
    """`value` with tuples, NumPy scalars and arrays turned into JSON types
    (arrays by shape: a cache key never holds weight values)."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return {"shape": list(value.shape), "dtype": value.dtype.name}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)  # JSON has no inf/nan
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)


def cache_key(t: Tunable) -> dict[str, Any]:
    return jsonable(
        {
            "op": t.op,
            "params": t.params,
            "input_shape": list(t.input_shape),
            "dtype": t.dtype,
            "layout": t.layout,
            "device": t.device,
            "via": t.via,
            "extra": list(t.extra),
        }
    )


# ---- The build and the cache ---------------------------------------------------

_BUILD_ID: str | None = None


def build_id() -> str:
    """A short hash of this build: the core's file, ai3's version and the
    (op, algorithm, device) list."""
    global _BUILD_ID
    if _BUILD_ID is None:
        import ai3

        h = hashlib.sha256()
        core_file = getattr(_core, "__file__", None)
        if core_file and os.path.exists(core_file):
            with open(core_file, "rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
        h.update(str(getattr(ai3, "__version__", "")).encode())
        h.update(json.dumps(sorted(_core.algorithms())).encode())
        _BUILD_ID = h.hexdigest()[:16]
    return _BUILD_ID


def cache_dir() -> Path | None:
    """Where tuning results live (see the module doc); None when caching is
    off (AI3_CACHE_DIR set to an empty string)."""
    value = os.environ.get(ENV_CACHE_DIR)
    if value is not None:
        return Path(value).expanduser() if value else None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "ai3" / "tuning"


def _key_path(key: dict[str, Any]) -> Path | None:
    root = cache_dir()
    if root is None:
        return None
    return root / build_id() / key["op"] / f"{key_digest(key)}.json"


# Who is told of every answer the cache gives or takes (see `observe`).
_OBSERVERS: list[Callable[[dict[str, Any], TuneResult, str], None]] = []


@contextlib.contextmanager
def observe() -> Iterator[list[tuple[dict[str, Any], TuneResult, str]]]:
    """Collects, while open, every (key, result, layer name) the tuning cache answers
    (a hit) or is given (a layer or a layout plan just timed, also when
    caching is off): what ai3.sweep turns into dataset rows and merges into
    the cache of the process that started the sweep."""
    seen: list[tuple[dict[str, Any], TuneResult, str]] = []

    def note(key: dict[str, Any], result: TuneResult, name: str) -> None:
        seen.append((key, result, name))

    _OBSERVERS.append(note)
    try:
        yield seen
    finally:
        _OBSERVERS.remove(note)


def _notify(key: dict[str, Any], result: TuneResult, name: str) -> None:
    for note in _OBSERVERS:
        note(key, result, name)


def key_digest(key: dict[str, Any]) -> str:
    """The short hash naming a key's cache file."""
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:32]


def cache_load(key: dict[str, Any], known: Sequence[str], name: str = "") -> TuneResult | None:
    """The cached result for `key`, or None (absent; or corrupt or stale,
    with a warning, so the caller re-tunes and overwrites it). `name`: the
    layer's, for observers."""
    result = _cache_read(key, known)
    if result is not None:
        _notify(key, result, name)
    return result


def _cache_read(key: dict[str, Any], known: Sequence[str]) -> TuneResult | None:
    path = _key_path(key)
    if path is None or not path.exists():
        return None
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        if not isinstance(data, dict) or data.get("format") != CACHE_FORMAT:
            raise ValueError(
                f"format {data.get('format') if isinstance(data, dict) else None!r}, expected {CACHE_FORMAT}"
            )
        if data.get("build") != build_id() or data.get("key") != key:
            raise ValueError("written for another build or layer")
        result = TuneResult.from_json(data["result"], cached=True)
        if result.choice not in known:
            raise ValueError(f"its choice {result.choice!r} is not an algorithm of this build")
    except (OSError, ValueError, KeyError, TypeError) as e:
        warnings.warn(
            f"ai3: ignoring the tuning cache file {path} ({type(e).__name__}: {e}); tuning this layer again",
            RuntimeWarning,
            stacklevel=2,
        )
        return None
    return result


def cache_store(key: dict[str, Any], result: TuneResult, name: str = "") -> None:
    """Writes `result` atomically (temporary file + os.replace). A cache
    that cannot be written is a warning, not an error: tuning still worked."""
    _notify(key, result, name)
    path = _key_path(key)
    if path is None:
        return
    data = {"format": CACHE_FORMAT, "build": build_id(), "key": key, "result": result.to_json()}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(data, f, indent=1)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError as e:
        warnings.warn(f"ai3: could not write the tuning cache {path}: {e}", RuntimeWarning, stacklevel=2)


# ---- Timing -------------------------------------------------------------------


def measure(layer: Callable[[Any], Any], x: Any, best: float | None = None) -> tuple[float, int, bool]:
    """Times `layer(x)`: warm-up, then repetitions; returns (median seconds,
    samples, stopped early). The one place ai3 times a layer; `best` is the
    fastest time so far, for cutting a clearly slower algorithm short."""

    def run() -> None:
        layer(x)

    for _ in range(WARMUP_CALLS):
        run()
    samples: list[float] = []
    start = time.perf_counter()
    run()
    samples.append(time.perf_counter() - start)
    if best is not None and samples[0] > SLOW_FACTOR * best:
        # One more sample before giving up on it: a single slow call may be
        # another process taking the core, not the algorithm.
        start = time.perf_counter()
        run()
        samples.append(time.perf_counter() - start)
        if min(samples) > SLOW_FACTOR * best:
            return min(samples), len(samples), True
    reps = int(min(MAX_REPS, max(MIN_REPS, TARGET_SECONDS / max(samples[0], 1e-9))))
    for _ in range(reps - 1):
        start = time.perf_counter()
        run()
        samples.append(time.perf_counter() - start)
    return float(np.median(samples)), len(samples), False


def random_input(shape: Sequence[int], dtype: str) -> np.ndarray:
    # Fixed seed: every algorithm (and every run) sees the same data.
    rng = np.random.default_rng(0)
    return rng.standard_normal(tuple(shape), dtype=np.float64).astype(dtype)


def _workspace(layer: Any, t: Tunable) -> int | None:
    """The layer's workspace bytes for its input, where the core tells."""
    core = getattr(layer, "_core_layer", layer)
    query = getattr(core, "workspace_bytes", None)
    if query is None:
        return None
    try:
        return int(query(list(t.input_shape), t.dtype))
    except errors.Error:
        return None


def known_algorithms(op: str, device: str = "cpu") -> list[str]:
    return [name for o, name, dev in _core.algorithms() if o == op and dev == device]


def _on_device(device: str) -> tuple[Callable[[], Any], Callable[..., Any], Callable[..., tuple[float, int, bool]]]:
    """How to build, feed and time candidates on `device`: (a context the
    layers are built in, a fixed-seed input maker, the timer). On a GPU the
    layers are prepared there and timed with CUDA events (ai3.cuda_timing),
    since wall-clock time would only see the kernel launches."""
    if device == "cpu":
        return contextlib.nullcontext, random_input, measure
    from ai3 import cuda, cuda_timing

    return (
        lambda: cuda.layer_device(device),
        lambda shape, dtype: cuda_timing.random_input(shape, dtype, device),
        cuda_timing.measure,
    )


def tune(t: Tunable) -> TuneResult:
    """Times every applicable algorithm of `t.op` on `t` (no cache)."""
    known = known_algorithms(t.op, t.device) + list(t.extra)
    place, make_input, timer = _on_device(t.device)
    x = make_input(t.input_shape, t.dtype)
    layers: dict[str, Any] = {}
    measurements: dict[str, Measurement] = {}
    with place():
        for algorithm in known:
            try:
                layers[algorithm] = t.make_layer(algorithm)
            except errors.AlgorithmNotApplicable as e:
                measurements[algorithm] = Measurement(algorithm, note=f"{NOT_APPLICABLE}: {_reason(e)}")
            except errors.Error as e:  # e.g. a dtype only some algorithms take
                measurements[algorithm] = Measurement(algorithm, note=f"{FAILED}: {_reason(e)}")
        # The core's own pick first: it is usually fast, so the others can be
        # cut short against it.
        try:
            preferred = getattr(t.make_layer("default"), "algorithm", None)
        except errors.Error:
            preferred = None
    order = sorted(layers, key=lambda a: (a != preferred, known.index(a)))
    rounds: dict[str, list[float]] = {a: [] for a in order}  # each round's median
    samples: dict[str, int] = dict.fromkeys(order, 0)
    stopped: set[str] = set()
    failed: set[str] = set()

    def time_round(candidates: list[str], shift: int) -> None:
        k = shift % len(candidates) if candidates else 0
        for algorithm in candidates[k:] + candidates[:k]:
            # The best of the others: a candidate is never cut short
            # against its own earlier rounds, so the last one racing stays.
            live = [statistics.median(v) for a, v in rounds.items() if v and a not in stopped and a != algorithm]
            best = min(live) if live else None
            try:
                seconds, n, early = timer(layers[algorithm], x, best)
            except errors.Error as e:  # e.g. a shape this algorithm cannot run
                measurements[algorithm] = Measurement(algorithm, note=f"{FAILED}: {_reason(e)}")
                failed.add(algorithm)
                continue
            rounds[algorithm].append(seconds)
            samples[algorithm] += n
            if early:
                stopped.add(algorithm)

    def racing() -> list[str]:
        return [a for a in order if a not in stopped and a not in failed]

    for r in range(ROUNDS):
        time_round(racing(), r)
    ranked = sorted(racing(), key=lambda a: statistics.median(rounds[a]))
    if len(ranked) >= 2:
        first, second = ranked[:2]
        if statistics.median(rounds[second]) <= (1 + RECHECK_MARGIN) * statistics.median(rounds[first]):
            for r in range(RECHECK_ROUNDS):
                time_round([first, second], r)
    for algorithm in order:
        if algorithm in failed:
            continue
        note = STOPPED_EARLY if algorithm in stopped else ""
        seconds = statistics.median(rounds[algorithm])
        workspace = _workspace(layers[algorithm], t)
        measurements[algorithm] = Measurement(algorithm, seconds, samples[algorithm], note, workspace)
    layers.clear()  # free the packed weights
    timed = [m for m in measurements.values() if m.timed and m.note != STOPPED_EARLY]
    if not timed:
        reasons = "; ".join(f"{m.algorithm}: {m.note}" for m in measurements.values())
        raise errors.AlgorithmNotApplicable(
            f"{t.op} layer '{t.name}': 'auto' found no algorithm that runs this layer on input "
            f"{tuple(t.input_shape)} ({reasons})"
        )
    choice = min(timed, key=lambda m: m.seconds).algorithm
    return TuneResult(choice, [measurements[a] for a in known if a in measurements])


def _reason(e: Exception) -> str:
    return str(e).split("cannot take this layer: ", 1)[-1]


# ---- Many layers: the cache, the progress bar and the plan recorder -----------------


@dataclass
class Recording:
    """What a build saw, for ai3.plan, which passes one to swap_backend
    (`recorder=`) and from there to every selection: every layer tuned,
    (op, name, Tunable, TuneResult), and every selection made, (op, name,
    input shape, choice), including layers a later pass fuses away."""

    tuned: list = field(default_factory=list)
    selected: list = field(default_factory=list)
    # "predict"'s picks: (op, name, ai3.predict.Prediction, the TuneResult
    # the tuning cache has for the layer or None), for the plan to show
    # the predicted choice beside the measured one.
    predicted: list = field(default_factory=list)


def note_selection(
    op: str, names: Sequence[str], shapes: Sequence[tuple | None], chosen: Sequence[str], recorder: Recording | None
) -> None:
    if recorder is not None:
        recorder.selected.extend(zip([op] * len(names), names, shapes, chosen))


def _show_progress() -> bool:
    flag = os.environ.get(ENV_NO_PROGRESS, "")
    if flag and flag != "0":
        return False
    return bool(getattr(sys.stderr, "isatty", lambda: False)())


def tune_all(tunables: Sequence[Tunable], recorder: Recording | None = None) -> list[TuneResult]:
    """`tune` for each layer, from the disk cache where it has the answer,
    with a progress bar over the layers it times; `recorder` (ai3.plan's)
    keeps what was tuned."""
    results: list[TuneResult | None] = []
    todo: list[int] = []
    keys = [cache_key(t) for t in tunables]
    for i, (t, key) in enumerate(zip(tunables, keys)):
        cached = cache_load(key, known_algorithms(t.op, t.device) + list(t.extra), t.name)
        results.append(cached)
        if cached is None:
            todo.append(i)
    if todo:
        with _progress(len(todo)) as advance:
            for i in todo:
                t = tunables[i]
                advance(f"tuning {t.op} '{t.name}'")
                results[i] = tune(t)
                cache_store(keys[i], results[i], t.name)
    if recorder is not None:
        recorder.tuned.extend((t.op, t.name, t, r) for t, r in zip(tunables, results))
    return results  # type: ignore[return-value]


@contextlib.contextmanager
def _progress(total: int) -> Iterator[Callable[[str], None]]:
    if not _show_progress():
        yield lambda description: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("[bold]ai3 auto[/bold] {task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as progress:
        task = progress.add_task("", total=total)
        started = [False]

        def advance(description: str) -> None:
            if started[0]:
                progress.advance(task)
            started[0] = True
            progress.update(task, description=description)

        yield advance
        progress.advance(task)


__all__ = [
    "ENV_CACHE_DIR",
    "ENV_NO_PROGRESS",
    "Measurement",
    "TuneResult",
    "Tunable",
    "build_id",
    "cache_dir",
    "measure",
    "random_input",
    "tune",
    "tune_all",
]
