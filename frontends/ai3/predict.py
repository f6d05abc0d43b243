"""The learned selector "predict": the fastest algorithm of a layer, guessed
from its parameters without timing.

A selector model is a small set of gradient-boosted trees per op, trained
by `train` with scikit-learn on the rows of an ai3.sweep dataset, saved as
JSON: the trees' arrays, not a pickle, so loading one runs no code and
needs no scikit-learn; `Selector.rank` evaluates them with NumPy (well
under a millisecond per layer). Two kinds (`train(kind=...)`):
  "regressor"   per algorithm, boosted regression trees of log(its time /
                the layer's fastest time) from the layer's shape features;
                the pick is the lowest prediction. Examples are weighted by
                what a wrong pick costs (the runner-up's extra seconds).
  "classifier"  GradientBoostingClassifier of the fastest algorithm's name
                (the first selector's kind).
`cross_validate` compares them leaving one model out at a time; `train`
with kind="auto" (the default) keeps the one with the lower time-weighted
regret there (see `_pick_kind` for why that measure).

    python -m ai3 train-selector sweep.csv --out selector.json
    ai3.swap_backend(model, {"conv2d": "predict"}, sample_input_shape=...)
    AI3_SELECTOR=selector.json python ...     # use another selector model

Which selector model "predict" uses: $AI3_SELECTOR if set, else the one
shipped in the package for this machine's class (CPU maker, vector ISA,
core count: ai3/data/selector_<class>.json, e.g. selector_intel_avx512_2),
trained on the sweep of the machine it records. "predict" answers "default" for a layer where
  - no selector model is found, or it has no trees for the layer's op;
  - it was trained on another machine class or build: the op's list of
    algorithms differs, or the CPU's vector ISA (AVX-512 or not) or core
    count differs (timings do not carry over);
  - the layer lies outside the shapes it was trained on (a size feature
    more than OUT_OF_RANGE times past the training range);
  - its most likely algorithm has a probability under the model's
    threshold ("unsure"), or neither it nor the runner-up can take the
    layer (the core refuses them).
"""

from __future__ import annotations

import functools
import json
import math
import os
import platform
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ai3 import errors, padding, tuning

ENV_SELECTOR = "AI3_SELECTOR"
SELECTOR_FORMAT = 1
DEFAULT_THRESHOLD = 0.5
# A regressor's confidence is already its margin: "unsure" there is a near
# tie in predicted time, where either pick costs little, and "default" is a
# third algorithm the sweep did not score, so by default it never falls back.
REGRESSOR_THRESHOLD = 0.0
OUT_OF_RANGE = 4.0  # a size feature this many times past the training range: "default"
# The shipped selector models, one per machine class (packaged_path).
PACKAGED = Path(__file__).resolve().parent / "data"


# ---- The machine a selector was trained on ------------------------------------


@functools.lru_cache(maxsize=1)
def _cpu() -> tuple[str, str]:
    """The CPU's model name and vector ISA, from /proc/cpuinfo read once:
    neither changes while the process runs, and "predict" asks for them
    per call (current(), Selector.mismatch): about 30 us a read."""
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
    return model or platform.processor(), isa


def machine() -> dict[str, Any]:
    """What timings depend on besides the layer: the CPU, its vector ISA
    and the cores ai3 may use (asked each time: the affinity may change)."""
    cpu, isa = _cpu()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return {"cpu": cpu, "isa": isa, "cores": cores}


def _vendor(cpu: str) -> str:
    """The maker in a CPU's model name ("AMD EPYC ...", "Intel(R) Xeon(R) ..."),
    "" if neither (another architecture, or no name)."""
    name = cpu.lower()
    return "amd" if "amd" in name else "intel" if "intel" in name else ""


