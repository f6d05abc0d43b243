"""torchvision's segmentation models (weights=None, weights_backbone=None,
eval mode) through swap_backend ("default" everywhere), against the
unswapped model: dilated ResNet and MobileNetV3 backbones, ASPP's global
pooling branch, LR-ASPP's sigmoid gate, and the bilinear upsampling back to
the input size (F.interpolate -> the core's resize).

The models return {"out": ...}, and so does the swapped model (these heads
have no aux branch with weights_backbone=None and aux_loss unset). Batch 2 at 96x96 keeps it fast;
outputs are compared relative to their scale, as in torch_models_test, after
coverage.make_informative makes the identity batch norms random (or folding
them into the convolutions would go unchecked).
"""

from __future__ import annotations

import pytest
import pytest_main
import torch
import torchvision

import ai3
from ai3.torch import coverage

torch.set_num_threads(2)

MODELS = ["fcn_resnet50", "deeplabv3_mobilenet_v3_large", "lraspp_mobilenet_v3_large"]
SHAPE = (2, 3, 96, 96)
TOL = 1e-4


@pytest.mark.parametrize("name", MODELS)
def test_segmentation_model_matches_torch(name: str) -> None:
    torch.manual_seed(0)
    net = getattr(torchvision.models.segmentation, name)(weights=None, weights_backbone=None).eval()
    coverage.make_informative(net)
    x = torch.randn(SHAPE)
    with torch.no_grad():
        want = net(x)["out"]
    model = ai3.swap_backend(net, "default", SHAPE)
    result = model(x)
    assert isinstance(result, dict) and list(result) == ["out"], type(result)  # torchvision's own form
    got = torch.as_tensor(result["out"])
    assert got.shape == want.shape == (SHAPE[0], 21, SHAPE[2], SHAPE[3])
    err = (got - want).abs().max().item()
    assert err <= TOL * want.abs().max().item(), (name, err)
    # The batch is not baked in: a third image runs too.
    x3 = torch.randn((3, *SHAPE[1:]))
    with torch.no_grad():
        want3 = net(x3)["out"]
    err3 = (torch.as_tensor(model(x3)["out"]) - want3).abs().max().item()
    assert err3 <= TOL * want3.abs().max().item(), (name, err3)


if __name__ == "__main__":
    pytest_main.run(__file__)
