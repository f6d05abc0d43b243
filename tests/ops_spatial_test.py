"""The issue-17 ops (conv_transpose2d, resize, groupnorm, rmsnorm, lrn,
pad2d's modes, depth_to_space / space_to_depth, grid_sample; and Lp
pooling, composed of core ops) against the
frameworks' own results: each core op through ai3.layers.Layer against torch's
function over a grid of its parameters, every algorithm, float32 and
float64, NCHW and NHWC; the ONNX-only modes against ONNX Runtime through
ai3.onnx.swap_backend; a small U-Net (ConvTranspose2d + Upsample +
GroupNorm + PixelShuffle + reflect pads) through ai3.swap_backend and its
ONNX export; Keras' layers through ai3.keras.swap_backend; and bad input
refused with an ai3.Error naming the layer."""

from __future__ import annotations

import itertools

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


def _close(got, want, dtype, what=""):
    want = np.asarray(want)
    scale = max(1.0, float(np.abs(want).max(initial=0)))
    np.testing.assert_allclose(np.asarray(got), want, rtol=0, atol=TOL[dtype] * scale, err_msg=what)


def _nhwc(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a.transpose(0, 2, 3, 1))


def _rng(seed=0):
    return np.random.default_rng(seed)


# -- conv_transpose2d ---------------------------------------------------------

# (c, k, kernel, stride, padding, output_padding, dilation, groups, bias, hw)
DECONV = [
    (3, 4, 3, 1, 0, 0, 1, 1, True, (5, 4)),
    (4, 6, 4, 2, 1, 0, 1, 2, True, (3, 5)),  # DCGAN-style
    (2, 3, 2, 2, 0, 0, 1, 1, False, (4, 4)),  # U-Net up
    (4, 4, 3, 2, 1, 1, 1, 4, True, (5, 5)),  # depthwise, output_padding
    (3, 2, (3, 2), (3, 2), (2, 0), (2, 1), 1, 1, True, (4, 6)),
    (2, 3, 3, 1, 1, 1, 2, 1, True, (4, 4)),  # output_padding < dilation
    (6, 3, 3, 2, 2, 0, 2, 3, False, (4, 3)),
    (5, 7, 1, 1, 0, 0, 1, 1, True, (6, 6)),  # 1x1
]


