"""`python -m ai3 explore` runs on small models and writes its PNG chart and
plan JSON (what it prints and measures is not asserted: no timing in tests)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import pytest_main
import torch
from torch import nn
from tuning_fixtures import cache  # noqa: F401 (fixture)

import ai3
from ai3 import explore

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(autouse=True)
def outside_bazel_run(cache, monkeypatch):
    # explore puts a relative --out under BUILD_WORKING_DIRECTORY when
    # `bazel run` sets it; these tests run it as a user would, outside Bazel.
    monkeypatch.delenv("BUILD_WORKING_DIRECTORY", raising=False)


def check_outputs(out, name, frontend, *frameworks):
    png = out / f"{name}.png"
    assert png.read_bytes()[:8] == PNG_MAGIC
    plan = ai3.Plan.load(out / f"{name}.plan.json")
    assert plan.frontend == frontend
    assert set(plan.end_to_end) == {"ai3 (auto)", *frameworks}
    convs = [lp for lp in plan.layers if lp.op == "conv2d"]
    assert convs and all(any(m.timed for m in lp.measurements) for lp in convs)
    return plan


def test_explore_torchvision_model(tmp_path):
    out = tmp_path / "out"
    assert explore.main(["--model", "squeezenet1_1", "--size", "64", "--out", str(out)]) == 0
    # A PyTorch model is also timed as its ONNX export under ONNX Runtime.
    plan = check_outputs(out, "squeezenet1_1", "torch", "PyTorch", "ONNX Runtime")
    assert plan.sample_input_shape == (1, 3, 64, 64)
    assert "concat" in [lp.op for lp in plan.layers]


@pytest.mark.parametrize("command", [["-m", "ai3", "explore"], [explore.__file__]], ids=["python-m-ai3", "script"])
def test_explore_onnx_from_the_command_line(tmp_path, command):
    # "script" is how `bazel run //:explore` starts it: the file itself.
    torch.manual_seed(0)
    net = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(8, 8, 3, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(8, 4),
    ).eval()
    path = tmp_path / "tiny.onnx"
    torch.onnx.export(net, (torch.randn(1, 3, 16, 16),), str(path), input_names=["x"], dynamo=False)
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    done = subprocess.run(
        [sys.executable, *command, "--onnx", str(path), "--out", str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ai3 explore" in done.stdout and "end to end" in done.stdout
    plan = check_outputs(out, "tiny", "onnx", "ONNX Runtime")
    assert plan.sample_input_shape == (1, 3, 16, 16)
    data = json.loads((out / "tiny.plan.json").read_text())
    assert data["layers"][0]["measurements"]


def tiny_net():
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1),
        nn.BatchNorm2d(8),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(8, 8, 3, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(8, 4),
    ).eval()


def test_explore_a_torch_export_file(tmp_path):
    net = tiny_net()
    path = tmp_path / "exported.pt2"
    torch.export.save(torch.export.export(net, (torch.randn(2, 3, 16, 16),)), str(path))
    loaded = explore.load_model(str(path))
    assert loaded.shape == (2, 3, 16, 16)  # the program's own example input
    x = torch.randn(2, 3, 16, 16)
    model = ai3.swap_backend(loaded.model, {"conv2d": "direct"}, sample_input_shape=loaded.shape)
    with torch.no_grad():
        torch.testing.assert_close(model(x), net(x), rtol=1e-4, atol=1e-4)
    out = tmp_path / "out"
    assert explore.main(["--pt2", str(path), "--out", str(out)]) == 0
    check_outputs(out, "exported", "torch", "PyTorch", "ONNX Runtime")


def test_explore_a_function_returning_a_model(tmp_path, monkeypatch):
    (tmp_path / "my_models.py").write_text(
        "from torch import nn\n"
        "def small():\n"
        "    return nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 14 * 14, 2)).eval()\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / "out"
    assert explore.main(["--function", "my_models:small", "--size", "16", "--out", str(out)]) == 0
    plan = check_outputs(out, "small", "torch", "PyTorch", "ONNX Runtime")
    assert plan.sample_input_shape == (1, 3, 16, 16)
    with pytest.raises(ai3.InvalidArgument, match="cannot find"):
        explore.load_model("my_models:absent")
    (tmp_path / "not_models.py").write_text("def number():\n    return 3\n")
    with pytest.raises(ai3.InvalidArgument, match="returned a int"):
        explore.load_model("not_models:number")


def test_explore_rejects_bad_arguments(tmp_path):
    with pytest.raises(SystemExit):
        explore.main(["--out", str(tmp_path)])  # no model named
    with pytest.raises(ai3.InvalidArgument, match="no ONNX file"):
        explore.main(["--onnx", str(tmp_path / "missing.onnx")])
    with pytest.raises(ai3.InvalidArgument, match="no torchvision model"):
        explore.main(["--model", "not_a_model"])
    with pytest.raises(ai3.InvalidArgument, match="no torch.export file"):
        explore.main(["--pt2", str(tmp_path / "missing.pt2")])
    (tmp_path / "junk.pt2").write_bytes(b"not a zip")
    with pytest.raises(ai3.InvalidArgument, match="not a torch.export file"):
        explore.main(["--pt2", str(tmp_path / "junk.pt2")])


if __name__ == "__main__":
    pytest_main.run(__file__)