def machine_class(m: dict[str, Any]) -> str:
    """What a selector model's timings carry over between (Selector.mismatch):
    the CPU's maker, its vector ISA and the core count, as a file name's
    part, e.g. "intel_avx512_2"."""
    return f"{_vendor(m.get('cpu', '')) or 'other'}_{m.get('isa')}_{m.get('cores')}"


def packaged_path(m: dict[str, Any] | None = None) -> Path:
    """Where the package keeps the selector model of machine `m`'s class
    (this machine's by default)."""
    return PACKAGED / f"selector_{machine_class(m or machine())}.json"


def _packaged() -> str:
    """The shipped selector model of this machine's class; else any shipped
    one, whose mismatch() then says why it does not apply; else ""."""
    mine = packaged_path()
    if mine.exists():
        return str(mine)
    shipped = sorted(PACKAGED.glob("selector_*.json"))
    return str(shipped[0]) if shipped else ""


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
    # Derived (appended: a selector trained before them reads only the ones above).
    "log2_bytes",
    "intensity",
    "out_pixels",
    "c_in_per_group",
    "c_out_per_group",
)
LINEAR_FEATURES = (
    "rows",
    "in_features",
    "out_features",
    "log2_macs",
    "dtype_bytes",
    "fused",
    "log2_bytes",
    "intensity",
)
# Features that are sizes: outside the training range past OUT_OF_RANGE, "default".
SIZE_FEATURES = {"batch", "c_in", "h", "w", "c_out", "rows", "in_features", "out_features"}
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
            groups = max(1, g.groups)
            moved = size * (
                g.batch * g.c_in * g.h * g.w + g.batch * g.c_out * ho * wo + g.c_out * (g.c_in // groups) * g.kh * g.kw
            )
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
                    _log2(moved),
                    g.macs / max(1.0, moved),
                    ho * wo,
                    g.c_in // groups,
                    g.c_out // groups,
                ],
                dtype=np.float64,
            )
        if op == "linear":
            out_features, in_features = (int(d) for d in weights["weight"][:2])
            rows = int(np.prod(input_shape[:-1])) if len(input_shape) > 1 else 1
            macs = rows * in_features * out_features
            moved = size * (rows * in_features + rows * out_features + in_features * out_features)
            return np.array(
                [rows, in_features, out_features, _log2(macs), size, fused, _log2(moved), macs / max(1.0, moved)]
            )
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
    """One op's boosted trees: per class k (an algorithm), raw score =
    offset[k] + sum over stages of learning_rate * tree[stage][k](x).
    A classifier (offsets 0, as GradientBoostingClassifier with init="zero")
    turns the scores into probabilities by softmax (one tree per stage and
    a sigmoid for two classes); a regressor's score is the algorithm's
    predicted log(time / fastest), and its probabilities a softmax of
    -score / sigma, sigma its error on the training layers (a pick
    whose margin is small against that error is unsure). All trees are
    walked at once, one level per step (NumPy over the trees), so a
    prediction costs depth steps."""

    def __init__(self, data: Mapping[str, Any]):
        self.kind = str(data.get("kind", "classifier"))
        self.classes: list[str] = list(data["classes"])
        self.rate = float(data["learning_rate"])
        self.offsets = np.array(data.get("offsets") or [0.0] * len(self.classes), dtype=np.float64)
        self.sigma = float(data.get("sigma", 1.0))
        self.lo = None if data.get("lo") is None else np.array(data["lo"], dtype=np.float64)
        self.hi = None if data.get("hi") is None else np.array(data["hi"], dtype=np.float64)
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

    def raw(self, x: np.ndarray) -> np.ndarray:
        """The per-class scores (see the class doc)."""
        if not len(self.rows):
            return self.offsets.copy()
        node = np.zeros(len(self.rows), dtype=np.int64)
        for _ in range(self.depth):
            left = self.left[self.rows, node]
            go_left = x[self.feature[self.rows, node]] <= self.threshold[self.rows, node]
            node = np.where(left == -1, node, np.where(go_left, left, self.right[self.rows, node]))
        return self.offsets + self.rate * self.value[self.rows, node].reshape(-1, self.per_stage).sum(axis=0)

    def proba(self, x: np.ndarray) -> np.ndarray:
        if len(self.classes) == 1:
            return np.ones(1)
        if self.kind == "regressor":
            logits = -self.raw(x) / max(self.sigma, 1e-3)
            e = np.exp(logits - logits.max())
            return e / e.sum()
        raw = self.raw(x)
        if self.per_stage == 1:  # two classes: raw is the log-odds of the second
            p = 1.0 / (1.0 + math.exp(-raw[0]))
            return np.array([1.0 - p, p])
        e = np.exp(raw - raw.max())
        return e / e.sum()

    def outside(self, x: np.ndarray, names: Sequence[str]) -> str | None:
        """The first size feature of `x` past the training range (OUT_OF_RANGE
        times), as a reason, or None."""
        if self.lo is None or self.hi is None:
            return None
        for i, name in enumerate(names[: len(self.lo)]):
            if name in SIZE_FEATURES and not self.lo[i] / OUT_OF_RANGE <= x[i] <= self.hi[i] * OUT_OF_RANGE:
                return f"its {name} {x[i]:g} lies outside the trained {self.lo[i]:g}..{self.hi[i]:g}"
        return None


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
        for what in ("isa", "cores"):
            if self.machine.get(what) != here.get(what):
                return f"it was trained on a machine with {what} {self.machine.get(what)!r}, this one has {here.get(what)!r}"
        # Another maker's cores rank the algorithms differently: the shipped
        # model of an AVX-512 Xeon, on an AVX-512 EPYC, picked layers that ran
        # mobilenet_v3_large in 5.0 ms against "default"'s 3.2 and "auto"'s 2.9.
        if _vendor(self.machine.get("cpu", "")) != _vendor(here["cpu"]):
            return f"it was trained on a {self.machine.get('cpu')!r}, this machine has a {here['cpu']!r}"
        return None

    def rank(self, op: str, x: np.ndarray) -> list[tuple[str, float]]:
        """(algorithm, probability of being the fastest) for `op`'s layer of
        features `x`, most likely first."""
        trees = self.ops[op]
        p = trees.proba(x)
        return sorted(zip(trees.classes, p.tolist()), key=lambda cp: -cp[1])

    def outside(self, op: str, x: np.ndarray) -> str | None:
        """Why the layer of features `x` is outside what `op`'s model was
        trained on, or None."""
        names = (self.data.get("features") or {}).get(op) or feature_names(op)
        return self.ops[op].outside(x, names)


