"""Plans: what ai3 chose for each layer of a model, and why.

    plan = ai3.plan(model, (1, 3, 224, 224))     # times every layer's algorithms
    print(plan)                                   # a table
    plan.save("resnet18.plan.json")
    ai3.swap_backend(model, ai3.Plan.load("resnet18.plan.json"))  # same choices, no timing

`plan` builds the model with the frontend's swap_backend (a torch module, a
Keras model, or an ONNX model or path), with "auto" for every op by
default, and keeps, per layer, the measurements ai3.tuning made (each
algorithm's median time, or why it was not timed, and its workspace bytes
where the core reports them) and the algorithm the model runs. A Plan is a
selector: given to any swap function (as `algos`, or a value of an `algos`
mapping) it names each layer's algorithm by the layer's name, so a tuned
choice is reproducible without timing again.

`plan(model, shape, "predict")` builds with the learned selector (ai3.predict)
for every op instead: nothing is timed, and each layer lists the predicted
algorithm and its probability beside "auto"'s measured choice where the
tuning cache has one (and that entry's measurements).

(This module is `ai3.plans`, not `ai3.plan`: `ai3.plan` is the function.)
"""

from __future__ import annotations

import io
import json
import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ai3 import errors, frontend, layouts, selection, tuning
from ai3 import layers as layers_module

PLAN_FORMAT = 1


