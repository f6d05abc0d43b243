"""bazel run //bench:conv2d — every ai3 conv2d algorithm next to PyTorch and
ONNX Runtime.

For the seed paper's single-convolution shapes (N, C, H, W) = (10,3,224,224),
(10,64,112,112), (10,256,28,28), (10,512,14,14) and their batch-1 versions,
a 3x3 convolution with padding 1 to max(C, 64) output channels, float32, on
2 threads: the time and GFLOP/s of each ai3 algorithm in NCHW and in NHWC
(input and output in that order, as the layout pass runs a network's
convs; no conversion timed), of torch.nn.functional.conv2d and of a
one-Conv ONNX graph in ONNX Runtime, all in this one process, side by side
in --shape_rounds alternating rounds of --reps calls each (the least
disturbed round's median kept, as //bench:models times), and the ratios to
PyTorch and ORT (below 1: ai3 faster).

Before the shapes, the SGEMM ceiling of this machine, measured in this
process: a square float32 GEMM of --ceiling_size through NumPy's BLAS,
through torch.mm and through ai3's linear "gemm", 2 threads, best of
--ceiling_reps; the fastest is the ceiling.

Then the issue-15 target rows for the batch-10 shapes, met / NOT met:
  - best ai3 algorithm <= 0.6x ONNX Runtime's time;
  - best ai3 >= 85% of the measured SGEMM ceiling, in effective GFLOP/s
    (2 x the direct convolution's multiply-adds over the time; winograd
    does fewer, so it can pass the ceiling).
Writes bench/results/conv2d.md and conv2d.png. Every algorithm runs,
"direct" (the register-blocked direct convolution) included; the ceiling's
GFLOP/s is printed beside each row's so a kernel's share of it reads off.

A quick smoke run: bazel run //bench:conv2d -- --batches=10 --reps=2 --ceiling_reps=2

Per-layer mode, --model=NAME (a torchvision model of bench/zoo) at
--batch=B: the model is built as swap_backend(model, "auto") builds it, and
every conv2d of it is timed once per algorithm exactly as the model runs it
(the layer the model's recipe holds: its layout, fused epilogue and input
shape), in interleaved rounds (each round calls every algorithm once, in a
rotated order; the median over rounds is kept), beside the conv's time
inside the model (ai3.Model.profile's per-node clock) and ONNX Runtime's
kernel time for that Conv node (its own profile of the exported model). It
prints one row per conv and the rows where ai3's best is slower than ORT's
node, largest loss first; nothing is written to bench/results.
  bazel run //bench:conv2d -- --model=resnet18 --batch=1
--only_1x1 keeps the 1x1 (pointwise) convs only.

On a shared, loaded machine set OMP_WAIT_POLICY=PASSIVE: with OpenMP's
default spin-waiting, ai3's and PyTorch's threads fight the other load and
both run tens of times slower (the tables record the policy they ran under).
"""

from __future__ import annotations

import functools
import math
import os
import time
from typing import Any

from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_integer("threads", 2, "Threads for PyTorch, ONNX Runtime and ai3 (OpenMP).")
flags.DEFINE_integer("reps", 5, "Timed runs per measurement (median kept).")
flags.DEFINE_alias("repeats", "reps")
flags.DEFINE_list("batches", ["10", "1"], "Batch sizes to run each shape at (the targets are for batch 10).")
flags.DEFINE_integer("ceiling_size", 2048, "M = N = K of the square SGEMM that measures the ceiling.")
flags.DEFINE_integer("ceiling_reps", 5, "Runs of each ceiling SGEMM (the fastest kept).")
flags.DEFINE_list("algorithms", [], "ai3 algorithms to time (default: all applicable).")
flags.DEFINE_string("results_dir", "", "Where to write conv2d.md / conv2d.png (default: bench/results).")
flags.DEFINE_string("model", "", "Per-layer mode: a torchvision model (bench/zoo) whose every conv is timed.")
flags.DEFINE_integer("batch", 1, "Per-layer mode: the batch size.")
flags.DEFINE_integer("rounds", 15, "Per-layer mode: interleaved rounds per conv (median kept).")
flags.DEFINE_integer("shape_rounds", 4, "Seed shapes: alternating rounds of every side (the best block kept).")
flags.DEFINE_bool("only_1x1", False, "Per-layer mode: time the 1x1 (pointwise, not depthwise) convs only.")