@functools.lru_cache(maxsize=4)
def _load_cached(path: str, mtime: float) -> Selector:
    return Selector.load(path)


def current() -> Selector | None:
    """The selector model "predict" uses ($AI3_SELECTOR, else the packaged
    one of this machine's class), or None when there is none."""
    path = os.environ.get(ENV_SELECTOR) or _packaged()
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
        ranked = selector.rank(op, x)
        best, p = ranked[0]
        outside = selector.outside(op, x)
        if outside is not None:
            out.append(Prediction("default", best, p, outside))
        elif p < selector.threshold:
            out.append(Prediction("default", best, p, f"unsure ({best} at p={p:.2f} < {selector.threshold})"))
        elif c.make_layer is None:
            out.append(Prediction(best, best, p))
        else:
            # The likeliest the core takes (winograd refuses stride 2, ...);
            # past the runner-up the model knows little: "default".
            takes = next((a for a, _ in ranked[:2] if _takes(c, a)), None)
            if takes is None:
                out.append(
                    Prediction("default", best, p, f"{' and '.join(a for a, _ in ranked[:2])} cannot take this layer")
                )
            else:
                out.append(Prediction(takes, best, p))
    return out


def _takes(c: Any, algorithm: str) -> bool:
    """Whether the core builds the layer with `algorithm` (it refuses
    parameters an algorithm cannot take, e.g. winograd with stride 2);
    asked without building it where the candidate can (c.check)."""
    try:
        (c.check or c.make_layer)(algorithm)
    except errors.Error:
        return False
    return True


