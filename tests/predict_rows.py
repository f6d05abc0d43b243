"""Sweep-dataset rows of made-up conv2d layers for the "predict" tests:
3x3 convs won by winograd, 1x1 convs by gemm (the others twice as slow),
over many channel counts, split between two models m0 and m1."""

from __future__ import annotations

import json

from ai3 import predict, tuning

MACHINE = json.dumps(predict.machine(), sort_keys=True)


def _conv_rows(model: str, c_in: int, c_out: int, k: int, size: int, winner: str, stride: int = 1) -> list[dict]:
    """Dataset rows of one conv2d layer that `winner` won (the others 2x slower)."""
    key = {
        "op": "conv2d",
        "params": {
            "attrs": {
                "stride": [stride, stride],
                "padding": [k // 2] * 4,
                "dilation": [1, 1],
                "groups": 1,
                "layout": "NCHW",
            },
            "weights": {"weight": [c_out, c_in, k, k], "bias": [c_out]},
        },
        "input_shape": [1, c_in, size, size],
        "dtype": "float32",
        "layout": "NCHW",
        "device": "cpu",
        "via": "core",
    }
    digest = tuning.key_digest(key)
    rows = []
    for algorithm in ("direct", "gemm", "winograd"):
        rows.append(
            {
                "task": f"{model}|x",
                "model": model,
                "op": "conv2d",
                "layer": f"conv{c_in}",
                "params": json.dumps(key["params"]),
                "layer_input_shape": json.dumps(key["input_shape"]),
                "dtype": "float32",
                "layout": "NCHW",
                "device": "cpu",
                "via": "core",
                "key_digest": digest,
                "build": tuning.build_id(),
                "machine": MACHINE,
                "algorithms": json.dumps(tuning.known_algorithms("conv2d")),
                "algorithm": algorithm,
                "seconds": repr(1e-3 if algorithm == winner else 2e-3),
                "note": "",
                "chosen": int(algorithm == winner),
            }
        )
    return rows


def synthetic_dataset() -> list[dict]:
    rows = []
    for i, c in enumerate((8, 12, 16, 24, 32, 48, 64, 96)):
        rows += _conv_rows(f"m{i % 2}", c, c, 3, 16, "winograd")
        rows += _conv_rows(f"m{i % 2}", c, 2 * c, 1, 16, "gemm")
    return rows
