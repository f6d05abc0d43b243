"""./bazelw run //:demo — a torchvision model swapped three ways.

Builds a torchvision model (default resnet18, weights=None), then
  1. swap_backend: the whole network as an ai3.Model run by the core;
  2. swap_conv2d with a list: the i-th convolution gets the i-th name of
     --algorithms (cycled; a name a layer cannot take becomes "default");
  3. swap_conv2d with a callable: winograd where it applies, else gemm;
and prints the algorithm each layer got, latency next to unswapped PyTorch
and the largest difference of outputs.
"""

from __future__ import annotations

import copy
import itertools
import os

from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_string("model", "resnet18", "A torchvision classification model name.")
flags.DEFINE_integer("batch", 1, "Batch size.")
flags.DEFINE_integer("size", 224, "Input height and width.")
flags.DEFINE_list("algorithms", ["gemm", "winograd", "implicit gemm", "smm"], "conv2d algorithms for the list selector.")
flags.DEFINE_string("backend_conv2d", "default", "conv2d selector name for swap_backend.")
flags.DEFINE_integer("threads", 2, "Threads.")


def main(argv: list[str]) -> None:
    del argv
    os.environ.setdefault("OMP_NUM_THREADS", str(FLAGS.threads))
    import torch
    import torchvision

    import ai3
    from bench import timing

    torch.set_num_threads(FLAGS.threads)
    torch.manual_seed(0)
    kwargs = {"init_weights": False, "aux_logits": False} if FLAGS.model in ("googlenet", "inception_v3") else {}
    model = getattr(torchvision.models, FLAGS.model)(weights=None, **kwargs).eval()
    x = torch.randn(FLAGS.batch, 3, FLAGS.size, FLAGS.size)
    with torch.inference_mode():
        want = model(x)
        torch_s = timing.median_seconds(lambda: model(x))

    convs = [m for m in model.modules() if type(m) is torch.nn.Conv2d]
    names = itertools.cycle(FLAGS.algorithms)
    as_list = [name if ai3.torch.applicable(conv, name) else "default" for conv, name in zip(convs, names)]

    def winograd_else_gemm(conv: torch.nn.Conv2d) -> str:
        return "winograd" if ai3.torch.applicable(conv, "winograd") else "gemm"

    results = []
    per_layer: dict[str, list[str]] = {}
    try:
        backend = ai3.swap_backend(model, {"conv2d": FLAGS.backend_conv2d})
        per_layer["swap_backend"] = [f"{op}:{algo}" for _, op, algo in backend.layers() if op == "conv2d"]
        results.append(("swap_backend", backend))
    except ai3.UnsupportedOperation as e:
        print(f"swap_backend: not for {FLAGS.model} yet: {e}\n")
    for label, selector in (("swap_conv2d(list)", as_list), ("swap_conv2d(callable)", winograd_else_gemm)):
        swapped = ai3.swap_conv2d(copy.deepcopy(model), selector)
        per_layer[label] = [f"conv2d:{algo}" for _, _, algo in ai3.torch.chosen_algorithms(swapped)]
        results.append((label, swapped))

    print(f"{FLAGS.model}, input {tuple(x.shape)}, float32, {FLAGS.threads} threads\n")
    conv_names = [n for n, m in model.named_modules() if type(m) is torch.nn.Conv2d]
    labels = list(per_layer)
    rows = [[name] + [per_layer[l][i].split(":")[1] if i < len(per_layer[l]) else "" for l in labels] for i, name in enumerate(conv_names)]
    print("conv2d algorithm per layer:")
    print(timing.format_table(["layer"] + labels, rows))
    print()
    rows = [["pytorch (unswapped)", f"{torch_s * 1e3:.2f}", "1.00", "0"]]
    for label, f in results:
        with torch.inference_mode():
            err = (f(x) - want).abs().max().item()
            seconds = timing.median_seconds(lambda: f(x))
        rows.append([label, f"{seconds * 1e3:.2f}", f"{seconds / torch_s:.2f}", f"{err:.2e}"])
    print(timing.format_table(["variant", "ms", "vs torch", "max |ai3 - torch|"], rows))


if __name__ == "__main__":
    app.run(main)
