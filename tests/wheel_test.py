"""//:wheel installs with pip into a plain directory and `import ai3` works
there outside Bazel: the extension loads, its bundled math libraries are
found (oneDNN's libdnnl.so.3 among them, loaded from the install directory,
with one OpenMP runtime in the process), and layers run, "guess" (oneDNN's
convolution) included."""

from __future__ import annotations

import glob
import os
import subprocess
import sys
import tempfile

import pytest_main


def test_wheel_installs_and_imports() -> None:
    runfiles = os.path.join(os.environ["TEST_SRCDIR"], os.environ.get("TEST_WORKSPACE", "ai3"))
    (wheel,) = glob.glob(os.path.join(runfiles, "ai3-*.whl"))
    target = tempfile.mkdtemp()
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--quiet", "--target", target, wheel],
        check=True,
    )
    assert os.path.exists(os.path.join(target, "ai3", "_core.so"))
    assert os.path.exists(os.path.join(target, "ai3", "_tf_ops.so"))
    assert os.path.exists(os.path.join(target, "ai3", "libdnnl.so.3"))
    script = (
        "import numpy as np, ai3\n"
        "assert ai3.__file__.startswith(%r), ai3.__file__\n"
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
        "assert dnnl == {%r + '/ai3/libdnnl.so.3'}, dnnl\n"
        "gomp = {p for p in maps if '/libgomp' in p}\n"
        "assert len(gomp) == 1, gomp\n"
        "print(sorted(ai3.algorithms()['conv2d']))\n"
        # The TensorFlow op library from the wheel, through a Keras swap.
        "import keras, ai3.keras\n"
        "m = keras.Sequential([keras.Input((6, 6, 2)), keras.layers.Conv2D(3, 3, padding='same')])\n"
        "s = ai3.keras.swap_conv2d(m, 'gemm')\n"
        "x = np.random.rand(1, 6, 6, 2).astype(np.float32)\n"
        "assert np.allclose(s(x), m(x), atol=1e-5)\n"
    ) % (target, target)
    # A clean environment: only the install directory on the path, no Bazel
    # runfiles, no LD_LIBRARY_PATH.
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": target, "HOME": target}
    out = subprocess.run([sys.executable, "-c", script], cwd=target, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "winograd" in out.stdout


if __name__ == "__main__":
    pytest_main.run(__file__)
