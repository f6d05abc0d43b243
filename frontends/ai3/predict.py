"""The learned selector "predict": the fastest algorithm of a layer, guessed
from its parameters without timing.

A selector model is a small set of gradient-boosted trees per op (trained
with scikit-learn's GradientBoostingClassifier by `train`, on the rows of
an ai3.sweep dataset), saved as JSON: the trees' arrays, not a pickle, so
loading one runs no code and needs no scikit-learn; `Selector.rank`
evaluates them with NumPy (well under a millisecond per layer).

    python -m ai3 train-selector sweep.csv --out selector.json
    ai3.swap_backend(model, {"conv2d": "predict"}, sample_input_shape=...)
    AI3_SELECTOR=selector.json python ...     # use another selector model

Which selector model "predict" uses: $AI3_SELECTOR if set, else the one
shipped in the package (ai3/data/selector.json), trained on the sweep of
the machine it records. "predict" answers "default" for a layer where
  - no selector model is found, or it has no trees for the layer's op;
  - it was trained on another machine class or build: the op's list of
    algorithms differs, or the CPU's vector ISA (AVX-512 or not) or core
    count differs (timings do not carry over);
  - its most likely algorithm has a probability under the model's
    threshold ("unsure"), or cannot take the layer (the core refuses it).
"""

from __future__ import annotations

import functools
import json
import math
import os
import platform
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ai3 import errors, padding, tuning

ENV_SELECTOR = "AI3_SELECTOR"
SELECTOR_FORMAT = 1
DEFAULT_THRESHOLD = 0.5
PACKAGED = Path(__file__).resolve().parent / "data" / "selector.json"


# ---- The machine a selector was trained on ------------------------------------


def machine() -> dict[str, Any]:
    """What timings depend on besides the layer: the CPU, its vector ISA
    and the cores ai3 may use."""
    model, flags = "", set()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name") and not model:
                    model = line.split(":", 1)[1].strip()
                elif line.startswith("flags") and not flags:
                    flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    isa = "avx512" if "avx512f" in flags else "avx2" if "avx2" in flags else platform.machine()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return {"cpu": model or platform.processor(), "isa": isa, "cores": cores}


# ---- Features: one vector per layer ------------------------------------------------

DTYPE_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8}
CONV2D_FEATURES = (
    "batch",
    "c_in",
    "h",
    "w",
    "c_out",
    "kh",
    "kw",
    "stride_h",
    "stride_w",
    "pad_h",
    "pad_w",
    "dilation_h",
    "dilation_w",
    "groups",
    "depthwise",
    "h_out",
    "w_out",
    "log2_macs",
    "nhwc",
    "dtype_bytes",
    "fused",
)
LINEAR_FEATURES = ("rows", "in_features", "out_features", "log2_macs", "dtype_bytes", "fused")
GENERIC_FEATURES = ("rank", "d0", "d1", "d2", "d3", "log2_numel", "nhwc", "dtype_bytes")


def feature_names(op: str) -> tuple[str, ...]:
    return {"conv2d": CONV2D_FEATURES, "linear": LINEAR_FEATURES}.get(op, GENERIC_FEATURES)


