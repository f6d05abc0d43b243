"""Timing helpers shared by the benchmarks and the demo: warm up, repeat,
keep the median, so one slow run (a page fault, the other process) does not
decide a ratio."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any


def median_seconds(fn: Callable[[], object], repeats: int = 5, warmup: int = 1, budget_s: float = 10.0) -> float:
    """Median wall time of fn() over `repeats` runs after `warmup` runs.

    Stops early (with at least one timed run) once `budget_s` is spent, so a
    slow reference algorithm on a big shape cannot stall the whole table.
    """
    for _ in range(warmup):
        fn()
    times = []
    spent = 0.0
    for _ in range(max(1, repeats)):
        start = time.perf_counter()
        fn()
        elapsed = time.perf_counter() - start
        times.append(elapsed)
        spent += elapsed
        if spent > budget_s:
            break
    return statistics.median(times)


def best_seconds(fn: Callable[[], object], reps: int) -> float:
    """The fastest of `reps` runs after one warm-up: a ceiling is what the
    machine can do, so the best run, not the median, is kept."""
    fn()
    best = float("inf")
    for _ in range(max(1, reps)):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def sgemm_ceiling(size: int = 2048, reps: int = 5) -> list[list[str]]:
    """Rows (library, ms, GFLOP/s) of a square float32 GEMM of `size`
    through NumPy's BLAS, torch.mm and ai3's linear "gemm", in this process
    with this process's thread settings."""
    import numpy as np
    import torch

    import ai3

    rng = np.random.default_rng(0)
    a = rng.standard_normal((size, size), dtype=np.float32)
    b = rng.standard_normal((size, size), dtype=np.float32)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    # ai3's linear computes x @ weight.T: weight b.T gives a @ b.
    linear = ai3.layers.Linear(np.ascontiguousarray(b.T), algorithm="gemm", name="ceiling")
    flops = 2.0 * size**3
    rows = []
    with torch.inference_mode():
        for label, fn in (
            ("numpy matmul (its BLAS)", lambda: a @ b),
            ("torch.mm", lambda: torch.mm(ta, tb)),
            ("ai3 linear 'gemm'", lambda: linear(a)),
        ):
            s = best_seconds(fn, reps)
            rows.append([label, f"{s * 1e3:.2f}", f"{flops / s / 1e9:.1f}"])
    return rows


def ceiling_gflops(rows: list[list[str]]) -> float:
    """The ceiling: the fastest row of sgemm_ceiling's, in GFLOP/s."""
    return max(float(r[2]) for r in rows)


# Idle time before each block of alternating_seconds: ONNX Runtime's pool
# threads spin for a while after a run (its default), and took the two
# cores from whatever ran next. mobilenet_v3_large, 2-core EPYC: ai3 at
# 2.0x ORT in every round when its block came right after ORT's, 0.9-1.1x
# with this pause.
PAUSE_S = 0.1


def alternating_seconds(calls: dict[str, Callable[[], object]], repeats: int = 5, rounds: int = 4) -> dict[str, float]:
    """Seconds per call of each of `calls`, timed side by side with
    ai3.layouts.time_alternately (what "auto" times whole models with):
    `rounds` rounds, each side pausing PAUSE_S, one warm-up and a block of
    `repeats`; a side's time is the smallest of its blocks' medians. On the
    shared 2-core machines the load comes and goes over seconds (a whole
    model ran 8 ms in one block and 12 ms in the next) and only ever adds
    time, so one block per side, run one side after the other, let the load
    decide a ratio; the least disturbed of several blocks does not."""
    from ai3 import layouts

    return layouts.time_alternately(calls, rounds, repeats, warmup=1, pause_s=PAUSE_S)