# ---- Training -----------------------------------------------------------------------

NEAR_TIE = 0.05  # a layer whose runner-up is within 5% of its fastest: either pick is right


@dataclass
class Layer:
    """One distinct layer of a sweep dataset (a tuning-cache key run by the
    core), with what the sweep measured of it."""

    op: str
    digest: str
    x: np.ndarray
    times: dict[str, float]  # algorithm -> median seconds, fully timed
    lower: dict[str, float]  # algorithm -> seconds where timing stopped early (a lower bound, >= 3x the best)
    runs: dict[str, list[float | None]]  # algorithm -> each independent run's seconds (sweep --reps)
    models: set[str]
    key: dict[str, Any] = field(default_factory=dict)  # its tuning-cache key fields

    @property
    def fastest(self) -> str:
        return min(self.times, key=self.times.__getitem__)

    def seconds(self, algorithm: str) -> float | None:
        return self.times.get(algorithm, self.lower.get(algorithm))

    @property
    def margin(self) -> float:
        """The runner-up's time over the fastest's, less 1 (inf: one algorithm ran)."""
        ts = sorted(self.times.values()) + sorted(self.lower.values())
        return ts[1] / ts[0] - 1.0 if len(ts) > 1 else math.inf

    @property
    def cost(self) -> float:
        """Seconds a wrong pick loses at least: the runner-up's extra time."""
        ts = sorted(self.times.values()) + sorted(self.lower.values())
        return ts[1] - ts[0] if len(ts) > 1 else 0.0


def dataset_layers(
    rows: Sequence[Mapping[str, Any]], exclude_models: Sequence[str] = (), only_models: Sequence[str] | None = None
) -> dict[str, list[Layer]]:
    """Per op, the distinct core-run layers of a sweep dataset's rows
    (ai3.sweep.read_dataset) of the models kept (all but `exclude_models`,
    or only `only_models`); a layer several models share is one Layer."""
    from ai3.sweep import row_key
    from ai3.tuning import STOPPED_EARLY

    found: dict[str, Layer] = {}
    for r in rows:
        if r["model"] in exclude_models or (only_models is not None and r["model"] not in only_models):
            continue
        if r["op"] == "layout_plan" or r.get("via", "core") != "core":
            continue
        layer = found.get(r["key_digest"])
        if layer is None:
            key = row_key(r)
            x = key_features(key)
            if x is None:
                continue
            layer = found[r["key_digest"]] = Layer(r["op"], r["key_digest"], x, {}, {}, {}, set(), key)
        if r["model"] not in layer.models and layer.models:
            layer.models.add(r["model"])  # another model's rows of the same layer: the first model's times stand
            continue
        layer.models.add(r["model"])
        if r["seconds"] and not r["note"]:
            layer.times[r["algorithm"]] = float(r["seconds"])
        elif r["seconds"] and r["note"] == STOPPED_EARLY:
            layer.lower[r["algorithm"]] = float(r["seconds"])
        if r.get("run_seconds"):
            layer.runs[r["algorithm"]] = json.loads(r["run_seconds"])
    out: dict[str, list[Layer]] = {}
    for layer in found.values():
        if layer.times:  # some algorithm ran it through
            out.setdefault(layer.op, []).append(layer)
    return out


def training_set(
    rows: Sequence[Mapping[str, Any]], exclude_models: Sequence[str] = ()
) -> dict[str, tuple[np.ndarray, list[str], list[str]]]:
    """Per op, (features, the measured-fastest algorithm, the layer's key
    digest) of each distinct layer in a sweep dataset's rows, leaving out
    the rows of `exclude_models`."""
    return {
        op: (np.array([la.x for la in ls]), [la.fastest for la in ls], [la.digest for la in ls])
        for op, ls in dataset_layers(rows, exclude_models).items()
    }


