"""The run-time choice of instruction set for ai3's own kernels (core/cpu.h).

ai3 is built for AVX2 + FMA; kernels with an AVX-512 build (conv2d
"implicit gemm" and "smm") use it when the CPU has AVX-512 F/BW/VL/DQ. The conv2d grid of
core_layers_test checks whichever build the CPU picks; here:
  - the choice follows the CPU (/proc/cpuinfo);
  - AI3_ISA=avx2 forces the baseline, and it gives the same results as the
    default choice (on an AVX-512 CPU that compares the two builds);
  - a bad AI3_ISA value, or avx512 on a CPU without it, is an ai3.Error
    naming the variable, never an illegal instruction.
Each case runs in a subprocess, since the choice is made once per process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
import pytest_main

import ai3


def cpu_has_avx512() -> bool:
    with open("/proc/cpuinfo") as f:
        flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
    return all(flag in flags for flag in ("avx512f", "avx512bw", "avx512vl", "avx512dq"))


# Runs implicit-gemm (NCHW and NHWC) and smm conv2d layers (float32 and
# float64, with and without padding, stride, groups; with a bias) and
# prints the chosen ISA and the largest difference from torch per case.
PROBE = textwrap.dedent(
    """
    import json, sys, torch, torch.nn.functional as F
    import ai3
    torch.manual_seed(0)
    out = {"isa": ai3._core.kernel_isa(), "errors": []}
    for dtype in (torch.float32, torch.float64):
        for (n, c, h, w, k, kernel, stride, pad, groups) in [
            (1, 3, 17, 19, 8, 3, 1, 1, 1), (2, 8, 33, 30, 40, 3, 2, 0, 2),
            (1, 16, 9, 9, 7, 1, 1, 0, 1), (3, 6, 12, 12, 6, 5, 1, 2, 6),
        ]:
            x = torch.randn(n, c, h, w, dtype=dtype)
            wt = torch.randn(k, c // groups, kernel, kernel, dtype=dtype)
            b = torch.randn(k, dtype=dtype)
            want = F.conv2d(x, wt, b, stride=stride, padding=pad, groups=groups)
            for algorithm, layout in (("implicit gemm", "NCHW"), ("implicit gemm", "NHWC"), ("smm", "NCHW")):
                layer = ai3.layers.Conv2d(wt, b, stride=stride, padding=pad, groups=groups,
                                          layout=layout, algorithm=algorithm)
                xin = x if layout == "NCHW" else x.permute(0, 2, 3, 1).contiguous()
                got = torch.as_tensor(layer(xin))
                if layout == "NHWC":
                    got = got.permute(0, 3, 1, 2)
                out["errors"].append(float((got - want).abs().max() / (1 + want.abs().max())))
    print(json.dumps(out))
    """
)


def run_probe(isa: str | None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("AI3_ISA", None)
    if isa is not None:
        env["AI3_ISA"] = isa
    return subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=300)


def probe(isa: str | None) -> dict:
    result = run_probe(isa)
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_choice_follows_the_cpu_and_matches_torch() -> None:
    out = probe(None)
    assert out["isa"] == ("avx512" if cpu_has_avx512() else "avx2")
    assert max(out["errors"]) < 1e-5, out


def test_forced_avx2_matches_torch() -> None:
    out = probe("avx2")
    assert out["isa"] == "avx2"
    assert max(out["errors"]) < 1e-5, out


@pytest.mark.parametrize("value", ["sse2", "AVX2", "native"])
def test_bad_value_is_an_ai3_error(value: str) -> None:
    result = run_probe(value)
    assert result.returncode != 0
    assert "InvalidArgument" in result.stderr and f"AI3_ISA='{value}'" in result.stderr, result.stderr[-2000:]


def test_avx512_on_a_cpu_without_it_is_an_ai3_error() -> None:
    if cpu_has_avx512():
        out = probe("avx512")  # here it must simply work
        assert out["isa"] == "avx512" and max(out["errors"]) < 1e-5, out
        return
    result = run_probe("avx512")
    assert result.returncode != 0
    assert "InvalidArgument" in result.stderr and "no AVX-512" in result.stderr, result.stderr[-2000:]


def test_the_error_class_derives_from_ai3_error() -> None:
    assert issubclass(ai3.InvalidArgument, ai3.Error)


if __name__ == "__main__":
    pytest_main.run(__file__)
