"""The learned selector "predict" (ai3.predict): training both kinds on sweep
rows, the saved trees equal scikit-learn's, leave-one-model-out validation
and its scores, "predict" in swap_backend, the in-place torch swaps, ONNX
and plans, and its fallbacks (another machine or build, unsure, outside the
trained shapes, an algorithm that cannot take the layer)."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
import pytest_main
import torch
from predict_rows import synthetic_dataset as _dataset
from torch import nn
from tuning_fixtures import cache, counting, per_layer_convs  # noqa: F401

import ai3
from ai3 import predict, selection, sweep, tuning


@pytest.fixture
def selector_file(tmp_path, monkeypatch):
    path = tmp_path / "selector.json"
    predict.train(_dataset()).save(path)
    monkeypatch.setenv(predict.ENV_SELECTOR, str(path))
    return path


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(16, 16, 3, padding=1)  # 3x3: winograd
        self.b = nn.Conv2d(16, 32, 1)  # 1x1: gemm
        self.c = nn.Conv2d(32, 32, 3, stride=2, padding=1)  # 3x3 but stride 2: winograd cannot take it

    def forward(self, x):
        return self.c(self.b(self.a(x)))


SHAPE = (1, 16, 16, 16)


def _conv_features(c_in, c_out, k, size=16):
    return predict.features(
        "conv2d",
        {"stride": [1, 1], "padding": [k // 2] * 4, "groups": 1},
        {"weight": (c_out, c_in, k, k)},
        (1, c_in, size, size),
        "float32",
        "NCHW",
    )


@pytest.mark.parametrize("kind", ["regressor", "classifier", "auto"])
def test_trained_selector_learns_the_rule_and_round_trips(tmp_path, kind):
    selector = predict.train(_dataset(), kind=kind)
    assert selector.data["kind"] in predict.KINDS
    x3, x1 = _conv_features(20, 20, 3), _conv_features(20, 40, 1)
    assert selector.rank("conv2d", x3)[0][0] == "winograd"
    assert selector.rank("conv2d", x1)[0][0] == "gemm"
    selector.save(tmp_path / "s.json")
    loaded = predict.Selector.load(tmp_path / "s.json")
    assert loaded.rank("conv2d", x3) == pytest.approx(selector.rank("conv2d", x3))
    assert loaded.data["trained_on"] == ["m0", "m1"]
    assert loaded.machine == predict.machine()


def test_cross_validation_scores_each_kind():
    validation = predict.cross_validate(_dataset())
    assert validation["models"] == ["m0", "m1"]
    for kind in predict.KINDS:
        v = validation[kind]
        assert v["layers"] == 16 and v["clear_layers"] == 16  # every layer: the others 2x slower, no near tie
        assert 0.0 <= v["top1"] <= 1.0 and v["geomean"] >= 1.0 and 1.0 <= v["weighted"] <= 2.0
    # The regressor gets this rule from either half.
    assert validation["regressor"]["top1"] == 1.0 and validation["regressor"]["weighted"] == 1.0
    assert predict._pick_kind(validation) in predict.KINDS
    assert "cross_validation" in predict.train(_dataset()).data  # kind "auto" keeps the better one


def test_score_counts_near_ties_apart():
    tie = predict.Layer("conv2d", "a", np.zeros(3), {"gemm": 1.0, "direct": 1.02}, {}, {}, {"m"})
    clear = predict.Layer("conv2d", "b", np.zeros(3), {"gemm": 2.0, "direct": 1.0}, {}, {}, {"m"})
    s = predict.score([(tie, "direct"), (clear, "gemm")])
    assert s["top1"] == 0.0 and s["clear_layers"] == 1 and s["top1_clear"] == 0.0
    assert s["weighted"] == pytest.approx((1.02 + 2.0) / (1.0 + 1.0))
    assert s["geomean"] == pytest.approx((1.02 * 2.0) ** 0.5)


def test_a_layer_outside_the_trained_shapes_is_default(selector_file):
    selector = predict.current()
    assert selector.outside("conv2d", _conv_features(32, 32, 3)) is None
    assert "c_in" in selector.outside("conv2d", _conv_features(4096, 32, 3))
    choices = predict.choose(
        "conv2d",
        [
            selection.Candidate(
                "big",
                None,
                (1, 4096, 16, 16),
                None,
                {"attrs": {"stride": [1, 1], "padding": [1] * 4}, "weights": {"weight": (32, 4096, 3, 3)}},
            )
        ],
    )
    assert choices[0].choice == "default" and "outside" in choices[0].reason


def test_leaving_models_out():
    selector = predict.train(_dataset(), exclude_models=["m1"])
    assert selector.data["trained_on"] == ["m0"]
    assert selector.data["layers"]["conv2d"] == 8


def test_predict_in_swap_backend_and_plan(selector_file, per_layer_convs):
    net = Net().eval()
    model = ai3.swap_backend(net, {"conv2d": "predict"}, sample_input_shape=SHAPE)
    chosen = {name: algorithm for name, op, algorithm in model.layers() if op == "conv2d"}
    assert chosen["a"] == "winograd" and chosen["b"] == "gemm"
    # c: winograd is predicted but cannot take stride 2, so the runner-up runs it.
    assert chosen["c"] in ("direct", "gemm")
    x = torch.randn(SHAPE)
    with torch.no_grad():
        torch.testing.assert_close(model(x), net(x), rtol=1e-3, atol=1e-3)
    plan = ai3.plan(net, SHAPE, "predict")
    by_name = {lp.name: lp for lp in plan.layers if lp.op == "conv2d"}
    assert by_name["a"].predicted == "winograd" and by_name["a"].probability > 0.5
    assert by_name["a"].measured is None  # nothing timed yet
    assert by_name["c"].predicted == "winograd" and by_name["c"].choice != "winograd"
    assert "predicted (p)" in str(plan)


def test_predict_times_no_layer_and_chooses_the_plan_on_whole_passes(selector_file, counting):
    """Without the per_layer_convs pin: "predict" times no layer, but like
    "auto" builds the model under each layout plan (and with conv2d's
    "default" algorithms) and keeps the fastest whole forward pass; the
    plan still shows each layer's prediction."""
    net = Net().eval()
    model = ai3.swap_backend(net, {"conv2d": "predict"}, sample_input_shape=SHAPE)
    assert counting.calls == 0
    assert len(model.layout_decision.seconds) >= 2
    x = torch.randn(SHAPE)
    with torch.no_grad():
        torch.testing.assert_close(model(x), net(x), rtol=1e-3, atol=1e-3)
    plan = ai3.plan(net, SHAPE, "predict")
    assert all(lp.predicted is not None for lp in plan.layers if lp.op == "conv2d")
    assert counting.calls == 0


