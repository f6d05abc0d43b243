"""torchvision models (weights=None, eval mode) swapped with ai3 against the
unswapped model: swap_conv2d with each conv2d algorithm on the CNNs, and
swap_backend ("default" everywhere) on one model of every torchvision
classification family (ai3.torch.coverage.FAMILIES).

Inputs are small where a model allows (64x64, swin included; inception_v3
75x75; maxvit 224x224, which its partitions need; ViT with image_size 64)
and the batch is 2, to keep the suite fast. Outputs are compared relative to
the output's scale: max|ai3 - torch| <= tol * max(|torch|), float32, with
tol 1e-4 (float32 summed in another order through dozens of layers; about
1e-6 is measured), 5e-3 for winograd, whose tile transforms lose a few bits
per layer. The models' zero classifiers, 1e-6 layer scales and identity
batch norms are made random first (coverage.make_informative), or a wrong
result could match.
"""

from __future__ import annotations

import copy

import pytest
import pytest_main
import torch
import torchvision

import ai3
from ai3.torch import coverage

torch.set_num_threads(2)

FAMILIES = coverage.FAMILIES

# swap_conv2d with every algorithm: the plain CNNs (the other families'
# convolutions are the same layers, and their ops are not conv2d's business).
CONV_FAMILIES = [
    "alexnet",
    "vgg",
    "resnet",
    "squeezenet",
    "googlenet",
    "inception_v3",
    "densenet",
    "mobilenet_v2",
    "shufflenet_v2",
]

# The core lacks an operation these use; swap_backend must say which.
NOT_YET: dict[str, str] = {}

_cache: dict[str, tuple] = {}


def model_and_reference(family: str):
    """(model, input, output) built once per process: the model with
    weights=None and a fixed seed, in eval mode, on a batch of 2."""
    if family not in _cache:
        model, x = coverage.build(family), coverage.input_for(family)
        with torch.inference_mode():
            _cache[family] = (model, x, model(x))
    return _cache[family]


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
@pytest.mark.parametrize("name", CONV_FAMILIES)
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


@pytest.mark.parametrize("family", list(FAMILIES))
def test_swap_backend(family: str) -> None:
    model, x, want = model_and_reference(family)
    if family in NOT_YET:
        with pytest.raises(ai3.UnsupportedOperation, match=NOT_YET[family]):
            ai3.swap_backend(model, sample_input_shape=tuple(x.shape))
        return
    swapped = ai3.swap_backend(model, "default", sample_input_shape=tuple(x.shape))
    assert_matches(swapped(x), want, FAMILIES[family].tol, f"{family} ({FAMILIES[family].constructor}) swap_backend")


# Families whose forward computes with shapes (channel shuffle, token and
# window reshapes): the ai3.Model must keep running at a batch size other
# than the one it was traced at (reshapes carry 0 / -1, not the batch).
@pytest.mark.parametrize("family", ["shufflenet_v2", "vit"])
def test_swap_backend_at_another_batch_size(family: str) -> None:
    if family in NOT_YET:
        pytest.skip(f"{family} does not run yet: {NOT_YET[family]}")
    model, x, _ = model_and_reference(family)
    swapped = ai3.swap_backend(model, sample_input_shape=tuple(x.shape))
    other = coverage.input_for(family, batch=3, seed=2)
    with torch.inference_mode():
        want = model(other)
    assert_matches(swapped(other), want, FAMILIES[family].tol, f"{family} at batch 3")


def test_shape_arithmetic_without_sample_shape_is_refused_by_name() -> None:
    model, _, _ = model_and_reference("shufflenet_v2")
    with pytest.raises(ai3.UnsupportedOperation, match="fx node 'size'.*sample_input_shape"):
        ai3.swap_backend(model)


if __name__ == "__main__":
    pytest_main.run(__file__)


def resnet_stem_and_block() -> torch.nn.Module:
    """resnet18's stem, one of its BasicBlocks (torchvision's own class),
    pool and classifier: the same kinds of ai3 ops as resnet18 (winograd and
    gemm convolutions, linear) between batch norms, ReLUs and a residual
    add. Inductor writes and compiles C++ for every fused elementwise group:
    about 40 s for the whole resnet18 on 2 cores, a few for this."""
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 7, stride=2, padding=3, bias=False),
        torch.nn.BatchNorm2d(16),
        torch.nn.ReLU(),
        torchvision.models.resnet.BasicBlock(16, 16),
        torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(),
        torch.nn.Linear(16, 10),
    )


# (backend, model): inductor on the small model, aot_eager on all of resnet18.
COMPILE_CASES = [("inductor", resnet_stem_and_block), ("aot_eager", lambda: torchvision.models.resnet18(weights=None))]


@pytest.mark.parametrize("backend,build", COMPILE_CASES, ids=[b for b, _ in COMPILE_CASES])
def test_torch_compile_on_swapped_model(backend: str, build) -> None:
    """A swapped model stays a normal nn.Module: torch.compile traces the
    ai3 custom ops (with their fake kernels) as graph nodes, no graph breaks."""
    torch.manual_seed(0)
    model = build().eval()
    x = torch.randn(2, 3, 64, 64)
    with torch.inference_mode():
        want = model(x)
    ai3.swap_conv2d(
        model,
        [
            "winograd" if ai3.torch.applicable(c, "winograd") else "gemm"
            for c in model.modules()
            if type(c) is torch.nn.Conv2d
        ],
    )
    ai3.swap_linear(model)
    compiled = torch.compile(model, backend=backend, fullgraph=True)
    with torch.no_grad():
        got = compiled(x)
        again = compiled(torch.cat([x, x]))  # another batch size
    assert_matches(got, want, 5e-3, f"torch.compile({backend})")
    assert_matches(again[:2], want, 5e-3, f"torch.compile({backend}), batch 4")
