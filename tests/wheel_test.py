"""//:wheel as a user gets it.

- Installed with pip into a plain directory, `import ai3` works outside
  Bazel: the extension loads, its bundled math libraries are found (oneDNN's
  libdnnl.so.3 among them, loaded from the install directory, with one
  OpenMP runtime in the process), and layers run, "guess" (oneDNN's
  convolution) included.
- Its metadata: the extras pin exactly what requirements.txt pins, the
  licence and the type stubs are in it, the README is the long description.
- `pip install '<wheel>[all]'` into a fresh venv resolves every extra
  without a download (the pinned frameworks are this venv's, seen through a
  .pth file, as a machine with them installed would have them) and every
  frontend imports and runs a swap; with another TensorFlow recorded as the
  build's, `import ai3.keras` raises ai3's error naming both versions.
"""

from __future__ import annotations

import glob
import json
import os
import re
import subprocess
import sys
import sysconfig
import tempfile
import zipfile

import pytest_main

RUNFILES = os.path.join(os.environ["TEST_SRCDIR"], os.environ.get("TEST_WORKSPACE", "ai3"))
(WHEEL,) = glob.glob(os.path.join(RUNFILES, "ai3-*.whl"))


def clean_env(pythonpath: str | None, home: str) -> dict[str, str]:
    """Only PATH: no Bazel runfiles on the path, no LD_LIBRARY_PATH."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home, "OMP_WAIT_POLICY": "PASSIVE"}
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    return env


def test_wheel_installs_and_imports() -> None:
    target = tempfile.mkdtemp()
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--quiet", "--target", target, WHEEL],
        check=True,
    )
    assert os.path.exists(os.path.join(target, "ai3", "_core.so"))
    assert os.path.exists(os.path.join(target, "ai3", "_tf_ops.so"))
    assert os.path.exists(os.path.join(target, "ai3", "_ort_ops.so"))
    assert os.path.exists(os.path.join(target, "ai3", "libdnnl.so.3"))
    script = f"TARGET = {target!r}\n" + (
        "import numpy as np, ai3\n"
        "assert ai3.__file__.startswith(TARGET), ai3.__file__\n"
        "x = np.ones((1, 2, 4, 4), np.float32)\n"
        "y = ai3.layers.Conv2d(np.ones((3, 2, 3, 3), np.float32), padding=1, algorithm='gemm')(x)\n"
        "assert y.shape == (1, 3, 4, 4) and y[0, 0, 1, 1] == 18.0, y\n"
        # oneDNN's convolution, from the bundled libdnnl.so.3.
        "x = np.random.rand(1, 8, 9, 9).astype(np.float32)\n"
        "w = np.random.rand(6, 8, 3, 3).astype(np.float32)\n"
        "g = ai3.layers.Conv2d(w, padding=1, algorithm='guess')(x)\n"
        "r = ai3.layers.Conv2d(w, padding=1, algorithm='gemm')(x)\n"
        "assert np.allclose(g, r, rtol=1e-4, atol=1e-4), abs(g - r).max()\n"
        "maps = open('/proc/self/maps').read().split()\n"
        "dnnl = {p for p in maps if p.endswith('/libdnnl.so.3')}\n"
        "assert dnnl == {TARGET + '/ai3/libdnnl.so.3'}, dnnl\n"
        "gomp = {p for p in maps if '/libgomp' in p}\n"
        "assert len(gomp) == 1, gomp\n"
        "print(sorted(ai3.algorithms()['conv2d']))\n"
        # The TensorFlow op library from the wheel, through a Keras swap.
        "import keras, ai3.keras\n"
        "m = keras.Sequential([keras.Input((6, 6, 2)), keras.layers.Conv2D(3, 3, padding='same')])\n"
        "s = ai3.keras.swap_conv2d(m, 'gemm')\n"
        "x = np.random.rand(1, 6, 6, 2).astype(np.float32)\n"
        "assert np.allclose(s(x), m(x), atol=1e-5)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=target, env=clean_env(target, target), capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert "winograd" in out.stdout


def requirements_pins() -> dict[str, str]:
    pins = {}
    with open(os.path.join(RUNFILES, "requirements.txt")) as f:
        for line in f:
            match = re.match(r"([A-Za-z0-9][A-Za-z0-9_.-]*)==(\S+)", line)
            if match:
                pins[re.sub(r"[-_.]+", "-", match.group(1)).lower()] = match.group(2)
    return pins


def test_wheel_metadata() -> None:
    with zipfile.ZipFile(WHEEL) as wheel:
        names = set(wheel.namelist())
        (metadata_name,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        metadata = wheel.read(metadata_name).decode()
        dist_info = os.path.dirname(metadata_name)
        assert "Apache License" in wheel.read(f"{dist_info}/LICENSE").decode()
        build_info = json.loads(wheel.read("ai3/build_info.json"))
    assert {"ai3/_core.pyi", "ai3/py.typed", "ai3/keras/tf_version.py"} <= names
    headers, _, description = metadata.partition("\n\n")
    assert description.startswith("# ai3"), description[:100]
    assert "License: Apache-2.0" in headers and "Home-page: https://" in headers
    pins = requirements_pins()
    assert build_info["tensorflow"] == pins["tensorflow-cpu"]
    requires: dict[str, set[str]] = {}
    for line in headers.splitlines():
        match = re.fullmatch(r'Requires-Dist: ([A-Za-z0-9_.-]+)==(\S+)(?: ; extra == "(\w+)")?', line)
        if line.startswith("Requires-Dist:"):
            assert match, f"not an exact pin: {line}"
            name, version, extra = match.groups()
            assert version == pins[re.sub(r"[-_.]+", "-", name).lower()], line
            requires.setdefault(extra or "", set()).add(name)
    extras = {line.split(": ")[1] for line in headers.splitlines() if line.startswith("Provides-Extra:")}
    assert extras == {"torch", "keras", "onnx", "explore", "all"}
    assert requires[""] == {"numpy"}
    assert {"torch", "torchvision"} <= requires["torch"]
    assert {"tensorflow-cpu", "keras"} <= requires["keras"]
    assert {"onnx", "onnxruntime"} <= requires["onnx"]
    assert {"rich", "matplotlib"} <= requires["explore"]
    assert requires["all"] == requires["torch"] | requires["keras"] | requires["onnx"] | requires["explore"]


# One swap per frontend, checked against the framework's own output, and
# explore's dependencies importable.
SWAPS = """
import numpy as np, ai3
assert ai3.__file__.startswith(VENV), ai3.__file__