def test_plan_shows_the_measured_choice_beside_the_prediction(selector_file, counting):
    net = Net().eval()
    ai3.plan(net, SHAPE, {"conv2d": "auto"})  # fills the tuning cache
    timed = counting.calls
    predicted = ai3.plan(net, SHAPE, {"conv2d": "predict"})
    assert counting.calls == timed  # "predict" times nothing; the measurements come from the cache
    for lp in predicted.layers:
        if lp.op == "conv2d":
            # The layer's own cache entry (its key: parameters, shape, layout): "auto"'s fastest.
            fastest = min(
                (m for m in lp.measurements if m.timed and m.note != tuning.STOPPED_EARLY), key=lambda m: m.seconds
            )
            assert lp.measured == fastest.algorithm


def test_predict_in_place_torch(selector_file):
    net = Net().eval()
    x = torch.randn(SHAPE)
    with torch.no_grad():
        want = net(x)
    ai3.swap_conv2d(net, "predict", sample_input_shape=SHAPE)
    assert net.a.algorithm == "winograd" and net.b.algorithm == "gemm"
    with torch.no_grad():
        torch.testing.assert_close(net(x), want, rtol=1e-3, atol=1e-3)


def test_predict_onnx(selector_file, per_layer_convs, tmp_path):
    net = Net().eval()
    path = tmp_path / "net.onnx"
    torch.onnx.export(net, (torch.zeros(SHAPE),), str(path), dynamo=False)
    model = ai3.onnx.swap_backend(str(path), {"conv2d": "predict"}, sample_input_shape=SHAPE)
    algorithms = sorted(a for _, op, a in model.layers() if op == "conv2d")
    assert "winograd" in algorithms and "gemm" in algorithms


@pytest.mark.parametrize(
    "what,value",
    [
        ("isa", "not-this-one"),
        # Another maker's CPU of the same ISA and cores.
        ("cpu", "Intel(R) Xeon(R) Processor" if "amd" in predict.machine()["cpu"].lower() else "AMD EPYC 7B13"),
    ],
)
def test_another_machine_falls_back_to_default(selector_file, what, value):
    data = json.loads(selector_file.read_text())
    data["machine"][what] = value
    selector_file.write_text(json.dumps(data))
    net = Net().eval()
    with pytest.warns(RuntimeWarning, match="does not apply"):
        model = ai3.swap_backend(net, {"conv2d": "predict"}, sample_input_shape=SHAPE)
    default = ai3.swap_backend(Net().eval(), {"conv2d": "default"}, sample_input_shape=SHAPE)
    assert [a for _, _, a in model.layers()] == [a for _, _, a in default.layers()]


def test_unsure_falls_back_to_default(selector_file):
    data = json.loads(selector_file.read_text())
    data["threshold"] = 1.01  # no prediction is that sure
    selector_file.write_text(json.dumps(data))
    choices = predict.choose(
        "conv2d",
        [
            selection.Candidate(
                "a",
                None,
                SHAPE,
                None,
                {"attrs": {"stride": [1, 1], "padding": [1] * 4}, "weights": {"weight": (16, 16, 3, 3)}},
            )
        ],
    )
    assert choices[0].choice == "default" and choices[0].predicted == "winograd" and "unsure" in choices[0].reason


