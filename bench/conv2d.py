"""bazel run //bench:conv2d — every ai3 conv2d algorithm next to PyTorch and
ONNX Runtime.

For the seed paper's single-convolution shapes (N, C, H, W) = (10,3,224,224),
(10,64,112,112), (10,256,28,28), (10,512,14,14) and their batch-1 versions,
a 3x3 convolution with padding 1 to max(C, 64) output channels, float32, on
2 threads: the median time and GFLOP/s of each ai3 algorithm, of
torch.nn.functional.conv2d and of a one-Conv ONNX graph in ONNX Runtime, all
in this one process, and the ratios to PyTorch and ORT (below 1: ai3 faster).

Then the issue-6 target rows, with met / NOT met:
  - best ai3 algorithm <= 0.9x ONNX Runtime's time, every shape;
  - best ai3 >= 300 GFLOP/s on the three large-channel shapes.
Writes bench/results/conv2d.md and conv2d.png. "direct" (the reference
loops, ~100x slower) is left out unless named with --algorithms.
"""

from __future__ import annotations

import math
import os

from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_integer("threads", 2, "Threads for PyTorch, ONNX Runtime and ai3 (OpenMP).")
flags.DEFINE_integer("repeats", 5, "Timed runs per measurement (median kept).")
flags.DEFINE_list("batches", ["10", "1"], "Batch sizes to run each shape at.")
flags.DEFINE_list("algorithms", [], "ai3 algorithms to time (default: all applicable but direct).")
flags.DEFINE_string("results_dir", "", "Where to write conv2d.md / conv2d.png (default: bench/results).")

SEED_SHAPES = [(3, 224, 224), (64, 112, 112), (256, 28, 28), (512, 14, 14)]
LARGE_CHANNELS = 64  # shapes with C >= this are the "large-channel" rows
GFLOPS_TARGET = 300.0
ORT_RATIO_TARGET = 0.9


def ort_conv(weight, bias, threads: int):
    """An ONNX Runtime session running one 3x3 padding-1 Conv, and its feed
    name."""
    import onnx
    import onnxruntime as ort
    from onnx import helper, numpy_helper

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
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def main(argv: list[str]) -> None:
    del argv
    os.environ.setdefault("OMP_NUM_THREADS", str(FLAGS.threads))
    import numpy as np
    import onnxruntime
    import torch
    import torch.nn.functional as F

    import ai3
    from bench import timing

    torch.set_num_threads(FLAGS.threads)
    algorithms = FLAGS.algorithms or [a for a in ai3.algorithms()["conv2d"] if a not in ("custom", "direct")]
    print(
        f"ai3 conv2d vs PyTorch {torch.__version__} and ONNX Runtime {onnxruntime.__version__}, float32, "
        f"{FLAGS.threads} threads, 3x3 kernel, padding 1\n"
    )
    sections, targets, chart_groups = [], [], []
    chart = {"pytorch": [], "onnxruntime": [], "best ai3": []}
    headers = ["algorithm", "ms", "GFLOP/s", "ai3/torch", "ai3/ORT", "note"]
    for batch in (int(b) for b in FLAGS.batches):
        for c, h, w in SEED_SHAPES:
            k = max(c, 64)
            torch.manual_seed(0)
            x = torch.randn(batch, c, h, w)
            weight = torch.randn(k, c, 3, 3)
            bias = torch.randn(k)
            flops = timing.conv2d_flops(batch, c, h, w, k, 3, 3, h, w)
            gflops = lambda s: flops / s / 1e9  # noqa: E731
            with torch.inference_mode():
                want = F.conv2d(x, weight, bias, padding=1)
                torch_s = timing.median_seconds(lambda: F.conv2d(x, weight, bias, padding=1), FLAGS.repeats)
            session = ort_conv(weight.numpy(), bias.numpy(), FLAGS.threads)
            feed = {"x": x.numpy()}
            ort_s = timing.median_seconds(lambda: session.run(None, feed), FLAGS.repeats)
            rows = [
                ["pytorch", f"{torch_s * 1e3:.2f}", f"{gflops(torch_s):.1f}", "1.00", f"{torch_s / ort_s:.2f}", ""],
                ["onnxruntime", f"{ort_s * 1e3:.2f}", f"{gflops(ort_s):.1f}", f"{ort_s / torch_s:.2f}", "1.00", ""],
            ]
            best_name, best_s = "-", math.inf
            for algorithm in algorithms:
                try:
                    layer = ai3.layers.Conv2d(weight, bias, padding=1, algorithm=algorithm)
                except ai3.AlgorithmNotApplicable as e:
                    rows.append([algorithm, "-", "-", "-", "-", str(e).split(": ")[-1]])
                    continue
                err = float(np.abs(layer(x).numpy() - want.numpy()).max())
                seconds = timing.median_seconds(lambda: layer(x), FLAGS.repeats)
                if seconds < best_s:
                    best_name, best_s = algorithm, seconds
                rows.append(
                    [
                        algorithm,
                        f"{seconds * 1e3:.2f}",
                        f"{gflops(seconds):.1f}",
                        f"{seconds / torch_s:.2f}",
                        f"{seconds / ort_s:.2f}",
                        f"max err {err:.1e}",
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
            ratio = best_s / ort_s
            targets.append(
                [shape, f"best ai3 ({best_name}) <= {ORT_RATIO_TARGET}x ORT", f"{ratio:.2f}x", timing.met(ratio, ORT_RATIO_TARGET)]
            )
            if c >= LARGE_CHANNELS:
                g = gflops(best_s)
                targets.append(
                    [shape, f"best ai3 ({best_name}) >= {GFLOPS_TARGET:.0f} GFLOP/s", f"{g:.1f}", timing.met(g, GFLOPS_TARGET, True)]
                )
    target_headers = ["shape", "target", "measured", "status"]
    print("issue 6 targets")
    print(timing.format_table(target_headers, targets))
    out = timing.results_dir(FLAGS.results_dir)
    notes = [
        "GFLOP/s counts 2 x multiply-adds of a direct convolution (winograd does fewer, so its figure is 'effective').",
        "This machine is an AVX2/FMA EPYC (no AVX-512): dnnl_sgemm peaks ~130 GFLOP/s on its 2 cores, so the "
        "300 GFLOP/s rows (written for a ~430 GFLOP/s-peak Sapphire Rapids) cannot be met here by any algorithm.",
    ]
    timing.write_markdown(
        os.path.join(out, "conv2d.md"), "conv2d: ai3 algorithms vs PyTorch and ONNX Runtime", [("targets", target_headers, targets)] + sections, notes
    )
    timing.bar_chart(
        os.path.join(out, "conv2d.png"), "conv2d 3x3 pad 1, float32: GFLOP/s (higher is better)", chart_groups, chart, "GFLOP/s"
    )
    print(f"\nwrote {out}/conv2d.md and conv2d.png")


if __name__ == "__main__":
    app.run(main)
