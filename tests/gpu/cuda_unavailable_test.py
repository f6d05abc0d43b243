"""The CUDA plumbing where it cannot run (no GPU, or a CPU-only build): it
must say so clearly, never crash, and leave the CPU path alone. Runs on
every machine; on a GPU machine with a CUDA build it checks the opposite."""

from __future__ import annotations

import pytest

import ai3
from ai3 import _core, cuda


def test_cuda_algorithms_listed_iff_built():
    listed = ai3.algorithms("cuda")
    assert bool(listed) == cuda.built()
    if cuda.built():
        assert {"guess", "direct", "smm"} <= set(listed["conv2d"])
        assert listed["linear"] == ["gemm"]


def test_unavailable_reason_matches_is_available():
    reason = cuda.unavailable_reason()
    assert cuda.is_available() == (reason is None)
    if not cuda.built():
        assert "--config=cuda" in reason


@pytest.mark.skipif(
    cuda.is_available(),
    reason="checks the refusal on machines without a GPU; with one, layers are built on it (tests/gpu/cuda_algorithms_test.py)",
)
def test_layer_device_cuda_refused_with_reason():
    with pytest.raises(ai3.UnsupportedOperation, match="cannot build a layer on cuda"):
        with cuda.layer_device("cuda"):
            ai3.layers.ReLU()


def test_layer_device_is_restored():
    assert _core.layer_device() == "cpu"
    previous = _core.set_layer_device("cuda")
    try:
        assert previous == "cpu" and _core.layer_device() == "cuda"
        if not cuda.built():
            # No CUDA algorithm: the core says so, naming the device.
            with pytest.raises(ai3.AlgorithmNotApplicable, match="on cuda"):
                ai3.layers.ReLU(name="r")
    finally:
        _core.set_layer_device(previous)
    assert _core.layer_device() == "cpu"
    ai3.layers.ReLU()  # CPU layers still build


def test_bad_device_name():
    with pytest.raises(ai3.InvalidArgument, match="'cpu' or 'cuda'"):
        _core.set_layer_device("tpu")


def test_cuda_timing_cpu_timer():
    import numpy as np

    from ai3 import cuda_timing

    timer = cuda_timing.timer_for(np.zeros(3))
    assert timer(lambda: None, repeats=2) >= 0.0


if __name__ == "__main__":
    import pytest_main

    pytest_main.run(__file__)
