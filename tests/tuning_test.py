"""Measured selection ("auto") and its disk cache (ai3.tuning).

No timing goes into an assertion: where a test needs a particular winner it
replaces ai3.tuning.measure with a fake that ranks algorithms by name, and
elsewhere it checks only what "auto" may pick (an applicable algorithm) and
that the swapped model still computes what PyTorch does. Every test uses a
temporary cache folder (AI3_CACHE_DIR), never ~/.cache.
"""

from __future__ import annotations

import copy
import json
import threading

import numpy as np
import pytest
import pytest_main
import torch
from torch import nn
from tuning_fixtures import CountingMeasure, cache, counting, per_layer_convs  # noqa: F401 (fixtures)

import ai3
from ai3 import tuning

SHAPE = (1, 3, 12, 12)


def small_cnn() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(8, 8, 3, stride=2, padding=1),  # winograd cannot take stride 2
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(8 * 6 * 6, 5),
    ).eval()


def assert_matches_torch(swapped, net, shape=SHAPE):
    x = torch.randn(shape)
    with torch.no_grad():
        expected = net(x)
        got = swapped(x)
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4)


def conv_modules(net):
    return [m for m in net.modules() if type(m) is nn.Conv2d]


def test_auto_swap_backend_picks_applicable_and_matches_torch(counting):
    net = small_cnn()
    model = ai3.swap_backend(net, {"conv2d": "auto", "linear": "auto"}, SHAPE)
    chosen = model.algorithms("conv2d")
    assert len(chosen) == 2
    for conv, algorithm in zip(conv_modules(net), chosen):
        assert ai3.torch.applicable(conv, algorithm), algorithm
    assert chosen[1] != "winograd"
    assert model.algorithms("linear")[0] in ai3.algorithms()["linear"]
    assert counting.calls > 0
    # Only algorithms that could be built were timed.
    assert "custom" not in counting.algorithms or ai3.torch.applicable(conv_modules(net)[0], "custom")
    assert_matches_torch(model, net)


def test_auto_takes_the_fastest_applicable(monkeypatch, per_layer_convs):
    # winograd "wins" wherever it can run; stride 2 must fall back to the next.
    order = ["winograd", "kn2row", "smm", "gemm", "implicit gemm", "direct", "guess", "custom"]
    monkeypatch.setattr(tuning, "measure", CountingMeasure(rank=lambda a: 1.0 + order.index(a)))
    net = small_cnn()
    model = ai3.swap_backend(net, "auto", SHAPE)
    assert model.algorithms("conv2d") == ["winograd", "kn2row"]
    assert_matches_torch(model, net)


def test_auto_in_place_swap_matches_torch(counting):
    net = small_cnn()
    swapped = ai3.swap_conv2d(copy.deepcopy(net), "auto", SHAPE)
    # Each conv is an ai3 module running an applicable algorithm, or
    # PyTorch's own where that timed fastest ("torch" is a candidate here).
    chosen = dict((name, algorithm) for name, _, algorithm in ai3.torch.chosen_algorithms(swapped))
    for (name, m), original in zip(((n, m) for n, m in swapped.named_modules() if n in ("0", "2")), conv_modules(net)):
        if type(m) is nn.Conv2d:
            assert name not in chosen
        else:
            assert ai3.torch.applicable(original, chosen[name])
    assert chosen.get("2") != "winograd"
    assert counting.calls > 0
    assert_matches_torch(swapped, net)


def test_auto_in_place_keeps_torch_where_it_is_fastest(monkeypatch):
    counter = CountingMeasure(rank=lambda a: 0.5 if a == "torch" else 1.0)
    monkeypatch.setattr(tuning, "measure", counter)
    net = small_cnn()
    swapped = ai3.swap_conv2d(copy.deepcopy(net), "auto", SHAPE)
    assert ai3.torch.chosen_algorithms(swapped) == []  # both convs kept
    assert "torch" in counter.algorithms
    # swap_backend runs every layer in ai3: "torch" is no candidate there.
    counter.algorithms.clear()
    ai3.swap_backend(net, "auto", SHAPE)
    assert "torch" not in counter.algorithms


def test_callable_selector_may_answer_auto(counting):
    net = small_cnn()
    model = ai3.swap_backend(net, lambda conv: "auto" if conv.stride == (1, 1) else "direct", SHAPE)
    assert model.algorithms("conv2d")[1] == "direct"
    assert_matches_torch(model, net)


def test_auto_needs_the_input_shape():
    net = small_cnn()
    with pytest.raises(ai3.InvalidSelector, match="sample_input_shape"):
        ai3.swap_conv2d(copy.deepcopy(net), "auto")
    with pytest.raises(ai3.InvalidSelector, match="sample_input_shape"):
        ai3.swap_backend(net, "auto")


