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


# The ops besides conv2d that the benches' swap_backend gives the conv2d
# selector, where the op takes it: linear, and the attention ops, since they
# are most of a transformer's time (ViT-B/16 at batch 1: "auto" picks naive
# attention over the default flash, 172 against 178 ms, ORT 196 ms, in one
# process; through ONNX 181 against 188 ms, ORT 189).
SELECTED_OPS = ("linear", "multihead_attention", "attention")


def swap_algos(selector: str) -> dict[str, str]:
    """swap_backend's `algos` for a bench's conv2d selector: it for conv2d,
    and for each of SELECTED_OPS where that op has it (a selector such as
    "auto", or one of its algorithms), else "default" (--algos=winograd is
    conv2d's alone)."""
    import ai3

    names = ai3.algorithms()
    return {
        "conv2d": selector,
        **{
            op: selector if selector in ("auto", "default", "predict", *names[op]) else "default" for op in SELECTED_OPS
        },
    }


def other_selectors(selector: str) -> str:
    """What swap_algos gives the ops besides conv2d, for a table's title."""
    return ", ".join(f"{op} '{chosen}'" for op, chosen in swap_algos(selector).items() if op != "conv2d")
