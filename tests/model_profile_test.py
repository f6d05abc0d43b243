"""ai3.Model.profile: per-node times inside whole forward passes."""

from __future__ import annotations

import pytest
import pytest_main
import torch

import ai3

torch.set_num_threads(2)


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(8, 8, 3, padding=1)
        self.pool = torch.nn.MaxPool2d(2)
        self.fc = torch.nn.Linear(8 * 8 * 8, 4)

    def forward(self, x):
        y = torch.relu(self.conv1(x))
        y = self.pool(y + self.conv2(y))
        return self.fc(torch.flatten(y, 1))


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return ai3.swap_backend(Block().eval(), {"conv2d": "implicit gemm"}, sample_input_shape=(1, 3, 16, 16))


def test_every_node_is_timed(model) -> None:
    x = torch.randn(1, 3, 16, 16)
    p = model.profile(x, repeats=5)
    assert [(n.name, n.op, n.algorithm) for n in p.nodes] == model.layers()
    # The flatten reads the pool's buffer as a view and does not run
    # (core/graph.h); every other node is timed.
    assert [n.op for n in p.nodes if n.seconds == 0] == ["flatten"], p
    assert model._core.fused_into([n.op for n in p.nodes].index("flatten")) >= 0
    # What is outside the nodes is taken per call (the call less its own
    # nodes, at least 0): no call's exceeds the call, so neither does the
    # median's the median call.
    assert p.outside is not None and 0.0 <= p.outside_seconds <= p.forward_seconds
    assert set(p.by_op()) == {n.op for n in p.nodes}
    text = str(p)
    assert "conv1" in text and "(outside the nodes)" in text and "per call" in text


def test_profiling_is_off_afterwards_and_outputs_unchanged(model) -> None:
    x = torch.randn(1, 3, 16, 16)
    want = model(x)
    model.profile(x, repeats=2)
    torch.testing.assert_close(model(x), want)
    before = [model._core.node_seconds(i) for i in range(len(model))]
    model(x)  # not profiled: the sums stay
    assert [model._core.node_seconds(i) for i in range(len(model))] == before


@pytest.mark.parametrize("repeats, warmup", [(0, 1), (3, -1)])
def test_bad_arguments(model, repeats: int, warmup: int) -> None:
    with pytest.raises(ai3.InvalidArgument, match="repeats"):
        model.profile(torch.randn(1, 3, 16, 16), repeats=repeats, warmup=warmup)


def test_bad_node_id(model) -> None:
    with pytest.raises(ai3.InvalidArgument, match="not in the model"):
        model._core.node_seconds(len(model))


if __name__ == "__main__":
    pytest_main.run(__file__)
