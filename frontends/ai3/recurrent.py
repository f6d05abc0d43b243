"""Recurrent layers (LSTM, GRU, simple RNN) as core specs, for any frontend.

The core has no recurrent op; a recurrence over a sequence whose length the
model fixes is its cell unrolled over the steps, each step a few core
layers (linear, slice, add, mul, sigmoid / tanh / relu, clamp). That is
the cell's own arithmetic, step by step, in ONNX's formulation (the
operators LSTM, GRU and RNN), which PyTorch's nn.LSTM / nn.GRU / nn.RNN
are instances of (tests/recurrent_test.py checks both against their
frameworks):

  - the input's projection x W^T + biases of every step is one linear
    layer over the whole sequence (T x N rows), before the recurrence;
  - each step adds H_{t-1} R^T (a linear layer of the hidden state) to
    its slice of that projection, and applies the gates.

Tensors of one step are (1, N, k): one direction's outputs of every step
concatenate along axis 0 into (T, N, H), and the last step's H is
(1, N, H), as ONNX's Y and Y_h have them per direction. A zero initial
state (the default) costs nothing: the first step has no R term. Where
the initial state is a constant its contribution is computed here, in
NumPy.

A value below is a spec index (a tensor the core computes), a NumPy array
(a constant, broadcast against (1, N, k)) or None (zero): the helpers fold
what they can, so the first step's arithmetic on a zero state emits
nothing.

Emit(op, inputs, attrs, weights, suffix, shape=None) -> spec index is the
frontend's way of adding a spec (its name gets `suffix`; `shape`, where
given, is its input's shape, which "auto" times the linear layers at).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

Value = int | np.ndarray | None
Emit = Callable[..., int]

# Gates per cell, in ONNX's order (LSTM: input, output, forget, cell; GRU:
# update, reset, hidden; RNN: one).
GATES = {"lstm": 4, "gru": 3, "rnn": 1}
# Activation functions per cell (ONNX's f, g, h) and their defaults.
DEFAULT_ACTIVATIONS = {"lstm": ("sigmoid", "tanh", "tanh"), "gru": ("sigmoid", "tanh"), "rnn": ("tanh",)}
# The activations a step can apply: core ops of one input and no attributes.
ACTIVATIONS = ("sigmoid", "tanh", "relu")
_NUMPY = {
    "sigmoid": lambda v: 1.0 / (1.0 + np.exp(-v)),
    "tanh": np.tanh,
    "relu": lambda v: np.maximum(v, 0.0),
}


@dataclass
class Direction:
    """One direction's weights, in ONNX's gate order: w (G*H, I), r (G*H, H),
    the input and recurrent biases (G*H each, zeros where absent),
    peepholes (3*H: input, output, forget; LSTM only, or None), the
    activations (names from ACTIVATIONS), the initial state (h0, and c0
    for an LSTM, as Values of shape (1, N, H)) and whether it runs the
    sequence backwards."""

    w: np.ndarray
    r: np.ndarray
    w_bias: np.ndarray
    r_bias: np.ndarray
    activations: Sequence[str]
    reverse: bool = False
    peepholes: np.ndarray | None = None
    h0: Value = None
    c0: Value = None


@dataclass
class Cell:
    kind: str  # "lstm", "gru" or "rnn"
    hidden: int
    clip: float | None = None  # the activations' inputs clamped to [-clip, clip]
    linear_before_reset: bool = False  # GRU: r * (H R_h^T + Rb_h), as torch's GRU
    input_forget: bool = False  # LSTM: f = 1 - i (coupled gates)


class _Values:
    """Arithmetic on Values, folding zeros and constants."""

    def __init__(self, emit: Emit, suffix: str, batch: int | None = None):
        self.emit = emit
        self.suffix = suffix
        self.batch = batch  # N, for the linear layers' input shapes

    def _name(self, what: str) -> str:
        return f"{self.suffix}/{what}"

    def binary(self, op: str, a: Value, b: Value, what: str) -> Value:
        """a op b for op add, sub or mul."""
        if op == "mul" and (a is None or b is None):
            return None
        if b is None:
            return a
        if a is None:
            return b if op == "add" else self.binary("mul", b, np.asarray(-1.0), what)
        if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
            return {"add": np.add, "sub": np.subtract, "mul": np.multiply}[op](a, b)
        if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
            reverse = isinstance(a, np.ndarray)
            tensor, constant = (b, a) if reverse else (a, b)
            return self.emit(op, [tensor], {"reverse": reverse}, {"other": constant}, self._name(what))
        return self.emit(op, [a, b], {}, {}, self._name(what))

    def linear(self, x: Value, weight: np.ndarray, bias: np.ndarray | None, what: str, steps: int = 1) -> Value:
        """x weight^T + bias (x: (steps, N, in))."""
        if x is None:
            return None if bias is None or not bias.any() else bias
        if isinstance(x, np.ndarray):
            return x @ weight.T + (0.0 if bias is None else bias)
        b = None if bias is None or not bias.any() else np.ascontiguousarray(bias)
        weights = {"weight": np.ascontiguousarray(weight), "bias": b}
        return self.emit("linear", [x], {}, weights, self._name(what), (steps, self.batch, weight.shape[1]))

    def part(self, x: Value, start: int, stop: int, what: str) -> Value:
        """x[..., start:stop] (the last axis)."""
        if x is None:
            return None
        if isinstance(x, np.ndarray):
            return x[..., start:stop] if x.ndim else x
        return self.emit("slice", [x], {"axis": 2, "start": start, "stop": stop, "step": 1}, {}, self._name(what))

    def activate(self, fn: str, x: Value, clip: float | None, what: str) -> Value:
        if clip is not None:
            x = self.clamp(x, clip, what)
        if x is None:
            x = np.asarray(0.0)
        if isinstance(x, np.ndarray):
            return _NUMPY[fn](x)
        return self.emit(fn, [x], {}, {}, self._name(f"{what}/{fn}"))

    def clamp(self, x: Value, clip: float, what: str) -> Value:
        if x is None or isinstance(x, np.ndarray):
            return None if x is None else np.clip(x, -clip, clip)
        return self.emit("clamp", [x], {"min": -clip, "max": clip}, {}, self._name(f"{what}/clip"))


def run(
    emit: Emit,
    x: int,
    steps: int,
    cell: Cell,
    directions: Sequence[Direction],
    prefix: str = "",
    batch: int | None = None,
) -> Run:
    """The cell over x, (T, N, I), in each direction (spec names get
    `prefix`, then the direction; `batch`: N where known)."""
    done = Run([], [], [])
    for d, direction in enumerate(directions):
        suffix = f"{prefix}/direction{d}" if len(directions) > 1 else prefix
        y, h, c = _one_direction(emit, x, steps, cell, direction, suffix, batch)
        done.ys.append(y)
        done.hs.append(h)
        done.cs.append(c)
    return done


def joined(emit: Emit, parts: Sequence[int], axis: int, what: str) -> int:
    """The tensors concatenated along `axis` (one: itself)."""
    return parts[0] if len(parts) == 1 else emit("concat", list(parts), {"axis": axis}, {}, f"/{what}")


def onnx_outputs(emit: Emit, steps: int, cell: Cell, done: Run) -> tuple[int, int, int | None]:
    """(Y, Y_h, Y_c) as ONNX's operators have them: Y (T, D, N, H), Y_h
    and Y_c (D, N, H) (Y_c None but for an LSTM)."""
    ys = [
        emit("reshape", [y], {"shape": [steps, 1, -1, cell.hidden]}, {}, f"/direction{d}/Y")
        for d, y in enumerate(done.ys)
    ]
    y_c = joined(emit, done.cs, 0, "Y_c") if cell.kind == "lstm" else None
    return joined(emit, ys, 1, "Y"), joined(emit, done.hs, 0, "Y_h"), y_c


@dataclass
class Run:
    """One layer's result per direction: the steps' H (T, N, H) in sequence
    order, the last step's H and C (1, N, H; C None but for an LSTM)."""

    ys: list[int]
    hs: list[int]
    cs: list[int | None]