@dataclass(frozen=True)
class ConvGeometry:
    """A conv2d layer's shape in one vocabulary, whatever the frontend."""

    batch: int
    c_in: int
    h: int
    w: int
    c_out: int
    kh: int
    kw: int
    stride: tuple[int, int]
    padding: tuple[int, int, int, int]
    dilation: tuple[int, int]
    groups: int

    @property
    def out_hw(self) -> tuple[int, int]:
        (sh, sw), (pt, pb, pl, pr), (dh, dw) = self.stride, self.padding, self.dilation
        return (
            (self.h + pt + pb - dh * (self.kh - 1) - 1) // sh + 1,
            (self.w + pl + pr - dw * (self.kw - 1) - 1) // sw + 1,
        )

    @property
    def macs(self) -> int:
        ho, wo = self.out_hw
        return self.batch * self.c_out * ho * wo * (self.c_in // max(1, self.groups)) * self.kh * self.kw


def _pair(v: Any, default: int) -> tuple[int, int]:
    if v is None:
        return default, default
    if isinstance(v, (int, np.integer)):
        return int(v), int(v)
    return int(v[0]), int(v[1])


def conv_geometry(
    attrs: Mapping[str, Any], weight_shape: Sequence[int], input_shape: Sequence[int], layout: str
) -> ConvGeometry:
    """From the core's conv2d attrs, the weight's (out, in/groups, kh, kw)
    shape and the NCHW or NHWC input shape."""
    if layout == "NHWC":
        n, h, w, c = input_shape
    else:
        n, c, h, w = input_shape
    pads = attrs.get("padding") or (0, 0, 0, 0)
    if len(pads) == 2:
        pads = (pads[0], pads[0], pads[1], pads[1])
    return ConvGeometry(
        int(n),
        int(c),
        int(h),
        int(w),
        int(weight_shape[0]),
        int(weight_shape[2]),
        int(weight_shape[3]),
        _pair(attrs.get("stride"), 1),
        tuple(int(p) for p in pads),
        _pair(attrs.get("dilation"), 1),  # type: ignore[arg-type]
        int(attrs.get("groups") or 1),
    )


def _log2(x: float) -> float:
    return math.log2(max(1.0, float(x)))


def features(
    op: str, attrs: Mapping[str, Any], weights: Mapping[str, Any], input_shape: Sequence[int], dtype: str, layout: str
) -> np.ndarray | None:
    """The feature vector of a layer (core attrs, weight shapes by name,
    input shape), or None when it cannot be made (e.g. a weight unknown)."""
    size = float(DTYPE_BYTES.get(dtype, 4))
    fused = float(attrs.get("activation") is not None or attrs.get("activation_fn", "identity") != "identity")
    try:
        if op == "conv2d":
            g = conv_geometry(attrs, weights["weight"], input_shape, layout)
            ho, wo = g.out_hw
            return np.array(
                [
                    g.batch,
                    g.c_in,
                    g.h,
                    g.w,
                    g.c_out,
                    g.kh,
                    g.kw,
                    *g.stride,
                    g.padding[0] + g.padding[1],
                    g.padding[2] + g.padding[3],
                    *g.dilation,
                    g.groups,
                    float(g.groups > 1 and g.groups == g.c_in),
                    ho,
                    wo,
                    _log2(g.macs),
                    float(layout == "NHWC"),
                    size,
                    fused,
                ],
                dtype=np.float64,
            )
        if op == "linear":
            out_features, in_features = (int(d) for d in weights["weight"][:2])
            rows = int(np.prod(input_shape[:-1])) if len(input_shape) > 1 else 1
            return np.array([rows, in_features, out_features, _log2(rows * in_features * out_features), size, fused])
        dims = [int(d) for d in input_shape][:4]
        return np.array(
            [
                len(input_shape),
                *(dims + [0] * (4 - len(dims))),
                _log2(np.prod(input_shape)),
                float(layout == "NHWC"),
                size,
            ],
            dtype=np.float64,
        )
    except (KeyError, TypeError, ValueError, IndexError):
        return None


def key_features(key: Mapping[str, Any]) -> np.ndarray | None:
    """The features of a tuning-cache key of a layer run by the core (the
    keys ai3.sweep records)."""
    params = key.get("params") or {}
    if key.get("via") != "core" or "attrs" not in params:
        return None
    return features(
        key["op"], params["attrs"], params.get("weights") or {}, key["input_shape"], key["dtype"], key["layout"]
    )


def _torch_core_attrs(c: Any) -> tuple[dict, dict] | None:
    from ai3.torch import mapping

    entry = mapping.lookup(c.layer)
    if entry is None:
        return None
    attrs, weights = entry.read(c.layer, c.name)
    if entry.resolve is not None:
        attrs = entry.resolve(attrs, c.input_shape, c.name)
    return dict(attrs), {k: None if w is None else tuple(np.shape(w)) for k, w in weights.items()}


def _keras_core_attrs(c: Any, op: str) -> tuple[dict, dict] | None:
    from ai3.keras import layers as keras_layers

    steps, _ = keras_layers.plan(c.layer, c.input_shape)
    step = next((s for s in steps if s["op"] == op), None)
    if step is None:
        return None
    attrs = dict(step["attrs"])
    for name, value in attrs.items():
        same = keras_layers._same_of(value)
        if same is not None:  # "same" padding, which depends on the (NHWC) input size
            attrs[name] = padding.same_2d(tuple(c.input_shape[1:3]), same.kernel, same.stride, same.dilation)
    return attrs, {w["name"]: tuple(w["shape"]) for w in step["weights"] if "shape" in w}


def candidate_features(op: str, c: Any) -> np.ndarray | None:
    """The features of a selection.Candidate, from the core's view of the
    layer whichever frontend made it; None where that view is unknown."""
    if c.input_shape is None or None in tuple(c.input_shape):
        return None
    try:
        if c.via == "core":
            params = c.params() if callable(c.params) else c.params
            if not params or "attrs" not in params:
                return None
            attrs, weights = params["attrs"], params.get("weights") or {}
        elif c.via == "torch":
            found = _torch_core_attrs(c)
            if found is None:
                return None
            attrs, weights = found
        elif c.via == "keras":
            found = _keras_core_attrs(c, op)
            if found is None:
                return None
            attrs, weights = found
        else:
            return None
    except errors.Error:
        return None
    return features(op, attrs, weights, tuple(int(d) for d in c.input_shape), c.dtype, c.layout)


# ---- Trees ------------------------------------------------------------------------


def _tree_json(tree: Any) -> dict[str, list]:
    t = tree.tree_
    return {
        "left": t.children_left.tolist(),
        "right": t.children_right.tolist(),
        "feature": t.feature.tolist(),
        "threshold": t.threshold.tolist(),
        "value": t.value[:, 0, 0].tolist(),
    }


class _Trees:
    """One op's boosted trees: per class k, raw score = sum over stages of
    learning_rate * tree[stage][k](x), then softmax (one tree per stage and
    a sigmoid for two classes), as GradientBoostingClassifier with
    init="zero" computes them. All trees are walked at once, one level per
    step (NumPy over the trees), so a prediction costs depth steps."""

    def __init__(self, data: Mapping[str, Any]):
        self.classes: list[str] = list(data["classes"])
        self.rate = float(data["learning_rate"])
        trees = [tree for stage in data["trees"] for tree in stage]
        self.per_stage = len(data["trees"][0]) if data["trees"] else 1
        width = max((len(t["left"]) for t in trees), default=1)

        def table(field: str, fill: float, dtype: Any) -> np.ndarray:
            out = np.full((len(trees), width), fill, dtype=dtype)
            for i, t in enumerate(trees):
                out[i, : len(t[field])] = t[field]
            return out

        self.left = table("left", -1, np.int64)
        self.right = table("right", -1, np.int64)
        self.feature = np.maximum(table("feature", 0, np.int64), 0)  # leaves: -2, never read
        self.threshold = table("threshold", 0.0, np.float64)
        self.value = table("value", 0.0, np.float64)
        self.depth = max((_depth(t["left"], t["right"]) for t in trees), default=0)
        self.rows = np.arange(len(trees))

    def proba(self, x: np.ndarray) -> np.ndarray:
        if len(self.classes) == 1:
            return np.ones(1)
        node = np.zeros(len(self.rows), dtype=np.int64)
        for _ in range(self.depth):
            left = self.left[self.rows, node]
            go_left = x[self.feature[self.rows, node]] <= self.threshold[self.rows, node]
            node = np.where(left == -1, node, np.where(go_left, left, self.right[self.rows, node]))
        raw = self.rate * self.value[self.rows, node].reshape(-1, self.per_stage).sum(axis=0)
        if self.per_stage == 1:  # two classes: raw is the log-odds of the second
            p = 1.0 / (1.0 + math.exp(-raw[0]))
            return np.array([1.0 - p, p])
        e = np.exp(raw - raw.max())
        return e / e.sum()


def _depth(left: Sequence[int], right: Sequence[int]) -> int:
    """The number of levels below the root of a tree given as child arrays."""
    depth, level = 0, [0]
    while True:
        level = [c for n in level for c in (left[n], right[n]) if c != -1]
        if not level:
            return depth
        depth += 1


# ---- A selector model ---------------------------------------------------------------


class Selector:
    """A trained selector model (see the module doc)."""

    def __init__(self, data: Mapping[str, Any], source: str = ""):
        if not isinstance(data, Mapping) or data.get("format") != SELECTOR_FORMAT:
            raise errors.InvalidArgument(
                f"{source or 'selector'}: not an ai3 selector model (format {SELECTOR_FORMAT})"
            )
        self.data = dict(data)
        self.source = source
        self.threshold = float(data.get("threshold", DEFAULT_THRESHOLD))
        self.machine = dict(data.get("machine") or {})
        self.algorithms = {op: list(v) for op, v in (data.get("algorithms") or {}).items()}
        self.ops = {op: _Trees(v) for op, v in (data.get("ops") or {}).items()}

    @classmethod
    def load(cls, path: str | os.PathLike) -> Selector:
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
        except (OSError, json.JSONDecodeError) as e:
            raise errors.InvalidArgument(f"cannot read the ai3 selector model {os.fspath(path)!r}: {e}") from e
        return cls(data, os.fspath(path))

    def save(self, path: str | os.PathLike) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.data, f, separators=(",", ":"))
            f.write("\n")

    def mismatch(self, op: str, device: str = "cpu") -> str | None:
        """Why this selector model does not apply to `op` here, or None."""
        if op not in self.ops:
            return f"it has no model of {op}"
        if self.algorithms.get(op) != tuning.known_algorithms(op, device):
            return f"it was trained on a build whose {op} algorithms were {self.algorithms.get(op)}"
        here = machine()
        for field in ("isa", "cores"):
            if self.machine.get(field) != here.get(field):
                return f"it was trained on a machine with {field} {self.machine.get(field)!r}, this one has {here.get(field)!r}"
        return None

    def rank(self, op: str, x: np.ndarray) -> list[tuple[str, float]]:
        """(algorithm, probability) for `op`'s layer of features `x`, most
        likely first."""
        trees = self.ops[op]
        p = trees.proba(x)
        return sorted(zip(trees.classes, p.tolist()), key=lambda cp: -cp[1])