@DTYPES
@pytest.mark.parametrize("case", DECONV, ids=[str(i) for i in range(len(DECONV))])
def test_conv_transpose2d_matches_torch(case, dtype) -> None:
    c, k, kernel, stride, pad, out_pad, dil, groups, bias, hw = case
    kh, kw = (kernel, kernel) if isinstance(kernel, int) else kernel
    rng = _rng(1)
    x = rng.standard_normal((2, c, *hw)).astype(dtype)
    w = rng.standard_normal((c, k // groups, kh, kw)).astype(dtype)
    b = rng.standard_normal(k).astype(dtype) if bias else None
    want = F.conv_transpose2d(
        torch.from_numpy(x).double(),
        torch.from_numpy(w).double(),
        None if b is None else torch.from_numpy(b).double(),
        stride,
        pad,
        out_pad,
        groups,
        dil,
    ).numpy()
    ph, pw = (pad, pad) if isinstance(pad, int) else pad
    attrs = {
        "stride": stride,
        "padding": (ph, ph, pw, pw),
        "output_padding": out_pad,
        "dilation": dil,
        "groups": groups,
    }
    for algorithm in ai3.algorithms("cpu")["conv_transpose2d"]:
        layer = layers.Layer("conv_transpose2d", attrs, {"weight": w, "bias": b}, algorithm=algorithm, name="up")
        _close(layer(x), want, dtype, algorithm)
        nhwc = layers.Layer(
            "conv_transpose2d", {**attrs, "layout": "NHWC"}, {"weight": w, "bias": b}, algorithm=algorithm
        )
        _close(nhwc(_nhwc(x)), _nhwc(want), dtype, f"{algorithm} NHWC")


def test_conv_transpose2d_has_three_algorithms() -> None:
    assert {"direct", "gemm", "zero_insert"} <= set(ai3.algorithms("cpu")["conv_transpose2d"])


def test_conv_transpose2d_module_swaps() -> None:
    net = nn.Sequential(nn.ConvTranspose2d(4, 3, 3, stride=2, padding=1, output_padding=1), nn.ReLU()).eval()
    x = torch.randn(2, 4, 5, 6)
    for algorithm in ("direct", "gemm", "zero_insert"):
        model = ai3.swap_backend(net, {"conv_transpose2d": algorithm})
        np.testing.assert_allclose(model(x), net(x).detach().numpy(), atol=1e-5)


# -- pad2d modes --------------------------------------------------------------

PADS = [(1, 1, 1, 1), (2, 0, 3, 1), (0, 3, 0, 2), (3, 3, 4, 4)]  # (left, right, top, bottom); 3/4 reach reflect's limit


@DTYPES
@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("pad", PADS, ids=[str(p) for p in PADS])
def test_pad_modes_match_torch(pad, mode, dtype) -> None:
    x = _rng(2).standard_normal((2, 3, 5, 4)).astype(dtype)
    want = F.pad(torch.from_numpy(x), pad, mode=mode).numpy()
    left, right, top, bottom = pad
    attrs = {"padding": (top, bottom, left, right), "mode": mode}
    _close(layers.Layer("pad2d", attrs, name="pad")(x), want, dtype)
    _close(layers.Layer("pad2d", {**attrs, "layout": "NHWC"})(_nhwc(x)), _nhwc(want), dtype)


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_pad_mode_gradient_matches_torch(mode) -> None:
    x = torch.randn(2, 3, 5, 4, dtype=torch.float64, requires_grad=True)
    pad = (2, 1, 3, 0)
    y = F.pad(x, pad, mode=mode)
    dy = torch.randn_like(y)
    (want,) = torch.autograd.grad(y, x, dy)
    attrs = {"padding": (3, 0, 2, 1), "mode": mode}
    got = layers.Layer("pad2d_backward_data", attrs)(dy.numpy(), x.detach().numpy(), y.detach().numpy())
    np.testing.assert_allclose(got, want.numpy(), atol=1e-12)


def test_pad_modules_and_functions_swap() -> None:
    class Pads(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.reflect = nn.ReflectionPad2d((1, 2, 2, 1))
            self.replicate = nn.ReplicationPad2d(2)
            self.circular = nn.CircularPad2d(1)
            self.conv = nn.Conv2d(3, 3, 3, padding=1, padding_mode="zeros")
            self.convs = nn.Sequential(
                *(nn.Conv2d(3, 3, 3, padding=(1, 2), padding_mode=m) for m in ("reflect", "replicate", "circular"))
            )

        def forward(self, x):
            x = self.circular(self.replicate(self.reflect(x)))
            x = F.pad(x, (1, 1, 2, 2), mode="reflect")
            return self.convs(self.conv(F.pad(x, (0, 1, 1, 0), mode="replicate")))

    net = Pads().eval()
    x = torch.randn(1, 3, 6, 5)
    np.testing.assert_allclose(ai3.swap_backend(net)(x), net(x).detach().numpy(), atol=1e-5)


# -- resize -------------------------------------------------------------------

INTERPOLATE = [
    # (input hw, size, scale_factor)
    ((4, 5), (8, 10), None),
    ((7, 6), (3, 4), None),
    ((5, 5), None, 2.0),
    ((5, 7), None, (1.5, 0.75)),
    ((6, 4), (1, 1), None),
    ((3, 3), None, 3.0),
]


@DTYPES
@pytest.mark.parametrize(
    "mode,align",
    [
        ("nearest", None),
        ("nearest-exact", None),
        ("bilinear", False),
        ("bilinear", True),
        ("bicubic", False),
        ("bicubic", True),
    ],
)
@pytest.mark.parametrize("case", INTERPOLATE, ids=[str(i) for i in range(len(INTERPOLATE))])
def test_interpolate_matches_torch(case, mode, align, dtype) -> None:
    hw, size, scale = case
    x = _rng(3).standard_normal((2, 3, *hw)).astype(dtype)
    want = F.interpolate(torch.from_numpy(x), size=size, scale_factor=scale, mode=mode, align_corners=align).numpy()
    attrs = ai3.torch.params.interpolate(size, scale, mode, align, None, x.shape, "up")
    _close(layers.Layer("resize", attrs, name="up")(x), want, dtype)
    _close(layers.Layer("resize", {**attrs, "layout": "NHWC"})(_nhwc(x)), _nhwc(want), dtype)


def test_upsample_modules_and_functions_swap() -> None:
    class Ups(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.up = nn.Upsample(scale_factor=2, mode="nearest")
            self.bilinear = nn.Upsample(size=(13, 11), mode="bilinear", align_corners=False)
            self.corners = nn.UpsamplingBilinear2d(scale_factor=1.5)
            self.nearest = nn.UpsamplingNearest2d(size=(9, 9))

        def forward(self, x):
            x = self.bilinear(self.up(x))
            x = F.interpolate(self.corners(x), scale_factor=0.5, mode="nearest-exact")
            return F.interpolate(self.nearest(x), size=(12, 10), mode="bilinear", align_corners=True)

    net = Ups().eval()
    x = torch.randn(2, 3, 5, 6)
    np.testing.assert_allclose(ai3.swap_backend(net)(x), net(x).numpy(), atol=1e-5)


# -- norms --------------------------------------------------------------------


@DTYPES
@pytest.mark.parametrize(
    "shape,groups", [((2, 6, 5, 4), 3), ((2, 6, 5, 4), 1), ((2, 6, 5, 4), 6), ((3, 8, 7), 4), ((1, 4, 2, 3, 2), 2)]
)
@pytest.mark.parametrize("affine", [True, False])
def test_groupnorm_matches_torch(shape, groups, affine, dtype) -> None:
    rng = _rng(4)
    x = rng.standard_normal(shape).astype(dtype) + 3
    c = shape[1]
    w = rng.standard_normal(c).astype(dtype) if affine else None
    b = rng.standard_normal(c).astype(dtype) if affine else None

    def t(v):
        return None if v is None else torch.from_numpy(v)

    want = F.group_norm(t(x), groups, t(w), t(b), eps=1e-3).numpy()
    weights = {"weight": w, "bias": b}
    _close(layers.Layer("groupnorm", {"groups": groups, "eps": 1e-3}, weights)(x), want, dtype)
    last = np.ascontiguousarray(np.moveaxis(x, 1, -1))
    got = layers.Layer("groupnorm", {"groups": groups, "eps": 1e-3, "layout": "NHWC"}, weights)(last)
    _close(np.moveaxis(got, -1, 1), want, dtype, "NHWC")


@pytest.mark.parametrize("affine", [True, False])
def test_instance_norm_matches_torch(affine) -> None:
    net = nn.Sequential(nn.InstanceNorm2d(4, affine=affine, eps=1e-4), nn.InstanceNorm1d(4 * 5)).eval()
    if affine:
        with torch.no_grad():
            net[0].weight.normal_()
            net[0].bias.normal_()

    class Flat(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a, self.b = net[0], net[1]

        def forward(self, x):
            y = self.a(x)
            return self.b(y.reshape(y.shape[0], 20, -1)) + F.instance_norm(x, eps=1e-5).reshape(x.shape[0], 20, -1)

    m = Flat().eval()
    x = torch.randn(2, 4, 5, 6)
    np.testing.assert_allclose(ai3.swap_backend(m, sample_input_shape=x.shape)(x), m(x).detach().numpy(), atol=1e-4)


def test_instance_norm_with_running_stats_is_refused() -> None:
    net = nn.Sequential(nn.InstanceNorm2d(3, track_running_stats=True)).eval()
    with pytest.raises(ai3.UnsupportedOperation, match="track_running_stats"):
        ai3.swap_backend(net)


@DTYPES
@pytest.mark.parametrize("shape,normalized", [((2, 3, 8), (8,)), ((4, 5, 6), (5, 6)), ((7, 16), (16,))])
@pytest.mark.parametrize("eps", [None, 1e-3])
@pytest.mark.parametrize("affine", [True, False])
def test_rmsnorm_matches_torch(shape, normalized, eps, affine, dtype) -> None:
    rng = _rng(5)
    x = rng.standard_normal(shape).astype(dtype)
    w = rng.standard_normal(normalized).astype(dtype) if affine else None
    attrs, weights = ai3.torch.params.rmsnorm(normalized, w, eps)
    # torch's eps=None is its input dtype's machine epsilon; the frontend's float32 one
    ref_eps = float(torch.finfo(torch.float32).eps) if eps is None else eps
    want = F.rms_norm(torch.from_numpy(x), normalized, None if w is None else torch.from_numpy(w), ref_eps).numpy()
    _close(layers.Layer("rmsnorm", attrs, weights)(x), want, dtype)


def test_rmsnorm_module_swaps() -> None:
    net = nn.Sequential(nn.Linear(8, 16), nn.RMSNorm(16), nn.Linear(16, 4)).eval()
    x = torch.randn(3, 5, 8)
    np.testing.assert_allclose(ai3.swap_backend(net)(x), net(x).detach().numpy(), atol=1e-5)


@DTYPES
@pytest.mark.parametrize("size", [1, 2, 3, 4, 5, 9])
def test_lrn_matches_torch(size, dtype) -> None:
    x = _rng(6).standard_normal((2, 7, 4, 5)).astype(dtype)
    want = F.local_response_norm(torch.from_numpy(x), size, alpha=0.3, beta=0.6, k=1.5).numpy()
    attrs = ai3.torch.params.lrn(size, 0.3, 0.6, 1.5)
    _close(layers.Layer("lrn", attrs)(x), want, dtype)
    _close(layers.Layer("lrn", {**attrs, "layout": "NHWC"})(_nhwc(x)), _nhwc(want), dtype)


def test_lrn_module_swaps() -> None:
    net = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.LocalResponseNorm(4, alpha=1e-3), nn.MaxPool2d(2)).eval()
    x = torch.randn(2, 3, 9, 9)
    np.testing.assert_allclose(ai3.swap_backend(net)(x), net(x).detach().numpy(), atol=1e-5)


# -- depth_to_space / space_to_depth -------------------------------------------


@DTYPES
@pytest.mark.parametrize("b", [1, 2, 3])
def test_pixel_shuffle_matches_torch(b, dtype) -> None:
    x = _rng(7).standard_normal((2, 2 * b * b, 3, 4)).astype(dtype)
    want = F.pixel_shuffle(torch.from_numpy(x), b).numpy()
    _close(layers.Layer("depth_to_space", {"blocksize": b, "mode": "CRD"})(x), want, dtype)
    nhwc = layers.Layer("depth_to_space", {"blocksize": b, "mode": "CRD", "layout": "NHWC"})
    _close(nhwc(_nhwc(x)), _nhwc(want), dtype)
    back = layers.Layer("space_to_depth", {"blocksize": b, "mode": "CRD"})(want)
    _close(back, F.pixel_unshuffle(torch.from_numpy(want), b).numpy(), dtype)
    np.testing.assert_array_equal(back, x)


def test_pixel_shuffle_modules_swap() -> None:
    net = nn.Sequential(nn.Conv2d(3, 12, 3, padding=1), nn.PixelShuffle(2), nn.PixelUnshuffle(2)).eval()
    x = torch.randn(1, 3, 6, 4)
    np.testing.assert_allclose(ai3.swap_backend(net)(x), net(x).detach().numpy(), atol=1e-5)


# -- ONNX: the modes only ONNX has, against ONNX Runtime ----------------------


def _onnx_single(op: str, x: np.ndarray, attrs: dict, inputs=(), opset: int = 19, initializers=()):
    import onnx
    from onnx import TensorProto, helper

    names = ["x", *[name for name, _ in inputs]]
    node = helper.make_node(op, names, ["y"], **attrs)
    inits = [onnx.numpy_helper.from_array(np.asarray(v), name) for name, v in inputs]
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None] * x.ndim)],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 9
    return model


def _ort(model, x):
    import onnxruntime as ort

    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


LP_POOLS = [
    ("LpPool", {"kernel_shape": [3, 3]}, (2, 3, 8, 8)),
    ("LpPool", {"kernel_shape": [3, 3], "p": 3, "strides": [2, 2], "pads": [1, 1, 1, 1]}, (1, 3, 8, 8)),
    ("LpPool", {"kernel_shape": [2, 2], "p": 1, "strides": [2, 2], "ceil_mode": 1}, (1, 2, 7, 7)),
    ("LpPool", {"kernel_shape": [3, 3], "auto_pad": "SAME_UPPER"}, (1, 2, 6, 6)),
    ("LpPool", {"kernel_shape": [3, 3], "pads": [2, 2, 2, 2]}, (1, 2, 5, 5)),  # pads past half the window
    ("LpPool", {"kernel_shape": [3], "p": 2}, (2, 3, 9)),
    ("GlobalLpPool", {"p": 3}, (2, 3, 5, 6)),
    ("GlobalLpPool", {}, (2, 3, 5)),
]


@pytest.mark.parametrize("op, attrs, shape", LP_POOLS, ids=[f"{o}-{a}" for o, a, _ in LP_POOLS])
def test_onnx_lp_pools_match_onnxruntime(op, attrs, shape):
    """(sum of |x|^p over the window)^(1/p), as abs, pow, a window sum
    (avgpool2d with divisor 1) or reduce_sum, and pow."""
    import ai3.onnx

    x = np.random.default_rng(len(shape)).standard_normal(shape).astype(np.float32)
    model = _onnx_single(op, x, attrs, opset=18)
    np.testing.assert_allclose(ai3.onnx.swap_backend(model)(x), _ort(model, x), rtol=1e-5, atol=1e-5)


def test_onnx_lp_pool_refusals_name_the_node():
    """A dilated window and a 3-D one: the core's average pool, which sums
    the window, has neither."""
    import ai3.onnx

    x = np.zeros((1, 2, 6, 6), np.float32)
    model = _onnx_single("LpPool", x, {"kernel_shape": [2, 2], "dilations": [2, 2]}, opset=19)
    with pytest.raises(ai3.UnsupportedOperation, match="LpPool.*dilations"):
        ai3.onnx.swap_backend(model)
    model = _onnx_single("LpPool", np.zeros((1, 2, 4, 4, 4), np.float32), {"kernel_shape": [2, 2, 2]}, opset=18)
    with pytest.raises(ai3.UnsupportedOperation, match="LpPool.*3-D window"):
        ai3.onnx.swap_backend(model)


@pytest.mark.parametrize(
    "norm_type, kernel, stride, ceil_mode", [(2, 3, None, False), (3, (2, 3), (1, 2), False), (1.5, 2, None, True)]
)
def test_torch_lp_pool2d(norm_type, kernel, stride, ceil_mode):
    """nn.LPPool2d (traced through to F.lp_pool2d) as torch computes it."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(3, 4, 1), nn.ReLU(), nn.LPPool2d(norm_type, kernel, stride, ceil_mode)).eval()
    model = ai3.swap_backend(net, sample_input_shape=(2, 3, 9, 9))
    for batch in (2, 3):
        x = torch.randn(batch, 3, 9, 9)
        with torch.no_grad():
            want = net(x)
        torch.testing.assert_close(model(x), want, atol=1e-5, rtol=1e-5)


RESIZE_ONNX = list(
    itertools.product(
        ["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"],
        ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"],
        [("scales", (1, 1, 2.0, 1.5)), ("scales", (1, 1, 0.6, 0.5)), ("sizes", (2, 3, 7, 3)), ("sizes", (2, 3, 1, 9))],
    )
)


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic", "cubic A=-0.5 exclude_outside"])
@pytest.mark.parametrize("case", RESIZE_ONNX, ids=[f"{c}-{r}-{k}{v}" for c, r, (k, v) in RESIZE_ONNX])
def test_onnx_resize_matches_onnxruntime(case, mode) -> None:
    coords, rounding, (kind, values) = case
    if mode != "nearest" and rounding != "round_prefer_floor":
        pytest.skip("nearest_mode only changes nearest")
    x = _rng(8).standard_normal((2, 3, 5, 6)).astype(np.float32)
    inputs = [("roi", np.zeros(0, np.float32)), ("scales", np.asarray(values if kind == "scales" else [], np.float32))]
    if kind == "sizes":
        inputs.append(("sizes", np.asarray(values, np.int64)))
    attrs = {"mode": mode.split()[0], "coordinate_transformation_mode": coords, "nearest_mode": rounding}
    if mode.endswith("exclude_outside"):
        attrs.update(cubic_coeff_a=-0.5, exclude_outside=1)
    model = _onnx_single("Resize", x, attrs, inputs)
    np.testing.assert_allclose(ai3.onnx.swap_backend(model)(x), _ort(model, x), atol=1e-5)


@pytest.mark.parametrize("mode", ["nearest", "linear"])
@pytest.mark.parametrize("rounding", ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"])
@pytest.mark.parametrize("scales", [(1, 1, 0.6, 0.5), (1, 1, 2.0, 1.5), (1, 1, 0.7, 1.3), (1, 1, 1.7, 0.45)], ids=str)
def test_onnx_resize_half_pixel_symmetric(scales, rounding, mode) -> None:
    # Against ONNX's reference implementation, which computes the formula
    # as written; ONNX Runtime floors one coordinate that is exactly 2
    # (5 rows scaled by 0.6, output row 1) to 1, a rounding of its own.
    from onnx.reference import ReferenceEvaluator

    x = _rng(25).standard_normal((1, 2, 5, 6)).astype(np.float32)
    inputs = [("roi", np.zeros(0, np.float32)), ("scales", np.asarray(scales, np.float32))]
    attrs = {"mode": mode, "coordinate_transformation_mode": "half_pixel_symmetric", "nearest_mode": rounding}
    model = _onnx_single("Resize", x, attrs, inputs)
    want = ReferenceEvaluator(model).run(None, {"x": x})[0]
    np.testing.assert_allclose(ai3.onnx.swap_backend(model)(x), want, atol=1e-5)
    if mode == "linear":
        np.testing.assert_allclose(ai3.onnx.swap_backend(model)(x), _ort(model, x), atol=1e-5)


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap"])
def test_onnx_pad_modes_match_onnxruntime(mode) -> None:
    x = _rng(9).standard_normal((1, 2, 5, 4)).astype(np.float32)
    pads = np.asarray([0, 0, 2, 3, 0, 0, 1, 2], np.int64)
    model = _onnx_single("Pad", x, {"mode": mode}, [("pads", pads)])
    np.testing.assert_allclose(ai3.onnx.swap_backend(model)(x), _ort(model, x), atol=1e-6)


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_onnx_depth_to_space_matches_onnxruntime(mode) -> None:
    x = _rng(10).standard_normal((2, 8, 3, 2)).astype(np.float32)
    model = _onnx_single("DepthToSpace", x, {"blocksize": 2, "mode": mode})
    np.testing.assert_array_equal(ai3.onnx.swap_backend(model)(x), _ort(model, x))
    s2d = _onnx_single("SpaceToDepth", x, {"blocksize": 1})
    np.testing.assert_array_equal(ai3.onnx.swap_backend(s2d)(x), _ort(s2d, x))
    y = _rng(11).standard_normal((2, 2, 6, 4)).astype(np.float32)
    s2d = _onnx_single("SpaceToDepth", y, {"blocksize": 2})
    np.testing.assert_array_equal(ai3.onnx.swap_backend(s2d)(y), _ort(s2d, y))


@pytest.mark.parametrize("size", [1, 2, 3, 4, 5])
def test_onnx_lrn_matches_onnxruntime(size) -> None:
    x = _rng(12).standard_normal((2, 6, 3, 3)).astype(np.float32)
    model = _onnx_single("LRN", x, {"size": size, "alpha": 0.2, "beta": 0.7, "bias": 1.3})
    got = ai3.onnx.swap_backend(model)(x)
    if size % 2:
        np.testing.assert_allclose(got, _ort(model, x), atol=1e-5)
        return
    # ONNX Runtime takes odd sizes only; the spec's window for even ones is
    # [c - (size - 1) // 2, c + size // 2] (torch's starts one earlier).
    sq = np.pad(x.astype(np.float64) ** 2, ((0, 0), ((size - 1) // 2, size // 2), (0, 0), (0, 0)))
    window = sum(sq[:, i : i + x.shape[1]] for i in range(size))
    np.testing.assert_allclose(got, x / (1.3 + 0.2 / size * window) ** 0.7, atol=1e-5)


@pytest.mark.parametrize(
    "case",
    [
        {"strides": [2, 2], "pads": [1, 0, 1, 2], "output_padding": [1, 0]},
        {"strides": [2, 2], "auto_pad": "SAME_UPPER"},
        {"strides": [2, 3], "auto_pad": "SAME_LOWER"},
        {"strides": [3, 2], "output_shape": [10, 6]},
        {"strides": [1, 1], "dilations": [2, 2], "group": 2, "auto_pad": "VALID"},
    ],
    ids=range(5),
)
def test_onnx_conv_transpose_matches_onnxruntime(case) -> None:
    x = _rng(13).standard_normal((1, 4, 4, 3)).astype(np.float32)
    groups = case.get("group", 1)
    w = _rng(14).standard_normal((4, 6 // groups, 3, 3)).astype(np.float32)
    b = _rng(15).standard_normal(6).astype(np.float32)
    model = _onnx_single("ConvTranspose", x, case, [("w", w), ("b", b)])
    np.testing.assert_allclose(ai3.onnx.swap_backend(model)(x), _ort(model, x), atol=1e-4)


def test_onnx_conv_transpose_1d_matches_onnxruntime() -> None:
    x = _rng(18).standard_normal((2, 4, 7)).astype(np.float32)
    w = _rng(19).standard_normal((4, 3, 3)).astype(np.float32)
    b = _rng(20).standard_normal(3).astype(np.float32)
    for case in ({"strides": [2], "pads": [1, 0], "output_padding": [1]}, {"strides": [3], "output_shape": [22]}):
        model = _onnx_single("ConvTranspose", x, case, [("w", w), ("b", b)])
        np.testing.assert_allclose(ai3.onnx.swap_backend(model)(x), _ort(model, x), atol=1e-4)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_onnx_layer_norm_statistics_match_onnxruntime(axis) -> None:
    # Y, Mean and InvStdDev (over the axes from `axis`, the batch's too).
    import onnx
    from onnx import TensorProto, helper

    x = _rng(21).standard_normal((2, 3, 4)).astype(np.float32) * 3 + 1
    trailing = x.shape[axis:]
    scale, bias = _rng(22).standard_normal(trailing).astype(np.float32), _rng(23).standard_normal(trailing)
    node = helper.make_node("LayerNormalization", ["x", "s", "b"], ["y", "mean", "inv"], axis=axis, epsilon=1e-3)
    kept = [d if i < axis % 3 else 1 for i, d in enumerate(x.shape)]
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [
            helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
            for n, s in (("y", x.shape), ("mean", kept), ("inv", kept))
        ],
        [onnx.numpy_helper.from_array(scale, "s"), onnx.numpy_helper.from_array(bias.astype(np.float32), "b")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    import onnxruntime as ort

    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    got = ai3.onnx.swap_backend(model)(x)
    assert len(got) == 3
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mode", ["nearest", "linear"])
@pytest.mark.parametrize("axes,scales", [([2, 3], [2.0, 1.5]), ([3, 2], [0.5, 3.0]), ([-1], [2.0])])
def test_onnx_resize_axes_match_onnxruntime(axes, scales, mode) -> None:
    x = _rng(24).standard_normal((1, 2, 4, 6)).astype(np.float32)
    inputs = [("roi", np.zeros(0, np.float32)), ("scales", np.asarray(scales, np.float32))]
    model = _onnx_single("Resize", x, {"mode": mode, "axes": axes}, inputs)
    np.testing.assert_allclose(ai3.onnx.swap_backend(model)(x), _ort(model, x), atol=1e-5)


def test_onnx_norms_match_onnxruntime() -> None:
    x = _rng(16).standard_normal((2, 6, 4, 3)).astype(np.float32)
    rng = _rng(17)
    s, b = rng.standard_normal(6).astype(np.float32), rng.standard_normal(6).astype(np.float32)
    model = _onnx_single("InstanceNormalization", x, {"epsilon": 1e-3}, [("s", s), ("b", b)])
    np.testing.assert_allclose(ai3.onnx.swap_backend(model)(x), _ort(model, x), atol=1e-4)
    model = _onnx_single("GroupNormalization", x, {"num_groups": 3, "epsilon": 1e-3}, [("s", s), ("b", b)], opset=21)
    np.testing.assert_allclose(ai3.onnx.swap_backend(model)(x), _ort(model, x), atol=1e-4)
    scale = rng.standard_normal((4, 3)).astype(np.float32)
    model = _onnx_single("RMSNormalization", x, {"axis": 2, "epsilon": 1e-4}, [("s", scale)], opset=23)
    np.testing.assert_allclose(ai3.onnx.swap_backend(model)(x), _ort(model, x), atol=1e-4)
    # From axis 0: over the batch too (the scale fixes its size).
    scale = rng.standard_normal(x.shape).astype(np.float32)
    model = _onnx_single("RMSNormalization", x, {"axis": 0}, [("s", scale)], opset=23)
    np.testing.assert_allclose(ai3.onnx.swap_backend(model)(x), _ort(model, x), atol=1e-4)


def test_onnx_in_graph_swaps_of_every_new_op() -> None:
    """Each op swapped into an "ai3"-domain node (ai3.onnx.swap_operation),
    run by ONNX Runtime, against the original graph."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = _rng(19)
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    inits = [
        numpy_helper.from_array(v, k)
        for k, v in {
            "w": f32(4, 8, 3, 3),
            "wb": f32(8),
            "pads": np.asarray([0, 0, 1, 2, 0, 0, 2, 1], np.int64),
            "roi": np.zeros(0, np.float32),
            "scales": np.asarray([1, 1, 2, 2], np.float32),
            "s": f32(8),
            "b": f32(8),
        }.items()
    ]
    n = helper.make_node
    nodes = [
        n("ConvTranspose", ["x", "w", "wb"], ["ct"], strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 0]),
        n("Pad", ["ct", "pads"], ["pd"], mode="reflect"),
        n("Resize", ["pd", "roi", "scales"], ["rs"], mode="linear"),
        n("InstanceNormalization", ["rs", "s", "b"], ["inorm"]),
        n("LRN", ["inorm"], ["lrn"], size=3),
        n("SpaceToDepth", ["lrn"], ["sd"], blocksize=2),
        n("DepthToSpace", ["sd"], ["ds"], blocksize=2, mode="CRD"),
        # last: ONNX's shape inference types no output of this function op
        n("GroupNormalization", ["ds", "s", "b"], ["y"], num_groups=4),
    ]
    graph = helper.make_graph(
        nodes,
        "issue17",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 18, 20])],
        inits,
    )
    original = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    original.ir_version = 10
    onnx.checker.check_model(original)
    x = f32(1, 4, 3, 4)
    ref = _ort(original, x)
    everything = original
    for op in ("conv_transpose2d", "pad2d", "resize", "groupnorm", "lrn", "space_to_depth", "depth_to_space"):
        model = ai3.onnx.swap_operation(op, original, "default")
        assert any(node.domain == "ai3" for node in model.graph.node), op
        np.testing.assert_allclose(ai3.onnx.InferenceSession(model).run(None, {"x": x})[0], ref, atol=1e-4, err_msg=op)
        everything = ai3.onnx.swap_operation(op, everything, "default")
    # Every node is ai3's, but for the Transposes into NHWC and back (the
    # default layout) at the ends of the chain.
    assert {node.op_type for node in everything.graph.node if node.domain != "ai3"} <= {"Transpose"}
    np.testing.assert_allclose(ai3.onnx.InferenceSession(everything).run(None, {"x": x})[0], ref, atol=1e-4)
    np.testing.assert_allclose(ai3.onnx.swap_backend(original)(x), ref, atol=1e-4)


