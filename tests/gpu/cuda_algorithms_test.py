"""Every CUDA algorithm of every op against PyTorch on the GPU, over a grid
of parameters (batch, channels, sizes, kernel, stride, padding, dilation,
groups, bias, dtype). Inputs stay on the GPU: the result must be a CUDA
tensor computed on the caller's stream."""

from __future__ import annotations

import itertools

import pytest
from gpu_env import REASON, SKIP, tolerance

import ai3

pytestmark = SKIP

if REASON is None:
    import torch
    import torch.nn.functional as F

DTYPES = ("float32", "float64")


def _cuda_algorithms(op: str) -> list[str]:
    return ai3.algorithms("cuda").get(op, []) if REASON is None else []


def _conv_cases():
    # (n, c, k, size, kernel, stride, padding, dilation, groups, bias): a
    # fixed sweep that moves every parameter at least once, small enough to
    # run every algorithm on each.
    base = dict(n=2, c=4, k=6, size=11, kernel=3, stride=1, padding=1, dilation=1, groups=1, bias=True)
    variations = [
        {},
        {"n": 1, "bias": False},
        {"c": 3, "k": 16, "size": 16},
        {"kernel": 1, "padding": 0},
        {"kernel": 5, "padding": 2},
        {"stride": 2},
        {"stride": 2, "padding": 0, "size": 12},
        {"dilation": 2, "padding": 2},
        {"groups": 2},
        {"groups": 4, "c": 8, "k": 8},  # depthwise-like
        {"size": 7, "kernel": 3, "padding": 0},
        {"c": 32, "k": 32, "size": 14},
    ]
    for v in variations:
        case = dict(base, **v)
        for dtype in DTYPES:
            yield pytest.param(case, dtype, id="-".join(f"{k}{v}" for k, v in case.items()) + f"-{dtype}")


def _on_gpu(build):
    with ai3.cuda.layer_device("cuda"):
        return build()