@dataclass
class LayerPlan:
    """One layer: its name and op, the input shape it was planned for, the
    algorithm chosen and every measurement (empty when it was not timed)."""

    name: str
    op: str
    choice: str
    input_shape: tuple[int, ...] | None = None
    measurements: list[tuning.Measurement] = field(default_factory=list)
    cached: bool = False  # the measurements came from the tuning cache
    fused: bool = False  # selected, then fused into a neighbour (not a node of the model)
    # Under "predict": the learned model's most likely algorithm and its
    # probability (the choice is "default"'s pick where it was unsure), and
    # "auto"'s measured choice where the tuning cache had it.
    predicted: str | None = None
    probability: float | None = None
    measured: str | None = None

    def time_of(self, algorithm: str) -> float | None:
        return next((m.seconds for m in self.measurements if m.algorithm == algorithm), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "op": self.op,
            "choice": self.choice,
            "input_shape": None if self.input_shape is None else list(self.input_shape),
            "cached": self.cached,
            "fused": self.fused,
            "measurements": [asdict(m) for m in self.measurements],
            **{k: getattr(self, k) for k in ("predicted", "probability", "measured") if getattr(self, k) is not None},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LayerPlan:
        shape = data.get("input_shape")
        return cls(
            name=str(data["name"]),
            op=str(data["op"]),
            choice=str(data["choice"]),
            input_shape=None if shape is None else tuple(int(d) for d in shape),
            measurements=[tuning.Measurement(**m) for m in data.get("measurements", [])],
            cached=bool(data.get("cached", False)),
            fused=bool(data.get("fused", False)),
            predicted=data.get("predicted"),
            probability=data.get("probability"),
            measured=data.get("measured"),
        )


class Plan:
    """Per layer, the candidates' measured times and the choice. Prints as
    a table; saves to / loads from JSON; is a selector (see the module
    doc). `model` is the ai3.Model built while planning (None for a loaded
    plan)."""

    def __init__(
        self,
        layers: Sequence[LayerPlan],
        *,
        sample_input_shape: Sequence[int] | None = None,
        dtype: str = "float32",
        frontend: str = "",
        build: str = "",
        end_to_end: dict[str, float] | None = None,
        layout: Mapping[str, Any] | None = None,
        model: Any = None,
    ):
        self.layers = list(layers)
        self.sample_input_shape = None if sample_input_shape is None else tuple(int(d) for d in sample_input_shape)
        self.dtype = dtype
        self.frontend = frontend
        self.build = build
        self.end_to_end = dict(end_to_end or {})  # "ai3" / framework name -> seconds
        # The layout pass's choice (ai3.layouts.LayoutDecision as a dict:
        # plan, model_layout, layouts, conversions, seconds per plan timed,
        # graph fusion on or off and its seconds).
        self.layout = dict(layout or {})
        self.model = model
        self._by_key = {(lp.op, lp.name): lp for lp in self.layers}

    # ---- As a selector -----------------------------------------------------

    @property
    def layout_plan(self) -> str | None:
        """The layout plan to build with when this Plan is the selector
        (ai3.model.build reads it), so the choice is replayed, not timed."""
        return self.layout.get("plan")

    @property
    def fusion(self) -> bool | None:
        """The graph fusion choice to build with when this Plan is the
        selector (ai3.model.build reads it); None for a plan saved before
        it was recorded (the core's default, on)."""
        return self.layout.get("fusion")

    def ops(self) -> list[str]:
        return sorted({lp.op for lp in self.layers})

    def choices(self, op: str | None = None) -> list[tuple[str, str, str]]:
        """(name, op, choice) of every layer (of `op`), in model order."""
        return [(lp.name, lp.op, lp.choice) for lp in self.layers if op is None or lp.op == op]

    def __getitem__(self, name: str) -> LayerPlan:
        found = [lp for lp in self.layers if lp.name == name]
        if not found:
            raise KeyError(name)
        return found[0]

    def select_for(self, op: str, candidates: Sequence[selection.Candidate]) -> list[str]:
        """The selection layer's hook: the planned algorithm of each
        candidate, by op and layer name."""
        chosen = []
        for c in candidates:
            lp = self._by_key.get((op, c.name))
            if lp is None:
                listed = ", ".join(repr(n) for n, _, _ in self.choices(op)[:8]) or "none"
                raise errors.InvalidSelector(
                    f"{op} layer '{c.name}': the plan has no such layer (its {op} layers: {listed}); "
                    "make a plan for this model"
                )
            if c.input_shape is not None and lp.input_shape is not None and tuple(c.input_shape) != lp.input_shape:
                warnings.warn(
                    f"ai3: {op} layer '{c.name}' has input shape {tuple(c.input_shape)} but the plan was made "
                    f"for {lp.input_shape}; using its choice '{lp.choice}' anyway",
                    RuntimeWarning,
                    stacklevel=3,
                )
            chosen.append(lp.choice)
        return chosen

    # ---- JSON ---------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        return {
            "format": PLAN_FORMAT,
            "frontend": self.frontend,
            "build": self.build,
            "sample_input_shape": None if self.sample_input_shape is None else list(self.sample_input_shape),
            "dtype": self.dtype,
            "end_to_end": self.end_to_end,
            "layout": self.layout,
            "layers": [lp.to_json() for lp in self.layers],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Plan:
        if not isinstance(data, Mapping) or data.get("format") != PLAN_FORMAT:
            got = data.get("format") if isinstance(data, Mapping) else type(data).__name__
            raise errors.InvalidArgument(f"not an ai3 plan (format {got!r}, expected {PLAN_FORMAT})")
        try:
            layers = [LayerPlan.from_json(lp) for lp in data["layers"]]
        except (KeyError, TypeError, ValueError) as e:
            raise errors.InvalidArgument(f"malformed ai3 plan: {type(e).__name__}: {e}") from e
        return cls(
            layers,
            sample_input_shape=data.get("sample_input_shape"),
            dtype=str(data.get("dtype", "float32")),
            frontend=str(data.get("frontend", "")),
            build=str(data.get("build", "")),
            end_to_end={str(k): float(v) for k, v in (data.get("end_to_end") or {}).items()},
            layout=_layout_from_json(data.get("layout")),
        )

    def save(self, path: str | os.PathLike) -> None:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.to_json(), f, indent=1)
            f.write("\n")

    @classmethod
    def load(cls, path: str | os.PathLike) -> Plan:
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
        except OSError as e:
            raise errors.InvalidArgument(f"cannot read the plan {os.fspath(path)!r}: {e}") from e
        except json.JSONDecodeError as e:
            raise errors.InvalidArgument(f"the plan {os.fspath(path)!r} is not JSON: {e}") from e
        plan = cls.from_json(data)
        if plan.build and plan.build != tuning.build_id():
            # Not an error: the names still mean the same algorithms; only
            # the times may no longer be right.
            warnings.warn(
                f"ai3: the plan {os.fspath(path)!r} was measured on another build of ai3; its choices are used "
                "as they are (re-plan to re-time)",
                RuntimeWarning,
                stacklevel=2,
            )
        return plan

    # ---- Printing -------------------------------------------------------------

    def table(self) -> Any:
        """The plan as a rich Table."""
        from rich.table import Table

        title = f"ai3 plan ({self.frontend or 'model'}, input {self.sample_input_shape}, {self.dtype})"
        table = Table(title=title)
        predicted = any(lp.predicted is not None or lp.measured is not None for lp in self.layers)
        columns = [("layer", "left"), ("op", "left"), ("input", "left"), ("choice", "left")]
        if predicted:
            columns += [("predicted (p)", "left"), ("measured", "left")]
        for column, justify in columns + [("time (ms)", "right"), ("candidates (ms)", "left")]:
            table.add_column(column, justify=justify, overflow="fold")
        for lp in self.layers:
            best = lp.time_of(lp.choice)
            cells = [
                lp.name + (" (fused)" if lp.fused else ""),
                lp.op,
                "" if lp.input_shape is None else "x".join(str(d) for d in lp.input_shape),
                lp.choice,
            ]
            if predicted:
                cells += ["" if lp.predicted is None else f"{lp.predicted} ({lp.probability:.2f})", lp.measured or ""]
            table.add_row(*cells, "" if best is None else f"{best * 1e3:.3f}", _candidates_cell(lp))
        captions = []
        if self.layout:
            captions.append(layouts.describe(self.layout))
        if self.end_to_end:
            captions.append("end to end: " + ", ".join(f"{k} {v * 1e3:.2f} ms" for k, v in self.end_to_end.items()))
        if captions:
            table.caption = "; ".join(captions)
        return table

    def __rich__(self) -> Any:
        return self.table()

    def __str__(self) -> str:
        from rich.console import Console

        out = io.StringIO()
        Console(file=out, width=160, no_color=True, highlight=False, emoji=False).print(self.table())
        return out.getvalue().rstrip("\n")

    def __repr__(self) -> str:
        return f"<ai3.Plan: {len(self.layers)} layers, {self.frontend}, input {self.sample_input_shape}>"


