"""The copies a user makes of a model or module: deepcopy, pickle and a
torch.save file read back. Shared by the ai3.Model and swapped-module tests."""

from __future__ import annotations

import copy
import io
import pickle
from typing import Any

import torch


def round_trips(obj: Any) -> dict[str, Any]:
    """{how: the copy} for each way a user copies `obj`."""
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    buffer.seek(0)
    return {
        "deepcopy": copy.deepcopy(obj),
        "pickle": pickle.loads(pickle.dumps(obj)),
        "torch.save": torch.load(buffer, weights_only=False),
    }
