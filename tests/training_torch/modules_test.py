"""Swapped modules as training sees them: train()/eval() semantics
(BatchNorm, Dropout), deepcopy / pickle / torch.save round trips with the
backward choice, swap_with=, the backward selector's forms and its bad
values, and ai3.plan recording the backward choices."""

from __future__ import annotations

import copy

import pytest
import pytest_main
import torch
from round_trips import round_trips
from torch import nn
from training_cases import assert_close, gradients, has_gradients, prepared, randn
from tuning_fixtures import cache  # noqa: F401 - autouse: a private tuning cache per test

import ai3
from ai3.torch import Layer, ops

torch.set_num_threads(2)


def conv_net() -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.Conv2d(4, 4, 3, stride=2), nn.Flatten(), nn.Linear(36, 3)
    )


def conv_gradients_or_skip() -> None:
    if not has_gradients(nn.Conv2d(1, 1, 1)):
        pytest.skip("no conv2d gradient ops in this build")


def algorithms_of(grad_op: str) -> list[str]:
    return ai3.algorithms().get(grad_op, [])


# ---- train() / eval() ----------------------------------------------------------


@pytest.mark.parametrize("momentum", [0.1, None])
def test_batchnorm_in_training_mode_is_torchs(momentum):
    ref = prepared(nn.BatchNorm2d(3, momentum=momentum), torch.float32)
    net = ai3.swap_operation("batchnorm2d", nn.Sequential(copy.deepcopy(ref)))
    assert isinstance(net[0], Layer) and not net[0].training  # the swap keeps the mode it found (ref is in eval mode)
    ref.train()
    net.train()
    assert net[0].training
    for step in range(3):
        x = randn(4, 3, 5, 5, seed=step) * 3 + 1
        assert_close(net(x), ref(x), 1e-5, f"training step {step}")
    for k in ("running_mean", "running_var", "num_batches_tracked"):
        assert torch.equal(getattr(net[0], k), getattr(ref, k)), k
    ref.eval()
    net.eval()
    x = randn(2, 3, 5, 5, seed=9)
    assert_close(net(x), ref(x), 1e-5, "eval mode (the core's batchnorm2d on the updated statistics)")
    with pytest.raises(ValueError, match="expected 4D input"):
        net.train()(randn(3, 5, 5))


def test_batchnorm_training_gradients_are_torchs():
    ref = prepared(nn.BatchNorm2d(3), torch.float64).train()
    net = ai3.swap_operation("batchnorm2d", nn.Sequential(copy.deepcopy(ref))).train()
    x = randn(4, 3, 5, 5, dtype=torch.float64)
    for g, w in zip(gradients(net, x), gradients(nn.Sequential(ref), x)):
        assert_close(g, w, 1e-10, "batch-statistics backward")


def test_swap_never_changes_what_train_means_dropout_and_all():
    ref = nn.Sequential(nn.Conv2d(3, 4, 3), nn.Dropout(0.5), nn.BatchNorm2d(4), nn.Flatten()).train()
    net = ai3.swap_operation("batchnorm2d", ai3.swap_conv2d(copy.deepcopy(ref)))
    assert net.training and all(m.training for m in net.modules())
    x = randn(2, 3, 6, 6)
    with torch.no_grad():
        torch.manual_seed(5)
        want = ref(x)
        torch.manual_seed(5)
        got = net(x)
    assert_close(got, want, 1e-4, "training mode: the same dropout masks and batch statistics")
    net.eval()
    ref.eval()
    assert not any(m.training for m in net.modules())
    with torch.no_grad():
        assert_close(net(x), ref(x), 1e-4, "eval mode: no dropout, running statistics")
        assert torch.equal(net(x), net(x))


# ---- round trips -------------------------------------------------------------------


def test_round_trips_keep_the_choices_and_the_gradients():
    backward = {"backward_data": "direct"} if "direct" in algorithms_of("conv2d_backward_data") else None
    net = ai3.swap_linear(ai3.swap_conv2d(conv_net(), "smm", backward=backward))
    x = randn(2, 3, 8, 8)
    want = gradients(net, x) if has_gradients(nn.Conv2d(1, 1, 1)) else None
    for how, copied in round_trips(net).items():
        assert copied[0].algorithm == "smm" and copied[0].backward == net[0].backward, how
        with torch.no_grad():
            assert_close(copied(x), net(x), 1e-5, how)
        if want is not None:
            for k, (g, w) in enumerate(zip(gradients(copied, x), want)):
                assert_close(g, w, 1e-5, f"{how}: gradient {k}")


def test_a_trained_swapped_module_round_trips():
    conv_gradients_or_skip()
    net = ai3.swap_linear(ai3.swap_conv2d(conv_net()))
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-2)
    for step in range(2):
        optimizer.zero_grad()
        net(randn(2, 3, 8, 8, seed=step)).square().mean().backward()
        optimizer.step()
    x = randn(2, 3, 8, 8, seed=7)
    for how, copied in round_trips(net).items():
        with torch.no_grad():
            assert_close(copied(x), net(x), 1e-5, f"{how} after training")