def test_no_selector_model_is_default(monkeypatch, tmp_path):
    monkeypatch.setenv(predict.ENV_SELECTOR, "")
    monkeypatch.setattr(predict, "PACKAGED", tmp_path / "absent")
    model = ai3.swap_backend(Net().eval(), {"conv2d": "predict"}, sample_input_shape=SHAPE)
    default = ai3.swap_backend(Net().eval(), {"conv2d": "default"}, sample_input_shape=SHAPE)
    assert [a for _, _, a in model.layers()] == [a for _, _, a in default.layers()]


def test_a_bad_selector_file_is_an_ai3_error(tmp_path, monkeypatch):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    monkeypatch.setenv(predict.ENV_SELECTOR, str(bad))
    with pytest.raises(ai3.InvalidArgument, match="selector model"):
        ai3.swap_backend(Net().eval(), {"conv2d": "predict"}, sample_input_shape=SHAPE)
    bad.write_text(json.dumps({"format": 99}))
    with pytest.raises(ai3.InvalidArgument, match="not an ai3 selector model"):
        ai3.swap_backend(Net().eval(), {"conv2d": "predict"}, sample_input_shape=SHAPE)


def test_selecting_takes_under_a_millisecond_per_layer(selector_file):
    selector = predict.current()
    x = predict.features(
        "conv2d", {"stride": [1, 1], "padding": [1] * 4}, {"weight": (64, 64, 3, 3)}, (1, 64, 56, 56), "float32", "NCHW"
    )
    start = time.perf_counter()
    for _ in range(100):
        selector.rank("conv2d", x)
    per_layer = (time.perf_counter() - start) / 100
    print(f"predict: {per_layer * 1e6:.0f} us per layer")  # reported, not asserted: timings under load vary


def test_the_packaged_selectors_record_where_they_came_from():
    paths = sorted(predict.PACKAGED.glob("selector_*.json"))
    assert paths
    for path in paths:
        shipped = predict.Selector.load(path)
        assert {"conv2d", "linear"} <= set(shipped.ops)
        assert shipped.machine["isa"] and shipped.machine["cores"] >= 1 and shipped.data["trained_on"]
        assert shipped.algorithms["conv2d"]  # the build's list it was trained against
        # Each is named for the machine class it was trained on, which is
        # how "predict" finds this machine's.
        assert path == predict.packaged_path(shipped.machine)


def test_predict_takes_the_packaged_selector_of_this_machines_class(monkeypatch, tmp_path):
    monkeypatch.setenv(predict.ENV_SELECTOR, "")
    monkeypatch.setattr(predict, "PACKAGED", tmp_path)
    here = predict.machine()
    other = dict(here, cpu="Some Other CPU", isa="avx2" if here["isa"] == "avx512" else "avx512")
    for m in (other, here):
        predict.Selector({"format": predict.SELECTOR_FORMAT, "machine": m, "ops": {}}).save(predict.packaged_path(m))
    assert predict.current().machine == here
    predict.packaged_path(here).unlink()  # none of this class: another's, whose mismatch says why
    assert predict.current().machine == other


def test_train_selector_command(tmp_path, capsys):
    from ai3 import __main__

    dataset = tmp_path / "d.csv"
    rows = _dataset()
    import csv

    with open(dataset, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=sweep.DATASET_COLUMNS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    out = tmp_path / "sel.json"
    assert __main__.main(["train-selector", str(dataset), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "conv2d" in printed and "Leave-one-model-out" in printed
    assert predict.Selector.load(out).data["kind"] in predict.KINDS
    assert __main__.main(["train-selector", str(dataset), "--out", str(out), "--kind", "classifier"]) == 0
    assert predict.Selector.load(out).ops["conv2d"].classes == ["gemm", "winograd"]


def test_features_agree_across_frontends(selector_file, per_layer_convs):
    """A torch layer in place and the same layer in swap_backend give the same features."""
    net = Net().eval()
    seen = {}
    real = predict.candidate_features

    def spy(op, c):
        x = real(op, c)
        seen.setdefault(c.via, []).append(None if x is None else tuple(x))
        return x

    import unittest.mock

    with unittest.mock.patch.object(predict, "candidate_features", spy):
        ai3.swap_backend(net, {"conv2d": "predict"}, sample_input_shape=SHAPE)
        ai3.swap_conv2d(Net().eval(), "predict", sample_input_shape=SHAPE)
    # swap_backend predicts once per layout plan it builds (model._fastest_layout),
    # in NHWC too where the "convs" plan moves a conv: the in-place features
    # are the model-layout ones among them.
    assert set(seen["torch"]) <= set(seen["core"]) and None not in seen["core"]
    assert np.isfinite(np.array(seen["core"])).all()


if __name__ == "__main__":
    pytest_main.run(__file__)
