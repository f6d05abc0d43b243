"""The torchvision models the model benches run, one list for both
(bench/models.py times them from PyTorch, bench/onnx_models.py from their
ONNX exports), and how each is built and exported."""

from __future__ import annotations

import io
import warnings
from typing import Any

MODELS = [
    "resnet18",
    "resnet50",
    "mobilenet_v2",
    "mobilenet_v3_large",
    "squeezenet1_1",
    "googlenet",
    "inception_v3",
    "densenet121",
    "efficientnet_b0",
    "convnext_tiny",
    "vgg16",
    "vit_b_16",
    "swin_t",
]
INPUT_SIZE = {"inception_v3": 299}
# Without aux_logits the two inception models return one tensor; without
# init_weights they skip scipy's truncated-normal initialisation.
KWARGS = {
    "googlenet": {"init_weights": False, "aux_logits": False},
    "inception_v3": {"init_weights": False, "aux_logits": False},
}


def build(name: str) -> Any:
    """torchvision.models.<name>(weights=None) in eval mode, seeded."""
    import torch
    import torchvision

    torch.manual_seed(0)
    return getattr(torchvision.models, name)(weights=None, **KWARGS.get(name, {})).eval()


def input_shape(name: str, batch: int) -> tuple[int, int, int, int]:
    size = INPUT_SIZE.get(name, 224)
    return (batch, 3, size, size)


def export_onnx(model: Any, x: Any, opset: int = 17) -> bytes:
    """The model's own ONNX export at x's shape (static), input "input",
    output "output"."""
    import torch

    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model, (x,), buf, opset_version=opset, dynamo=False, input_names=["input"], output_names=["output"]
        )
    return buf.getvalue()