def test_cache_round_trips_without_timing(counting, cache):
    net = small_cnn()
    first = ai3.swap_backend(net, "auto", SHAPE).algorithms("conv2d")
    timed = counting.calls
    assert timed > 0
    files = list(cache.rglob("conv2d/*.json"))
    # One per conv layer and layout it was timed in ("auto" times the convs
    # again in NHWC for the layout plan that moves them there), and one for
    # the model's two whole-model choices: its layout plan and graph fusion
    # on or off (both stored under op "layout_plan", the fusion one marked).
    keys = [json.loads(f.read_text())["key"] for f in files]
    timed_layouts = {k["layout"] for k in keys}
    assert len(files) == 2 * len(timed_layouts)
    whole_model = [json.loads(f.read_text())["key"] for f in cache.rglob("layout_plan/*.json")]
    assert sorted(k["params"].get("choice", "layout") for k in whole_model) == ["graph_fusion", "layout"]
    key = keys[0]
    assert key["op"] == "conv2d" and key["dtype"] == "float32" and key["device"] == "cpu"
    second = ai3.swap_backend(net, "auto", SHAPE).algorithms("conv2d")
    assert counting.calls == timed  # all from the cache
    assert second == first


def test_cache_is_keyed_by_shape(counting):
    net = small_cnn()
    ai3.swap_backend(net, "auto", SHAPE)
    after_first = counting.calls
    ai3.swap_backend(net, "auto", (2, 3, 12, 12))  # another batch: tuned again
    after_second = counting.calls
    assert after_second > after_first
    ai3.swap_backend(net, "auto", (2, 3, 12, 12))
    assert counting.calls == after_second


def test_in_place_and_backend_keys_differ(counting):
    # swap_conv2d times the torch module, swap_backend the core layer.
    net = small_cnn()
    ai3.swap_backend(net, "auto", SHAPE)
    calls = counting.calls
    ai3.swap_conv2d(copy.deepcopy(net), "auto", SHAPE)
    assert counting.calls > calls


def test_corrupt_cache_file_warns_and_is_rebuilt(counting, cache):
    net = small_cnn()
    ai3.swap_backend(net, "auto", SHAPE)
    # Every file, the layout plan's included: which per-layer entries a
    # second call reads depends on the plan the first one measured (with
    # "convs, conv2d default" it reads none), and one file corrupted alone
    # made the test depend on that timing.
    files = sorted(cache.rglob("*.json"))
    for path in files:
        path.write_text("{ not json")
    calls = counting.calls
    with pytest.warns(RuntimeWarning, match="ignoring the tuning cache file"):
        ai3.swap_backend(net, "auto", SHAPE)
    assert counting.calls > calls
    for path in files:
        assert json.loads(path.read_text())["format"] == tuning.CACHE_FORMAT, path


def test_stale_cache_file_warns_and_is_rebuilt(counting, cache):
    net = small_cnn()
    ai3.swap_backend(net, "auto", SHAPE)
    # Every per-layer entry, with the layout plan's removed so that the
    # second call decides the plan again and reads them: a plan of
    # "convs, conv2d default" reads none (see the test above).
    layers = sorted(cache.rglob("conv2d/*.json"))
    for path in layers:
        data = json.loads(path.read_text())
        data["result"]["choice"] = "an algorithm this build lacks"
        path.write_text(json.dumps(data))
    for path in cache.rglob("layout_plan/*.json"):
        path.unlink()
    with pytest.warns(RuntimeWarning, match="not an algorithm of this build"):
        ai3.swap_backend(net, "auto", SHAPE)
    for path in layers:
        assert json.loads(path.read_text())["result"]["choice"] in ai3.algorithms()["conv2d"], path


def test_empty_cache_dir_turns_the_cache_off(counting, monkeypatch, cache):
    monkeypatch.setenv("AI3_CACHE_DIR", "")
    net = small_cnn()
    ai3.swap_backend(net, "auto", SHAPE)
    calls = counting.calls
    ai3.swap_backend(net, "auto", SHAPE)
    # Timed afresh (how many rounds depends on the times: a close
    # runner-up is re-checked).
    assert counting.calls > calls
    assert not cache.exists()


def test_concurrent_writers_leave_a_whole_file(cache):
    key = {
        "op": "conv2d",
        "params": {},
        "input_shape": [1],
        "dtype": "float32",
        "layout": "NCHW",
        "device": "cpu",
        "via": "core",
    }
    results = [
        tuning.TuneResult(a, [tuning.Measurement(a, 0.001 * i, 3)]) for i, a in enumerate(ai3.algorithms()["conv2d"])
    ]

    def write(result):
        for _ in range(20):
            tuning.cache_store(key, result)

    threads = [threading.Thread(target=write, args=(r,)) for r in results]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    loaded = tuning.cache_load(key, ai3.algorithms()["conv2d"])
    assert loaded is not None and loaded.choice in ai3.algorithms()["conv2d"]
    assert [p.name for p in cache.rglob("*") if p.is_file()] == [p.name for p in cache.rglob("*.json")]
    assert not list(cache.rglob(".tmp-*"))