# -- a small U-Net, in torch and through its ONNX export ------------------------


class TinyUNet(nn.Module):
    """Down by a strided conv, up by ConvTranspose2d and by Upsample, with
    GroupNorm, reflect pads and a PixelShuffle head."""

    def __init__(self) -> None:
        super().__init__()
        self.enc = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, padding_mode="zeros"), nn.GroupNorm(4, 8), nn.ReLU())
        self.down = nn.Sequential(nn.ReflectionPad2d(1), nn.Conv2d(8, 16, 3, stride=2), nn.GroupNorm(8, 16), nn.SiLU())
        self.up = nn.ConvTranspose2d(16, 8, 2, stride=2)
        self.up2 = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
        self.mix = nn.Conv2d(16 + 8, 8, 1)
        self.head = nn.Sequential(nn.Conv2d(8, 12, 3, padding=1), nn.PixelShuffle(2), nn.InstanceNorm2d(3, affine=True))

    def forward(self, x):
        e = self.enc(x)
        d = self.down(e)
        u = torch.cat([self.up(d) + e, self.up2(d)], dim=1)
        return self.head(F.relu(self.mix(u)))


def test_unet_swap_backend_and_onnx_export(tmp_path) -> None:
    torch.manual_seed(0)
    net = TinyUNet().eval()
    x = torch.randn(2, 3, 16, 12)
    want = net(x).detach().numpy()
    np.testing.assert_allclose(ai3.swap_backend(net)(x), want, atol=1e-4)
    path = str(tmp_path / "unet.onnx")
    torch.onnx.export(net, (x,), path, opset_version=18, dynamo=False)
    model = ai3.onnx.swap_backend(path)
    np.testing.assert_allclose(model(x.numpy()), want, atol=1e-4)