def _run_on_side_stream(layer, x):
    """Runs the layer on a non-default stream, as a caller with its own
    stream would, and waits for that stream only."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        y = layer(x)
    stream.synchronize()
    return y


@pytest.mark.parametrize("case,dtype", list(_conv_cases()))
def test_conv2d_every_cuda_algorithm(case, dtype):
    torch.manual_seed(0)
    t = getattr(torch, dtype)
    x = torch.randn(case["n"], case["c"], case["size"], case["size"], dtype=t, device="cuda")
    w = torch.randn(case["k"], case["c"] // case["groups"], case["kernel"], case["kernel"], dtype=t, device="cuda")
    b = torch.randn(case["k"], dtype=t, device="cuda") if case["bias"] else None
    want = F.conv2d(x, w, b, case["stride"], case["padding"], case["dilation"], case["groups"])
    ran = []
    for algorithm in _cuda_algorithms("conv2d"):
        try:
            layer = _on_gpu(
                lambda: ai3.layers.Conv2d(
                    w, b, case["stride"], case["padding"], case["dilation"], case["groups"], algorithm=algorithm
                )
            )
            got = _run_on_side_stream(layer, x)
        except ai3.AlgorithmNotApplicable:
            continue  # its WhyNot, or cuDNN refusing this shape: checked below
        assert got.device == x.device, algorithm
        torch.testing.assert_close(got, want, **tolerance(t), msg=lambda m: f"{algorithm}: {m}")
        ran.append(algorithm)
    # The ones that take every parameter set must have run.
    for always in ("direct", "guess", "implicit gemm"):
        assert always in ran, f"{always} refused {case} {dtype}"


def test_conv2d_algorithms_listed():
    names = set(_cuda_algorithms("conv2d"))
    assert {"direct", "smm", "gemm", "implicit gemm", "implicit precomp gemm", "winograd", "fft", "guess"} <= names


def test_conv2d_not_applicable_names_layer_and_reason():
    w = torch.randn(4, 4, 3, 3, device="cuda")
    with pytest.raises(ai3.AlgorithmNotApplicable, match="winograd.*stride"):
        _on_gpu(lambda: ai3.layers.Conv2d(w, None, stride=2, algorithm="winograd", name="c1"))


def test_fused_activation_on_cuda():
    torch.manual_seed(0)
    x = torch.randn(2, 4, 9, 9, device="cuda")
    w = torch.randn(8, 4, 3, 3, device="cuda")
    for algorithm in ("direct", "smm", "guess"):
        layer = _on_gpu(lambda: ai3.layers.Conv2d(w, None, 1, 1, algorithm=algorithm, activation="relu6"))
        torch.testing.assert_close(layer(x), F.conv2d(x, w, None, 1, 1).clamp(0, 6), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rows,bias", [((3,), True), ((2, 5), False), ((1,), True)])
def test_linear_gemm(rows, bias, dtype):
    torch.manual_seed(0)
    t = getattr(torch, dtype)
    x = torch.randn(*rows, 37, dtype=t, device="cuda")
    w = torch.randn(19, 37, dtype=t, device="cuda")
    b = torch.randn(19, dtype=t, device="cuda") if bias else None
    for algorithm in _cuda_algorithms("linear"):
        layer = _on_gpu(lambda: ai3.layers.Linear(w, b, algorithm=algorithm))
        torch.testing.assert_close(_run_on_side_stream(layer, x), F.linear(x, w, b), **tolerance(t))


ELEMENTWISE = {
    "relu": (lambda: ai3.layers.ReLU(), lambda x: torch.relu(x)),
    "clamp": (lambda: ai3.layers.Clamp(-0.5, 0.75), lambda x: x.clamp(-0.5, 0.75)),
    "sigmoid": (lambda: ai3.layers.Sigmoid(), lambda x: torch.sigmoid(x)),
    "silu": (lambda: ai3.layers.SiLU(), lambda x: F.silu(x)),
    "tanh": (lambda: ai3.layers.Tanh(), lambda x: torch.tanh(x)),
    "leaky_relu": (lambda: ai3.layers.Layer("leaky_relu", {"alpha": 0.2}, {}), lambda x: F.leaky_relu(x, 0.2)),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", sorted(ELEMENTWISE))
def test_elementwise(op, dtype):
    t = getattr(torch, dtype)
    x = torch.randn(3, 5, 7, 11, dtype=t, device="cuda")
    x[0, 0, 0, 0] = float("nan")
    make, ref = ELEMENTWISE[op]
    layer = _on_gpu(make)
    torch.testing.assert_close(_run_on_side_stream(layer, x), ref(x), equal_nan=True, **tolerance(t))


POOL_CASES = [
    # kernel, stride, padding, dilation, ceil_mode, size
    (2, 2, 0, 1, False, 8),
    (3, 2, 1, 1, False, 9),
    (3, 2, 1, 1, True, 10),
    (3, 1, 1, 2, False, 9),
    (2, 3, 1, 1, True, 11),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kernel,stride,padding,dilation,ceil_mode,size", POOL_CASES)
def test_pools(kernel, stride, padding, dilation, ceil_mode, size, dtype):
    t = getattr(torch, dtype)
    x = torch.randn(2, 3, size, size + 1, dtype=t, device="cuda")
    mp = _on_gpu(lambda: ai3.layers.MaxPool2d(kernel, stride, padding, dilation, ceil_mode))
    torch.testing.assert_close(mp(x), F.max_pool2d(x, kernel, stride, padding, dilation, ceil_mode), **tolerance(t))
    for include_pad, divisor in itertools.product((True, False), (None, 3)):
        ap = _on_gpu(lambda: ai3.layers.AvgPool2d(kernel, stride, padding, ceil_mode, include_pad, divisor))
        want = F.avg_pool2d(x, kernel, stride, padding, ceil_mode, include_pad, divisor)
        torch.testing.assert_close(ap(x), want, **tolerance(t))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("out", [(1, 1), (3, 2), (7, 7)])
def test_adaptiveavgpool2d(out, dtype):
    t = getattr(torch, dtype)
    x = torch.randn(2, 3, 10, 13, dtype=t, device="cuda")
    layer = _on_gpu(lambda: ai3.layers.AdaptiveAvgPool2d(out))
    torch.testing.assert_close(layer(x), F.adaptive_avg_pool2d(x, out), **tolerance(t))


@pytest.mark.parametrize("dtype", DTYPES)
def test_batchnorm2d_and_flatten(dtype):
    t = getattr(torch, dtype)
    x = torch.randn(2, 6, 5, 4, dtype=t, device="cuda")
    w, b, mean = (torch.randn(6, dtype=t, device="cuda") for _ in range(3))
    var = torch.rand(6, dtype=t, device="cuda") + 0.5
    bn = _on_gpu(lambda: ai3.layers.BatchNorm2d(w, b, mean, var, 1e-5))
    torch.testing.assert_close(bn(x), F.batch_norm(x, mean, var, w, b, False, 0.0, 1e-5), **tolerance(t))
    flat = _on_gpu(lambda: ai3.layers.Flatten(1, -1))
    torch.testing.assert_close(flat(x), x.flatten(1))


BINARY = {"Add": torch.add, "Sub": torch.sub, "Mul": torch.mul, "Div": torch.div} if REASON is None else {}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div"])
@pytest.mark.parametrize("a,b", [((2, 3, 4, 5), (2, 3, 4, 5)), ((2, 3, 4, 5), (3, 1, 1)), ((4, 1), (1, 6)), ((5,), ())])
def test_binary_broadcast(op, a, b, dtype):
    t = getattr(torch, dtype)
    x = torch.randn(*a, dtype=t, device="cuda")
    y = torch.rand(*b, dtype=t, device="cuda") + 0.5
    layer = _on_gpu(lambda: getattr(ai3.layers, op)())
    torch.testing.assert_close(layer(x, y), BINARY[op](x, y), **tolerance(t))
    with_constant = _on_gpu(lambda: getattr(ai3.layers, op)(y, reverse=True))
    torch.testing.assert_close(with_constant(x), BINARY[op](y, x), **tolerance(t))


def test_wrong_device_names_layer():
    layer = ai3.layers.ReLU(name="cpu_relu")  # a CPU layer
    with pytest.raises(ai3.InvalidArgument, match="cpu_relu.*cuda"):
        layer(torch.randn(3, device="cuda"))


if __name__ == "__main__":
    import pytest_main

    pytest_main.run(__file__)
