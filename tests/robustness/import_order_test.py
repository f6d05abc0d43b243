"""All three frontends in one process, in every import order.

Each case runs in its own subprocess: it imports the frameworks in the
given order (or lets ai3 import them), then runs a swap in each frontend.
A case fails if the process dies on a signal (the failure this test exists
for: TensorFlow, then torchvision or torch._dynamo, segfaulted while a
triton was installed; see requirements.txt) or exits non-zero.
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import textwrap

import pytest
import pytest_main

FRAMEWORKS = ("torch", "keras", "onnx")

# What "import <framework>" means for a user of that frontend.
IMPORTS = {
    "torch": "import torch, torchvision",
    "keras": "import tensorflow as tf, keras",
    "onnx": "import onnx, onnxruntime",
}

# One swap per frontend, small enough to run in seconds.
USES = {
    "torch": """
        import torch, torchvision, ai3
        net = torchvision.models.squeezenet1_1(weights=None).eval()
        x = torch.randn(1, 3, 64, 64)
        with torch.no_grad():
            ref = net(x)
            got = torch.as_tensor(ai3.swap_backend(net)(x))
            assert torch.allclose(got, ref, atol=1e-4 * float(ref.abs().max()) + 1e-6), "torch swap_backend"
            ai3.swap_conv2d(net, "default")
            assert torch.allclose(net(x), ref, atol=1e-4 * float(ref.abs().max()) + 1e-6), "torch swap_conv2d"
        print("torch ok")
    """,
    "keras": """
        import numpy as np, keras, ai3
        inp = keras.Input((16, 16, 3))
        a = keras.layers.Conv2D(4, 3, padding="same", activation="relu")(inp)
        b = keras.layers.Conv2D(4, 3, padding="same")(inp)
        model = keras.Model(inp, a + b)
        x = np.random.default_rng(0).random((1, 16, 16, 3), dtype=np.float32)
        ref = np.asarray(model(x))
        assert np.allclose(np.asarray(ai3.keras.swap_conv2d(model, "default")(x)), ref, atol=1e-5), "keras swap_conv2d"
        assert np.allclose(np.asarray(ai3.keras.swap_backend(model)(x)), ref, atol=1e-5), "keras swap_backend"
        print("keras ok")
    """,
    "onnx": """
        import numpy as np, onnx, onnxruntime as ort, ai3
        from onnx import helper, numpy_helper, TensorProto
        rng = np.random.default_rng(0)
        w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
        graph = helper.make_graph(
            [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["y"])],
            "g",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])],
            [w],
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        x = rng.standard_normal((1, 3, 8, 8)).astype(np.float32)
        ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
        assert np.allclose(np.asarray(ai3.onnx.swap_backend(model)(x)), ref, atol=1e-5), "onnx swap_backend"
        session = ai3.onnx.InferenceSession(ai3.onnx.swap_conv2d(model, "default"))
        assert np.allclose(session.run(None, {"x": x})[0], ref, atol=1e-5), "onnx swap_conv2d"
        print("onnx ok")
    """,
}


def script(order: tuple[str, ...], explicit_imports: bool) -> str:
    lines = ["import os", "os.environ['TF_CPP_MIN_LOG_LEVEL'] = '3'", "import ai3"]
    if explicit_imports:
        lines += [IMPORTS[f] for f in order]
    lines += [textwrap.dedent(USES[f]) for f in order]
    return "\n".join(lines)


def run(order: tuple[str, ...], explicit_imports: bool) -> None:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    proc = subprocess.run(
        [sys.executable, "-c", script(order, explicit_imports)], env=env, capture_output=True, text=True, timeout=600
    )
    tail = (proc.stdout + proc.stderr)[-3000:]
    if proc.returncode < 0:
        pytest.fail(f"order {order}: the process died on {signal.Signals(-proc.returncode).name}\n{tail}")
    assert proc.returncode == 0, f"order {order}: exit status {proc.returncode}\n{tail}"
    for f in order:
        assert f"{f} ok" in proc.stdout, f"order {order}: {f} did not finish\n{tail}"


# Every order of all three frameworks, imported by the user first or only
# through ai3's frontends. The orders of two are not run on their own: each
# ordered pair opens exactly one of these six orders, which imports and uses
# the pair first, so a pair that crashes fails that order.
ORDERS = list(itertools.permutations(FRAMEWORKS, 3))


@pytest.mark.parametrize("order", ORDERS, ids="-".join)
def test_user_imports_frameworks_in_this_order(order):
    run(order, explicit_imports=True)


# When ai3's frontends do the importing (each lazily, on first use), an
# order and its reverse: together they put every framework before every
# other once. Each case is a process that loads all three frameworks (~10 s
# of a 2-core CI machine), and the six orders themselves are the user
# cases' above.
AI3_ORDERS = [ORDERS[0], ORDERS[0][::-1]]


@pytest.mark.parametrize("order", AI3_ORDERS, ids="-".join)
def test_ai3_imports_frameworks_in_this_order(order):
    run(order, explicit_imports=False)


def test_bare_import_ai3_loads_no_framework_and_reaches_every_frontend():
    code = textwrap.dedent(
        """
        import sys, ai3
        heavy = ("torch", "torchvision", "tensorflow", "keras", "onnx", "onnxruntime")
        assert not [m for m in heavy if m in sys.modules], [m for m in heavy if m in sys.modules]
        assert {"torch", "keras", "onnx"} <= set(dir(ai3))
        ai3.onnx.swap_backend  # loads onnx only
        assert "tensorflow" not in sys.modules and "torch" not in sys.modules
        ai3.keras.swap_conv2d
        assert "torch" not in sys.modules
        ai3.swap_conv2d
        print("lazy ok")
        """
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p), TF_CPP_MIN_LOG_LEVEL="3")
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "lazy ok" in proc.stdout, (proc.stdout + proc.stderr)[-3000:]


if __name__ == "__main__":
    pytest_main.run(__file__)
