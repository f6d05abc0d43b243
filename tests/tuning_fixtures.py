"""Fixtures the "auto", plan and explore tests share: a private tuning cache
per test (never ~/.cache) and a counter of the layers ai3.tuning times.

A test module takes them with `from tuning_fixtures import cache, counting`;
`cache` is autouse, so importing it is enough. `per_layer_convs` is for
tests of what "auto" picks per layer: see there."""

from __future__ import annotations

import pytest

from ai3 import layouts, tuning


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("AI3_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("AI3_NO_PROGRESS", "1")
    return tmp_path / "cache"


class CountingMeasure:
    """Wraps ai3.tuning.measure, counting calls; with `rank`, returns a fake
    time per algorithm instead of timing (lower wins)."""

    def __init__(self, rank=None):
        self.calls = 0
        self.algorithms: list[str] = []
        self.rank = rank
        self.real = tuning.measure

    def __call__(self, layer, x, best=None):
        self.calls += 1
        algorithm = getattr(layer, "algorithm", None)
        self.algorithms.append(algorithm)
        if self.rank is None:
            return self.real(layer, x, best)
        layer(x)  # it must still run
        return self.rank(algorithm), 1, False


@pytest.fixture
def counting(monkeypatch):
    counter = CountingMeasure()
    monkeypatch.setattr(tuning, "measure", counter)
    return counter


@pytest.fixture
def per_layer_convs(monkeypatch):
    """The whole-model timing of "auto" (ai3.layouts.fastest) keeps the
    per-layer answers for conv2d over the "default" algorithms' build: the
    latter's times are made infinite, the layout plans' still measured.
    For tests of the per-layer choice, which the whole-model timing would
    otherwise override wherever "default" happened to run the model faster."""
    real = layouts.time_alternately

    def per_layer_wins(calls, *args, **kwargs):
        seconds = real(calls, *args, **kwargs)
        return {label: float("inf") if layouts.parse_candidate(label)[1] else s for label, s in seconds.items()}

    monkeypatch.setattr(layouts, "time_alternately", per_layer_wins)