def _layout_from_json(data: Any) -> dict[str, Any]:
    if not data:  # a plan saved before layouts were recorded, or none chosen
        return {}
    if not isinstance(data, Mapping) or data.get("plan") not in layouts.PLANS:
        raise errors.InvalidArgument(f"malformed ai3 plan: its layout entry {data!r} names no layout plan")
    return dict(data)


def _candidates_cell(lp: LayerPlan) -> str:
    """The timed candidates fastest first, then those not timed and why."""
    timed = sorted((m for m in lp.measurements if m.timed), key=lambda m: m.seconds)
    parts = []
    for m in timed:
        mark = " (cut short)" if m.note == tuning.STOPPED_EARLY else ""
        ws = f", {m.workspace_bytes} B" if m.workspace_bytes else ""
        parts.append(f"{m.algorithm} {m.seconds * 1e3:.3f}{ws}{mark}")
    for m in lp.measurements:
        if not m.timed:
            parts.append(f"{m.algorithm}: {m.note.split(':')[0]}")
    return "; ".join(parts)


# ---- Making plans ---------------------------------------------------------------


def frontend_of(model: Any) -> str:
    """The name of the frontend (ai3.frontend) whose models `model` is one of."""
    return frontend.of(model, "ai3.plan").name


def _gradient_choices(
    owner: frontend.Frontend, model: Any, backward: Any, sample_input_shape: Sequence[int]
) -> tuning.Recording:
    """What the frontend's in-place swaps select (and time) for the
    gradient ops of `model`'s layers under `backward`; none without it."""
    found = tuning.Recording()
    if backward is None:
        return found
    record = getattr(owner.load(), "record_backward", None)
    if record is None:
        raise errors.UnsupportedOperation(f"ai3.plan: the {owner.name} frontend's swaps take no backward selector")
    record(model, backward, sample_input_shape, recorder=found)
    return found