# -- Keras ---------------------------------------------------------------------


def test_keras_layers_match_keras() -> None:
    keras = pytest.importorskip("keras")
    inp = keras.Input((6, 5, 4))
    h = keras.layers.Conv2DTranspose(6, 3, strides=2, padding="same")(inp)
    h = keras.layers.GroupNormalization(groups=3)(h)
    h = keras.layers.Conv2DTranspose(4, (3, 2), strides=(2, 1), padding="valid", activation="relu")(h)
    h = keras.layers.UpSampling2D(2)(h)
    h = keras.layers.UpSampling2D((1, 2), interpolation="bilinear")(h)
    h = keras.layers.Resizing(9, 7)(h)
    h = keras.layers.Conv2DTranspose(3, 3, strides=2, padding="same", output_padding=1)(h)
    out = keras.layers.Resizing(5, 8, interpolation="nearest")(h)
    model = keras.Model(inp, out)
    x = _rng(18).standard_normal((2, 6, 5, 4)).astype(np.float32)
    np.testing.assert_allclose(ai3.keras.swap_backend(model)(x), np.asarray(model(x)), atol=1e-4)


# -- errors ---------------------------------------------------------------------

BAD = [
    (
        "conv_transpose2d",
        {"stride": 2, "output_padding": -1},
        {"weight": np.zeros((2, 3, 3, 3), np.float32)},
        (1, 2, 4, 4),
        ai3.InvalidArgument,
        "output_padding",
    ),
    (
        "conv_transpose2d",
        {},
        {"weight": np.zeros((2, 3, 3, 3), np.float32)},
        (1, 3, 4, 4),
        ai3.ShapeError,
        "3 channels",
    ),
    ("pad2d", {"padding": (4, 0, 0, 0), "mode": "reflect"}, {}, (1, 1, 4, 4), ai3.InvalidArgument, "reflect padding"),
    ("resize", {"scale": (0.1, 0.1)}, {}, (1, 1, 4, 4), ai3.ShapeError, "scaled by"),
    ("resize", {}, {}, (1, 1, 4, 4), ai3.InvalidArgument, "needs a size or a scale"),
    ("groupnorm", {"groups": 4}, {}, (1, 6, 4, 4), ai3.ShapeError, "not divisible into 4 groups"),
    ("groupnorm", {"groups": 1}, {"weight": np.ones(5, np.float32)}, (1, 6, 4, 4), ai3.ShapeError, "the weights 5"),
    ("rmsnorm", {}, {"weight": np.ones(5, np.float32)}, (2, 4), ai3.ShapeError, "weights are shaped"),
    ("lrn", {"size": 3}, {}, (2, 4), ai3.ShapeError, "rank >= 3"),
    ("lrn", {"size": 0}, {}, (2, 4, 1), ai3.InvalidArgument, "size must be >= 1"),
    ("depth_to_space", {"blocksize": 2}, {}, (1, 6, 2, 2), ai3.ShapeError, "not divisible by blocksize"),
    ("space_to_depth", {"blocksize": 2}, {}, (1, 2, 3, 4), ai3.ShapeError, "not divisible by blocksize 2"),
]