SEED_SHAPES = [(3, 224, 224), (64, 112, 112), (256, 28, 28), (512, 14, 14)]

# A call slower than this is timed on its own (a few runs), not in the
# alternating rounds: a reference algorithm on a big shape (kn2row in NHWC
# at 0.2 s a call) would stretch every round.
SLOW_S = 0.15


def side_by_side(calls: dict[str, Any]) -> dict[str, float]:
    """Seconds per call of each of `calls` (PyTorch, ONNX Runtime and every
    ai3 algorithm of one shape), timed in alternating blocks
    (timing.alternating_seconds: --reps calls a block, the least disturbed
    block's median kept): on the shared 2-core machines memory bandwidth
    comes and goes, and the seed's (10, 3, 224, 224) -> 64 writes 128 MB, so
    one median of 5 taken after the others let the moment decide a ratio
    (oneDNN's guess ran that shape in 9.0-14.9 ms, call to call). Calls
    slower than SLOW_S are timed alone, their median of --reps."""
    from bench import timing

    first = {}
    for label, fn in calls.items():
        start = time.perf_counter()
        fn()
        first[label] = time.perf_counter() - start
    fast = {label: fn for label, fn in calls.items() if first[label] <= SLOW_S}
    seconds = timing.alternating_seconds(fast, repeats=FLAGS.reps, rounds=FLAGS.shape_rounds)
    for label, fn in calls.items():
        if label not in fast:
            seconds[label] = timing.median_seconds(fn, FLAGS.reps, warmup=0)
    return seconds


TARGET_BATCH = 10  # issue 15's targets are for the seed's shapes at batch 10
LAYOUTS = ("NCHW", "NHWC")
ORT_RATIO_TARGET = 0.6
CEILING_FRACTION_TARGET = 0.85