# ---- swap_with --------------------------------------------------------------------------


class UserConv(nn.Module):
    """A user's replacement: built from the original layer and the algorithm."""

    def __init__(self, original: nn.Conv2d, algorithm: str):
        super().__init__()
        self.original, self.algorithm = original, algorithm

    def forward(self, x):
        return self.original(x) + 1


class UserLayer(Layer):
    """A user's ai3 layer, built as ai3 builds its own (from_module)."""

    def forward(self, x):
        return super().forward(x) * 2


def test_swap_with_a_users_class():
    ref = conv_net()
    net = ai3.swap_operation("conv2d", copy.deepcopy(ref), ["smm", "direct"], None, swap_with=UserConv)
    assert [type(net[i]) for i in (0, 2)] == [UserConv, UserConv]
    assert [net[i].algorithm for i in (0, 2)] == ["smm", "direct"]
    assert isinstance(net[0].original, nn.Conv2d)
    x = randn(1, 3, 8, 8)
    with torch.no_grad():
        assert_close(net[0](x), ref[0](x) + 1, 1e-5, "UserConv")

    net = ai3.swap_conv2d(copy.deepcopy(ref), "smm", swap_with=UserLayer, backward="default")
    assert type(net[0]) is UserLayer and net[0].algorithm == "smm" and net[0].name == "0"
    with torch.no_grad():
        assert_close(net[0](x), ref[0](x) * 2, 1e-4, "UserLayer")


def test_swap_with_bad_values():
    with pytest.raises(ai3.InvalidArgument, match="swap_with must be a class"):
        ai3.swap_conv2d(conv_net(), swap_with=3)
    with pytest.raises(ai3.InvalidArgument, match="conv2d layer '0': swap_with .* made a str, not an nn.Module"):
        ai3.swap_conv2d(conv_net(), swap_with=lambda m, a: "no")
    with pytest.raises(ai3.InvalidArgument, match="conv2d layer '0': swap_with .* raised TypeError"):
        ai3.swap_conv2d(conv_net(), swap_with=lambda m: m)


# ---- the backward selector ----------------------------------------------------------------


def data_algorithms() -> list[str]:
    found = algorithms_of("conv2d_backward_data")
    if not found:
        pytest.skip("no conv2d gradient ops in this build")
    return found


def test_backward_selector_forms():
    data = data_algorithms()
    first, last = data[0], data[-1]
    # one name: each gradient op that offers it, "default" for the others
    net = ai3.swap_conv2d(conv_net(), "smm", backward=first)
    offers = {t: first for t, g in ai3.layers.backward_ops("conv2d").items() if first in algorithms_of(g)}
    assert net[0].backward == offers and net[0].resolved_backward()["data"] == first
    # a list: one per layer
    net = ai3.swap_conv2d(conv_net(), backward=[first, last])
    assert (net[0].backward.get("data", "default"), net[2].backward.get("data", "default")) == (
        first,
        last,
    ) or first == "default"
    # callables, of the layer and of (layer, input shape)
    seen = []
    net = ai3.swap_conv2d(conv_net(), backward=lambda conv: seen.append(conv.stride) or first)
    assert seen == [(1, 1), (2, 2)] and net[0].backward.get("data") == first
    shapes = []
    net = ai3.swap_conv2d(
        conv_net(), "default", (1, 3, 8, 8), backward=lambda conv, shape: shapes.append(shape) or "default"
    )
    assert shapes == [(1, 3, 8, 8), (1, 4, 8, 8)] and net[0].backward == {}
    # a mapping per gradient, and with "forward" as the swap's algos
    net = ai3.swap_conv2d(conv_net(), "smm", backward={"backward_data": last, "backward_weight": "default"})
    assert net[0].backward == ({"data": last} if last != "default" else {})
    net = ai3.swap_conv2d(conv_net(), {"forward": "direct", "backward_data": last})
    assert net[0].algorithm == "direct" and net[0].backward.get("data") == last
    net = ai3.swap_conv2d(conv_net(), None, backward={"forward": "direct", "backward_data": last})
    assert net[0].algorithm == "direct" and net[0].backward.get("data") == last


def test_backward_auto_times_the_gradient_ops_and_a_plan_replays_them():
    data_algorithms()
    net = ai3.swap_conv2d(conv_net(), "default", (2, 3, 8, 8), backward="auto")
    for i in (0, 2):
        chosen = net[i].backward.get("data", "default")
        assert chosen == "default" or chosen in algorithms_of("conv2d_backward_data")
    plan = ai3.plan(conv_net(), (2, 3, 8, 8), backward="auto")
    rows = {(lp.op, lp.name): lp for lp in plan.layers}
    for target in ai3.layers.backward_ops("conv2d"):
        for name in ("0", "2"):
            lp = rows[(f"conv2d_backward_{target}", name)]
            assert lp.choice in algorithms_of(f"conv2d_backward_{target}")
            assert lp.measurements and lp.input_shape is not None, lp
    assert ("linear_backward_data", "4") in rows
    replayed = ai3.swap_conv2d(conv_net(), backward=ai3.Plan.from_json(plan.to_json()))
    for name, i in (("0", 0), ("2", 2)):
        want = {t: rows[(f"conv2d_backward_{t}", name)].choice for t in ai3.layers.backward_ops("conv2d")}
        assert replayed[i].resolved_backward() == want


