"""torchvision models (weights=None, eval mode) swapped with ai3 against the
unswapped model: swap_conv2d with each conv2d algorithm, and swap_backend on
every model whose operations the core has.

Inputs are small where a model allows (128x128; inception_v3 needs
299x299) and the batch is 1, to keep the suite fast. Outputs are compared
relative to the output's scale: max|ai3 - torch| <= tol * max(|torch|)
with tol 1e-4 (float32 summed in another order through dozens of layers),
5e-3 for winograd, whose tile transforms lose a few bits per layer.
"""

from __future__ import annotations

import copy

import pytest
import torch
import torchvision

import ai3
import pytest_main

torch.set_num_threads(2)

MODELS = {
    # name: (constructor kwargs, input size)
    "alexnet": ({}, 128),
    "vgg11": ({}, 128),
    "resnet18": ({}, 128),
    "squeezenet1_1": ({}, 128),
    "googlenet": ({"init_weights": False, "aux_logits": False}, 128),
    "inception_v3": ({"init_weights": False, "aux_logits": False}, 299),
    "densenet121": ({}, 128),
    "mobilenet_v2": ({}, 128),
    "shufflenet_v2_x1_0": ({}, 128),
}

# The core lacks an operation these use; swap_backend must say which.
NOT_YET = {
    "shufflenet_v2_x1_0": "tensor method .size.",  # channel shuffle: size/view/transpose
}

_cache: dict[str, tuple] = {}


def model_and_reference(name: str):
    """(model, input, output) built once per process: the model with
    weights=None and a fixed seed, in eval mode."""
    if name not in _cache:
        kwargs, size = MODELS[name]
        torch.manual_seed(0)
        model = getattr(torchvision.models, name)(weights=None, **kwargs).eval()
        x = torch.randn(1, 3, size, size)
        with torch.inference_mode():
            _cache[name] = (model, x, model(x))
    return _cache[name]


def assert_matches(got: torch.Tensor, want: torch.Tensor, tol: float, what: str) -> None:
    err = (got - want).abs().max().item()
    scale = want.abs().max().item()
    assert err <= tol * scale, f"{what}: max error {err:.3g} vs output scale {scale:.3g}"


def applicable(algorithm: str):
    """A selector: `algorithm` where the core takes the layer, else the
    core's default (so a model with stride-2 layers still runs winograd
    wherever winograd applies)."""

    def select(conv: torch.nn.Conv2d) -> str:
        return algorithm if ai3.torch.applicable(conv, algorithm) else "default"

    return select


CONV_ALGORITHMS = [a for a in ai3.algorithms()["conv2d"] if a != "custom"]


@pytest.mark.parametrize("algorithm", CONV_ALGORITHMS)
@pytest.mark.parametrize("name", list(MODELS))
def test_swap_conv2d(name: str, algorithm: str) -> None:
    model, x, want = model_and_reference(name)
    swapped = copy.deepcopy(model)
    convs = [m for m in swapped.modules() if type(m) is torch.nn.Conv2d]
    # First the plain name: every layer it cannot take must be refused.
    try:
        ai3.swap_conv2d(copy.deepcopy(model), algorithm)
    except ai3.AlgorithmNotApplicable as e:
        assert "cannot take this layer" in str(e)
    ai3.swap_conv2d(swapped, applicable(algorithm))
    chosen = ai3.torch.chosen_algorithms(swapped)
    assert len(chosen) == len(convs)
    assert any(algo == algorithm for _, _, algo in chosen), chosen
    with torch.inference_mode():
        got = swapped(x)
    assert_matches(got, want, 5e-3 if algorithm == "winograd" else 1e-4, f"{name} swap_conv2d {algorithm}")


@pytest.mark.parametrize("name", list(MODELS))
def test_swap_backend(name: str) -> None:
    model, x, want = model_and_reference(name)
    if name in NOT_YET:
        with pytest.raises(ai3.UnsupportedOperation, match=NOT_YET[name]):
            ai3.swap_backend(model)
        return
    swapped = ai3.swap_backend(model)
    assert_matches(swapped(x), want, 1e-4, f"{name} swap_backend")


if __name__ == "__main__":
    pytest_main.run(__file__)


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
def test_torch_compile_on_swapped_resnet18(backend: str) -> None:
    """A swapped model stays a normal nn.Module: torch.compile traces the
    ai3 custom ops (with their fake kernels) as graph nodes, no graph breaks."""
    torch.manual_seed(0)
    model = torchvision.models.resnet18(weights=None).eval()
    x = torch.randn(2, 3, 64, 64)
    with torch.inference_mode():
        want = model(x)
    ai3.swap_conv2d(model, ["winograd" if ai3.torch.applicable(c, "winograd") else "gemm" for c in model.modules() if type(c) is torch.nn.Conv2d])
    ai3.swap_linear(model)
    compiled = torch.compile(model, backend=backend, fullgraph=True)
    with torch.no_grad():
        got = compiled(x)
        again = compiled(torch.cat([x, x]))  # another batch size
    assert_matches(got, want, 5e-3, f"torch.compile({backend})")
    assert_matches(again[:2], want, 5e-3, f"torch.compile({backend}), batch 4")