@pytest.mark.parametrize("op,attrs,weights,shape,error,message", BAD, ids=[f"{b[0]}-{i}" for i, b in enumerate(BAD)])
def test_bad_input_names_the_layer(op, attrs, weights, shape, error, message) -> None:
    with pytest.raises(error, match=message) as info:
        layers.Layer(op, attrs, weights, name="bad_layer")(np.zeros(shape, np.float32))
    assert "bad_layer" in str(info.value)


def test_unsupported_framework_modes_are_refused() -> None:
    with pytest.raises(ai3.UnsupportedOperation, match="area"):
        ai3.swap_backend(nn.Sequential(nn.Upsample(scale_factor=2, mode="area")), sample_input_shape=(1, 1, 4, 4))
    deconv = nn.ConvTranspose2d(2, 2, 3)
    deconv.padding_mode = "reflect"  # torch refuses it at forward; ai3 when mapping
    with pytest.raises(ai3.UnsupportedOperation, match="padding_mode='reflect'"):
        ai3.swap_backend(nn.Sequential(deconv))


# -- grid_sample ----------------------------------------------------------------

GRID_SAMPLES = [
    (dims, mode, padding, align)
    for dims in (2, 3)
    for mode in (("bilinear", "nearest", "bicubic") if dims == 2 else ("bilinear", "nearest"))
    for padding in ("zeros", "border", "reflection")
    for align in (False, True)
]