def test_tune_reports_why_an_algorithm_was_skipped(counting):
    weight = np.random.default_rng(0).standard_normal((4, 3, 3, 3)).astype(np.float32)
    t = tuning.Tunable(
        op="conv2d",
        name="strided",
        make_layer=lambda a: ai3.layers.Conv2d(weight, None, stride=2, padding=1, algorithm=a, name="strided"),
        params={"stride": 2},
        input_shape=(1, 3, 9, 9),
    )
    result = tuning.tune(t)
    notes = {m.algorithm: m for m in result.measurements}
    assert notes["winograd"].note.startswith(tuning.NOT_APPLICABLE)
    assert not notes["winograd"].timed
    assert result.choice in [m.algorithm for m in result.measurements if m.timed]


def _strided_tunable() -> tuning.Tunable:
    weight = np.random.default_rng(0).standard_normal((4, 3, 3, 3)).astype(np.float32)
    return tuning.Tunable(
        op="conv2d",
        name="strided",
        make_layer=lambda a: ai3.layers.Conv2d(weight, None, stride=2, padding=1, algorithm=a, name="strided"),
        params={"stride": 2},
        input_shape=(1, 3, 9, 9),
    )


class BurstyTimer:
    """A fake ai3.tuning.measure: a fixed time per algorithm (`times`,
    others 10 s), except that the calls whose index is in `bursts` come
    back `factor` times slower, as when another process takes the cores."""

    def __init__(self, times, bursts, factor=5.0):
        self.times, self.bursts, self.factor = times, set(bursts), factor
        self.log: list[str] = []

    def __call__(self, layer, x, best=None):
        layer(x)
        self.log.append(layer.algorithm)
        seconds = self.times.get(layer.algorithm, 10.0)
        return seconds * (self.factor if len(self.log) - 1 in self.bursts else 1.0), 1, False


def test_a_burst_of_load_on_one_candidate_does_not_decide(monkeypatch):
    # The fastest algorithm's first timing falls in a burst: timed once in
    # a row, it would lose to the runner-up; in interleaved rounds the
    # median of its rounds is its quiet time.
    timer = BurstyTimer({"direct": 1.0, "gemm": 1.2}, bursts=[0])
    monkeypatch.setattr(tuning, "measure", timer)
    t = _strided_tunable()
    t.make_layer("direct")  # applicable
    result = tuning.tune(t)
    assert result.choice == "direct"
    timed = {m.algorithm: m for m in result.measurements if m.timed}
    assert timed["direct"].seconds == 1.0
    # Every candidate ran in every round, in a rotated order.
    assert all(timer.log.count(a) >= tuning.ROUNDS for a in timed)
    assert timer.log[0] != timer.log[len(timed)]


def test_a_close_runner_up_is_timed_again(monkeypatch):
    timer = BurstyTimer({"direct": 1.0, "gemm": 1.05}, bursts=[])
    monkeypatch.setattr(tuning, "measure", timer)
    result = tuning.tune(_strided_tunable())
    assert result.choice == "direct"
    others = [a for a in set(timer.log) if a not in ("direct", "gemm")]
    assert timer.log.count("direct") == timer.log.count("gemm") == tuning.ROUNDS + tuning.RECHECK_ROUNDS
    assert all(timer.log.count(a) == tuning.ROUNDS for a in others)


class ProjectedAttention(nn.Module):
    """Attention over three projections of one input: a layer of three
    inputs, q, k and v (v narrower), as exported transformers have."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.q, self.k, self.v = nn.Linear(32, 32), nn.Linear(32, 32), nn.Linear(32, 24)

    def forward(self, x):
        return nn.functional.scaled_dot_product_attention(self.q(x), self.k(x), self.v(x))


def test_auto_times_a_layer_of_several_inputs_and_plans_it(counting, cache, tmp_path):
    model = ProjectedAttention().eval()
    shape = (2, 4, 16, 32)
    x = torch.randn(shape)
    built = ai3.swap_backend(model, {"attention": "auto"}, sample_input_shape=shape)
    timed = {a for a in counting.algorithms if a in ai3.algorithms()["attention"]}
    assert timed == set(ai3.algorithms()["attention"])  # every one, on q, k and v of their own shapes
    np.testing.assert_allclose(built(x.numpy()), model(x).detach().numpy(), rtol=1e-5, atol=1e-5)
    entries = [p for p in cache.rglob("*.json") if p.parent.name == "attention"]
    assert len(entries) == 1
    key = json.loads(entries[0].read_text())["key"]
    assert key["params"]["input_shapes"] == [[2, 4, 16, 32], [2, 4, 16, 32], [2, 4, 16, 24]]
    plan = ai3.plan(model, shape, {"attention": "auto"})
    [(name, choice)] = [(n, c) for n, _, c in plan.choices("attention")]
    assert name == "scaled_dot_product_attention" and choice in timed
    plan.save(tmp_path / "a.json")
    calls = counting.calls
    again = ai3.swap_backend(model, ai3.Plan.load(tmp_path / "a.json"), sample_input_shape=shape)
    assert counting.calls == calls
    assert [(op, a) for _, op, a in again.layers() if op == "attention"] == [("attention", choice)]


if __name__ == "__main__":
    pytest_main.run(__file__)
