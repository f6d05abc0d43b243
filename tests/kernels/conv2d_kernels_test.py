"""The register-blocked conv2d kernels (core/ops/conv2d) against torch, on
the shapes their blocking cares about.

tests/core_layers_test.py checks every algorithm over a broad grid of small
layers. This grid is about the blocks: channel counts past one register
block of output channels (and partial last blocks), rows wide enough for
interior pixel blocks beside the edge ones, depthwise layers with a
multiplier, 7x7 depthwise (ConvNeXt), pointwise 1x1, dilation, asymmetric
padding, fused ReLU6, in NCHW and NHWC (torch computes NHWC with
channels_last tensors; ai3 reads and writes plain NHWC arrays), float32 and
float64. Every algorithm that takes a case must match; one that refuses must
say why. Tolerances, as in core_layers_test: float32 1e-4 (winograd 5e-4)
absolute and relative on outputs of order one; float64 1e-10.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest
import pytest_main
import torch
import torch.nn.functional as F
from conv2d_cases import Case, same

import ai3

torch.set_num_threads(2)

CASES = [
    # Output channels past one block (AVX2: 16 float lanes x 2, AVX-512: 32)
    # with a partial last block; rows of 40 pixels (interior blocks).
    Case("3x3_k72", 1, 24, 11, 40, 72, 3, padding=same(3)),
    # A first layer: 3 input channels, stride 2, asymmetric "same" padding.
    Case("first_layer", 2, 3, 23, 30, 40, 3, stride=2, padding=(0, 1, 0, 1)),
    Case("3x3_relu6_dilated", 1, 20, 15, 19, 36, 3, padding=same(3, 2), dilation=2, activation="relu6"),
    Case("5x5_grouped", 1, 32, 12, 17, 48, 5, padding=same(5), groups=4, bias=False),
    # Depthwise: mobilenet-like channel counts, a partial vector (72, 120:
    # not multiples of 16), stride 2, 7x7, and multipliers 2 and 3.
    Case("dw3x3_c144", 1, 144, 14, 14, 144, 3, padding=same(3), groups=144, activation="relu6"),
    Case("dw3x3_c72_s2", 2, 72, 17, 16, 72, 3, stride=2, padding=(1, 1, 1, 1), groups=72),
    Case("dw5x5_c120", 1, 120, 9, 21, 120, 5, padding=same(5), groups=120, bias=False),
    Case("dw7x7_c48", 1, 48, 12, 12, 48, 7, padding=same(7), groups=48),
    Case("dw3x3_mult2", 1, 24, 10, 27, 48, 3, padding=(2, 1, 2, 0), dilation=2, groups=24),
    Case("dw3x3_mult3_s2", 1, 10, 9, 13, 30, 3, stride=2, padding=same(3), groups=10),
    # Rows of several blocks of pixel vectors (NCHW direct's planar form)
    # with a partial last vector; stride 3 (gathered loads).
    Case("dw3x3_wide_row", 1, 20, 6, 117, 20, 3, padding=same(3), groups=20, activation="relu6"),
    Case("dw3x3_s3", 2, 12, 14, 50, 24, 3, stride=3, padding=(1, 0, 0, 1), groups=12),
    # Pointwise 1x1: a GEMM for most algorithms, a register block for direct.
    Case("pw_144_24", 1, 144, 14, 14, 24, 1),
    Case("pw_32_16_relu6", 2, 32, 16, 21, 16, 1, activation="relu6"),
    Case("pw_strided", 1, 40, 13, 13, 56, 1, stride=2),
    # No column of padding: direct reads NHWC rows in place.
    Case("3x3_unpadded_s2", 1, 24, 15, 31, 40, 3, stride=2),
    # Small planes (7x7) with many channels, as at the end of a network.
    Case("3x3_7x7_c96", 1, 96, 7, 7, 80, 3, padding=same(3)),
]

DTYPES = [torch.float32, torch.float64]
LAYOUTS = ["NCHW", "NHWC"]
ACTIVATIONS = {None: None, "relu6": (0.0, 6.0)}


def tolerance(dtype: torch.dtype, algorithm: str) -> float:
    if dtype == torch.float64:
        return 1e-10
    return 5e-4 if algorithm == "winograd" else 1e-4


def torch_reference(case: Case, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None, layout: str):
    """torch's result in `layout`: NHWC through channels_last tensors, then
    read back as a plain (N, H, W, C) array."""
    top, bottom, left, right = case.padding
    if layout == "NHWC":
        x = x.contiguous(memory_format=torch.channels_last)
        w = w.contiguous(memory_format=torch.channels_last)
    y = F.conv2d(
        F.pad(x, (left, right, top, bottom)), w, b, stride=case.stride, dilation=case.dilation, groups=case.groups
    )
    if case.activation is not None:
        lo, hi = ACTIVATIONS[case.activation]
        y = y.clamp(lo, hi)
    return y.permute(0, 2, 3, 1) if layout == "NHWC" else y


def inputs(case: Case, dtype: torch.dtype):
    gen = torch.Generator().manual_seed(zlib.crc32(case.name.encode()))
    x = torch.randn(case.n, case.c, case.h, case.w, generator=gen, dtype=dtype)
    fan_in = case.c // case.groups * case.kernel * case.kernel
    # Weights of scale 1/sqrt(fan_in): outputs of order one, so a relative
    # tolerance means the same on every case.
    w = torch.randn(case.k, case.c // case.groups, case.kernel, case.kernel, generator=gen, dtype=dtype)
    w = w / fan_in**0.5
    b = torch.randn(case.k, generator=gen, dtype=dtype) if case.bias else None
    return x, w, b


def make_layer(case: Case, w, b, algorithm: str, layout: str):
    return ai3.layers.Conv2d(
        w,
        b,
        stride=case.stride,
        padding=case.padding,
        dilation=case.dilation,
        groups=case.groups,
        algorithm=algorithm,
        layout=layout,
        name=case.name,
        activation=case.activation,
    )


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("algorithm", [a for a in ai3.algorithms()["conv2d"]] + ["default"])
def test_conv2d_kernel(algorithm: str, case: Case, dtype: torch.dtype, layout: str) -> None:
    x, w, b = inputs(case, dtype)
    try:
        layer = make_layer(case, w, b, algorithm, layout)
    except ai3.AlgorithmNotApplicable as e:
        assert algorithm != "default"
        assert f"algorithm '{algorithm}' cannot take this layer: " in str(e), str(e)
        return
    want = torch_reference(case, x, w, b, layout)
    xin = x.permute(0, 2, 3, 1).contiguous() if layout == "NHWC" else x
    got = torch.as_tensor(layer(xin))
    assert got.shape == want.shape, f"{case.name}: shape {tuple(got.shape)} != {tuple(want.shape)}"
    tol = tolerance(dtype, layer.algorithm)
    torch.testing.assert_close(
        got, want, atol=tol, rtol=tol, msg=lambda m: f"{layer.algorithm} {case.name} {layout} {dtype}: {m}"
    )
    # A second call reuses the workspace (and the direct kernel's strip of
    # input rows) and must give the same answer.
    np.testing.assert_array_equal(np.asarray(layer(xin)), got.numpy())


def test_default_takes_the_depthwise_kernels() -> None:
    """The rules conv2d's default list (conv2d_schema.cc) states: NCHW depthwise 3x3
    layers of at most 192 channels go to direct's planar form, wider ones (and
    other kernels) to smm's one-channel register block."""

    def default(channels: int, k: int) -> str:
        w = torch.randn(channels, 1, k, k)
        case = Case("dw", 1, channels, 8, 8, channels, k, padding=same(k), groups=channels)
        return make_layer(case, w, None, "default", "NCHW").algorithm

    assert default(32, 3) == "direct"
    assert default(384, 3) == "smm"
    assert default(32, 5) == "smm"


if __name__ == "__main__":
    pytest_main.run(__file__)