@DTYPES
@pytest.mark.parametrize("case", GRID_SAMPLES, ids=["-".join(map(str, c)) for c in GRID_SAMPLES])
def test_grid_sample_matches_torch(case, dtype) -> None:
    """Points inside, on the edges and up to 30% outside the input, in
    every mode, padding and align_corners, 2-D and 3-D, both layouts."""
    dims, mode, padding, align = case
    rng = _rng(11)
    x = rng.standard_normal((2, 3, 5, 6) if dims == 2 else (2, 3, 4, 5, 6)).astype(dtype)
    grid = rng.uniform(-1.3, 1.3, (2, 4, 7, 2) if dims == 2 else (2, 3, 4, 5, 3)).astype(dtype)
    grid.reshape(-1)[:4] = (-1, 1, 0, 0.5)  # the corners and a tie nearest rounds to even
    want = F.grid_sample(
        torch.from_numpy(x), torch.from_numpy(grid), mode=mode, padding_mode=padding, align_corners=align
    ).numpy()
    attrs = {"mode": mode, "padding_mode": padding, "align_corners": align}
    _close(layers.Layer("grid_sample", attrs, name="warp")(x, grid), want, dtype)
    last = np.ascontiguousarray(np.moveaxis(x, 1, -1))
    _close(layers.Layer("grid_sample", {**attrs, "layout": "NHWC"})(last, grid), np.moveaxis(want, 1, -1), dtype)