import torch
conv = torch.nn.Sequential(torch.nn.Conv2d(2, 3, 3, padding=1)).eval()
x = torch.randn(1, 2, 6, 6)
want = conv(x)
ai3.swap_conv2d(conv, "gemm")
assert torch.allclose(conv(x), want, atol=1e-5)

import keras, ai3.keras
m = keras.Sequential([keras.Input((6, 6, 2)), keras.layers.Conv2D(3, 3, padding="same")])
s = ai3.keras.swap_conv2d(m, "gemm")
xk = np.random.rand(1, 6, 6, 2).astype(np.float32)
assert np.allclose(s(xk), m(xk), atol=1e-5)

import onnx, onnx.helper as h, onnx.numpy_helper as nh, onnxruntime as ort, ai3.onnx
w = np.random.rand(3, 2, 3, 3).astype(np.float32)
graph = h.make_graph(
    [h.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])], "conv",
    [h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 2, 6, 6])],
    [h.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 3, 6, 6])],
    [nh.from_array(w, "w")])
model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
xo = np.random.rand(1, 2, 6, 6).astype(np.float32)
want, = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": xo})
got, = ai3.onnx.InferenceSession(ai3.onnx.swap_conv2d(model, "gemm")).run(None, {"x": xo})
assert np.allclose(got, want, atol=1e-5)

import rich, matplotlib, ai3.explore
print("all frontends swapped")
"""

# What pip's resolver checks of ai3[all]'s own requirements: each is
# installed, at a version its specifier accepts.
RESOLVES = """
import importlib.metadata as md
from packaging.requirements import Requirement
met = 0
for line in md.requires("ai3"):
    req = Requirement(line)
    if req.marker is None or req.marker.evaluate({"extra": "all"}):
        version = md.version(req.name)
        assert req.specifier.contains(version), (line, version)
        met += 1
print(f"ai3[all]: {met} requirements met")
"""

MISMATCH = """
import ai3
try:
    import ai3.keras
except ai3.Error as e:
    print(type(e).__name__, e)
else:
    raise SystemExit("import ai3.keras accepted a TensorFlow other than the one recorded")
"""


def test_install_all_extras_in_a_fresh_venv() -> None:
    home = tempfile.mkdtemp()
    venv = os.path.join(home, "venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    python = os.path.join(venv, "bin", "python")
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    # The frameworks at the pinned versions, as installed on this machine.
    with open(os.path.join(site, "frameworks.pth"), "w") as f:
        f.write(sysconfig.get_paths()["purelib"] + "\n")
    # This venv's pip, driving the fresh one; --no-index: nothing downloaded.
    # --no-deps because pip would walk the frameworks' own dependencies too,
    # and torch's triton is deliberately not installed here (requirements.txt
    # says why); so what pip would resolve for ai3[all] itself is checked
    # next: every requirement the wheel declares for it, against what the
    # fresh venv sees.
    install = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            python,
            "install",
            "--no-index",
            "--no-deps",
            "--disable-pip-version-check",
            "--quiet",
            f"{WHEEL}[all]",
        ],
        capture_output=True,
        text=True,
    )
    assert install.returncode == 0, install.stdout + install.stderr
    resolved = subprocess.run([python, "-c", RESOLVES], env=clean_env(None, home), capture_output=True, text=True)
    assert resolved.returncode == 0, resolved.stdout + resolved.stderr
    assert "ai3[all]: 10 requirements met" in resolved.stdout, resolved.stdout
    assert os.path.exists(os.path.join(site, "ai3", "_core.pyi"))

    run = subprocess.run(
        [python, "-c", f"VENV = {venv!r}\n" + SWAPS],
        cwd=home,
        env=clean_env(None, home),
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "all frontends swapped" in run.stdout

    # Another TensorFlow than the one _tf_ops.so was built for.
    build_info = os.path.join(site, "ai3", "build_info.json")
    with open(build_info) as f:
        info = json.load(f)
    built = info["tensorflow"]
    info["tensorflow"] = "2.0.0"
    with open(build_info, "w") as f:
        json.dump(info, f)
    run = subprocess.run([python, "-c", MISMATCH], cwd=home, env=clean_env(None, home), capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.startswith("UnsupportedOperation"), run.stdout
    assert "built against TensorFlow 2.0.0" in run.stdout and f"TensorFlow {built} is installed" in run.stdout


if __name__ == "__main__":
    pytest_main.run(__file__)
