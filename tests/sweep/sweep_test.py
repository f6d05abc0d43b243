"""ai3.sweep on a local 2-worker Ray cluster over two small torchvision
models: the dataset's rows, the tuning cache they were merged into (a later
"auto" times nothing, in ai3.plan and in place), each worker on its own
core, two independent runs merged by median, resuming, the chart."""

from __future__ import annotations

import json
import os

import pytest
import pytest_main
import torchvision
from tuning_fixtures import cache, counting  # noqa: F401

import ai3
from ai3 import predict, sweep, tuning

MODELS = ("squeezenet1_1", "mobilenet_v3_small")
SIZE = 32


@pytest.fixture(scope="module")
def ray_cluster():
    import ray

    yield
    if ray.is_initialized():
        ray.shutdown()


def test_two_worker_sweep_fills_the_cache_and_the_dataset(tmp_path, cache, counting, ray_cluster):  # noqa: F811
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("a 2-worker sweep pins each worker to its own core: this machine has fewer than 2")
    dataset, png = tmp_path / "sweep.csv", tmp_path / "sweep.png"
    summary = sweep.sweep(
        MODELS, sizes=[SIZE], dataset=dataset, png=png, workers=2, cores_per_worker=1, reps=2, progress=False
    )
    assert summary["tasks"] == 2 and summary["skipped"] == 0 and summary["foreign"] == 0
    # Two workers, each pinned to one core, not the same one.
    assert sorted(map(tuple, summary["worker_cores"])) == [(0,), (1,)]
    rows = sweep.read_dataset(dataset)
    assert len(rows) == summary["rows"] > 0
    assert set(rows[0]) == set(sweep.DATASET_COLUMNS)
    assert {r["model"] for r in rows} == set(MODELS)
    assert {r["build"] for r in rows} == {tuning.build_id()}
    convs = [r for r in rows if r["op"] == "conv2d" and r["via"] == "core"]
    in_place = [r for r in rows if r["op"] == "conv2d" and r["via"] == "torch"]
    # Every conv layer: each algorithm of the build has a row (timed, or why not); in place, torch's own too.
    for layers, extra in ((convs, set()), (in_place, {"torch"})):
        for digest in {r["key_digest"] for r in layers}:
            algorithms = {r["algorithm"] for r in layers if r["key_digest"] == digest}
            assert algorithms == set(tuning.known_algorithms("conv2d")) | extra, digest
            assert sum(int(r["chosen"]) for r in layers if r["key_digest"] == digest) == 1
    timed = [r for r in convs if r["seconds"]]
    assert timed and all(float(r["seconds"]) > 0 for r in timed)
    # Two independent runs per layer (each fresh "auto"); the row's seconds is their median.
    for r in timed:
        runs = [s for s in json.loads(r["run_seconds"]) if s is not None]
        assert len(runs) == 2 and float(r["seconds"]) == pytest.approx(sum(runs) / 2)
    layers = predict.dataset_layers(rows)["conv2d"]
    assert all(len(next(iter(la.runs.values()))) == 2 for la in layers)
    assert {r["layout"] for r in convs} == {"NCHW", "NHWC"}  # the layout pass's choices are timed too
    assert any(r["op"] == "layout_plan" for r in rows)
    # Merged into this process's tuning cache, in its format and keys.
    for r in rows:
        path = cache / tuning.build_id() / r["op"] / f"{r['key_digest']}.json"
        data = json.loads(path.read_text())
        assert data["format"] == tuning.CACHE_FORMAT and tuning.key_digest(data["key"]) == r["key_digest"]
    # So "auto" afterwards is a cache hit: nothing is timed.
    for name in MODELS:
        model = torchvision.models.get_model(name, weights=None).eval()
        plan = ai3.plan(model, (1, 3, SIZE, SIZE), "auto")
        assert all(lp.cached for lp in plan.layers if lp.measurements), name
    # The in-place swaps' own keys (via torch) were swept too: in place, "auto" times nothing either.
    assert {r["via"] for r in rows} >= {"core", "torch"}
    for name in MODELS:
        model = torchvision.models.get_model(name, weights=None).eval()
        ai3.swap_conv2d(model, "auto", sample_input_shape=(1, 3, SIZE, SIZE))
    assert counting.calls == 0
    assert png.stat().st_size > 10_000
    # Resuming: the tasks already in the dataset are skipped.
    again = sweep.sweep(MODELS, sizes=[SIZE], dataset=dataset, workers=2, cores_per_worker=1, progress=False)
    assert again["tasks"] == 0 and again["skipped"] == 2
    assert len(sweep.read_dataset(dataset)) == len(rows)


def test_merging_independent_runs():
    def result(times: dict, stopped: tuple = ()):
        return tuning.TuneResult(
            min((a for a in times if a not in stopped), key=times.get),
            [tuning.Measurement(a, t, 3, tuning.STOPPED_EARLY if a in stopped else "") for a, t in times.items()]
            + [tuning.Measurement("winograd", note="not applicable: stride 2")],
        )

    # Run 2's direct was one slow sample: the median of three still lets direct win.
    runs = [
        result({"direct": 1.0, "gemm": 1.2}),
        result({"direct": 5.0, "gemm": 1.3}, stopped=("direct",)),
        result({"direct": 1.1, "gemm": 1.25}),
    ]
    merged, per_run = sweep.merge_results(runs)
    by = {m.algorithm: m for m in merged.measurements}
    assert merged.choice == "direct" and by["direct"].seconds == 1.1 and by["direct"].note == ""
    assert by["gemm"].seconds == 1.25 and by["winograd"].seconds is None and by["winograd"].note.startswith("not")
    assert per_run["direct"] == [1.0, 5.0, 1.1] and per_run["winograd"] == [None, None, None]
    only = result({"direct": 1.0})
    assert sweep.merge_results([only])[0] is only


def test_more_workers_than_cores_is_refused(tmp_path):
    n = len(os.sched_getaffinity(0))
    with pytest.raises(ai3.InvalidArgument, match="cores"):
        sweep.sweep(["squeezenet1_1"], dataset=tmp_path / "d.csv", workers=n + 1, cores_per_worker=1)


def test_no_models_is_refused(tmp_path):
    with pytest.raises(ai3.InvalidArgument, match="at least one model"):
        sweep.sweep([], dataset=tmp_path / "d.csv")


if __name__ == "__main__":
    pytest_main.run(__file__)
