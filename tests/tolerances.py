"""The dtypes and tolerances of the tests that compare ai3 with PyTorch.

float64 agrees to 1e-10; float32 to 1e-4, except winograd, whose
transforms round more (5e-4).
"""

from __future__ import annotations

import torch

DTYPES = [torch.float32, torch.float64]


def tolerance(dtype: torch.dtype, algorithm: str = "") -> float:
    if dtype == torch.float64:
        return 1e-10
    return 5e-4 if algorithm == "winograd" else 1e-4
