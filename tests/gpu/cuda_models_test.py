"""resnet18, vgg16 and mobilenet_v2 (weights=None, eval) on the GPU:
swap_conv2d with each CUDA conv2d algorithm, and swap_backend (the whole
network as one ai3.Model of CUDA layers), against the unswapped model on
the same GPU. Batch 2 at 64x64 keeps it quick. Errors are relative to the
output's scale: float32 summed in another order through dozens of layers."""

from __future__ import annotations

import copy

import pytest
from gpu_env import REASON, SKIP

import ai3

pytestmark = SKIP

if REASON is None:
    import torch
    import torchvision

MODELS = ("resnet18", "vgg16", "mobilenet_v2")
CONV_ALGORITHMS = ("direct", "smm", "gemm", "implicit gemm", "implicit precomp gemm", "winograd", "fft", "guess")
_cache: dict = {}


def model_and_reference(name: str):
    if name not in _cache:
        torch.manual_seed(0)
        model = getattr(torchvision.models, name)(weights=None).eval().cuda()
        x = torch.randn(2, 3, 64, 64, device="cuda")
        with torch.no_grad():
            _cache[name] = (model, x, model(x))
    return _cache[name]


def assert_matches(got, want, tol: float, what: str) -> None:
    assert got.device == want.device, f"{what}: result on {got.device}"
    err = (got - want).abs().max().item()
    scale = want.abs().max().item()
    assert err <= tol * scale, f"{what}: max error {err:.3g} vs output scale {scale:.3g}"


def where_applicable(algorithm: str):
    """The algorithm on layers it takes (winograd: 3x3 stride 1; fft: stride
    1; both groups 1), the CUDA default elsewhere."""

    def select(conv) -> str:
        if not hasattr(conv, "stride"):  # not an nn.Conv2d: let the core decide
            return "default" if algorithm in ("winograd", "fft") else algorithm
        plain = conv.stride == (1, 1) and conv.dilation == (1, 1) and conv.groups == 1
        if algorithm == "winograd" and not (plain and conv.kernel_size == (3, 3)):
            return "default"
        if algorithm == "fft" and not plain:
            return "default"
        return algorithm

    return select


@pytest.mark.parametrize("algorithm", CONV_ALGORITHMS)
@pytest.mark.parametrize("name", MODELS)
def test_swap_conv2d_on_cuda(name, algorithm):
    model, x, want = model_and_reference(name)
    swapped = ai3.swap_conv2d(copy.deepcopy(model), where_applicable(algorithm))
    with torch.no_grad():
        got = swapped(x)
    torch.cuda.synchronize()
    assert_matches(got, want, 1e-3, f"{name} swap_conv2d {algorithm}")


@pytest.mark.parametrize("name", MODELS)
def test_swap_backend_on_cuda(name):
    model, x, want = model_and_reference(name)
    ai3_model = ai3.swap_backend(model, {"conv2d": "guess"})
    got = ai3_model(x)
    assert_matches(got, want, 1e-3, f"{name} swap_backend")
    # A second call reuses the plan, on another stream.
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        again = ai3_model(x)
    stream.synchronize()
    assert_matches(again, want, 1e-3, f"{name} swap_backend on a side stream")


def test_cpu_input_to_cuda_model_is_refused_clearly():
    model, x, _ = model_and_reference("resnet18")
    ai3_model = ai3.swap_backend(model)
    with pytest.raises(ai3.Error, match="cuda"):
        ai3_model(x.cpu())


if __name__ == "__main__":
    import pytest_main

    pytest_main.run(__file__)