def plan(
    model: Any,
    sample_input_shape: Sequence[int],
    algos: Any = "auto",
    *,
    dtype: Any | None = None,
    backward: Any = None,
) -> Plan:
    """Builds `model` with its frontend's swap_backend and returns the Plan:
    per layer, the measured candidates and the choice. `algos` is
    swap_backend's, except that the plain string "auto" (the default) means
    "auto" for every op, so every layer is timed. Layers ai3 cannot time
    alone (several inputs) keep "default" under that blanket "auto".
    `sample_input_shape` is the model's input shape (NCHW for torch and
    ONNX, NHWC for Keras).

    `backward` (a backward selector, e.g. "auto"; see
    ai3.selection.split_backward): the plan also lists the choice of each
    gradient op of each layer the frontend's in-place swaps make
    differentiable, as rows of op ``<op>_backward_<target>`` (timed with
    "auto"), so the Plan given as a swap's ``backward=`` replays them. A
    frontend whose swaps take no backward selector refuses it."""
    if sample_input_shape is None:
        raise errors.InvalidArgument(
            "ai3.plan needs sample_input_shape: the layers are timed on their real input shapes"
        )
    owner = frontend.of(model, "ai3.plan")
    if isinstance(algos, str) and algos in (selection.AUTO, selection.PREDICT):
        algos = selection.EveryOp(algos)
    found = tuning.Recording()
    built = owner.swap_backend(model, algos, sample_input_shape, dtype=dtype, recorder=found)
    gradients = _gradient_choices(owner, model, backward, sample_input_shape)
    found.tuned += gradients.tuned
    measured = {(op, name): r for op, name, _, r in found.tuned}
    # "predict": the cache's measurements (if any) stand beside the prediction.
    predictions = {(op, name): (p, r) for op, name, p, r in found.predicted}
    measured.update({k: r for k, (_, r) in predictions.items() if r is not None and k not in measured})
    shapes: dict[tuple[str, str], Any] = {}
    for op, name, shape, _ in found.selected:  # the first: in the model's layout, as a replay sees it
        shapes.setdefault((op, name), shape)

    def layer_plan(name: str, op: str, algorithm: str, fused: bool = False) -> LayerPlan:
        r = measured.get((op, name))
        shape = shapes.get((op, name))
        p, cached = predictions.get((op, name), (None, None))
        return LayerPlan(
            name,
            op,
            algorithm,
            None if shape is None else tuple(int(d) for d in shape),
            [] if r is None else list(r.measurements),
            False if r is None else r.cached,
            fused,
            None if p is None else p.predicted,
            None if p is None or p.predicted is None else round(p.probability, 4),
            None if cached is None else cached.choice,
        )

    decision = getattr(built, "layout_decision", None)
    # The layout pass's conversions are not layers of the user's model (and
    # never selected): the plan's layout entry lists them.
    conversions = set() if decision is None else set(decision.conversions)
    layers = [layer_plan(name, op, algorithm) for name, op, algorithm in built.layers() if name not in conversions]
    # Layers selected, then fused into a neighbour (a relu into its conv):
    # listed too, so the plan still names them when it is a selector.
    present = {(lp.op, lp.name) for lp in layers}
    layers += [
        layer_plan(name, op, choice, True) for op, name, _, choice in found.selected if (op, name) not in present
    ]
    for op, name, shape, _ in gradients.selected:
        shapes.setdefault((op, name), shape)
    layers += [
        layer_plan(name, op, choice) for op, name, _, choice in gradients.selected if layers_module.BACKWARD in op
    ]
    return Plan(
        layers,
        sample_input_shape=sample_input_shape,
        dtype=built.dtype.name,
        frontend=owner.name,
        build=tuning.build_id(),
        layout=None if decision is None else asdict(decision),
        model=built,
    )


__all__ = ["LayerPlan", "Plan", "frontend_of", "plan"]
