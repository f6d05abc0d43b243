"""bazel run //tests/kernels:conv2d_kernels_bench -- every ai3 conv2d
algorithm, in NCHW and NHWC, beside PyTorch and ONNX Runtime on the shapes
the conv2d kernels are tuned for:

  - the seed paper's four 3x3 padding-1 shapes, at batch 1 and 10;
  - mobilenet_v2's depthwise 3x3 convolutions (32x112x112, 144x56x56,
    960x7x7) and two of its 1x1 convolutions (32->16 at 112x112, 144->24 at
    56x56), batch 1.

Times are the best of --repeats runs (the machine may be shared: the best
run is the one least disturbed), all in this one process, float32, on
--threads threads. PyTorch runs NCHW and, for the NHWC rows, channels_last;
ONNX Runtime runs NCHW (its CPU provider's layout). GFLOP/s counts 2 x the
multiply-adds of a direct convolution. A bench, not a test: nothing here is
asserted.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from absl import app, flags
from conv2d_cases import Case, same

FLAGS = flags.FLAGS
flags.DEFINE_integer("threads", 2, "Threads for PyTorch, ONNX Runtime and ai3 (OpenMP).")
flags.DEFINE_integer("repeats", 7, "Timed runs per measurement (the best is kept).")
flags.DEFINE_list("algorithms", [], "ai3 algorithms to time (default: all but custom).")
flags.DEFINE_list("layouts", ["NCHW", "NHWC"], "ai3 layouts to time.")
flags.DEFINE_string("only", "", "Run only the shapes whose name contains this.")
flags.DEFINE_float("budget_s", 3.0, "Stop repeating a measurement after this many seconds.")
flags.DEFINE_bool(
    "cpu_time",
    False,
    "Time with the process's CPU time instead of the wall clock: on a shared, loaded machine the time spent "
    "descheduled is left out (meaningful with --threads=1; with more, it adds up the threads).",
)


def shapes() -> list[Case]:
    out = []
    for n in (1, 10):
        for c, h, w in [(3, 224, 224), (64, 112, 112), (256, 28, 28), (512, 14, 14)]:
            k = max(c, 64)
            out.append(Case(f"3x3 {n}x{c}x{h}x{w} -> {k}", n, c, h, w, k, 3, padding=same(3)))
    for c, h in [(32, 112), (144, 56), (960, 7)]:
        out.append(Case(f"depthwise 3x3 1x{c}x{h}x{h}", 1, c, h, h, c, 3, padding=same(3), groups=c))
    for c, k, h in [(32, 16, 112), (144, 24, 56)]:
        out.append(Case(f"1x1 1x{c}x{h}x{h} -> {k}", 1, c, h, h, k, 1))
    return out


def best_seconds(fn: Callable[[], object]) -> float:
    fn()  # warm up: workspaces, packed weights, OpenMP team
    clock = time.process_time if FLAGS.cpu_time else time.perf_counter
    best, spent = float("inf"), 0.0
    for _ in range(max(1, FLAGS.repeats)):
        start = clock()
        fn()
        elapsed = clock() - start
        best = min(best, elapsed)
        spent += elapsed
        if spent > FLAGS.budget_s:
            break
    return best


def ort_session(weight, bias, shape: Case):
    import onnx
    import onnxruntime as ort
    from onnx import helper, numpy_helper

    pad = shape.padding[0]  # symmetric on every shape here
    node = helper.make_node(
        "Conv",
        ["x", "w", "b"],
        ["y"],
        pads=[pad] * 4,
        kernel_shape=[shape.kernel] * 2,
        strides=[shape.stride] * 2,
        group=shape.groups,
    )
    graph = helper.make_graph(
        [node],
        "conv",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [shape.n, shape.c, shape.h, shape.w])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)],
        [numpy_helper.from_array(weight, "w"), numpy_helper.from_array(bias, "b")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    so = ort.SessionOptions()
    so.intra_op_num_threads = FLAGS.threads
    so.inter_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def main(argv: list[str]) -> None:
    del argv
    os.environ.setdefault("OMP_NUM_THREADS", str(FLAGS.threads))
    import numpy as np
    import torch
    import torch.nn.functional as F

    import ai3
    from bench import timing

    torch.set_num_threads(FLAGS.threads)
    algorithms = FLAGS.algorithms or [a for a in ai3.algorithms()["conv2d"] if a != "custom"]
    clock = "CPU time" if FLAGS.cpu_time else "wall time"
    print(f"float32, {FLAGS.threads} threads, best of {FLAGS.repeats} ({clock}); {timing.machine_note()}\n")
    headers = ["algorithm", "layout", "ms", "GFLOP/s", "ai3/torch", "ai3/ORT", "note"]
    for shape in shapes():
        if FLAGS.only and FLAGS.only not in shape.name:
            continue
        torch.manual_seed(0)
        x = torch.randn(shape.n, shape.c, shape.h, shape.w)
        weight = torch.randn(shape.k, shape.c // shape.groups, shape.kernel, shape.kernel) * 0.1
        bias = torch.randn(shape.k)
        pad = shape.padding[0]  # symmetric on every shape here
        conv = lambda t: F.conv2d(t, weight, bias, stride=shape.stride, padding=pad, groups=shape.groups)  # noqa: E731
        oh = (shape.h + 2 * pad - shape.kernel) // shape.stride + 1
        flops = timing.conv2d_flops(
            shape.n, shape.c, shape.h, shape.w, shape.k, shape.kernel, shape.kernel, oh, oh, shape.groups
        )
        gflops = lambda s: flops / s / 1e9  # noqa: E731
        with torch.inference_mode():
            want = conv(x).numpy()
            torch_s = best_seconds(lambda: conv(x))
            x_cl = x.contiguous(memory_format=torch.channels_last)
            w_cl = weight.contiguous(memory_format=torch.channels_last)
            torch_cl_s = best_seconds(
                lambda: F.conv2d(x_cl, w_cl, bias, stride=shape.stride, padding=pad, groups=shape.groups)
            )
        session = ort_session(weight.numpy(), bias.numpy(), shape)
        feed = {"x": x.numpy()}
        ort_s = best_seconds(lambda: session.run(None, feed))
        rows = [
            ["pytorch", "NCHW", f"{torch_s * 1e3:.3f}", f"{gflops(torch_s):.1f}", "1.00", f"{torch_s / ort_s:.2f}", ""],
            [
                "pytorch",
                "NHWC",
                f"{torch_cl_s * 1e3:.3f}",
                f"{gflops(torch_cl_s):.1f}",
                f"{torch_cl_s / torch_s:.2f}",
                f"{torch_cl_s / ort_s:.2f}",
                "channels_last",
            ],
            ["onnxruntime", "NCHW", f"{ort_s * 1e3:.3f}", f"{gflops(ort_s):.1f}", f"{ort_s / torch_s:.2f}", "1.00", ""],
        ]
        inputs = {"NCHW": x.numpy(), "NHWC": np.ascontiguousarray(x.numpy().transpose(0, 2, 3, 1))}
        for layout in FLAGS.layouts:
            for algorithm in algorithms + ["default"]:
                try:
                    layer = ai3.layers.Conv2d(
                        weight,
                        bias,
                        stride=shape.stride,
                        padding=pad,
                        groups=shape.groups,
                        algorithm=algorithm,
                        layout=layout,
                    )
                except ai3.Error as e:
                    rows.append([algorithm, layout, "-", "-", "-", "-", str(e).split(": ")[-1][:60]])
                    continue
                xi = inputs[layout]
                got = layer(xi)
                if layout == "NHWC":
                    got = got.transpose(0, 3, 1, 2)
                err = float(np.abs(got - want).max() / (1 + np.abs(want).max()))
                seconds = best_seconds(lambda: layer(xi))
                name = f"default={layer.algorithm}" if algorithm == "default" else algorithm
                rows.append(
                    [
                        name,
                        layout,
                        f"{seconds * 1e3:.3f}",
                        f"{gflops(seconds):.1f}",
                        f"{seconds / torch_s:.2f}",
                        f"{seconds / ort_s:.2f}",
                        f"rel err {err:.0e}",
                    ]
                )
        print(f"{shape.name}: {flops / 1e9:.3f} GFLOP")
        print(timing.format_table(headers, rows))
        print(flush=True)


if __name__ == "__main__":
    app.run(main)
