"""flash attention at sequence 8192 stays within a memory bound that the
materialised score matrix breaks.

At L = S = 8192 (B = H = 1, E = 64, float32) the (L, S) score matrix is
8192 * 8192 * 4 bytes = 256 MiB. Each algorithm runs once in a fresh
subprocess (ai3 only, no torch, so the process is small), which reports its
peak resident set (ru_maxrss) before and after the call, and the layer's own
workspace report. The C++ allocations are invisible to tracemalloc, hence
the process's peak RSS. Inputs and output are 2 MiB each, allocated before
the "before" reading.

  flash: peak RSS grows by less than BOUND (64 MiB) and its workspace (a
         transposed copy of k, 2 MiB, and a few blocks per thread) is under
         16 MiB;
  naive: its workspace is the 256 MiB matrix, and its peak RSS grows past
         BOUND (so the bound does measure what a score matrix costs).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest_main

SCORES = 8192 * 8192 * 4  # bytes of a materialised float32 score matrix
BOUND = 64 << 20

_SCRIPT = r"""
import json, resource, sys
import numpy as np
import ai3

algorithm = sys.argv[1]
n, e = 8192, 64
rng = np.random.default_rng(0)
q, k, v = (rng.standard_normal((1, 1, n, e), dtype=np.float32) for _ in range(3))
layer = ai3.layers.Attention(algorithm=algorithm)
small = [a[:, :, :64] for a in (q, k, v)]
layer(*small)  # threads, math-library state and the like, before measuring
out = np.empty((1, 1, n, e), np.float32)
out[:] = 0  # touch the output's pages now, so they count as "before"
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
y = layer(q, k, v)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({
    "before": before,
    "after": after,
    "workspace": layer.workspace_bytes([q.shape, k.shape, v.shape]),
    "finite": bool(np.isfinite(y).all()),
}))
"""


def run(algorithm: str) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    result = subprocess.run(
        [sys.executable, "-c", _SCRIPT, algorithm], env=env, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_flash_stays_within_bound():
    r = run("flash")
    grew = r["after"] - r["before"]
    assert r["finite"]
    assert r["workspace"] < 16 << 20, r
    assert grew < BOUND, f"flash's peak RSS grew by {grew / 2**20:.1f} MiB (bound {BOUND >> 20} MiB)"
    assert BOUND < SCORES


def test_naive_breaks_the_bound():
    r = run("naive")
    grew = r["after"] - r["before"]
    assert r["workspace"] == SCORES
    assert grew > BOUND, f"naive's peak RSS grew by only {grew / 2**20:.1f} MiB"


def test_chunked_is_bounded_by_its_chunk():
    r = run("chunked")
    assert r["workspace"] <= 8 << 20, r
    assert r["after"] - r["before"] < BOUND


if __name__ == "__main__":
    pytest_main.run(__file__)