def _fit_classifier(ls: Sequence[Layer], n_estimators: int, max_depth: int, learning_rate: float) -> dict[str, Any]:
    from sklearn.ensemble import GradientBoostingClassifier

    x, y = np.array([la.x for la in ls]), [la.fastest for la in ls]
    classes = sorted(set(y))
    span = {"lo": x.min(axis=0).tolist(), "hi": x.max(axis=0).tolist()}
    if len(classes) == 1:
        return {"kind": "classifier", "classes": classes, "learning_rate": 0.0, "trees": [], **span}
    model = GradientBoostingClassifier(
        n_estimators=n_estimators, max_depth=max_depth, learning_rate=learning_rate, init="zero", random_state=0
    ).fit(x, y)
    data = {
        "kind": "classifier",
        "classes": [str(c) for c in model.classes_],
        "learning_rate": learning_rate,
        "trees": [[_tree_json(t) for t in stage] for stage in model.estimators_],
        **span,
    }
    # The JSON trees must be the model: check them against scikit-learn.
    if not np.allclose(np.array([_Trees(data).proba(row) for row in x]), model.predict_proba(x), atol=1e-6):
        raise errors.InternalError("train-selector: the classifier trees as saved disagree with scikit-learn's model")
    return data


def _fit_regressor(ls: Sequence[Layer], n_estimators: int, max_depth: int, learning_rate: float) -> dict[str, Any]:
    """Per algorithm timed on at least 2 layers, boosted regression trees of
    log(its time / the layer's fastest), each layer weighted by what a wrong
    pick there costs (its runner-up's extra seconds, relative to the mean;
    at least a 20th of it, so near ties still count)."""
    from sklearn.ensemble import GradientBoostingRegressor

    x = np.array([la.x for la in ls])
    cost = np.array([la.cost for la in ls])
    weight = np.maximum(cost / cost.mean(), 0.05) if cost.mean() > 0 else np.ones(len(ls))
    algorithms = sorted({a for la in ls for a in (*la.times, *la.lower)})
    algorithms = [a for a in algorithms if sum(la.seconds(a) is not None for la in ls) >= 2]
    if len(algorithms) <= 1:
        return {"kind": "regressor", "classes": algorithms or [ls[0].fastest], "learning_rate": 0.0, "trees": []}
    offsets, models, residuals = [], [], []
    for a in algorithms:
        idx = [i for i, la in enumerate(ls) if la.seconds(a) is not None]
        y = np.array([math.log(ls[i].seconds(a) / ls[i].times[ls[i].fastest]) for i in idx])
        w = weight[idx]
        offset = float(np.average(y, weights=w))
        model = GradientBoostingRegressor(
            n_estimators=n_estimators, max_depth=max_depth, learning_rate=learning_rate, init="zero", random_state=0
        ).fit(x[idx], y - offset, sample_weight=w)
        offsets.append(offset)
        models.append(model)
        residuals.append((offset + model.predict(x[idx]) - y, w))
    res = np.concatenate([r for r, _ in residuals])
    wts = np.concatenate([w for _, w in residuals])
    data = {
        "kind": "regressor",
        "classes": algorithms,
        "learning_rate": learning_rate,
        "offsets": offsets,
        "trees": [[_tree_json(m.estimators_[s, 0]) for m in models] for s in range(n_estimators)],
        "sigma": max(0.05, float(np.sqrt(np.average(res**2, weights=wts)))),
        "lo": x.min(axis=0).tolist(),
        "hi": x.max(axis=0).tolist(),
    }
    trees = _Trees(data)
    want = np.array([[o + m.predict(row[None])[0] for o, m in zip(offsets, models)] for row in x[:20]])
    if not np.allclose(np.array([trees.raw(row) for row in x[:20]]), want, atol=1e-6):
        raise errors.InternalError("train-selector: the regression trees as saved disagree with scikit-learn's model")
    return data