def _one_direction(
    emit: Emit, x: int, steps: int, cell: Cell, d: Direction, suffix: str, batch: int | None
) -> tuple[int, int, int | None]:
    """(the steps' H concatenated along axis 0 in sequence order, the last
    step's H, its C)."""
    v = _Values(emit, suffix, batch)
    hidden = cell.hidden
    # Every bias that is added outside a product with r (GRU's R_h bias is
    # inside one with linear_before_reset) goes into the input projection.
    input_bias = d.w_bias + d.r_bias
    r_bias = np.zeros_like(d.r_bias)
    if cell.kind == "gru" and cell.linear_before_reset:
        input_bias[2 * hidden :] = d.w_bias[2 * hidden :]
        r_bias[2 * hidden :] = d.r_bias[2 * hidden :]
    projected = v.linear(x, d.w, input_bias, "input_projection", steps)
    h, c = d.h0, d.c0
    outputs: list[int] = [0] * steps
    order = range(steps - 1, -1, -1) if d.reverse else range(steps)
    for t in order:
        step = _Values(emit, f"{suffix}/step{t}", batch)
        xt = projected
        if steps > 1:
            xt = emit(
                "slice", [projected], {"axis": 0, "start": t, "stop": t + 1, "step": 1}, {}, f"{suffix}/step{t}/x"
            )
        if cell.kind == "lstm":
            h, c = _lstm_step(step, cell, d, xt, h, c)
        elif cell.kind == "gru":
            h = _gru_step(step, cell, d, xt, h, r_bias)
        else:
            h = step.activate(
                d.activations[0], step.binary("add", xt, step.linear(h, d.r, None, "recurrent"), "sum"), cell.clip, "h"
            )
        outputs[t] = h
    y = outputs[0] if steps == 1 else emit("concat", outputs, {"axis": 0}, {}, f"{suffix}/steps")
    return y, h, c