@functools.lru_cache(maxsize=4)
def _load_cached(path: str, mtime: float) -> Selector:
    return Selector.load(path)


def current() -> Selector | None:
    """The selector model "predict" uses ($AI3_SELECTOR, else the packaged
    one), or None when there is none."""
    path = os.environ.get(ENV_SELECTOR) or (str(PACKAGED) if PACKAGED.exists() else "")
    if not path:
        return None
    try:
        return _load_cached(path, os.path.getmtime(path))
    except OSError as e:
        raise errors.InvalidArgument(f"cannot read the ai3 selector model {path!r} ({ENV_SELECTOR}): {e}") from e


_WARNED: set[tuple[str, str]] = set()


def _warn_once(source: str, why: str) -> None:
    if (source, why) not in _WARNED:
        _WARNED.add((source, why))
        warnings.warn(
            f"ai3: 'predict' uses 'default' here: the selector model {source} does not apply ({why})",
            RuntimeWarning,
            stacklevel=4,
        )


@dataclass
class Prediction:
    """What "predict" chose for a layer, and why."""

    choice: str  # an algorithm, or "default"
    predicted: str | None = None  # the model's most likely algorithm (None: no prediction)
    probability: float = 0.0
    reason: str = ""  # why the choice is "default", if it is


def choose(op: str, candidates: Sequence[Any], device: str = "cpu") -> list[Prediction]:
    """ "predict" for each selection.Candidate of `op`."""
    selector = current()
    why = (
        "no selector model (set AI3_SELECTOR or train one: python -m ai3 train-selector)"
        if selector is None
        else selector.mismatch(op, device)
    )
    if why is not None:
        if selector is not None and op in selector.ops:
            _warn_once(selector.source, why)
        return [Prediction("default", reason=why) for _ in candidates]
    out = []
    for c in candidates:
        x = candidate_features(op, c)
        if x is None:
            out.append(Prediction("default", reason="its parameters or input shape are unknown"))
            continue
        (best, p), *_ = selector.rank(op, x)
        if p < selector.threshold:
            out.append(Prediction("default", best, p, f"unsure ({best} at p={p:.2f} < {selector.threshold})"))
        elif c.make_layer is not None and not _takes(c, best):
            out.append(Prediction("default", best, p, f"{best} cannot take this layer"))
        else:
            out.append(Prediction(best, best, p))
    return out