KINDS = ("regressor", "classifier")


def train(
    rows: Sequence[Mapping[str, Any]],
    *,
    exclude_models: Sequence[str] = (),
    kind: str = "auto",
    threshold: float | None = None,
    n_estimators: int = 60,
    max_depth: int = 3,
    learning_rate: float = 0.2,
) -> Selector:
    """A Selector trained on a sweep dataset's rows (see the module doc for
    the kinds; "auto": the one cross_validate finds better, where the
    dataset has at least two models, else the regressor). An op always won
    by one algorithm gets that one (a one-class model)."""
    if not rows:
        raise errors.InvalidArgument("train-selector: the dataset has no rows")
    if kind not in (*KINDS, "auto"):
        raise errors.InvalidArgument(f"train-selector: kind must be one of {KINDS} or 'auto', got {kind!r}")
    builds = sorted({r["build"] for r in rows})
    machines = sorted({r["machine"] for r in rows})
    if len(machines) > 1:
        raise errors.InvalidArgument(
            f"train-selector: the dataset mixes machines {machines}; train one selector per machine"
        )
    validation = None
    if kind == "auto":
        kept = [r for r in rows if r["model"] not in exclude_models]
        validation = cross_validate(kept) if len({r["model"] for r in kept}) > 1 else None
        kind = _pick_kind(validation) if validation else "regressor"
    fit = _fit_regressor if kind == "regressor" else _fit_classifier
    ops: dict[str, Any] = {}
    counts: dict[str, int] = {}
    for op, ls in sorted(dataset_layers(rows, exclude_models).items()):
        counts[op] = len(ls)
        ops[op] = fit(ls, n_estimators, max_depth, learning_rate)
    if threshold is None:
        threshold = REGRESSOR_THRESHOLD if kind == "regressor" else DEFAULT_THRESHOLD
    first = json.loads(rows[0]["machine"])
    data = {
        "format": SELECTOR_FORMAT,
        "kind": kind,
        "machine": first,
        "builds": builds,
        "algorithms": {op: json.loads(next(r["algorithms"] for r in rows if r["op"] == op)) for op in ops},
        "threshold": threshold,
        "trained_on": sorted({r["model"] for r in rows} - set(exclude_models)),
        "layers": counts,
        "features": {op: list(feature_names(op)) for op in ops},
        "ops": ops,
    }
    if validation:
        data["cross_validation"] = validation
    return Selector(data, "trained")


def _pick(selector: Selector, layer: Layer) -> str:
    """The algorithm "predict" runs on a dataset layer: the likeliest one
    that ran it (at run time the core's check skips one that cannot take
    the layer the same way)."""
    ranked = [a for a, _ in selector.rank(layer.op, layer.x)]
    return next((a for a in ranked if layer.seconds(a) is not None), layer.fastest)


def score(picks: Sequence[tuple[Layer, str]]) -> dict[str, float]:
    """How good picks are on layers: top-1 agreement with the measured
    fastest (all layers, and those without a near tie), the picked time over
    the fastest (geometric mean, median), and the time-weighted ratio (sum
    of picked times over sum of fastest: what a model made of these layers
    would lose end to end)."""
    if not picks:
        return {}
    ratio = np.array([la.seconds(a) / la.times[la.fastest] for la, a in picks])
    clear = [(la, a) for la, a in picks if la.margin > NEAR_TIE]
    return {
        "layers": len(picks),
        "top1": float(np.mean([a == la.fastest for la, a in picks])),
        "clear_layers": len(clear),
        "top1_clear": float(np.mean([a == la.fastest for la, a in clear])) if clear else math.nan,
        "geomean": float(np.exp(np.mean(np.log(ratio)))),
        "median": float(np.median(ratio)),
        "weighted": float(sum(la.seconds(a) for la, a in picks) / sum(la.times[la.fastest] for la, _ in picks)),
    }


