"""What every GPU test shares: the skip when there is no GPU or no CUDA
build, with the reason in the test log, and PyTorch's exact-FP32 settings.

On a CPU machine (CI) these tests exist, run, and skip: ``bazel test //...``
stays green, and the log says why (``ai3.cuda.unavailable_reason()``).
"""

from __future__ import annotations

import os
import sys

import pytest

from ai3 import cuda

REASON = cuda.unavailable_reason()
SKIP = pytest.mark.skipif(REASON is not None, reason=f"GPU test skipped: {REASON}")

if REASON is not None and os.environ.get("AI3_REQUIRE_GPU"):
    # bench/gpu_check.sh sets this: on the GPU machine a skip would hide a
    # broken build.
    raise RuntimeError(f"AI3_REQUIRE_GPU is set but the GPU tests cannot run: {REASON}")
if REASON is not None:
    print(f"ai3 GPU tests: skipping: {REASON}", file=sys.stderr)
else:
    import torch

    # ai3's cuDNN algorithms run plain FP32 (no TF32), so compare against
    # PyTorch doing the same.
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False


def tolerance(dtype) -> dict:
    import torch

    return {"rtol": 1e-4, "atol": 1e-4} if dtype == torch.float32 else {"rtol": 1e-10, "atol": 1e-10}
