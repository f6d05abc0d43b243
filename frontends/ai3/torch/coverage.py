"""Which torchvision classification families ai3.swap_backend runs, and how
closely: the model zoo of tests/torch_models_test.py and of the README's
coverage table (tools/coverage_table.py).

One representative per family, built with weights=None, at the smallest
input the model takes (64x64 where valid, swin's windows padded as in
torchvision; inception_v3 75x75; maxvit 224x224, whose partitions need it;
ViT at image_size 64).
The protocol every frontend's coverage module follows (ai3.keras.coverage,
ai3.onnx.coverage where present): `coverage()` returns `Row`s.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

FRONTEND = "PyTorch"


@dataclass(frozen=True)
class Zoo:
    constructor: str  # torchvision.models.<constructor>
    kwargs: dict[str, Any]
    size: int  # input height and width
    tol: float = 1e-4  # max|ai3 - torch| <= tol * max|torch|, float32


@dataclass(frozen=True)
class Row:
    family: str  # the family name ("resnet", "vit", ...)
    model: str  # the model checked ("resnet18")
    ok: bool
    reason: str  # why not, or how close (max error relative to the output's scale)


_NO_AUX = {"init_weights": False, "aux_logits": False}

# family -> the model that stands for it. Tolerances are relative to the
# output's scale: float32 sums in another order through dozens of layers
# (1e-4; every family measures about 1e-6 with make_informative's values).
FAMILIES: dict[str, Zoo] = {
    "alexnet": Zoo("alexnet", {}, 64),
    "vgg": Zoo("vgg11", {}, 64),
    "resnet": Zoo("resnet18", {}, 64),
    "resnext": Zoo("resnext50_32x4d", {}, 64),
    "wide_resnet": Zoo("wide_resnet50_2", {}, 64),
    "squeezenet": Zoo("squeezenet1_1", {}, 64),
    "densenet": Zoo("densenet121", {}, 64),
    "googlenet": Zoo("googlenet", _NO_AUX, 64),
    "inception_v3": Zoo("inception_v3", _NO_AUX, 75),
    "mobilenet_v2": Zoo("mobilenet_v2", {}, 64),
    "mobilenet_v3": Zoo("mobilenet_v3_small", {}, 64),
    "shufflenet_v2": Zoo("shufflenet_v2_x0_5", {}, 64),
    "mnasnet": Zoo("mnasnet0_5", {}, 64),
    "efficientnet": Zoo("efficientnet_b0", {}, 64),
    "efficientnet_v2": Zoo("efficientnet_v2_s", {}, 64),
    "regnet": Zoo("regnet_x_400mf", {}, 64),
    "convnext": Zoo("convnext_tiny", {}, 64),
    "vit": Zoo("vit_b_16", {"image_size": 64}, 64),
    "swin": Zoo("swin_t", {}, 64),
    "maxvit": Zoo("maxvit_t", {}, 224),
}


def build(family: str, seed: int = 0) -> Any:
    """The family's model (weights=None, eval mode, fixed seed), with
    the initial values that would hide errors made informative (see
    make_informative)."""
    import torch
    import torchvision

    zoo = FAMILIES[family]
    torch.manual_seed(seed)
    model = getattr(torchvision.models, zoo.constructor)(weights=None, **zoo.kwargs).eval()
    make_informative(model, seed)
    return model


def make_informative(model: Any, seed: int = 0) -> None:
    """weights=None leaves values under which a wrong result can look
    right: ViT's classifier is all zeros (every output 0, whatever came
    before), ConvNeXt scales each residual branch by 1e-6 (the blocks barely
    reach the output), and batch norms start as identities (folding them
    into convolutions goes unchecked). Those become random: zero
    weights ~ N(0, 0.02), layer scales 1, batch norm statistics and affine
    parameters spread around their identity values."""
    import torch
    from torch import nn

    generator = torch.Generator().manual_seed(seed)

    def draw(t: torch.Tensor, low: float, high: float) -> torch.Tensor:
        return low + (high - low) * torch.rand(t.shape, generator=generator, dtype=t.dtype)

    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("layer_scale"):
                p.fill_(1.0)
            elif p.dim() >= 2 and not p.any():
                p.copy_(0.02 * torch.randn(p.shape, generator=generator, dtype=p.dtype))
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d) and m.running_mean is not None:
                m.running_mean.copy_(draw(m.running_mean, -0.1, 0.1))
                m.running_var.copy_(draw(m.running_var, 0.5, 1.5))
                if m.weight is not None:
                    m.weight.copy_(draw(m.weight, 0.5, 1.5))
                    m.bias.copy_(draw(m.bias, -0.1, 0.1))


def input_for(family: str, batch: int = 2, seed: int = 1) -> Any:
    import torch

    size = FAMILIES[family].size
    return torch.randn(batch, 3, size, size, generator=torch.Generator().manual_seed(seed))


def relative_error(got: Any, want: Any) -> float:
    """max|got - want| / max|want|."""
    return float((got - want).abs().max()) / max(float(want.abs().max()), 1e-30)


def check(family: str, algos: Any | None = None) -> Row:
    """swap_backend on the family's model against the model itself."""
    import torch

    import ai3

    zoo = FAMILIES[family]
    try:
        model, x = build(family), input_for(family)
        with torch.inference_mode():
            want = model(x)
        swapped = ai3.swap_backend(model, algos, sample_input_shape=tuple(x.shape))
        err = relative_error(swapped(x), want)
    except Exception as e:  # an ai3.Error says what is missing; anything else is a bug to show too
        return Row(family, zoo.constructor, False, f"{type(e).__name__}: {e}")
    if err > zoo.tol:
        return Row(family, zoo.constructor, False, f"max error {err:.2g} x output scale (tolerance {zoo.tol:g})")
    return Row(family, zoo.constructor, True, f"max error {err:.1g} x output scale")


def coverage(families: list[str] | None = None, log: Any = None) -> list[Row]:
    rows = []
    for family in families or list(FAMILIES):
        start = time.perf_counter()
        rows.append(check(family))
        if log is not None:
            log(
                f"{FRONTEND} {family}: {'ok' if rows[-1].ok else 'FAILS'} ({time.perf_counter() - start:.0f} s) {rows[-1].reason}"
            )
    return rows
