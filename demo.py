"""./bazelw run //:demo — one conv layer through every ai3 algorithm.

Prints, for a 3x3 convolution (by default a ResNet-style (1, 64, 56, 56)
input to 64 channels), each algorithm's median time next to PyTorch's and its
largest difference from PyTorch's output. Algorithms that cannot take the
layer say why.
"""

from __future__ import annotations

import os

from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_list("input_shape", ["1", "64", "56", "56"], "Input shape N,C,H,W.")
flags.DEFINE_integer("out_channels", 64, "Output channels.")
flags.DEFINE_integer("kernel", 3, "Kernel size.")
flags.DEFINE_integer("stride", 1, "Stride.")
flags.DEFINE_integer("padding", 1, "Padding.")
flags.DEFINE_integer("threads", 2, "Threads.")


def main(argv: list[str]) -> None:
    del argv
    os.environ.setdefault("OMP_NUM_THREADS", str(FLAGS.threads))
    import torch
    import torch.nn.functional as F

    import ai3
    from bench import timing

    torch.set_num_threads(FLAGS.threads)
    n, c, h, w = (int(v) for v in FLAGS.input_shape)
    x = torch.randn(n, c, h, w)
    conv = torch.nn.Conv2d(c, FLAGS.out_channels, FLAGS.kernel, FLAGS.stride, FLAGS.padding).eval()
    with torch.inference_mode():
        want = conv(x)
        torch_s = timing.median_seconds(lambda: conv(x))
    rows = [["pytorch", f"{torch_s * 1e3:.3f}", "1.00", "0 (reference)"]]
    for algorithm in ai3.algorithms()["conv2d"]:
        try:
            layer = ai3.layers.Conv2d(conv.weight, conv.bias, FLAGS.stride, FLAGS.padding, algorithm=algorithm)
        except ai3.AlgorithmNotApplicable as e:
            rows.append([algorithm, "-", "-", "not applicable: " + str(e).split("cannot take this layer: ")[-1]])
            continue
        err = (layer(x) - want).abs().max().item()
        seconds = timing.median_seconds(lambda: layer(x))
        rows.append([algorithm, f"{seconds * 1e3:.3f}", f"{seconds / torch_s:.2f}", f"{err:.2e}"])
    print(f"conv2d {tuple(x.shape)} -> {FLAGS.out_channels} channels, kernel {FLAGS.kernel}, stride {FLAGS.stride}, padding {FLAGS.padding}, float32\n")
    print(timing.format_table(["algorithm", "ms", "vs torch", "max |ai3 - torch|"], rows))


if __name__ == "__main__":
    app.run(main)
