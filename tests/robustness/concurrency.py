"""What the thread-safety and long-run tests share: calling one model from
many threads at once, and reading the process's resident memory."""

from __future__ import annotations

import concurrent.futures
import gc
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

THREADS = 8
# A call taking longer than this is taken for a deadlock.
JOIN_TIMEOUT_S = 300.0


def as_numpy(value: Any) -> np.ndarray:
    if hasattr(value, "detach"):
        value = value.detach().numpy()
    return np.asarray(value)


def from_threads(call: Callable[[Any], Any], inputs: Sequence[Any], repeats: int = 3) -> list[tuple[int, np.ndarray]]:
    """THREADS threads, released at once, each call `call` on every input
    `repeats` times (each thread starting at another input); returns every
    (input index, output). Raises what a thread raised; fails on a thread
    still running after JOIN_TIMEOUT_S (a deadlock)."""
    barrier = threading.Barrier(THREADS)
    results: list[tuple[int, np.ndarray]] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def work(t: int) -> None:
        try:
            barrier.wait()
            for r in range(repeats * len(inputs)):
                index = (t + r) % len(inputs)
                out = as_numpy(call(inputs[index]))
                with lock:
                    results.append((index, out))
        except BaseException as e:  # reported in the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t,), daemon=True) for t in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(JOIN_TIMEOUT_S)
    stuck = [th for th in threads if th.is_alive()]
    assert not stuck, f"{len(stuck)} of {THREADS} threads still running after {JOIN_TIMEOUT_S} s: a deadlock"
    if errors:
        raise errors[0]
    assert len(results) == THREADS * repeats * len(inputs)
    return results


def assert_same_as_serial(call: Callable[[Any], Any], inputs: Sequence[Any]) -> None:
    """Results from THREADS threads at once, and from a thread pool, are
    identical (bit for bit) to serial calls on the same inputs."""
    serial = [as_numpy(call(x)) for x in inputs]
    for index, out in from_threads(call, list(inputs)):
        np.testing.assert_array_equal(out, serial[index])
    with concurrent.futures.ThreadPoolExecutor(max_workers=THREADS) as pool:
        pooled = list(pool.map(lambda x: as_numpy(call(x)), list(inputs) * 4, timeout=JOIN_TIMEOUT_S))
    for k, out in enumerate(pooled):
        np.testing.assert_array_equal(out, serial[k % len(inputs)])


def rss_mib() -> float:
    """The process's resident set size, MiB (from /proc, no dependency)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    raise RuntimeError("no VmRSS in /proc/self/status")


# How much the RSS may grow over a long run once warm: a leak of one
# input-sized array per call would show as tens of MiB over 1000 calls.
RSS_SLACK_MIB = 6.0


def assert_flat_rss(step: Callable[[], Any], count: int, warmup: int, what: str) -> None:
    """Runs `step` `warmup` times, then `count` times, and checks the RSS
    grew by at most RSS_SLACK_MIB over the counted runs."""
    for _ in range(warmup):
        step()
    gc.collect()
    before = rss_mib()
    for _ in range(count):
        step()
    gc.collect()
    grown = rss_mib() - before
    assert grown <= RSS_SLACK_MIB, f"{what}: RSS grew by {grown:.1f} MiB over {count} runs (bound {RSS_SLACK_MIB} MiB)"