def _takes(c: Any, algorithm: str) -> bool:
    """Whether the core builds the layer with `algorithm` (it refuses
    parameters an algorithm cannot take, e.g. winograd with stride 2)."""
    try:
        c.make_layer(algorithm)
    except errors.Error:
        return False
    return True


# ---- Training -----------------------------------------------------------------------


def training_set(
    rows: Sequence[Mapping[str, Any]], exclude_models: Sequence[str] = ()
) -> dict[str, tuple[np.ndarray, list[str], list[str]]]:
    """Per op, (features, the measured-fastest algorithm, the layer's key
    digest) of each distinct layer in a sweep dataset's rows
    (ai3.sweep.read_dataset), leaving out the rows of `exclude_models`."""
    from ai3 import sweep

    kept = [r for r in rows if r["model"] not in exclude_models]
    out = {}
    for op, layers in sweep.winners(kept).items():
        found = [(key_features(key), algorithm, digest) for digest, key, algorithm in layers]
        found = [f for f in found if f[0] is not None]
        if found:
            out[op] = (np.array([f[0] for f in found]), [f[1] for f in found], [f[2] for f in found])
    return out


def train(
    rows: Sequence[Mapping[str, Any]],
    *,
    exclude_models: Sequence[str] = (),
    threshold: float = DEFAULT_THRESHOLD,
    n_estimators: int = 60,
    max_depth: int = 3,
    learning_rate: float = 0.2,
) -> Selector:
    """A Selector trained on a sweep dataset's rows: for each op whose
    layers were won by more than one algorithm, gradient-boosted trees; an
    op always won by one algorithm gets that one (a one-class model)."""
    from sklearn.ensemble import GradientBoostingClassifier

    if not rows:
        raise errors.InvalidArgument("train-selector: the dataset has no rows")
    builds = sorted({r["build"] for r in rows})
    machines = sorted({r["machine"] for r in rows})
    if len(machines) > 1:
        raise errors.InvalidArgument(
            f"train-selector: the dataset mixes machines {machines}; train one selector per machine"
        )
    ops: dict[str, Any] = {}
    counts: dict[str, int] = {}
    for op, (x, y, _) in sorted(training_set(rows, exclude_models).items()):
        classes = sorted(set(y))
        counts[op] = len(y)
        if len(classes) == 1:
            ops[op] = {"classes": classes, "learning_rate": 0.0, "trees": []}
            continue
        model = GradientBoostingClassifier(
            n_estimators=n_estimators, max_depth=max_depth, learning_rate=learning_rate, init="zero", random_state=0
        ).fit(x, y)
        data = {
            "classes": [str(c) for c in model.classes_],
            "learning_rate": learning_rate,
            "trees": [[_tree_json(t) for t in stage] for stage in model.estimators_],
        }
        # The JSON trees must be the model: check them against scikit-learn.
        mine = np.array([_Trees(data).proba(row) for row in x])
        if not np.allclose(mine, model.predict_proba(x), atol=1e-6):
            raise errors.InternalError(f"train-selector: the {op} trees as saved disagree with scikit-learn's model")
        ops[op] = data
    first = json.loads(rows[0]["machine"])
    return Selector(
        {
            "format": SELECTOR_FORMAT,
            "machine": first,
            "builds": builds,
            "algorithms": {op: json.loads(next(r["algorithms"] for r in rows if r["op"] == op)) for op in ops},
            "threshold": threshold,
            "trained_on": sorted({r["model"] for r in rows} - set(exclude_models)),
            "layers": counts,
            "features": {op: list(feature_names(op)) for op in ops},
            "ops": ops,
        },
        "trained",
    )


