"""bench/profiles.py: the breakdowns the model benches print for rows that
miss their targets. The conv kinds are found by node name, so the names
ai3.Model keeps must be the framework's own; these tests hold that, and
that each breakdown accounts for the forward time it reports."""

from __future__ import annotations

import io
import warnings

import numpy as np
import onnxruntime as ort
import pytest
import pytest_main
import torch

import ai3
import ai3.onnx
from bench import profiles

torch.set_num_threads(2)


class Net(torch.nn.Module):
    """A 3x3 stem, a depthwise 3x3, a 1x1 and a grouped 3x3 conv."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.dw = torch.nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.pw = torch.nn.Conv2d(8, 16, 1)
        self.grouped = torch.nn.Conv2d(16, 16, 3, padding=1, groups=4)

    def forward(self, x):
        y = torch.relu(self.stem(x))
        y = self.pw(torch.relu(self.dw(y)))
        return self.grouped(y) + y


SHAPE = (1, 3, 16, 16)
WANT_KINDS = {"stem": "3x3 conv", "dw": "depthwise 3x3 conv", "pw": "1x1 conv", "grouped": "grouped 3x3 conv"}


@pytest.fixture(scope="module")
def net() -> torch.nn.Module:
    torch.manual_seed(0)
    return Net().eval()


@pytest.fixture(scope="module")
def onnx_bytes(net) -> bytes:
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            net,
            (torch.randn(*SHAPE),),
            buf,
            opset_version=17,
            dynamo=False,
            input_names=["input"],
            output_names=["output"],
        )
    return buf.getvalue()


def options() -> ort.SessionOptions:
    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    return so


@pytest.mark.parametrize(
    "args, want",
    [
        ((3, 3, 1, 3), "3x3 conv"),
        ((1, 1, 1, 64), "1x1 conv"),
        ((3, 3, 32, 1), "depthwise 3x3 conv"),
        ((5, 5, 4, 8), "grouped 5x5 conv"),
        ((3, 3, 4, None), "grouped 3x3 conv"),
    ],
)
def test_conv_kind(args, want) -> None:
    assert profiles.conv_kind(*args) == want


def test_torch_kinds_name_the_nodes_of_swap_backend(net) -> None:
    kinds = profiles.torch_conv_kinds(net)
    assert kinds == WANT_KINDS
    model = ai3.swap_backend(net, {"conv2d": "default"}, sample_input_shape=SHAPE)
    assert {name for name, op, _ in model.layers() if op == "conv2d"} <= set(kinds)


def test_onnx_kinds_name_the_nodes_of_onnx_swap_backend(onnx_bytes) -> None:
    kinds = profiles.onnx_conv_kinds(onnx_bytes)
    assert sorted(kinds.values()) == sorted(WANT_KINDS.values())
    model = ai3.onnx.swap_backend(onnx_bytes, {"conv2d": "default"}, sample_input_shape=SHAPE)
    assert {name for name, op, _ in model.layers() if op == "conv2d"} <= set(kinds)


# 2 x multiply-adds at 16x16: stem 8x3x9, depthwise 8x1x9, 1x1 16x8, grouped 16x4x9 per pixel.
WANT_FLOPS = 2.0 * 256 * (8 * 3 * 9 + 8 * 9 + 16 * 8 + 16 * 4 * 9)


def test_conv_flops_from_torch_and_from_onnx(net, onnx_bytes) -> None:
    assert profiles.torch_conv_flops(net, torch.randn(*SHAPE)) == WANT_FLOPS
    assert profiles.onnx_conv_flops(onnx_bytes) == WANT_FLOPS


def test_ai3_breakdown_accounts_for_the_forward(net) -> None:
    model = ai3.swap_backend(net, {"conv2d": "default"}, sample_input_shape=SHAPE)
    b = profiles.ai3_breakdown(model, torch.randn(*SHAPE), profiles.torch_conv_kinds(net), repeats=3)
    assert set(WANT_KINDS.values()) <= set(b.by_kind)
    # The nodes' medians and the median time outside them (per call) make
    # up about the median call; medians do not add exactly.
    assert sum(b.by_kind.values()) == pytest.approx(b.forward_seconds, rel=0.5)
    assert len(b.nodes) == len(model.layers()) and len(b.top(5)) == 5
    assert "conv" in b.summary()


def test_ort_breakdown_of_the_original_and_the_rewritten_graph(onnx_bytes) -> None:
    feed = {"input": np.random.default_rng(0).standard_normal(SHAPE).astype(np.float32)}
    b = profiles.ort_breakdown(onnx_bytes, feed, options, repeats=3)
    assert b.forward_seconds > 0 and b.nodes
    # Kernel times lie inside the runs they belong to.
    assert sum(n[3] for n in b.nodes) <= b.forward_seconds * 1.01
    assert any("depthwise 3x3 conv" in k for k in b.by_kind), b.by_kind
    rewritten = ai3.onnx.swap_conv2d(onnx_bytes, "default")
    ops = {n.op_type for n in rewritten.graph.node if n.domain == "ai3"}
    r = profiles.ort_breakdown(
        rewritten.SerializeToString(), feed, options, repeats=3, session_class=ai3.onnx.InferenceSession, ai3_ops=ops
    )
    assert {"ai3 node: depthwise 3x3 conv", "ai3 node: 1x1 conv"} <= set(r.by_kind), r.by_kind


def test_render_and_write(tmp_path, net) -> None:
    model = ai3.swap_backend(net, {"conv2d": "default"}, sample_input_shape=SHAPE)
    entry = profiles.Entry(
        "net, batch 1: swap_backend 2.00x ORT (target <= 0.9x)",
        [profiles.ai3_breakdown(model, torch.randn(*SHAPE), profiles.torch_conv_kinds(net), repeats=2)],
    )
    text = profiles.render(entry)
    assert "depthwise 3x3 conv" in text and "top 5 nodes" in text
    assert "GFLOP/s" not in text  # no FLOPs given, no rate
    # With the FLOPs and a ceiling, each side's convolutions get a rate.
    entry.conv_flops, entry.ceiling_gflops = WANT_FLOPS, 100.0
    (rate,) = entry.conv_rates()
    seconds = entry.sides[0].conv_seconds
    assert 0 < seconds <= entry.sides[0].forward_seconds
    assert f"{WANT_FLOPS / seconds / 1e9:.0f} GFLOP/s effective" in rate and "SGEMM ceiling" in rate
    assert rate in profiles.render(entry) and rate in profiles.summary_line(entry)
    path = tmp_path / "p.md"
    profiles.write(str(path), "title", [entry], ["a note"])
    written = path.read_text()
    assert written.startswith("# title") and profiles.summary_line(entry) in written and "- a note" in written
    profiles.write(str(path), "title", [], [])
    assert "nothing to profile" in path.read_text()


if __name__ == "__main__":
    pytest_main.run(__file__)
