"""A small CNN trained with Adam, ai3-swapped against plain torch: two
epochs on synthetic data (seeded, nothing downloaded), every step's loss
within 1e-3 of torch's, eagerly and under torch.compile. Its BatchNorm
trains on batch statistics (torch's own forward, in training mode) and its
Dropout draws the same masks (the swaps leave torch's RNG alone)."""

from __future__ import annotations

import copy
import os

if os.environ.get("TEST_TMPDIR"):  # inductor writes its cache; keep it in the sandbox
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(os.environ["TEST_TMPDIR"], "inductor"))

import pytest
import pytest_main
import torch
import torch.nn.functional as F
from torch import nn

import ai3

torch.set_num_threads(2)

EPOCHS, SAMPLES, BATCH = 2, 64, 16
LOSS_TOLERANCE = 1e-3


def cnn(dropout: float = 0.25) -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(
            3, 8, 3, padding=1, bias=False
        ),  # a bias before BatchNorm gets a zero gradient, which Adam turns to noise
        nn.BatchNorm2d(8),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1, bias=False),
        nn.ReLU(),
        nn.Dropout(dropout),
        nn.AdaptiveAvgPool2d(2),
        nn.Flatten(),
        nn.Linear(64, 10),
    )


def data() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    return torch.randn(SAMPLES, 3, 16, 16, generator=g), torch.randint(0, 10, (SAMPLES,), generator=g)


def swappable_with_gradients(net: nn.Module) -> list[str]:
    """The ops of `net` ai3 can swap in place and differentiate."""
    ops = {ai3.torch.mapping.lookup(m).op for m in net.modules() if ai3.torch.mapping.lookup(m, exact=True)}
    return sorted(op for op in ops if op != "identity" and ai3.layers.backward_ops(op))


def swapped(net: nn.Module, ops: list[str]) -> nn.Module:
    net = copy.deepcopy(net)
    for op in ops:
        net = ai3.swap_operation(op, net, "default")
    return net


def train(net: nn.Module, step_fn=None) -> list[float]:
    x, labels = data()
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-2)
    torch.manual_seed(2)  # dropout's masks
    net.train()
    losses = []
    for _ in range(EPOCHS):
        for i in range(0, SAMPLES, BATCH):
            optimizer.zero_grad()
            loss = F.cross_entropy((step_fn or net)(x[i : i + BATCH]), labels[i : i + BATCH])
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    return losses


def needs_conv_and_linear_gradients() -> list[str]:
    ops = swappable_with_gradients(cnn())
    if not {"conv2d", "linear"} <= set(ops):
        pytest.skip(f"this build has no conv2d/linear gradient ops yet (swappable with gradients: {ops})")
    return ops


def assert_losses_match(got: list[float], want: list[float], what: str) -> None:
    assert len(got) == len(want) == EPOCHS * SAMPLES // BATCH
    worst = max(abs(a - b) for a, b in zip(got, want))
    assert worst <= LOSS_TOLERANCE, f"{what}: losses {got} vs torch's {want} (worst difference {worst:.2e})"
    assert want[-1] < want[0], "the reference did not learn; the test would show nothing"


def test_two_epochs_of_adam_match_torch():
    ops = needs_conv_and_linear_gradients()
    ref = cnn()
    net = swapped(ref, ops)
    assert any(isinstance(m, ai3.torch.Layer) and m.op == "batchnorm2d" for m in net.modules()) == (
        "batchnorm2d" in ops
    )
    want = train(ref)
    got = train(net)
    assert_losses_match(got, want, f"ai3 ({ops})")
    for (k, p), q in zip(net.named_parameters(), ref.parameters()):  # the optimizer moved the very tensors ai3 reads
        torch.testing.assert_close(p, q, atol=1e-3, rtol=1e-3, msg=lambda m: f"{k}: {m}")
    for k in ("1.running_mean", "1.running_var", "1.num_batches_tracked"):
        torch.testing.assert_close(net.state_dict()[k], ref.state_dict()[k], atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_training_under_torch_compile(backend):
    ops = needs_conv_and_linear_gradients()
    torch._dynamo.reset()
    # No dropout: inductor draws its masks with its own generator, so they
    # would differ from the eager reference's.
    ref = cnn(dropout=0.0)
    net = swapped(ref, ops)
    want = train(ref)
    got = train(net, torch.compile(net, backend=backend))
    assert_losses_match(got, want, f"ai3 under torch.compile({backend})")
    torch._dynamo.reset()


def test_backward_choice_trains_the_same():
    ops = needs_conv_and_linear_gradients()
    ref = cnn()
    conv_data = ai3.algorithms()["conv2d_backward_data"]
    net = copy.deepcopy(ref)
    net = ai3.swap_conv2d(net, "default", backward={"backward_data": conv_data[-1]})
    net = swapped(net, [op for op in ops if op != "conv2d"])
    assert_losses_match(train(net), train(ref), f"conv2d backward_data {conv_data[-1]}")


if __name__ == "__main__":
    pytest_main.run(__file__)
