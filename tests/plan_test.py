"""ai3.plan / ai3.Plan: a plan lists each layer's measured candidates and
choice, prints as a table, round-trips through JSON, and reproduces its
choices without timing when passed back as the selector."""

from __future__ import annotations

import copy
import json

import pytest
import pytest_main
import torch
from torch import nn
from tuning_fixtures import cache, counting, per_layer_convs  # noqa: F401 (fixtures)

import ai3
from ai3 import tuning

SHAPE = (1, 3, 12, 12)


class Block(nn.Module):
    """A residual block: an add node the plan lists untimed."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(8, 8, 3, padding=1)
        self.relu = nn.ReLU()

    def forward(self, x):
        return self.relu(self.conv(x) + x)


def small_net() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1),
        nn.ReLU(),
        Block(),
        nn.Conv2d(8, 4, 3, stride=2, padding=1),
        nn.Flatten(),
        nn.Linear(4 * 6 * 6, 3),
    ).eval()


def test_plan_lists_candidates_and_choices(counting, per_layer_convs):
    net = small_net()
    plan = ai3.plan(net, SHAPE)
    assert isinstance(plan, ai3.Plan)
    ops = [lp.op for lp in plan.layers]
    assert ops.count("conv2d") == 3 and "add" in ops and "linear" in ops
    assert counting.calls > 0
    for lp in plan.layers:
        if lp.op == "add":
            assert lp.measurements == []  # run by the graph itself, not timed
            continue
        timed = [m for m in lp.measurements if m.timed]
        assert timed, lp.name
        # The choice is the fastest measured algorithm that was fully timed.
        full = [m for m in timed if m.note != tuning.STOPPED_EARLY]
        assert lp.choice == min(full, key=lambda m: m.seconds).algorithm
        # The core reports each timed algorithm's scratch memory.
        assert all(isinstance(m.workspace_bytes, int) and m.workspace_bytes >= 0 for m in timed)
        assert lp.input_shape is not None
    strided = plan["3"]
    assert not any(m.algorithm == "winograd" and m.timed for m in strided.measurements)
    # The plan's model is the built ai3.Model, with those choices.
    # (A relu fused into its conv is listed too, marked, for reuse as a selector;
    # the layout pass's conversions are in the plan's layout entry instead.)
    conversions = set(plan.layout["conversions"])
    assert [a for n, _, a in plan.model.layers() if n not in conversions] == [
        lp.choice for lp in plan.layers if not lp.fused
    ]
    x = torch.randn(SHAPE)
    torch.testing.assert_close(plan.model(x), net(x).detach(), rtol=1e-4, atol=1e-4)


def test_plan_prints_a_table():
    plan = ai3.plan(small_net(), SHAPE, {"conv2d": "auto"})
    text = str(plan)
    for lp in plan.layers:
        assert lp.name in text
    assert "choice" in text and "candidates" in text
    # Only conv2d was timed; the others are listed with their algorithm.
    assert all(lp.measurements == [] for lp in plan.layers if lp.op != "conv2d")


def test_plan_json_round_trip_reapplies_without_timing(tmp_path, counting):
    net = small_net()
    plan = ai3.plan(net, SHAPE)
    path = tmp_path / "plan.json"
    plan.save(path)
    data = json.loads(path.read_text())
    assert data["frontend"] == "torch" and data["sample_input_shape"] == list(SHAPE)
    loaded = ai3.Plan.load(path)
    assert loaded.choices() == plan.choices()
    timed = counting.calls
    model = ai3.swap_backend(net, loaded, SHAPE)
    assert counting.calls == timed  # no timing, no cache needed
    assert model.layers() == plan.model.layers()
    # The same plan drives the in-place swap: conv layers by module path.
    swapped = ai3.swap_conv2d(copy.deepcopy(net), loaded)
    assert [a for _, _, a in ai3.torch.chosen_algorithms(swapped)] == [c for _, _, c in plan.choices("conv2d")]
    assert counting.calls == timed


def test_plan_reapplied_with_a_different_shape_warns():
    net = small_net()
    plan = ai3.plan(net, SHAPE, {"conv2d": "auto"})
    with pytest.warns(RuntimeWarning, match="plan was made for"):
        ai3.swap_backend(net, plan, (2, 3, 12, 12))


def test_plan_missing_a_layer_is_an_error():
    plan = ai3.plan(small_net(), SHAPE, {"conv2d": "auto"})
    other = nn.Sequential(nn.Conv2d(3, 3, 1), nn.Conv2d(3, 3, 1), nn.Conv2d(3, 3, 1), nn.Conv2d(3, 3, 1)).eval()
    with pytest.raises(ai3.InvalidSelector, match="the plan has no such layer"):
        ai3.swap_backend(other, plan, SHAPE)


def test_bad_plan_files(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2")
    with pytest.raises(ai3.InvalidArgument, match="not JSON"):
        ai3.Plan.load(bad)
    bad.write_text(json.dumps({"format": 99}))
    with pytest.raises(ai3.InvalidArgument, match="not an ai3 plan"):
        ai3.Plan.load(bad)
    with pytest.raises(ai3.InvalidArgument, match="sample_input_shape"):
        ai3.plan(small_net(), None)
    with pytest.raises(ai3.InvalidArgument, match="ai3.plan takes"):
        ai3.plan(object(), SHAPE)


if __name__ == "__main__":
    pytest_main.run(__file__)
