"""bazel run //bench:onnx_models — torchvision models exported to ONNX,
ONNX Runtime vs ai3.

For each model (weights=None, eval mode, batch 1, float32, 224x224 or 299
for inception_v3, exported with torch.onnx.export(dynamo=False)): ONNX
Runtime's median latency on the original graph, the graph after
ai3.onnx.swap_conv2d run in ONNX Runtime (ai3.onnx.InferenceSession, the
convolutions as "ai3"-domain Python custom ops), and the whole graph as an
ai3.Model from ai3.onnx.swap_backend, measured in this one process, with
ratios to ONNX Runtime (below 1 means ai3 is faster) and the largest output
difference. Models swap_backend cannot take say why.
"""

from __future__ import annotations

import io
import os
import warnings

from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_list(
    "models",
    ["alexnet", "vgg11", "resnet18", "squeezenet1_1", "googlenet", "inception_v3", "densenet121", "mobilenet_v2"],
    "torchvision model names.",
)
flags.DEFINE_integer("batch", 1, "Batch size.")
flags.DEFINE_integer("threads", 2, "Threads for ONNX Runtime and ai3.")
flags.DEFINE_integer("repeats", 5, "Timed runs per measurement (median kept).")
flags.DEFINE_integer("opset", 17, "ONNX opset of the export.")
flags.DEFINE_string("conv2d", "auto", "The conv2d selector for both swaps (\"auto\" measures each layer).")
flags.DEFINE_string("results_dir", "", "Where to write onnx_models.md / .png (default: bench/results).")

INPUT_SIZE = {"inception_v3": 299}
KWARGS = {"googlenet": {"init_weights": False, "aux_logits": False}, "inception_v3": {"init_weights": False, "aux_logits": False}}


def main(argv: list[str]) -> None:
    del argv
    os.environ.setdefault("OMP_NUM_THREADS", str(FLAGS.threads))
    import numpy as np
    import onnxruntime as ort
    import torch
    import torchvision

    import ai3
    import ai3.onnx
    from bench import timing

    torch.set_num_threads(FLAGS.threads)
    try:
        swap_backend = ai3.onnx.swap_backend
    except AttributeError:
        swap_backend = None

    def options(so=None):
        so = so or ort.SessionOptions()
        so.intra_op_num_threads = FLAGS.threads
        so.inter_op_num_threads = 1
        return so

    rows, targets = [], []
    chart = {"onnxruntime": [], "ai3 rewritten, in ORT": [], "ai3 swap_backend": []}
    for name in FLAGS.models:
        torch.manual_seed(0)
        module = getattr(torchvision.models, name)(weights=None, **KWARGS.get(name, {})).eval()
        size = INPUT_SIZE.get(name, 224)
        x = torch.randn(FLAGS.batch, 3, size, size)
        buf = io.BytesIO()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(module, (x,), buf, opset_version=FLAGS.opset, dynamo=False,
                              input_names=["input"], output_names=["output"])
        data = buf.getvalue()
        del module
        feed = {"input": x.numpy()}
        base = ort.InferenceSession(data, options(), providers=["CPUExecutionProvider"])
        want = base.run(None, feed)[0]
        ort_s = timing.median_seconds(lambda: base.run(None, feed), FLAGS.repeats)

        rewritten = ai3.onnx.InferenceSession(ai3.onnx.swap_conv2d(data, FLAGS.conv2d), options())
        err_rw = float(np.abs(rewritten.run(None, feed)[0] - want).max())
        rw_s = timing.median_seconds(lambda: rewritten.run(None, feed), FLAGS.repeats)

        if swap_backend is None:
            sb = ["-", "-", "-", "ai3.onnx.swap_backend unavailable"]
        else:
            try:
                backend = swap_backend(data, {"conv2d": FLAGS.conv2d})
                err_sb = float(np.abs(np.asarray(backend(x.numpy())) - want).max())
                sb_s = timing.median_seconds(lambda: backend(x.numpy()), FLAGS.repeats)
                sb = [f"{sb_s * 1e3:.1f}", f"{sb_s / ort_s:.2f}", f"{err_sb:.1e}", ""]
                targets.append([name, "swap_backend <= 1.0x ORT", f"{sb_s / ort_s:.2f}x", timing.met(sb_s / ort_s, 1.0)])
            except ai3.Error as e:
                sb_s = float("nan")
                sb = ["-", "-", "-", f"swap_backend: {type(e).__name__}: " + str(e)[:60]]
                targets.append([name, "swap_backend <= 1.0x ORT", "-", "NOT met (unsupported)"])
        for key, t in zip(chart, (ort_s, rw_s, sb_s)):
            chart[key].append(t * 1e3)
        rows.append(
            [name, f"{ort_s * 1e3:.1f}", f"{rw_s * 1e3:.1f}", f"{rw_s / ort_s:.2f}", f"{err_rw:.1e}", *sb]
        )
        print(f"{name} done", flush=True)
    print(
        f"\ntorchvision models via ONNX (opset {FLAGS.opset}), batch {FLAGS.batch}, float32, "
        f"{FLAGS.threads} threads, conv2d '{FLAGS.conv2d}'; ms are medians\n"
    )
    print(
        timing.format_table(
            ["model", "ORT ms", "rewritten-in-ORT ms", "ratio", "max err", "swap_backend ms", "ratio", "max err", "note"],
            rows,
        )
    )

    print("\nissue 6 targets")
    print(timing.format_table(["model", "target", "measured", "status"], targets))
    headers = ["model", "ORT ms", "rewritten-in-ORT ms", "ratio", "max err", "swap_backend ms", "ratio", "max err", "note"]
    out = timing.results_dir(FLAGS.results_dir)
    timing.write_markdown(
        os.path.join(out, "onnx_models.md"),
        "torchvision models via ONNX: ONNX Runtime and ai3",
        [("targets", ["model", "target", "measured", "status"], targets), ("latency (ms, medians)", headers, rows)],
        ["The rewritten graph runs ai3's convolutions as Python custom ops inside ORT (onnxruntime-extensions): "
         "each call crosses into Python, so it is a correctness path more than a fast one."],
    )
    timing.bar_chart(os.path.join(out, "onnx_models.png"), "ONNX models: latency (ms, lower is better)", list(FLAGS.models), chart, "ms", log=True)
    print(f"\nwrote {out}/onnx_models.md and onnx_models.png")

if __name__ == "__main__":
    app.run(main)
