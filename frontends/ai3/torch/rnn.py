"""nn.LSTM, nn.GRU and nn.RNN in swap_backend: every layer and direction
unrolled by ai3.recurrent (the ONNX operators' formulation), with torch's
weights put in ONNX's gate order. torch's GRU is ONNX's with
linear_before_reset (r multiplies H R_n^T + b_hn); its RNN applies its
`nonlinearity`. A layer's input is the previous layer's output, the
directions' H side by side ((T, N, D*H)); dropout between layers does
nothing at inference. The module's result is the tuple torch returns:
(output, h_n), or (output, (h_n, c_n)) for an LSTM.

The specs are made for the sample's sequence length: swap_backend gives
the model a PerShape (ai3.model), so that other input shapes run in a
model built for them. With a sequence-first layer (batch_first=False,
torch's default) the model input's dim 0 is not taken for the batch
(ai3.torch.tracing.batch_leads): every input dim is fixed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import fx, nn

from ai3 import recurrent
from ai3.torch import params
from ai3.torch.nodes import unsupported

# torch's gate blocks in ONNX's order: LSTM (i, f, g, o) -> (i, o, f, c),
# GRU (r, z, n) -> (z, r, h).
_ONNX_ORDER = {"lstm": [0, 3, 1, 2], "gru": [1, 0, 2], "rnn": [0]}
_KINDS = ((nn.LSTM, "lstm"), (nn.GRU, "gru"), (nn.RNN, "rnn"))


def is_recurrent(m: nn.Module) -> bool:
    return any(isinstance(m, cls) for cls, _ in _KINDS)


def _gates(t: torch.Tensor | None, kind: str, rows: int) -> np.ndarray:
    """A weight or bias of torch's gate order in ONNX's (zeros where absent)."""
    if t is None:
        return np.zeros(rows)
    return recurrent.in_onnx_order(params.numpy_weight(t), _ONNX_ORDER[kind])


def map_module(mapper: Any, node: fx.Node, m: nn.Module) -> None:
    """Registers the specs of recurrent module `m` called at `node` with
    mapper (ai3.torch.fx's), and the tuple of its results."""
    kind = next(k for cls, k in _KINDS if isinstance(m, cls))
    name = node.target
    if getattr(m, "proj_size", 0):
        raise unsupported(node, f"nn.LSTM with proj_size={m.proj_size}; ai3 maps LSTMs without projections")
    x = node.args[0]
    hx = node.args[1] if len(node.args) > 1 else node.kwargs.get("hx")
    (shape, other) = mapper.shapes(node, x)
    if len(shape) != 3:
        raise unsupported(node, f"a rank-{len(shape)} (unbatched) input; ai3 maps batches of sequences (rank 3)")
    time_axis = 1 if m.batch_first else 0
    if shape[time_axis] != other[time_axis]:
        # The model's dim 0 was taken for the batch, and it reaches this
        # layer's time axis; the steps are unrolled, so they must be fixed.
        raise unsupported(
            node,
            f"a sequence length that depends on the model input's dim 0, taken for the batch; ai3 unrolls the "
            f"steps of a recurrent layer, so its time axis ({'dim 1 (batch_first)' if m.batch_first else 'dim 0'})"
            " must not follow the batch",
        )
    steps = int(shape[time_axis])
    batch = int(shape[0 if m.batch_first else 1])
    hidden, layers = m.hidden_size, m.num_layers
    count = 2 if m.bidirectional else 1

    def emit(op: str, ins: list, attrs: dict, weights: dict, suffix: str, shape: tuple | None = None) -> int:
        return mapper.emit(node, op, f"{name}{suffix}", ins, attrs, weights, input_shape=shape)

    source = mapper.tensor(node, x)
    if m.batch_first:
        source = emit("permute", [source], {"dims": [1, 0, 2]}, {}, ".time_major")
    states = _initial_states(mapper, node, emit, hx, kind, layers * count)
    activations = (m.nonlinearity,) if kind == "rnn" else recurrent.DEFAULT_ACTIVATIONS[kind]
    cell = recurrent.Cell(kind, hidden, linear_before_reset=kind == "gru")
    rows = recurrent.GATES[kind] * hidden
    h_n, c_n = [], []
    for layer in range(layers):
        directions = []
        for d in range(count):
            tail = f"_l{layer}" + ("_reverse" if d else "")
            k = layer * count + d
            directions.append(
                recurrent.Direction(
                    w=_gates(getattr(m, "weight_ih" + tail), kind, rows),
                    r=_gates(getattr(m, "weight_hh" + tail), kind, rows),
                    w_bias=_gates(getattr(m, "bias_ih" + tail, None), kind, rows),
                    r_bias=_gates(getattr(m, "bias_hh" + tail, None), kind, rows),
                    activations=activations,
                    reverse=bool(d),
                    h0=states[0][k],
                    c0=states[1][k],
                )
            )
        done = recurrent.run(emit, source, steps, cell, directions, prefix=f".l{layer}", batch=batch)
        source = recurrent.joined(emit, done.ys, 2, f"l{layer}.output")
        h_n += done.hs
        c_n += done.cs
    output = emit("permute", [source], {"dims": [1, 0, 2]}, {}, ".batch_major") if m.batch_first else source
    h = recurrent.joined(emit, h_n, 0, "h_n")
    mapper.pieces[node] = [output, (h, recurrent.joined(emit, c_n, 0, "c_n")) if kind == "lstm" else h]


def _initial_states(mapper: Any, node: fx.Node, emit: Any, hx: Any, kind: str, count: int) -> list:
    """[h0 per layer and direction, c0 likewise] as ai3.recurrent's Values:
    None without hx, else slices (1, N, H) of the given tensors."""
    if hx is None:
        return [[None] * count, [None] * count]
    if kind == "lstm" and not isinstance(hx, (tuple, list)):
        raise unsupported(node, "an LSTM's hx that is not a (h_0, c_0) pair")
    given = list(hx) if kind == "lstm" else [hx]
    out = []
    for which, t in zip("hc", given):
        if isinstance(t, fx.Node) and t in mapper.zeros:  # torch.zeros(layers, batch, hidden)
            out.append([None] * count)
            continue
        # The same zeros where no dim depends on the batch (a sequence-first
        # model is traced at fixed shapes) come in as a constant.
        constant = mapper.consts.get(t) if isinstance(t, fx.Node) else None
        if isinstance(constant, torch.Tensor) and not constant.any():
            out.append([None] * count)
            continue
        if constant is not None:
            raise unsupported(node, f"an initial {which} that is a nonzero constant; ai3 takes zeros or a computed one")
        if not isinstance(t, fx.Node):
            raise unsupported(node, f"an initial {which} that is not a tensor of the model")
        (shape, _) = mapper.shapes(node, t)
        if len(shape) != 3:
            raise unsupported(node, f"an unbatched initial {which} (rank {len(shape)})")
        out.append(recurrent.per_direction(emit, mapper.tensor(node, t), count, f"{which}0"))
    return out if kind == "lstm" else [out[0], [None] * count]