class Warp(nn.Module):
    """A spatial transformer's shape: a grid computed from the image (a
    conv's output squashed into [-1.2, 1.2]), then the image sampled there."""

    def __init__(self, mode: str, padding: str) -> None:
        super().__init__()
        self.flow = nn.Conv2d(3, 2, 3, padding=1)
        self.mode, self.padding = mode, padding

    def forward(self, x):
        grid = 1.2 * torch.tanh(self.flow(x)).permute(0, 2, 3, 1)
        return F.grid_sample(x, grid, mode=self.mode, padding_mode=self.padding, align_corners=False)


@pytest.mark.parametrize("mode,padding", [("bilinear", "zeros"), ("nearest", "border"), ("bicubic", "reflection")])
def test_grid_sample_in_torch_and_onnx_models(mode, padding, tmp_path) -> None:
    torch.manual_seed(0)
    net = Warp(mode, padding).eval()
    x = torch.randn(2, 3, 8, 9)
    with torch.no_grad():
        want = net(x).numpy()
    model = ai3.swap_backend(net, sample_input_shape=tuple(x.shape))
    np.testing.assert_allclose(model(x), want, atol=1e-5)
    assert "grid_sample" in [op for _, op, _ in model.layers()]
    path = tmp_path / "warp.onnx"
    torch.onnx.export(net, (x,), path, opset_version=20, dynamo=False, input_names=["x"])
    import onnxruntime as ort

    ort_out = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x.numpy()})[0]
    got = ai3.onnx.swap_backend(str(path), sample_input_shape=tuple(x.shape))(x.numpy())
    np.testing.assert_allclose(got, ort_out, atol=1e-5)


def test_grid_sample_refuses_bad_input_naming_the_layer() -> None:
    warp = layers.Layer("grid_sample", {}, name="stn.warp")
    x = np.zeros((1, 2, 3, 4), np.float32)
    with pytest.raises(ai3.ShapeError, match=r"stn.warp.*the grid \(1, 2, 3, 3\) must be \(N, out spatial..., 2\)"):
        warp(x, np.zeros((1, 2, 3, 3), np.float32))
    with pytest.raises(ai3.InvalidArgument, match="stn.warp.*bicubic sampling takes a rank-4 input"):
        layers.Layer("grid_sample", {"mode": "bicubic"}, name="stn.warp")(
            np.zeros((1, 2, 2, 3, 4), np.float32), np.zeros((1, 2, 2, 2, 3), np.float32)
        )
    with pytest.raises(ai3.InvalidArgument, match="padding_mode"):
        layers.Layer("grid_sample", {"padding_mode": "wrap"}, name="stn.warp")


if __name__ == "__main__":
    pytest_main.run(__file__)
