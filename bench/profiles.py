"""Where a model's time goes, for the bench rows that miss their target.

A row that is not met says what limits it. These helpers turn
`ai3.Model.profile(x)` (the core's per-node clock inside whole forward
passes) and ONNX Runtime's own profile (`SessionOptions.enable_profiling`)
into the same short breakdown: time per kind of node, with convolutions
split by what decides their speed (depthwise, 1x1, 3x3, 7x7, ...), and the
five slowest nodes. A note can then say "depthwise convs 41%, 1x1 convs
30%" for both sides of a ratio.

Conv kinds come from the framework's own layer objects (nn.Conv2d, the ONNX
Conv node and its weight, the Keras layer), looked up by the node names
ai3.Model keeps, so no frontend internals are needed.
"""

from __future__ import annotations

import functools
import json
import math
import os
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from bench import timing


def conv_kind(kh: int, kw: int, groups: int, in_per_group: int | None) -> str:
    """A convolution's label: depthwise (one input channel per group),
    grouped, or dense, with its kernel size."""
    size = f"{kh}x{kw}"
    if groups > 1 and in_per_group == 1:
        return f"depthwise {size} conv"
    if groups > 1:
        return f"grouped {size} conv"
    return f"{size} conv"


def torch_conv_kinds(module: Any) -> dict[str, str]:
    """Module path -> conv kind for every nn.Conv2d (ai3's torch frontend
    names a conv node by its module path)."""
    import torch

    kinds = {}
    for name, m in module.named_modules():
        if isinstance(m, torch.nn.Conv2d):
            kh, kw = m.kernel_size
            kinds[name] = conv_kind(kh, kw, m.groups, m.in_channels // m.groups)
    return kinds


def torch_conv_flops(module: Any, x: Any) -> float:
    """2 x the multiply-adds of every nn.Conv2d of `module` in a forward
    pass on x (a direct convolution's count: winograd does fewer, so its
    rate is an effective one)."""
    import torch

    total = [0.0]

    def count(m: Any, inputs: Any, y: Any) -> None:
        kh, kw = m.kernel_size
        total[0] += 2.0 * y.numel() * (m.in_channels // m.groups) * kh * kw

    hooks = [m.register_forward_hook(count) for m in module.modules() if isinstance(m, torch.nn.Conv2d)]
    try:
        with torch.inference_mode():
            module(x)
    finally:
        for h in hooks:
            h.remove()
    return total[0]


def onnx_conv_flops(model: Any) -> float:
    """The same count for the Conv nodes of an ONNX model (bytes or
    ModelProto), their output shapes from ONNX's shape inference."""
    import onnx

    proto = onnx.load_from_string(model) if isinstance(model, (bytes, bytearray)) else model
    proto = onnx.shape_inference.infer_shapes(proto)
    shapes = {t.name: tuple(t.dims) for t in proto.graph.initializer}
    for v in [*proto.graph.value_info, *proto.graph.output]:
        shapes[v.name] = tuple(d.dim_value for d in v.type.tensor_type.shape.dim)
    total = 0.0
    for node in proto.graph.node:
        if node.op_type != "Conv" or len(node.input) < 2:
            continue
        weight, out = shapes.get(node.input[1]), shapes.get(node.output[0])
        if not weight or len(weight) != 4 or not out or not all(out):
            continue
        # The weight's second dim is the channels per group.
        total += 2.0 * math.prod(out) * weight[1] * weight[2] * weight[3]
    return total


def onnx_conv_kinds(model: Any) -> dict[str, str]:
    """Node name -> conv kind for every 2-D Conv of an ONNX model (bytes or
    ModelProto); the weight's initializer gives the channels per group."""
    import onnx
    from onnx import helper

    proto = onnx.load_from_string(model) if isinstance(model, (bytes, bytearray)) else model
    shapes = {t.name: tuple(t.dims) for t in proto.graph.initializer}
    kinds = {}
    for node in proto.graph.node:
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        if node.domain == "ai3" and attrs.get("op") == b"conv2d":
            # ai3's one node type: the core attributes and the weights' shapes as JSON.
            layout = dict(json.loads(attrs["weights"]))
            weight, groups = layout.get("weight"), int(json.loads(attrs["attrs"]).get("groups", 1))
            if weight and len(weight) == 4:
                kinds[node.name] = conv_kind(weight[2], weight[3], groups, weight[1])
            continue
        if node.op_type != "Conv":
            continue
        weight = shapes.get(node.input[1]) if len(node.input) > 1 else None
        kernel = list(attrs.get("kernel_shape") or (weight[2:] if weight else []))
        if len(kernel) != 2:
            continue
        kinds[node.name] = conv_kind(kernel[0], kernel[1], int(attrs.get("group", 1)), weight[1] if weight else None)
    return kinds


def _ai3_node_ops(model: Any) -> dict[str, str]:
    """Node name -> core op of every ai3 node: the layer nodes' `op`, and
    "concat" for the native concats the rewrite writes (ai3.native::Concat,
    which ORT's profile names by op type alone, as its own Concat)."""
    import onnx

    proto = onnx.load_from_string(model) if isinstance(model, (bytes, bytearray)) else model
    ops = {n.name: "concat" for n in proto.graph.node if n.domain == "ai3.native" and n.op_type == "Concat"}
    ops.update(
        {n.name: a.s.decode() for n in proto.graph.node if n.domain == "ai3" for a in n.attribute if a.name == "op"}
    )
    return ops


def keras_conv_kinds(model: Any) -> dict[str, str]:
    """Layer name -> conv kind for every Keras 2-D convolution layer."""
    import keras

    kinds = {}
    for layer in model.layers:  # keras.applications models are flat
        if isinstance(layer, keras.layers.DepthwiseConv2D):
            kinds[layer.name] = conv_kind(*layer.kernel_size, 2, 1)
        elif isinstance(layer, keras.layers.Conv2D):
            kinds[layer.name] = conv_kind(*layer.kernel_size, int(getattr(layer, "groups", 1) or 1), None)
    return kinds


@dataclass
class Breakdown:
    """One side of a profile: seconds per forward, by kind and per node."""

    source: str  # e.g. "ai3.Model.profile" or "ONNX Runtime profile"
    forward_seconds: float
    by_kind: dict[str, float] = field(default_factory=dict)
    nodes: list[tuple[str, str, str, float]] = field(default_factory=list)  # name, kind, algorithm/provider, s
    note: str = ""

    def top(self, k: int = 5) -> list[tuple[str, str, str, float]]:
        return sorted(self.nodes, key=lambda n: -n[3])[:k]

    @property
    def conv_seconds(self) -> float:
        """Seconds per forward in convolution nodes (every conv kind; a
        node with a depthwise conv fused in counts once)."""
        return sum(s for kind, s in self.by_kind.items() if kind.endswith("conv") or kind.endswith("conv2d"))

    def summary(self, k: int = 4) -> str:
        """'3x3 conv 61%, 1x1 conv 20%, ...' of the forward time."""
        total = self.forward_seconds or 1.0
        items = sorted(self.by_kind.items(), key=lambda kv: -kv[1])[:k]
        return ", ".join(f"{kind} {100 * s / total:.0f}%" for kind, s in items)


def guarded(fn: Callable[[], Breakdown], source: str) -> Breakdown:
    """fn(), or an empty Breakdown whose note says why the profile failed:
    a profile is a diagnosis, and must not end an hour-long bench run."""
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 - reported in the profile's note
        return Breakdown(
            source,
            float("nan"),
            note=f"profile failed: {type(e).__name__}: {str(e).splitlines()[0][:120] if str(e) else ''}",
        )


def _add(totals: dict[str, float], key: str, seconds: float) -> None:
    totals[key] = totals.get(key, 0.0) + seconds


def ai3_breakdown(model: Any, x: Any, conv_kinds: dict[str, str], repeats: int = 5) -> Breakdown:
    """ai3.Model.profile(x) grouped by kind: conv nodes by conv_kinds (by
    node name; a conv ai3 renamed falls back to 'conv2d'), other nodes by
    their op; the time outside every node is its own line."""
    p = model.profile(x, repeats=repeats)
    b = Breakdown("ai3.Model.profile (per-node clock)", p.forward_seconds)
    kinds = [conv_kinds.get(n.name, n.op) if n.op == "conv2d" else n.op for n in p.nodes]
    # A depthwise conv fused into the pointwise conv before it (core/graph.h)
    # runs inside that node, which is labelled with both kinds.
    inside = set()
    for i, n in enumerate(p.nodes):
        into = model._core.fused_into(i)
        if n.op == "conv2d" and into >= 0 and p.nodes[into].op == "conv2d":
            kinds[into] = f"{kinds[into]} + {kinds[i]}"
            inside.add(i)
    for i, (n, kind) in enumerate(zip(p.nodes, kinds)):
        if i in inside:
            continue
        _add(b.by_kind, kind, n.seconds)
        b.nodes.append((n.name, kind, n.algorithm, n.seconds))
    b.by_kind["(outside the nodes)"] = p.outside_seconds
    return b


def _ort_kind(
    op: str, inputs: list[Any], ai3_ops: frozenset[str], known: str | None = None, ai3_node: bool = False
) -> str:
    """ORT profile node -> kind. Convs (plain, fused, NCHWc, ai3's) are told
    apart by the weight shape ORT records as the second input; an ai3 node
    (whose session may hold its weights) by `known`, its kind from the
    model's node attributes."""
    shapes = [next(iter(i.values()), None) if isinstance(i, dict) else None for i in inputs]
    prefix = "ai3 node: " if ai3_node or op in ai3_ops or op.removesuffix("_prepared") in ai3_ops else ""
    op = op.removesuffix("_prepared") if prefix else op
    if prefix and known is not None:
        return prefix + known
    if op in ("Conv", "FusedConv", "NhwcFusedConv", "Conv2D") and len(shapes) > 1 and shapes[1] and len(shapes[1]) == 4:
        k, cg, kh, kw = shapes[1]
        x = shapes[0] or []
        c = x[1] if len(x) >= 2 else None
        groups = c // cg if c and cg and c >= cg else 1
        # An NCHWc input pads channels to the block: a weight with one input
        # channel per group and many outputs is depthwise either way.
        if cg == 1 and k > 1:
            groups = max(groups, 2)
        return prefix + conv_kind(kh, kw, groups, cg)
    return prefix + op


def ort_breakdown(
    model: Any,
    feed: dict[str, Any],
    options: Callable[[], Any],
    repeats: int = 5,
    session_class: Any = None,
    ai3_ops: Iterable[str] = (),
) -> Breakdown:
    """ONNX Runtime's own profile of `model` over `repeats` runs (after one
    untimed run, whose first-call allocations are dropped): kernel time per
    node from its 'Node' events, the forward time from its 'model_run'
    events. `options()` makes the SessionOptions (threads); `session_class`
    is onnxruntime.InferenceSession or ai3.onnx.InferenceSession, whose
    ai3-domain op types `ai3_ops` are labelled as ai3 nodes."""
    import onnxruntime as ort

    ops = frozenset(ai3_ops)
    ai3_nodes = _ai3_node_ops(model) if ops else {}
    kinds = {**ai3_nodes, **onnx_conv_kinds(model)} if ops else {}
    with tempfile.TemporaryDirectory() as tmp:
        so = options()
        so.enable_profiling = True
        so.profile_file_prefix = os.path.join(tmp, "ort")
        session = (session_class or ort.InferenceSession)(model, so, providers=["CPUExecutionProvider"])
        for _ in range(repeats + 1):
            session.run(None, feed)
        with open(session.end_profiling()) as f:
            events = json.load(f)
    runs = sorted(
        (e for e in events if e.get("cat") == "Session" and e.get("name") == "model_run"), key=lambda e: e["ts"]
    )
    if len(runs) < 2:
        return Breakdown("ONNX Runtime profile", float("nan"), note="no model_run events in ORT's profile")
    first_end = runs[0]["ts"] + runs[0]["dur"]
    timed = runs[1:]
    b = Breakdown("ONNX Runtime profile (kernel time per node)", sum(e["dur"] for e in timed) / len(timed) * 1e-6)
    per_node: dict[str, list[Any]] = {}
    for e in events:
        if e.get("cat") != "Node" or not e.get("name", "").endswith("_kernel_time") or e["ts"] < first_end:
            continue
        args = e.get("args", {})
        name = e["name"][: -len("_kernel_time")]
        kind = _ort_kind(
            args.get("op_name", "?"), args.get("input_type_shape", []), ops, kinds.get(name), name in ai3_nodes
        )
        entry = per_node.setdefault(name, [kind, args.get("provider", ""), 0.0])
        entry[2] += e["dur"] * 1e-6 / len(timed)
    for name, (kind, provider, seconds) in per_node.items():
        _add(b.by_kind, kind, seconds)
        b.nodes.append((name, kind, provider.replace("ExecutionProvider", ""), seconds))
    b.by_kind["(outside the kernels)"] = max(b.forward_seconds - sum(n[3] for n in b.nodes), 0.0)
    return b


def _keras_layer_of(node: str, conv_kinds: dict[str, str]) -> str | None:
    """The Keras layer a TF node path belongs to: a path component that is
    a layer name, or one with the "_<n>" suffix a retrace adds
    ("model_1/block1_conv_1/BiasAdd" is layer block1_conv)."""
    for part in node.split("/"):
        if part in conv_kinds:
            return part
        base, sep, n = part.rpartition("_")
        if sep and n.isdigit() and base in conv_kinds:
            return base
    return None


def tf_breakdown(
    fn: Callable[[], Any], conv_kinds: dict[str, str], repeats: int = 5, source: str = "TensorFlow profiler"
) -> Breakdown:
    """TensorFlow's own profile (tf.profiler, host trace) of `repeats`
    calls of `fn` (a warmed-up tf.function call): each op kernel's time from
    its "node:Type" events on TF's executor threads, convs (TF's, fused or
    not, and ai3's Ai3Layer nodes of conv layers) labelled by conv_kinds through the Keras
    layer name in the node's path, the forward time from the wall clock of the profiled
    calls."""
    import glob
    import time

    import tensorflow as tf
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    with tempfile.TemporaryDirectory() as tmp:
        tf.profiler.experimental.start(tmp)
        start = time.perf_counter()
        for _ in range(repeats):
            fn()
        forward = (time.perf_counter() - start) / repeats
        tf.profiler.experimental.stop()
        found = glob.glob(os.path.join(tmp, "**", "*.xplane.pb"), recursive=True)
        space = xplane_pb2.XSpace()
        if found:
            with open(found[0], "rb") as f:
                space.ParseFromString(f.read())
    b = Breakdown(source + " (kernel time per op)", forward)
    per_node: dict[str, list[Any]] = {}
    for plane in space.planes:
        if plane.name != "/host:CPU":
            continue
        for line in plane.lines:
            if not line.name.startswith("tf_Compute"):
                continue
            for event in line.events:
                name = plane.event_metadata[event.metadata_id].name
                node, sep, op = name.rpartition(":")
                if not sep or "::" in name or not op or op in ("ReadVariableOp", "_Arg", "_Retval", "NoOp"):
                    continue
                kind = op
                # Conv2D, DepthwiseConv2dNative, the fused forms grappler
                # and oneDNN rewrite them to (_FusedConv2D,
                # _MklNativeFusedDepthwiseConv2dNative, ...) and ai3's one
                # op, Ai3Layer, under a conv layer's name (with that layer's
                # fused activation, if any).
                if "conv2d" in op.lower() or op == "Ai3Layer":
                    layer = _keras_layer_of(node, conv_kinds)
                    kind = conv_kinds[layer] if layer else op
                if op.startswith("Ai3"):
                    kind = "ai3 node: " + kind
                entry = per_node.setdefault(node, [kind, op, 0.0])
                entry[2] += event.duration_ps * 1e-12 / repeats
    if not per_node:
        b.note = "the TF trace had no op events"
    for name, (kind, op, seconds) in per_node.items():
        _add(b.by_kind, kind, seconds)
        b.nodes.append((name, kind, op, seconds))
    b.by_kind["(outside the kernels)"] = max(forward - sum(n[3] for n in b.nodes), 0.0)
    return b


def _kind_rows(b: Breakdown) -> list[list[str]]:
    total = b.forward_seconds or 1.0
    count: dict[str, int] = {}
    for _, kind, _, _ in b.nodes:
        count[kind] = count.get(kind, 0) + 1
    return [
        [kind, str(count.get(kind, "")), f"{s * 1e3:.2f}", f"{100 * s / total:.1f}"]
        for kind, s in sorted(b.by_kind.items(), key=lambda kv: -kv[1])
    ]


def _top_rows(b: Breakdown, k: int = 5) -> list[list[str]]:
    total = b.forward_seconds or 1.0
    return [[name[-60:], kind, algo, f"{s * 1e3:.2f}", f"{100 * s / total:.1f}"] for name, kind, algo, s in b.top(k)]


# Framework op names -> ai3's, so the side-by-side table puts e.g. ORT's
# Gemm beside ai3's linear. Only for lining rows up; unmatched ops keep
# their own row.
_SAME_AS = {
    "Gemm": "linear",
    "MatMul": "matmul",
    "Add": "add",
    "AddV2": "add",
    "Mul": "mul",
    "Relu": "relu",
    "Clip": "clamp",
    "Relu6": "clamp",
    "MaxPool": "maxpool2d",
    "AveragePool": "avgpool2d",
    "AvgPool": "avgpool2d",
    "GlobalAveragePool": "adaptiveavgpool2d",
    "Concat": "concat",
    "ConcatV2": "concat",
    "Flatten": "flatten",
    "Sigmoid": "sigmoid",
    "Softmax": "softmax",
    "LayerNormalization": "layernorm",
    "Transpose": "permute",
    "Reshape": "reshape",
    "Gelu": "gelu",
    "HardSwish": "hardswish",
    "HardSigmoid": "hardsigmoid",
    "(outside the kernels)": "(outside the nodes)",
}


def _compare_key(kind: str) -> str:
    return _SAME_AS.get(kind, kind)


def compare_rows(sides: list[Breakdown]) -> list[list[str]]:
    """One row per kind, each side's ms per forward beside the others', and
    first side / last side: where the ratio of the whole row comes from."""
    keys: dict[str, list[float]] = {}
    for k, b in enumerate(sides):
        for kind, seconds in b.by_kind.items():
            keys.setdefault(_compare_key(kind.removeprefix("ai3 node: ")), [float("nan")] * len(sides))[k] = seconds

    def fmt(v: float) -> str:
        return "-" if v != v else f"{v * 1e3:.2f}"

    rows = []
    for kind, values in sorted(keys.items(), key=lambda kv: -max(v for v in kv[1] if v == v)):
        first, last = values[0], values[-1]
        ratio = f"{first / last:.2f}" if first == first and last == last and last > 0 else "-"
        rows.append([kind, *map(fmt, values), ratio])
    first, last = sides[0].forward_seconds, sides[-1].forward_seconds
    rows.append(
        [
            "forward",
            *(fmt(b.forward_seconds) for b in sides),
            f"{first / last:.2f}" if first == first and last > 0 else "-",
        ]
    )
    return rows


def compare_headers(sides: list[Breakdown]) -> list[str]:
    return ["kind", *(b.source.split(" (")[0] + " ms" for b in sides), "first / last side"]


KIND_HEADERS = ["kind", "nodes", "ms/forward", "%"]
TOP_HEADERS = ["node", "kind", "algorithm / provider / op", "ms", "%"]


@dataclass
class Entry:
    """The profile of one row that missed its target."""

    title: str  # e.g. "mobilenet_v2, batch 1: swap_backend 1.8x ORT (target <= 0.9x)"
    sides: list[Breakdown]
    # The model's convolution FLOPs (torch_conv_flops) and the SGEMM ceiling
    # measured in the same process (timing.sgemm_ceiling), GFLOP/s: with
    # them each side's convolutions get a rate, which says whether the row
    # is bound by the machine (convolutions near the ceiling on both sides)
    # or by what runs between them.
    conv_flops: float = float("nan")
    ceiling_gflops: float = float("nan")

    def conv_rates(self) -> list[str]:
        """Per side: 'ai3.Model.profile: convolutions 3.2 GFLOP in 11.4 ms,
        281 GFLOP/s = 86% of the SGEMM ceiling' (effective, as winograd
        does fewer), or nothing without the FLOPs."""
        if self.conv_flops != self.conv_flops or self.conv_flops <= 0:
            return []
        out = []
        for b in self.sides:
            if not b.conv_seconds > 0:
                continue
            rate = self.conv_flops / b.conv_seconds / 1e9
            share = f" = {rate / self.ceiling_gflops:.0%} of the {self.ceiling_gflops:.0f} GFLOP/s SGEMM ceiling"
            out.append(
                f"{b.source.split(' (')[0]}: convolutions {self.conv_flops / 1e9:.2f} GFLOP in "
                f"{b.conv_seconds * 1e3:.2f} ms, {rate:.0f} GFLOP/s effective"
                + (share if self.ceiling_gflops == self.ceiling_gflops else "")
            )
        return out


@functools.cache
def sgemm_ceiling_gflops() -> float:
    """This process's SGEMM ceiling (timing.sgemm_ceiling), measured once,
    when the first missed row needs it."""
    return timing.ceiling_gflops(timing.sgemm_ceiling())


def summary_line(entry: Entry) -> str:
    line = f"{entry.title}: " + "; ".join(
        f"{b.source.split(' (')[0]} {b.forward_seconds * 1e3:.1f} ms: {b.summary()}" for b in entry.sides
    )
    rates = entry.conv_rates()
    return line + (f" ({'; '.join(rates)})" if rates else "")


def render(entry: Entry) -> str:
    """The printed form: per side, the kinds table and the top-5 nodes."""
    out = [f"== {entry.title}", *entry.conv_rates()]
    if len(entry.sides) > 1:
        out.append(timing.format_table(compare_headers(entry.sides), compare_rows(entry.sides)))
    for b in entry.sides:
        out.append(f"-- {b.source}: {b.forward_seconds * 1e3:.2f} ms per forward" + (f" ({b.note})" if b.note else ""))
        if b.nodes:
            out += [
                timing.format_table(KIND_HEADERS, _kind_rows(b)),
                "top 5 nodes:",
                timing.format_table(TOP_HEADERS, _top_rows(b)),
            ]
    return "\n".join(out)


def write(path: str, title: str, entries: list[Entry], notes: list[str]) -> None:
    """bench/results/<bench>_profiles.md: a summary line per missed row,
    then its tables."""
    out = [f"# {title}", "", timing.machine_note(), ""]
    if not entries:
        out += ["Every row met its target; nothing to profile.", ""]
    out += [f"- {summary_line(e)}" for e in entries]
    out.append("")
    for e in entries:
        out += [f"## {e.title}", ""]
        rates = e.conv_rates()
        if rates:
            out += [f"- {r}" for r in rates] + [""]
        if len(e.sides) > 1:
            out += [
                "Side by side (ms per forward):",
                "",
                timing.markdown_table(compare_headers(e.sides), compare_rows(e.sides)),
                "",
            ]
        for b in e.sides:
            out += [
                f"### {b.source}: {b.forward_seconds * 1e3:.2f} ms per forward" + (f" ({b.note})" if b.note else ""),
                "",
            ]
            if b.nodes:
                out += [
                    timing.markdown_table(KIND_HEADERS, _kind_rows(b)),
                    "",
                    "Top 5 nodes:",
                    "",
                    timing.markdown_table(TOP_HEADERS, _top_rows(b)),
                    "",
                ]
    out += [f"- {n}" for n in notes]
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def write_results(
    results_flag: str,
    stem: str,
    summary: str,
    page: tuple[str, list[tuple[str, list[str], list[list[str]]]], list[str]],
    profiled: tuple[str, list[Entry], list[str]],
    chart: tuple[str, list[str], dict[str, list[float]]],
) -> None:
    """What a whole-model bench writes, in one place: `stem`.md (page
    title, table sections, notes), `stem`_profiles.md (title, the missed
    rows' entries, notes) and `stem`.png (chart title, groups, series, ms,
    log scale), under --results_dir (default bench/results). Prints the
    targets' `summary` and a line per missed row first."""
    print(f"\nissue 15 targets: {summary}")
    for e in profiled[1]:
        print(summary_line(e))
    out = timing.results_dir(results_flag)
    title, sections, notes = page
    timing.write_markdown(os.path.join(out, f"{stem}.md"), title, sections, notes)
    profile_title, entries, profile_notes = profiled
    write(os.path.join(out, f"{stem}_profiles.md"), profile_title, entries, profile_notes)
    chart_title, groups, series = chart
    timing.bar_chart(os.path.join(out, f"{stem}.png"), chart_title, groups, series, "ms", log=True)
    print(f"\nwrote {out}/{stem}.md, {stem}.png and {stem}_profiles.md")