def _lstm_step(v: _Values, cell: Cell, d: Direction, xt: int, h: Value, c: Value) -> tuple[int, int]:
    n = cell.hidden
    f_act, g_act, h_act = d.activations
    pre = v.binary("add", xt, v.linear(h, d.r, None, "recurrent"), "gates")
    p = d.peepholes
    i_pre = v.part(pre, 0, n, "i")
    if p is not None:
        i_pre = v.binary("add", i_pre, v.binary("mul", c, p[:n], "peephole_i"), "i_peephole")
    i = v.activate(f_act, i_pre, cell.clip, "i")
    if cell.input_forget:
        f = v.binary("sub", np.asarray(1.0), i, "f")
    else:
        f_pre = v.part(pre, 2 * n, 3 * n, "f")
        if p is not None:
            f_pre = v.binary("add", f_pre, v.binary("mul", c, p[2 * n :], "peephole_f"), "f_peephole")
        f = v.activate(f_act, f_pre, cell.clip, "f")
    g = v.activate(g_act, v.part(pre, 3 * n, 4 * n, "c"), cell.clip, "c")
    c = v.binary("add", v.binary("mul", f, c, "kept"), v.binary("mul", i, g, "written"), "C")
    o_pre = v.part(pre, n, 2 * n, "o")
    if p is not None:
        o_pre = v.binary("add", o_pre, v.binary("mul", c, p[n : 2 * n], "peephole_o"), "o_peephole")
    o = v.activate(f_act, o_pre, cell.clip, "o")
    h = v.binary("mul", o, v.activate(h_act, c, None, "C"), "H")
    return h, c


def _gru_step(v: _Values, cell: Cell, d: Direction, xt: int, h: Value, r_bias: np.ndarray) -> int:
    n = cell.hidden
    f_act, g_act = d.activations
    if cell.linear_before_reset:
        recurrent = v.linear(h, d.r, r_bias, "recurrent")
        zr = v.binary("add", v.part(xt, 0, 2 * n, "zr_x"), v.part(recurrent, 0, 2 * n, "zr_h"), "zr")
    else:
        zr = v.binary("add", v.part(xt, 0, 2 * n, "zr_x"), v.linear(h, d.r[: 2 * n], None, "recurrent_zr"), "zr")
    z = v.activate(f_act, v.part(zr, 0, n, "z"), cell.clip, "z")
    r = v.activate(f_act, v.part(zr, n, 2 * n, "r"), cell.clip, "r")
    if cell.linear_before_reset:
        reset = v.binary("mul", r, v.part(recurrent, 2 * n, 3 * n, "hh"), "reset")
    else:
        reset = v.linear(v.binary("mul", r, h, "reset_h"), d.r[2 * n :], None, "recurrent_h")
    candidate = v.activate(g_act, v.binary("add", v.part(xt, 2 * n, 3 * n, "h_x"), reset, "h"), cell.clip, "h")
    # (1 - z) h~ + z H_{t-1} = h~ + z (H_{t-1} - h~)
    return v.binary("add", candidate, v.binary("mul", z, v.binary("sub", h, candidate, "kept"), "update"), "H")


def in_onnx_order(a: np.ndarray, order: Sequence[int]) -> np.ndarray:
    """A weight or bias whose rows are gate blocks in a framework's order,
    its blocks put in ONNX's: block k of the result is block order[k] of
    `a` (torch's LSTM (i, f, g, o) and Keras' (i, f, c, o) -> (i, o, f, c):
    order [0, 3, 1, 2])."""
    blocks = np.split(np.asarray(a, np.float64), len(order), axis=0)
    return np.concatenate([blocks[k] for k in order], axis=0)


def per_direction(emit: Emit, state: int, count: int, what: str) -> list[int]:
    """A computed initial state of (count, N, H), one (1, N, H) slice per
    layer and direction, as Direction's h0 / c0 take it."""
    if count == 1:
        return [state]
    return [
        emit("slice", [state], {"axis": 0, "start": k, "stop": k + 1, "step": 1}, {}, f"/{what}_{k}")
        for k in range(count)
    ]


def check_activations(kind: str, names: Sequence[str]) -> str | None:
    """Why the cell cannot run these activations, or None."""
    unknown = sorted({n for n in names if n not in ACTIVATIONS})
    if unknown:
        return f"the activation(s) {unknown}; ai3 runs {kind.upper()} cells with {', '.join(ACTIVATIONS)}"
    return None


__all__ = [
    "ACTIVATIONS", "Cell", "DEFAULT_ACTIVATIONS", "Direction", "GATES", "Run", "check_activations", "in_onnx_order",
    "joined", "onnx_outputs", "per_direction", "run",
]  # fmt: skip