def ort_options(threads: int) -> Any:
    """ONNX Runtime's session options as every bench runs it: `threads`
    threads inside an op, and the graph's nodes one at a time (as ai3
    runs them)."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    return so


def conv2d_flops(n: int, c: int, h: int, w: int, k: int, kh: int, kw: int, oh: int, ow: int, groups: int = 1) -> float:
    """Multiply-adds x 2 of a direct convolution of that shape."""
    return 2.0 * n * k * oh * ow * (c // groups) * kh * kw


def format_table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths))
    out = [line, "  ".join("-" * w for w in widths)]
    last = len(headers) - 1
    # Numbers right-aligned; the first (name) and last (note) columns left.
    out += [
        "  ".join(c.rjust(w) if 0 < i < last else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()
        for r in rows
    ]
    return "\n".join(out)


def met(value: float, limit: float, higher_is_better: bool = False) -> str:
    """The met/not-met cell of a target row: 'met' when value is on the
    right side of limit."""
    ok = value >= limit if higher_is_better else value <= limit
    return "met" if ok else "NOT met"


def results_dir(flag_value: str = "") -> str:
    """Where a bench writes its markdown table and PNG: the flag's folder, or
    bench/results/ of the source tree (`bazel run` sets
    BUILD_WORKSPACE_DIRECTORY to it), or next to this file."""
    import os

    if flag_value:
        path = flag_value
    elif os.environ.get("BUILD_WORKSPACE_DIRECTORY"):
        path = os.path.join(os.environ["BUILD_WORKSPACE_DIRECTORY"], "bench", "results")
    else:
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
    os.makedirs(path, exist_ok=True)
    return path


def markdown_table(headers: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(c.replace("|", "/") for c in r) + " |" for r in rows]
    return "\n".join(lines)


def machine_note() -> str:
    """One line naming the CPU and its load, so a table read later says what
    it was measured on (a loaded machine gives slower, noisier numbers)."""
    import os
    import platform

    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    # On a loaded machine OpenMP's default spin-waiting makes ai3 and
    # PyTorch eager tens of times slower (mobilenet_v2 measured 3 s instead
    # of 0.1 s at load 12): a table says which policy it ran under.
    policy = os.environ.get("OMP_WAIT_POLICY", "unset")
    return (
        f"{model}, {os.cpu_count()} CPUs, 1-min load average {load:.1f} at the end of the run, OMP_WAIT_POLICY {policy}"
    )


def write_markdown(
    path: str, title: str, sections: list[tuple[str, list[str], list[list[str]]]], notes: list[str]
) -> None:
    """Writes `# title`, then per section a heading and a table, then notes."""
    out = [f"# {title}", "", machine_note(), ""]
    for heading, headers, rows in sections:
        out += [f"## {heading}", "", markdown_table(headers, rows), ""]
    out += [f"- {n}" for n in notes]
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def bar_chart(
    path: str, title: str, groups: list[str], series: dict[str, list[float]], ylabel: str, log: bool = False
) -> None:
    """A grouped bar chart (one group per row, one bar per series) as a PNG,
    drawn with matplotlib's Agg backend (no display needed). NaN bars are
    left out."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    width = 0.8 / max(1, len(series))
    # Wide enough for the labels, capped: 13 models x 2 batches x 4 series
    # would otherwise make a 6000-pixel-wide PNG.
    fig, ax = plt.subplots(figsize=(min(24.0, max(6.0, 1.2 * len(groups) * max(1, len(series)) / 2)), 4.5))
    for k, (label, values) in enumerate(series.items()):
        xs = [i + (k - (len(series) - 1) / 2) * width for i in range(len(groups))]
        ax.bar(xs, values, width=width, label=label)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(ylabel)
    if log:
        ax.set_yscale("log")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def attempt(notes: list[str], what: str, fn: Callable[[], object]) -> object:
    """fn(), or None with a note naming the stage and the error, so a row
    one path cannot take (an op ai3 lacks, a failed export) still gets its
    other cells and says why in its note column."""
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 - every failure is reported in the row
        first = str(e).splitlines()[0][:90] if str(e) else ""
        notes.append(f"{what}: {type(e).__name__}: {first}")
        return None


def define_model_flags(models: list[str], models_help: str, batches: list[str], threads_help: str, stem: str) -> None:
    """The flags every whole-model bench takes (bench/models, onnx_models,
    keras_models), defined once: which models and batches, threads, timed
    runs, per-row profiles and where `stem`.md / .png / _profiles.md go."""
    from absl import flags

    flags.DEFINE_list("models", models, models_help)
    flags.DEFINE_list("batches", batches, "Batch sizes; each model runs at each.")
    flags.DEFINE_integer("threads", 2, threads_help)
    flags.DEFINE_integer("reps", 5, "Timed runs per block (median kept).")
    flags.DEFINE_alias("repeats", "reps")
    flags.DEFINE_integer(
        "rounds", 4, "Alternating rounds of one block per side (alternating_seconds); the fastest block kept."
    )
    flags.DEFINE_bool("profile", True, "Profile every row whose targets are not met.")
    flags.DEFINE_integer("profile_reps", 5, "Forward passes per profile.")
    flags.DEFINE_string("results_dir", "", f"Where to write {stem}.md / .png / _profiles.md (default: bench/results).")
