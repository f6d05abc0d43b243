"""bazel run //bench:models — torchvision models, PyTorch vs ai3.

For each model (weights=None, eval mode, batch 1, float32, 2 threads):
PyTorch eager's median latency, the same model after swap_conv2d, and the
whole network as an ai3.Model from swap_backend, measured in this one
process, with ratios to PyTorch (below 1 means ai3 is faster) and the
largest output difference. Models swap_backend cannot take yet say why.
"""

from __future__ import annotations

import copy
import os

from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_list(
    "models",
    ["alexnet", "vgg11", "resnet18", "squeezenet1_1", "googlenet", "inception_v3", "densenet121", "mobilenet_v2", "shufflenet_v2_x1_0"],
    "torchvision model names.",
)
flags.DEFINE_integer("batch", 1, "Batch size.")
flags.DEFINE_integer("threads", 2, "Threads for PyTorch and ai3.")
flags.DEFINE_integer("repeats", 5, "Timed runs per measurement (median kept).")
flags.DEFINE_string("conv2d", "default", "The conv2d algorithm for both swaps.")

INPUT_SIZE = {"inception_v3": 299}
KWARGS = {"googlenet": {"init_weights": False, "aux_logits": False}, "inception_v3": {"init_weights": False, "aux_logits": False}}


def main(argv: list[str]) -> None:
    del argv
    os.environ.setdefault("OMP_NUM_THREADS", str(FLAGS.threads))
    import torch
    import torchvision

    import ai3
    from bench import timing

    torch.set_num_threads(FLAGS.threads)
    rows = []
    for name in FLAGS.models:
        torch.manual_seed(0)
        model = getattr(torchvision.models, name)(weights=None, **KWARGS.get(name, {})).eval()
        size = INPUT_SIZE.get(name, 224)
        x = torch.randn(FLAGS.batch, 3, size, size)
        # Swap outside inference_mode: parameters copied inside it become
        # inference tensors, which have no version counter for ai3's cache.
        swapped = ai3.swap_conv2d(copy.deepcopy(model), FLAGS.conv2d)
        with torch.inference_mode():
            want = model(x)
            torch_s = timing.median_seconds(lambda: model(x), FLAGS.repeats)
            err_sc = (swapped(x) - want).abs().max().item()
            sc_s = timing.median_seconds(lambda: swapped(x), FLAGS.repeats)
        try:
            backend = ai3.swap_backend(model, {"conv2d": FLAGS.conv2d})
            err_sb = (backend(x) - want).abs().max().item()
            sb_s = timing.median_seconds(lambda: backend(x), FLAGS.repeats)
            sb = [f"{sb_s * 1e3:.1f}", f"{sb_s / torch_s:.2f}", f"{err_sb:.1e}", ""]
        except ai3.UnsupportedOperation as e:
            sb = ["-", "-", "-", "swap_backend: " + str(e).split(": ")[-1][:60]]
        rows.append(
            [name, f"{torch_s * 1e3:.1f}", f"{sc_s * 1e3:.1f}", f"{sc_s / torch_s:.2f}", f"{err_sc:.1e}", sb[0], sb[1], sb[2], sb[3]]
        )
        print(f"{name} done", flush=True)
    print(f"\ntorchvision models, batch {FLAGS.batch}, float32, {FLAGS.threads} threads, conv2d '{FLAGS.conv2d}'; ms are medians\n")
    print(
        timing.format_table(
            ["model", "torch ms", "swap_conv2d ms", "ratio", "max err", "swap_backend ms", "ratio", "max err", "note"], rows
        )
    )


if __name__ == "__main__":
    app.run(main)
