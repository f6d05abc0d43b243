"""The ops of video and volumetric models, conv3d, maxpool3d and avgpool3d,
against the frameworks' own results: the core ops through
ai3.layers.Layer against F.conv3d / F.max_pool3d / F.avg_pool3d over grids
of kernels, strides, paddings, dilations, groups and pooling modes, every
algorithm, float32 and float64, NCDHW and NDHWC; torch modules and
functional calls (Conv3d, F.conv3d, BatchNorm3d folded or not, fused
activations, pools, AdaptiveAvgPool3d) through ai3.swap_backend;
torchvision's video models (weights=None: the three video ResNets and S3D)
through swap_backend and through their ONNX export against ONNX Runtime;
Keras' Conv3D and 3-D pooling models through ai3.keras.swap_backend; and bad
input refused with an ai3.Error naming the layer."""

from __future__ import annotations

import io

import numpy as np
import pytest
import pytest_main
import torch
import torch.nn.functional as F
from torch import nn

import ai3
from ai3 import layers

torch.set_num_threads(2)

TOL = {np.float32: 1e-4, np.float64: 1e-10}
DTYPES = pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])


def _close(got, want, tol, what=""):
    want = np.asarray(want)
    scale = max(1.0, float(np.abs(want).max(initial=0)))
    np.testing.assert_allclose(np.asarray(got), want, rtol=0, atol=tol * scale, err_msg=what)


def _last(a: np.ndarray) -> np.ndarray:
    """NCDHW -> NDHWC."""
    return np.ascontiguousarray(np.moveaxis(a, 1, -1))


# (c, k, kernel, stride, padding, dilation, groups, bias, dhw)
GRID = [
    (3, 4, 3, 1, 1, 1, 1, True, (4, 5, 6)),
    (3, 8, (3, 7, 7), (1, 2, 2), (1, 3, 3), 1, 1, False, (4, 12, 10)),  # r3d's stem
    (4, 6, (1, 3, 3), 1, (0, 1, 1), 1, 1, True, (3, 6, 6)),  # r(2+1)d's spatial half
    (6, 4, (3, 1, 1), (2, 1, 1), (1, 0, 0), 1, 1, True, (5, 4, 4)),  # and its temporal half
    (8, 5, 1, 2, 0, 1, 1, True, (4, 6, 6)),  # a strided 1x1x1 shortcut
    (4, 4, 2, 1, 0, (1, 2, 1), 2, False, (5, 6, 5)),
    (6, 6, 3, 1, 1, 1, 6, True, (3, 5, 5)),  # depthwise
    (2, 3, 3, (2, 1, 2), 2, 2, 1, True, (6, 6, 7)),
]


