"""What the training tests share: one set of cases per swapped op, and the
comparison of an ai3-swapped module's gradients with torch's autograd.

Where the core has every gradient op a case needs (ai3.layers.backward_ops)
the gradients must equal torch's; where it lacks one, the backward must
raise ai3.UnsupportedOperation naming the layer and the missing gradient.
So each case asserts the behaviour the build has, and turns into a
gradient check as soon as the op's gradient lands.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import torch
from torch import nn

import ai3

DTYPES = [torch.float32, torch.float64]

# Per op: (module, input shape). Inputs are random normal (no ties in a
# max window, no zeros at relu's kink with probability one).
CASES: dict[str, list[tuple[nn.Module, tuple[int, ...]]]] = {
    "conv2d": [
        (nn.Conv2d(3, 4, 3, padding=1), (3, 7, 7)),  # unbatched (C, H, W)
        (nn.Conv2d(3, 5, (4, 3)), (1, 3, 9, 8)),  # batch 1, a (4, 3) kernel
        (nn.Conv2d(2, 4, 3, padding=1), (10, 2, 6, 6)),  # batch 10
        (nn.Conv2d(4, 6, 3, stride=2, padding=(1, 0), dilation=(1, 2), groups=2), (2, 4, 9, 11)),
        (nn.Conv2d(3, 4, 2, padding="same", bias=False), (2, 3, 5, 6)),
        (nn.Conv2d(4, 4, 3, groups=4, padding=2, dilation=2), (1, 4, 7, 7)),  # depthwise
    ],
    "linear": [(nn.Linear(8, 5), (2, 8)), (nn.Linear(8, 5, bias=False), (2, 3, 8)), (nn.Linear(6, 4), (6,))],
    "relu": [(nn.ReLU(), (2, 3, 4, 4))],
    "leaky_relu": [(nn.LeakyReLU(0.2), (2, 7))],
    "sigmoid": [(nn.Sigmoid(), (2, 7))],
    "tanh": [(nn.Tanh(), (2, 7))],
    "gelu": [(nn.GELU(), (2, 7)), (nn.GELU("tanh"), (2, 7))],
    "silu": [(nn.SiLU(), (2, 7))],
    "hardswish": [(nn.Hardswish(), (2, 3, 5))],
    "hardsigmoid": [(nn.Hardsigmoid(), (2, 3, 5))],
    "clamp": [(nn.ReLU6(), (2, 7)), (nn.Hardtanh(-0.5, 0.25), (2, 7))],
    "softmax": [(nn.Softmax(1), (2, 3, 4, 4)), (nn.Softmax(-1), (3, 7))],
    "log_softmax": [(nn.LogSoftmax(-1), (3, 7))],
    "maxpool2d": [(nn.MaxPool2d(2), (2, 3, 8, 8)), (nn.MaxPool2d(3, 2, 1, ceil_mode=True), (2, 7, 9))],
    "avgpool2d": [(nn.AvgPool2d(3, 2, 1, count_include_pad=False), (2, 3, 8, 8)), (nn.AvgPool2d(2), (3, 6, 6))],
    "adaptiveavgpool2d": [(nn.AdaptiveAvgPool2d((3, None)), (2, 3, 8, 7)), (nn.AdaptiveAvgPool2d(1), (3, 5, 5))],
    "adaptivemaxpool2d": [(nn.AdaptiveMaxPool2d(2), (2, 3, 8, 7))],
    "flatten": [(nn.Flatten(), (2, 3, 4, 4))],
    "layernorm": [(nn.LayerNorm(8), (2, 3, 8)), (nn.LayerNorm((3, 8), elementwise_affine=False), (2, 3, 8))],
    "pad2d": [(nn.ZeroPad2d((1, 2, 0, 1)), (2, 3, 4, 4)), (nn.ConstantPad2d(1, 0.5), (2, 3, 3))],
    "batchnorm2d": [(nn.BatchNorm2d(3), (2, 3, 4, 4))],  # eval mode: the core's inference form
    "conv_transpose2d": [
        (nn.ConvTranspose2d(3, 4, 3, stride=2, padding=1, output_padding=1), (2, 3, 5, 5)),
        (nn.ConvTranspose2d(4, 6, 2, stride=2, groups=2, bias=False), (1, 4, 3, 4)),
    ],
    "resize": [(nn.Upsample(scale_factor=2, mode="bilinear"), (2, 3, 4, 5)), (nn.Upsample(size=(5, 7)), (1, 2, 3, 4))],
    "groupnorm": [(nn.GroupNorm(2, 4), (2, 4, 3, 3))],
    "lrn": [(nn.LocalResponseNorm(3), (2, 5, 4, 4)), (nn.LocalResponseNorm(4, k=2.0), (2, 6, 5))],
}


# torch's own float64 gradients that are float32-accurate: hardsigmoid's
# backward multiplies by 1/6 held as a float (relative error ~3e-8).
FLOAT64_TOLERANCE = {"hardsigmoid": 1e-7}


def tol(dtype: torch.dtype, algorithm: str = "", op: str = "") -> float:
    if dtype == torch.float64:
        return FLOAT64_TOLERANCE.get(op, 1e-9)
    return 1e-3 if "winograd" in algorithm else 2e-4


def randn(*shape: int, dtype: torch.dtype = torch.float32, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def assert_close(got: torch.Tensor, want: torch.Tensor, t: float, what: str) -> None:
    assert got is not None, f"{what}: no gradient"
    assert got.shape == want.shape, f"{what}: shape {tuple(got.shape)} != {tuple(want.shape)}"
    torch.testing.assert_close(got, want, atol=t, rtol=t, msg=lambda m: f"{what}: {m}")


def prepared(module: nn.Module, dtype: torch.dtype, seed: int = 0) -> nn.Module:
    """A copy in `dtype`, eval mode, with statistics and affine parameters
    that are not the identity."""
    torch.manual_seed(seed)
    ref = copy.deepcopy(module).to(dtype).eval()
    if "Norm" in type(ref).__name__:
        with torch.no_grad():
            for t in (*ref.parameters(), *ref.buffers()):
                if t.is_floating_point():
                    t.copy_(torch.rand_like(t) + 0.5)
    return ref


def op_of(module: nn.Module) -> str:
    return ai3.torch.mapping.lookup(module).op


def targets(module: nn.Module) -> list[str]:
    """The gradients a backward through `module` asks for: its input's and
    each parameter's that requires grad, by the core op's weight names."""
    _, weights = ai3.torch.mapping.lookup(module).read(module, "m")
    return ["data", *(n for n, w in weights.items() if isinstance(w, nn.Parameter) and w.requires_grad)]


def has_gradients(module: nn.Module) -> bool:
    return set(targets(module)) <= set(ai3.layers.backward_ops(op_of(module)))


def swap(ref: nn.Module, algos: Any = "default", backward: Any = None) -> nn.Module:
    """`ref` (a copy) with its one layer swapped, in a Sequential."""
    return ai3.swap_operation(op_of(ref), nn.Sequential(copy.deepcopy(ref)), algos, backward=backward)


def gradients(net: nn.Module, x: torch.Tensor, grad_output: torch.Tensor | None = None) -> list[torch.Tensor]:
    """[dL/dx, dL/dp for each parameter that requires grad] with
    L = sum(net(x) * grad_output)."""
    x = x.detach().clone().requires_grad_()
    net.zero_grad(set_to_none=True)
    y = net(x)
    y.backward(randn(*y.shape, dtype=y.dtype, seed=7) if grad_output is None else grad_output)
    return [x.grad, *(p.grad for p in net.parameters() if p.requires_grad)]


def check_gradients(
    ref: nn.Module, shape: tuple, dtype: torch.dtype, backward: Any = None, algos: Any = "default", what: str = ""
) -> None:
    """The swapped copy of `ref` gives torch's gradients, or (a gradient the
    core lacks) raises naming the layer."""
    net = swap(ref, algos, backward)
    x = randn(*shape, dtype=dtype) * 2
    if not has_gradients(ref):
        with pytest.raises(ai3.UnsupportedOperation, match=r"layer '0': no gradient w.r.t. "):
            gradients(net, x)
        return
    want = gradients(nn.Sequential(ref), x)
    got = gradients(net, x)
    assert len(got) == len(want)
    t = tol(dtype, str(backward) + str(algos), op_of(ref))
    for k, (g, w) in enumerate(zip(got, want)):
        assert_close(g, w, t, f"{what}: gradient {k} ({'input' if k == 0 else 'parameter'})")


def gradient_algorithms(op: str) -> list[tuple[str, str]]:
    """(target, algorithm) for each algorithm of each of op's gradient ops."""
    return [(t, a) for t, g in ai3.layers.backward_ops(op).items() for a in ai3.algorithms().get(g, [])]


def case_ids() -> list[tuple[str, int]]:
    return [(op, i) for op, cases in CASES.items() for i in range(len(cases))]