def ort_conv(weight, bias, threads: int):
    """An ONNX Runtime session running one 3x3 padding-1 Conv, and its feed
    name."""
    import onnx
    import onnxruntime as ort
    from onnx import helper, numpy_helper

    from bench import timing

    k, c = weight.shape[:2]
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1], kernel_shape=[3, 3])
    graph = helper.make_graph(
        [node],
        "conv",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["n", c, "h", "w"])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)],
        [numpy_helper.from_array(weight, "w"), numpy_helper.from_array(bias, "b")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return ort.InferenceSession(
        model.SerializeToString(), timing.ort_options(threads), providers=["CPUExecutionProvider"]
    )


def interleaved_seconds(calls: dict[str, Any], rounds: int) -> dict[str, float]:
    """Median seconds per call of each callable, from `rounds` rounds in
    which every callable runs once, the order rotated each round: a burst
    of load from another process falls on every candidate alike instead of
    on whichever ran during it."""
    import time

    names = list(calls)
    for name in names:  # warm-up: workspaces, packed weights, page faults
        calls[name]()
    samples: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            start = time.perf_counter()
            calls[name]()
            samples[name].append(time.perf_counter() - start)
    return {name: sorted(v)[len(v) // 2] for name, v in samples.items()}


def ort_conv_node_seconds(onnx_bytes: bytes, feed: dict[str, Any], threads: int, reps: int = 10) -> list[tuple]:
    """ONNX Runtime's kernel time per forward for each Conv node of the
    exported model, in the graph's order: (weight shape, seconds). ORT
    renames a conv it fuses or moves to NCHWc after the output it writes
    (the conv's, or that of the Relu/Add/Clip it absorbed), so a profiled
    node is matched to the graph's Conv through the chain of single-use
    nodes that follows the conv."""
    import onnx

    from bench import profiles, timing

    proto = onnx.load_from_string(onnx_bytes)
    shapes = {t.name: tuple(t.dims) for t in proto.graph.initializer}
    consumers: dict[str, list[Any]] = {}
    for node in proto.graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    convs, owner = [], {}
    for node in proto.graph.node:
        if node.op_type != "Conv":
            continue
        index = len(convs)
        convs.append(shapes.get(node.input[1]))
        owner[node.name] = index
        out = node.output[0]
        for _ in range(3):  # conv -> [add] -> [relu/clip]: what ORT fuses
            owner[out] = index
            nxt = consumers.get(out, [])
            if len(nxt) != 1 or nxt[0].op_type not in ("Relu", "Clip", "Add", "Sigmoid", "Mul", "HardSigmoid"):
                break
            out = nxt[0].output[0]
        owner[out] = index

    options = functools.partial(timing.ort_options, threads)

    seconds = [0.0] * len(convs)
    b = profiles.ort_breakdown(onnx_bytes, feed, options, repeats=reps)
    for name, _kind, _provider, s in b.nodes:
        base = name.removesuffix("_nchwc")
        if base in owner:
            seconds[owner[base]] += s
    return list(zip(convs, seconds))


def is_pointwise(spec: Any) -> bool:
    """Whether a conv2d spec is a 1x1 convolution across channels (its
    weight 1x1 and more than one input channel per group: not depthwise)."""
    import numpy as np

    w = np.shape(spec.weights["weight"])
    return w[2] == 1 and w[3] == 1 and w[1] > 1


def per_layer(name: str, batch: int) -> None:
    """The per-layer table (see the module doc)."""
    import numpy as np
    import torch

    import ai3
    from ai3 import model as ai3_model
    from bench import timing, zoo

    torch.set_num_threads(FLAGS.threads)
    net = zoo.build(name)
    shape = zoo.input_shape(name, batch)
    x = torch.randn(shape)
    built = ai3.swap_backend(net, {"conv2d": "auto"}, sample_input_shape=shape)
    recipe = built._recipe.with_weights()
    in_model = {n.name: n.seconds for n in built.profile(x, repeats=10).nodes}
    feed = {"input": x.numpy()}
    ort_nodes = ort_conv_node_seconds(zoo.export_onnx(net, x), feed, FLAGS.threads)
    algorithms = FLAGS.algorithms or [a for a in ai3.algorithms()["conv2d"] if a != "custom"]
    convs = [(i, s) for i, s in enumerate(recipe.specs) if s.op == "conv2d"]
    if FLAGS.only_1x1:
        convs = [(i, s) for i, s in convs if is_pointwise(s)]
    # The graph's Conv nodes and ai3's conv specs are both in execution
    # order; a conv is paired with the next ORT node of its weight shape.
    ort_of: dict[int, float] = {}
    cursor = 0
    for i, spec in convs:
        want = tuple(np.shape(spec.weights["weight"]))
        for j in range(cursor, len(ort_nodes)):
            if ort_nodes[j][0] == want:
                ort_of[i], cursor = ort_nodes[j][1], j + 1
                break
    rng = np.random.default_rng(0)
    headers = ["conv", "input", "kernel", "layout", "auto", "in model ms"] + algorithms
    headers += ["best", "auto/best", "ORT ms", "best/ORT"]
    rows, losses = [], []
    totals = {"in model": 0.0, "best": 0.0, "ORT": 0.0}
    for i, spec in convs:
        layout = spec.attrs.get("layout", recipe.layout)
        xin = rng.standard_normal(spec.input_shape).astype(np.float32)
        calls = {}
        for algorithm in algorithms:
            try:
                layer = ai3_model.make_layer(spec, algorithm, recipe.dtype, layout)
                layer(xin)
            except ai3.Error:
                continue
            calls[algorithm] = functools.partial(layer, xin)
        if not calls:
            continue
        times = interleaved_seconds(calls, FLAGS.rounds)
        best = min(times, key=times.get)
        picked = recipe.chosen.get(i, "?")
        w = np.shape(spec.weights["weight"])
        ort_s = ort_of.get(i, math.nan)
        model_s = in_model.get(spec.name, math.nan)
        totals["in model"] += model_s
        totals["best"] += times[best]
        totals["ORT"] += ort_s
        kernel = f"{w[0]}x{w[1]}x{w[2]}x{w[3]} s{spec.attrs.get('stride', [1])[0]} g{spec.attrs.get('groups', 1)}"
        row = [spec.name, "x".join(map(str, spec.input_shape)), kernel, layout, picked, f"{model_s * 1e3:.3f}"]
        row += [f"{times[a] * 1e3:.3f}" if a in times else "-" for a in algorithms]
        auto_ratio = f"{times[picked] / times[best]:.2f}" if picked in times else "-"
        row += [best, auto_ratio, f"{ort_s * 1e3:.3f}", f"{times[best] / ort_s:.2f}" if ort_s else "-"]
        rows.append(row)
        if times[best] > ort_s:
            losses.append((times[best] - ort_s, row))
    load = os.getloadavg()[0]
    print(
        f"{name}, batch {batch}: every conv2d as swap_backend(auto) runs it, {FLAGS.rounds} interleaved rounds "
        f"(median), {FLAGS.threads} threads, 1-min load average {load:.1f}"
    )
    print(timing.format_table(headers, rows))
    print(
        f"\ntotals: in model {totals['in model'] * 1e3:.2f} ms, best per layer {totals['best'] * 1e3:.2f} ms, "
        f"ORT's Conv nodes {totals['ORT'] * 1e3:.2f} ms"
    )
    print(f"\nconvs where ai3's best is slower than ORT's node ({len(losses)}), largest loss first:")
    print(
        timing.format_table(
            headers + ["loss ms"], [r + [f"{d * 1e3:.3f}"] for d, r in sorted(losses, key=lambda t: -t[0])]
        )
    )
    print(f"1-min load average at the end: {os.getloadavg()[0]:.1f}")


def main(argv: list[str]) -> None:
    del argv
    os.environ.setdefault("OMP_NUM_THREADS", str(FLAGS.threads))
    # NumPy's BLAS (the ceiling's first row) reads its own variable.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", str(FLAGS.threads))
    if FLAGS.model:
        per_layer(FLAGS.model, FLAGS.batch)
        return
    import numpy as np
    import onnxruntime
    import torch
    import torch.nn.functional as F

    import ai3
    from bench import timing

    torch.set_num_threads(FLAGS.threads)
    algorithms = FLAGS.algorithms or [a for a in ai3.algorithms()["conv2d"] if a != "custom"]
    print(
        f"ai3 conv2d vs PyTorch {torch.__version__} and ONNX Runtime {onnxruntime.__version__}, float32, "
        f"{FLAGS.threads} threads, 3x3 kernel, padding 1\n"
    )
    ceiling_rows = timing.sgemm_ceiling(FLAGS.ceiling_size, FLAGS.ceiling_reps)
    ceiling = timing.ceiling_gflops(ceiling_rows)
    n = FLAGS.ceiling_size
    ceiling_title = f"SGEMM ceiling: {n}x{n} @ {n}x{n} float32, {FLAGS.threads} threads, best of {FLAGS.ceiling_reps}: {ceiling:.1f} GFLOP/s"
    ceiling_headers = ["library", "ms", "GFLOP/s"]
    print(ceiling_title)
    print(timing.format_table(ceiling_headers, ceiling_rows))
    print()
    sections, targets, chart_groups = [(ceiling_title, ceiling_headers, ceiling_rows)], [], []
    chart = {"pytorch": [], "onnxruntime": [], "best ai3": []}
    headers = ["algorithm", "ms", "GFLOP/s", "of ceiling", "ai3/torch", "ai3/ORT", "note"]
    for batch in (int(b) for b in FLAGS.batches):
        for c, h, w in SEED_SHAPES:
            k = max(c, 64)
            torch.manual_seed(0)
            x = torch.randn(batch, c, h, w)
            weight = torch.randn(k, c, 3, 3)
            bias = torch.randn(k)
            flops = timing.conv2d_flops(batch, c, h, w, k, 3, 3, h, w)
            gflops = lambda s: flops / s / 1e9  # noqa: E731
            share = lambda s: f"{gflops(s) / ceiling:.0%}"  # noqa: E731
            with torch.inference_mode():
                want = F.conv2d(x, weight, bias, padding=1)
            session = ort_conv(weight.numpy(), bias.numpy(), FLAGS.threads)
            feed = {"x": x.numpy()}

            def torch_conv(x=x, weight=weight, bias=bias) -> Any:
                with torch.inference_mode():
                    return F.conv2d(x, weight, bias, padding=1)

            calls = {"pytorch": torch_conv, "onnxruntime": functools.partial(session.run, None, feed)}
            # Each algorithm in NCHW (the model's order), then in NHWC, the
            # order the layout pass runs a network's convs in (converting at
            # the network's ends only): input and output NHWC, no conversion
            # timed. ORT's one-Conv graph pays its own NCHWc reorders.
            x_nhwc = x.permute(0, 2, 3, 1).contiguous()
            notes: dict[str, str] = {}
            for algorithm, layout in ((a, lay) for a in algorithms for lay in LAYOUTS):
                label = algorithm if layout == "NCHW" else f"{algorithm} ({layout})"
                inputs, reference = (x, want) if layout == "NCHW" else (x_nhwc, want.permute(0, 2, 3, 1))
                try:
                    layer = ai3.layers.Conv2d(weight, bias, padding=1, algorithm=algorithm, layout=layout)
                except ai3.AlgorithmNotApplicable as e:
                    notes[label] = str(e).split(": ")[-1]
                    continue
                notes[label] = f"max err {float(np.abs(layer(inputs).numpy() - reference.numpy()).max()):.1e}"
                calls[label] = functools.partial(layer, inputs)
            seconds = side_by_side(calls)
            torch_s, ort_s = seconds["pytorch"], seconds["onnxruntime"]
            rows = [
                [
                    "pytorch",
                    f"{torch_s * 1e3:.2f}",
                    f"{gflops(torch_s):.1f}",
                    share(torch_s),
                    "1.00",
                    f"{torch_s / ort_s:.2f}",
                    "",
                ],
                [
                    "onnxruntime",
                    f"{ort_s * 1e3:.2f}",
                    f"{gflops(ort_s):.1f}",
                    share(ort_s),
                    f"{ort_s / torch_s:.2f}",
                    "1.00",
                    "",
                ],
            ]
            best_name, best_s = "-", math.inf
            for label, note in notes.items():
                if label not in seconds:
                    rows.append([label, "-", "-", "-", "-", "-", note])
                    continue
                t = seconds[label]
                if t < best_s:
                    best_name, best_s = label, t
                rows.append(
                    [
                        label,
                        f"{t * 1e3:.2f}",
                        f"{gflops(t):.1f}",
                        share(t),
                        f"{t / torch_s:.2f}",
                        f"{t / ort_s:.2f}",
                        note,
                    ]
                )
            title = f"input ({batch}, {c}, {h}, {w}) -> {k} channels, {flops / 1e9:.2f} GFLOP"
            print(title)
            print(timing.format_table(headers, rows))
            print()
            sections.append((title, headers, rows))
            shape = f"({batch},{c},{h},{w})"
            chart_groups.append(shape)
            chart["pytorch"].append(gflops(torch_s))
            chart["onnxruntime"].append(gflops(ort_s))
            chart["best ai3"].append(gflops(best_s))
            if batch == TARGET_BATCH:
                # The im2col GEMM of the shape (M = out channels, N = output
                # pixels, K = C*3*3): a small K (the 3-channel stem's 27)
                # cannot reach a square SGEMM's rate, which says why a row
                # misses the ceiling target.
                gemm = f"{k} x {batch * h * w} x {c * 9}"
                ratio = best_s / ort_s
                targets.append(
                    [
                        shape,
                        f"best ai3 ({best_name}) <= {ORT_RATIO_TARGET}x ORT",
                        f"{ratio:.2f}x",
                        gemm,
                        timing.met(ratio, ORT_RATIO_TARGET),
                    ]
                )
                fraction = gflops(best_s) / ceiling
                targets.append(
                    [
                        shape,
                        f"best ai3 ({best_name}) >= {CEILING_FRACTION_TARGET:.0%} of the {ceiling:.0f} GFLOP/s SGEMM ceiling",
                        f"{gflops(best_s):.1f} GFLOP/s = {fraction:.0%}",
                        gemm,
                        timing.met(fraction, CEILING_FRACTION_TARGET, True),
                    ]
                )
    target_headers = ["shape", "target", "measured", "im2col GEMM M x N x K", "status"]
    print(ceiling_title)
    print(f"issue 15 targets (batch {TARGET_BATCH})")
    print(timing.format_table(target_headers, targets))
    out = timing.results_dir(FLAGS.results_dir)
    notes = [
        "GFLOP/s counts 2 x multiply-adds of a direct convolution (winograd does fewer, so its figure is 'effective').",
        f"The ceiling ({ceiling:.1f} GFLOP/s) is the fastest square SGEMM measured above in this process; a row "
        "not met sits below 85% of it, or above 0.6x ORT's time, in the per-shape table of every algorithm.",
    ]
    timing.write_markdown(
        os.path.join(out, "conv2d.md"),
        "conv2d: ai3 algorithms vs PyTorch and ONNX Runtime",
        [(f"targets (batch {TARGET_BATCH})", target_headers, targets)] + sections,
        notes,
    )
    timing.bar_chart(
        os.path.join(out, "conv2d.png"),
        "conv2d 3x3 pad 1, float32: GFLOP/s (higher is better)",
        chart_groups,
        chart,
        "GFLOP/s",
    )
    print(f"\nwrote {out}/conv2d.md and conv2d.png")


if __name__ == "__main__":
    app.run(main)