def test_bad_backward_selectors():
    data = data_algorithms()
    with pytest.raises(
        ai3.UnknownAlgorithm,
        match="conv2d layer '0': backward 'nope' is not an algorithm of any of conv2d's gradient ops",
    ):
        ai3.swap_conv2d(conv_net(), backward="nope")
    with pytest.raises(
        ai3.UnknownAlgorithm, match="conv2d_backward_data layer '0': 'nope' is not a conv2d_backward_data algorithm"
    ):
        ai3.swap_conv2d(conv_net(), backward={"backward_data": "nope"})
    with pytest.raises(
        ai3.InvalidSelector, match=r"conv2d layer '0': the backward selector gave 3 \(int\), not an algorithm name"
    ):
        ai3.swap_conv2d(conv_net(), backward=lambda conv: 3)
    with pytest.raises(ai3.InvalidSelector, match="the backward selector gave None"):
        ai3.swap_conv2d(conv_net(), backward={"backward_weight": lambda conv: None})
    with pytest.raises(ai3.InvalidSelector, match="conv2d layer '0': the backward selector raised ZeroDivisionError"):
        ai3.swap_conv2d(conv_net(), backward=lambda conv: 1 / 0)
    with pytest.raises(
        ai3.InvalidSelector, match="the conv2d backward selector lists 1 algorithms but the model has 2 conv2d layers"
    ):
        ai3.swap_conv2d(conv_net(), backward=[data[0]])
    with pytest.raises(ai3.InvalidSelector, match="names 'backward_input'; conv2d's gradients are"):
        ai3.swap_conv2d(conv_net(), backward={"backward_input": data[0]})
    with pytest.raises(ai3.InvalidSelector, match="has key 'weights'"):
        ai3.swap_conv2d(conv_net(), backward={"weights": data[0]})
    with pytest.raises(ai3.InvalidSelector, match="forward selector is given twice"):
        ai3.swap_conv2d(conv_net(), "smm", backward={"forward": "direct"})
    with pytest.raises(ai3.InvalidSelector, match="backward= is given too"):
        ai3.swap_conv2d(conv_net(), {"forward": "smm"}, backward="default")
    with pytest.raises(ai3.InvalidSelector, match="backward 'torch' names no gradient algorithm"):
        ai3.swap_conv2d(conv_net(), backward="torch")
    with pytest.raises(ai3.InvalidSelector, match="pass sample_input_shape"):
        ai3.swap_conv2d(conv_net(), backward="auto")
    with pytest.raises(ai3.InvalidArgument, match="conv2d layer 'c': backward names gradient 'input'"):
        Layer.from_module(nn.Conv2d(1, 1, 1), "default", "c", {"input": "direct"})


def test_torch_keeps_its_layer_and_its_backward():
    net = ai3.swap_conv2d(conv_net(), ["torch", "default"], backward="default")
    assert isinstance(net[0], nn.Conv2d) and isinstance(net[2], Layer)


def test_inapplicable_backward_algorithm_is_refused_when_swapping():
    refused = []
    layers_ = [
        nn.Conv2d(2, 2, 3, dilation=2),
        nn.Conv2d(4, 4, 3, groups=2),
        nn.Conv2d(2, 2, 5, stride=3),
        nn.Conv2d(2, 2, 1),
    ]
    for target, grad_op in ai3.layers.backward_ops("conv2d").items():
        for algorithm in algorithms_of(grad_op):
            for conv in layers_:
                try:
                    ai3.swap_conv2d(nn.Sequential(conv), backward={f"backward_{target}": algorithm})
                except ai3.AlgorithmNotApplicable as e:
                    refused.append(str(e))
    if not refused:
        pytest.skip("every conv2d gradient algorithm takes these layers")
    assert all("conv2d_backward_" in r and "layer '0'" in r for r in refused), refused


if __name__ == "__main__":
    pytest_main.run(__file__)


def test_torch_export_keeps_the_backward_choice_and_trains():
    conv_gradients_or_skip()
    choice = algorithms_of("conv2d_backward_data")[-1]
    net = ai3.swap_linear(ai3.swap_conv2d(conv_net(), backward={"backward_data": choice}))
    x = randn(2, 3, 8, 8)
    exported = torch.export.export(net, (x,))
    calls = [n for n in exported.graph.nodes if n.target is torch.ops.ai3.layer.default]
    assert len(calls) == 3
    assert ops.canonical({"data": choice}) in [n.args[7] if len(n.args) > 7 else "" for n in calls]
    for k, (g, w) in enumerate(zip(gradients(exported.module(), x), gradients(net, x))):
        assert_close(g, w, 1e-5, f"exported module: gradient {k}")