def cross_validate(rows: Sequence[Mapping[str, Any]], kinds: Sequence[str] = KINDS) -> dict[str, Any]:
    """Leave-one-model-out: for each model of the dataset, each kind trained
    on the others picks for that model's layers (conv2d and linear); the
    picks of all folds scored together (`score`), per kind."""
    models = sorted({r["model"] for r in rows})
    picks: dict[str, list[tuple[Layer, str]]] = {k: [] for k in kinds}
    for held in models:
        test = dataset_layers(rows, only_models=[held])
        for kind in kinds:
            selector = train(rows, exclude_models=[held], kind=kind)
            for op in ("conv2d", "linear"):
                if op in selector.ops:
                    picks[kind] += [(la, _pick(selector, la)) for la in test.get(op, [])]
    return {"models": models, **{k: score(v) for k, v in picks.items()}}


def _pick_kind(validation: Mapping[str, Any]) -> str:
    """The kind with the lower time-weighted ratio in leave-one-model-out
    validation: what a user sees is the model's time, a layer's share of
    which is its time; top-1 would count a 1% loss on a near tie like a 10x
    loss on a big layer. Both kinds stay: which wins depends on the
    machine's labels (bench/predict_quality.py reports both), so the
    comparison is rerun wherever a selector is trained."""
    scored = [(validation[k]["weighted"], i, k) for i, k in enumerate(KINDS) if validation.get(k)]
    return min(scored)[2] if scored else "regressor"  # a tie: the regressor (it also says by how much)


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
        "--kind",
        choices=(*KINDS, "auto"),
        default="auto",
        help="the model kind (default auto: the better in leave-one-model-out validation)",
    )
    p.add_argument(
        "--threshold",
        type=float,
        help=f"below this probability 'predict' answers 'default' (default {REGRESSOR_THRESHOLD} for a regressor, "
        f"{DEFAULT_THRESHOLD} for a classifier)",
    )
    args = p.parse_args(argv)
    rows = sweep.read_dataset(args.dataset)
    selector = train(rows, exclude_models=args.exclude, kind=args.kind, threshold=args.threshold)
    selector.save(args.out)
    for line in validation_lines(selector.data.get("cross_validation")):
        print(line)
    for op, ls in sorted(dataset_layers(rows, args.exclude).items()):
        hits = sum(selector.rank(op, la.x)[0][0] == la.fastest for la in ls)
        print(
            f"{op:12} {len(ls):4} layers, {len({la.fastest for la in ls})} winning algorithms, "
            f"training top-1 {hits / len(ls):.0%}"
        )
    print(
        f"wrote {args.out} ({selector.data['kind']}, trained on {', '.join(selector.data['trained_on'])}; "
        f"machine {selector.machine})"
    )
    return 0


def validation_lines(validation: Mapping[str, Any] | None) -> list[str]:
    """A Markdown table of cross_validate's result (nothing if None)."""
    if not validation:
        return []
    lines = [
        f"Leave-one-model-out over {', '.join(validation['models'])} (conv2d + linear layers):",
        "",
        "| kind | layers | top-1 | top-1 without near ties (layers) | picked/fastest geomean | median | "
        "time-weighted |",
        "|---|---|---|---|---|---|---|",
    ]
    for kind in KINDS:
        v = validation.get(kind)
        if v:
            lines.append(
                f"| {kind} | {v['layers']} | {v['top1']:.1%} | {v['top1_clear']:.1%} ({v['clear_layers']}) | "
                f"{v['geomean']:.3f}x | {v['median']:.3f}x | {v['weighted']:.3f}x |"
            )
    return lines


__all__ = [
    "Layer",
    "Prediction",
    "Selector",
    "candidate_features",
    "choose",
    "cross_validate",
    "current",
    "dataset_layers",
    "features",
    "machine",
    "score",
    "train",
]