# ---- The command line ------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m ai3 train-selector DATASET`."""
    import argparse

    from ai3 import sweep

    p = argparse.ArgumentParser(
        prog="python -m ai3 train-selector", description="Train the 'predict' selector on an ai3 sweep dataset (CSV)."
    )
    p.add_argument("dataset", help="the CSV an ai3 sweep wrote")
    p.add_argument(
        "--out", default="ai3_selector.json", help="where to write the selector model (default ai3_selector.json)"
    )
    p.add_argument("--exclude", action="append", default=[], help="a model of the dataset to leave out (repeatable)")
    p.add_argument(
        "--threshold",
        type=float,
        default=DEFAULT_THRESHOLD,
        help=f"below this probability 'predict' answers 'default' (default {DEFAULT_THRESHOLD})",
    )
    args = p.parse_args(argv)
    rows = sweep.read_dataset(args.dataset)
    selector = train(rows, exclude_models=args.exclude, threshold=args.threshold)
    selector.save(args.out)
    trained = training_set(rows, args.exclude)
    for op, (x, y, _) in sorted(trained.items()):
        hits = sum(selector.rank(op, xi)[0][0] == yi for xi, yi in zip(x, y))
        print(f"{op:12} {len(y):4} layers, {len(set(y))} winning algorithms, training top-1 {hits / len(y):.0%}")
    print(f"wrote {args.out} (trained on {', '.join(selector.data['trained_on'])}; machine {selector.machine})")
    return 0


__all__ = ["Prediction", "Selector", "candidate_features", "choose", "current", "features", "machine", "train"]