@DTYPES
@pytest.mark.parametrize("case", GRID, ids=[str(i) for i in range(len(GRID))])
def test_conv3d_matches_torch(case, dtype) -> None:
    c, k, kernel, stride, pad, dil, groups, bias, dhw = case
    kernel3 = (kernel,) * 3 if isinstance(kernel, int) else kernel
    pad3 = (pad,) * 3 if isinstance(pad, int) else pad
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, c, *dhw)).astype(dtype)
    w = rng.standard_normal((k, c // groups, *kernel3)).astype(dtype)
    b = rng.standard_normal(k).astype(dtype) if bias else None
    want = F.conv3d(
        torch.from_numpy(x).double(),
        torch.from_numpy(w).double(),
        None if b is None else torch.from_numpy(b).double(),
        stride,
        pad,
        dil,
        groups,
    ).numpy()
    attrs = {
        "stride": (stride,) * 3 if isinstance(stride, int) else stride,
        "padding": tuple(p for p in pad3 for _ in range(2)),
        "dilation": (dil,) * 3 if isinstance(dil, int) else dil,
        "groups": groups,
    }
    algorithms = ai3.algorithms("cpu")["conv3d"]
    assert {"direct", "gemm", "guess"} <= set(algorithms)
    for algorithm in algorithms:
        if algorithm == "guess" and dtype == np.float64:
            continue  # oneDNN's convolution is float32 only (refused: below)
        layer = layers.Layer("conv3d", attrs, {"weight": w, "bias": b}, algorithm=algorithm, name="c3")
        _close(layer(x), want, TOL[dtype], algorithm)
        last = layers.Layer("conv3d", {**attrs, "layout": "NHWC"}, {"weight": w, "bias": b}, algorithm=algorithm)
        _close(last(_last(x)), _last(want), TOL[dtype], f"{algorithm} NDHWC")


# (kernel, stride, padding, dilation, ceil_mode, count_include_pad, divisor_override, dhw)
POOLS = [
    (2, 2, 0, 1, False, True, None, (4, 6, 6)),
    ((1, 3, 3), (1, 2, 2), (0, 1, 1), 1, False, True, None, (3, 9, 8)),  # S3D's stem pool
    (3, 1, 1, 1, False, False, None, (4, 5, 5)),  # and its branches'
    ((3, 3, 2), 2, (1, 1, 0), 1, True, True, None, (5, 7, 6)),
    ((3, 3, 2), 2, (1, 1, 0), 1, True, False, None, (5, 7, 6)),
    ((2, 3, 2), (1, 2, 2), (1, 1, 1), 1, False, True, 5, (4, 6, 5)),
    ((2, 2, 3), (2, 1, 2), (1, 0, 1), (2, 3, 1), True, True, None, (7, 7, 7)),
]


@DTYPES
@pytest.mark.parametrize("case", POOLS, ids=[str(i) for i in range(len(POOLS))])
def test_pool3d_matches_torch(case, dtype) -> None:
    kernel, stride, pad, dil, ceil, count_pad, divisor, dhw = case
    x = np.random.default_rng(2).standard_normal((2, 3, *dhw)).astype(dtype)
    x[0, 1, 1, 2, 2] = np.nan  # a NaN wins its max windows
    t = torch.from_numpy(x)
    three = lambda v: (v,) * 3 if isinstance(v, int) else v  # noqa: E731
    window = {
        "kernel": three(kernel),
        "stride": three(stride),
        "padding": tuple(p for p in three(pad) for _ in range(2)),
    }
    want = F.max_pool3d(t, kernel, stride, pad, dil, ceil_mode=ceil).numpy()
    attrs = {**window, "dilation": three(dil), "ceil_mode": ceil}
    _close(layers.Layer("maxpool3d", attrs, name="pool")(x), want, TOL[dtype], "max")
    _close(layers.Layer("maxpool3d", {**attrs, "layout": "NHWC"})(_last(x)), _last(want), TOL[dtype], "max NDHWC")
    if dil != 1:
        return  # average pooling has no dilation
    want = F.avg_pool3d(t, kernel, stride, pad, ceil, count_pad, divisor).numpy()
    attrs = {**window, "ceil_mode": ceil, "count_include_pad": count_pad, "divisor_override": divisor}
    _close(layers.Layer("avgpool3d", attrs, name="pool")(x), want, TOL[dtype], "avg")
    _close(layers.Layer("avgpool3d", {**attrs, "layout": "NHWC"})(_last(x)), _last(want), TOL[dtype], "avg NDHWC")


class Clip(nn.Module):
    """Conv3d -> BatchNorm3d -> ReLU (folded and fused), a functional max
    pool, an F.conv3d with its own weight and a fused SiLU, a residual add
    whose BatchNorm3d cannot fold, average and max pools, a global average
    and a classifier."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv3d(3, 8, (3, 5, 5), (1, 2, 2), (1, 2, 2), bias=False), nn.BatchNorm3d(8), nn.ReLU()
        )
        self.weight = nn.Parameter(torch.randn(8, 8, 3, 3, 3) * 0.1)
        self.bn = nn.BatchNorm3d(8)
        self.avg = nn.AvgPool3d(3, 1, 1, count_include_pad=False)
        self.max = nn.MaxPool3d((3, 3, 3), stride=1, padding=1)
        self.pool = nn.AdaptiveAvgPool3d(1)
        self.fc = nn.Linear(8, 5)

    def forward(self, x):
        h = F.max_pool3d(self.stem(x), (1, 3, 3), (1, 2, 2), (0, 1, 1))
        h = self.bn(h + F.silu(F.conv3d(h, self.weight, padding="same")))
        h = self.avg(h) + self.max(h)
        return self.fc(torch.flatten(self.pool(h), 1))


def _randomised(net: nn.Module) -> nn.Module:
    """Batch norms with statistics that are not the identity."""
    for m in net.modules():
        if isinstance(m, nn.BatchNorm3d):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 2.0)
            m.weight.data.uniform_(0.5, 1.5)
            m.bias.data.uniform_(-0.5, 0.5)
    return net.eval()


@pytest.mark.parametrize("algorithm", ["default", "direct", "gemm", "guess"])
def test_conv3d_modules_and_functions_swap(algorithm) -> None:
    torch.manual_seed(0)
    net = _randomised(Clip())
    x = torch.randn(2, 3, 4, 16, 16)
    model = ai3.swap_backend(net, {"conv3d": algorithm}, sample_input_shape=tuple(x.shape))
    with torch.no_grad():
        _close(model(x), net(x), 1e-4, algorithm)
    ops = [op for _, op, _ in model.layers()]
    assert ops.count("conv3d") == 2 and ops.count("batchnorm2d") == 1  # the stem's folds; the one after the add runs
    assert "relu" not in ops and "silu" not in ops  # both fused into their convs


def _export(net: nn.Module, x: torch.Tensor) -> bytes:
    buf = io.BytesIO()
    torch.onnx.export(net, x, buf, opset_version=17, dynamo=False)
    return buf.getvalue()


@pytest.mark.parametrize("name", ["r3d_18", "mc3_18", "r2plus1d_18", "s3d", "mvit_v1_b", "mvit_v2_s"])
def test_torchvision_video_models(name) -> None:
    """The video ResNets, S3D (its pools; the smallest clip its final
    (2, 7, 7) average takes) and MViT v1 (3-D conv pooling of attention,
    tensor_split, an in-place positional encoding) and v2 (relative
    position terms and shortcuts added into slices: `attn[:, :, 1:, 1:] +=
    rel_pos`), weights=None, in torch and, but for MViT, as ONNX exports
    (MViT's export ONNX Runtime itself cannot run: its pool_skip If node's
    output shapes)."""
    import onnxruntime as ort
    import torchvision

    import ai3.onnx

    torch.manual_seed(0)
    net = _randomised(getattr(torchvision.models.video, name)(weights=None))
    x = torch.randn(1, 3, 16, 224, 224) if name in ("s3d", "mvit_v1_b", "mvit_v2_s") else torch.randn(1, 3, 4, 32, 32)
    with torch.no_grad():
        want = net(x).numpy()
    _close(ai3.swap_backend(net, "default", sample_input_shape=tuple(x.shape))(x), want, 1e-4, "torch")
    if name.startswith("mvit"):
        return
    data = _export(net, x)
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    (ort_out,) = session.run(None, {session.get_inputs()[0].name: x.numpy()})
    model = ai3.onnx.swap_backend(data, "default", sample_input_shape=tuple(x.shape))
    _close(model(x.numpy()), ort_out, 1e-4, "onnx")


def test_keras_video_layers_match_keras() -> None:
    keras = pytest.importorskip("keras")
    inp = keras.Input((5, 17, 16, 3))
    h = keras.layers.Conv3D(6, 3, padding="same", activation="relu")(inp)
    h = keras.layers.BatchNormalization()(h)
    h = keras.layers.Conv3D(4, (2, 3, 3), strides=(1, 2, 2), padding="same", use_bias=False)(h)
    h = keras.layers.Conv3D(4, (2, 1, 1), padding="valid", dilation_rate=(2, 1, 1))(h)
    h = keras.layers.MaxPooling3D((1, 2, 2), padding="same")(h)
    h = keras.layers.Conv3D(8, (1, 3, 3), padding="valid", activation="relu")(h)
    h = keras.layers.AveragePooling3D((2, 2, 2), strides=1, padding="same")(h)
    h = keras.layers.GlobalAveragePooling3D()(h)
    out = keras.layers.Dense(3)(h)
    model = keras.Model(inp, out)
    bn = [layer for layer in model.layers if isinstance(layer, keras.layers.BatchNormalization)][0]
    rng = np.random.default_rng(3)
    bn.set_weights(
        [rng.uniform(0.5, 1.5, 6), rng.uniform(-0.5, 0.5, 6), rng.uniform(-0.5, 0.5, 6), rng.uniform(0.5, 2, 6)]
    )
    x = rng.standard_normal((2, 5, 17, 16, 3)).astype(np.float32)
    _close(ai3.keras.swap_backend(model)(x), np.asarray(model(x)), 1e-4)


def test_conv3d_refuses_bad_input() -> None:
    w = np.zeros((4, 2, 3, 3, 3), np.float32)
    layer = layers.Layer("conv3d", {"padding": (1,) * 6}, {"weight": w}, name="video.conv")
    with pytest.raises(ai3.ShapeError, match="video.conv.*has 3 channels, the layer expects 2"):
        layer(np.zeros((1, 3, 4, 4, 4), np.float32))
    with pytest.raises(ai3.ShapeError, match="video.conv.*expected a rank-5 NCDHW input"):
        layer(np.zeros((2, 4, 4, 4), np.float32))
    with pytest.raises(ai3.InvalidArgument, match="stride must have 3 values, got 2"):
        layers.Layer("conv3d", {"stride": (1, 1)}, {"weight": w}, name="video.conv")
    with pytest.raises(ai3.UnknownAlgorithm, match="winograd"):
        layers.Layer("conv3d", {}, {"weight": w}, algorithm="winograd")
    with pytest.raises(ai3.Error, match="float32 only"):
        layers.Layer("conv3d", {}, {"weight": w.astype(np.float64)}, algorithm="guess")
    pool = layers.Layer("maxpool3d", {"kernel": (2, 2, 2)}, name="video.pool")
    with pytest.raises(ai3.ShapeError, match="video.pool.*gives no output in depth"):
        pool(np.zeros((1, 2, 1, 4, 4), np.float32))
    with pytest.raises(ai3.InvalidArgument, match="padding should be at most half of kernel size"):
        layers.Layer("maxpool3d", {"kernel": (2, 2, 2), "padding": (0, 0, 2, 2, 0, 0)}, name="video.pool")
    with pytest.raises(ai3.DTypeError, match="video.pool"):
        pool(np.zeros((1, 2, 4, 4, 4), np.int64))


if __name__ == "__main__":
    pytest_main.run(__file__)
