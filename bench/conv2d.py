"""bazel run //bench:conv2d — every ai3 conv2d algorithm next to PyTorch.

For the seed paper's single-convolution shapes (N, C, H, W) = (10,3,224,224),
(10,64,112,112), (10,256,28,28), (10,512,14,14) and their batch-1 versions,
a 3x3 convolution with padding 1 to max(C, 64) output channels, float32, on
2 threads: the median time and GFLOP/s of each algorithm and of
torch.nn.functional.conv2d, measured in this one process, and the ratio
ai3 / PyTorch (below 1 means ai3 is faster).
"""

from __future__ import annotations

import os

from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_integer("threads", 2, "Threads for PyTorch and ai3 (OpenMP).")
flags.DEFINE_integer("repeats", 5, "Timed runs per measurement (median kept).")
flags.DEFINE_list("batches", ["10", "1"], "Batch sizes to run each shape at.")
flags.DEFINE_list("algorithms", [], "ai3 algorithms to time (default: all applicable).")

SEED_SHAPES = [(3, 224, 224), (64, 112, 112), (256, 28, 28), (512, 14, 14)]


def main(argv: list[str]) -> None:
    del argv
    os.environ.setdefault("OMP_NUM_THREADS", str(FLAGS.threads))
    import torch
    import torch.nn.functional as F

    import ai3
    from bench import timing

    torch.set_num_threads(FLAGS.threads)
    algorithms = FLAGS.algorithms or [a for a in ai3.algorithms()["conv2d"] if a != "custom"]
    print(f"ai3 conv2d vs PyTorch {torch.__version__}, float32, {FLAGS.threads} threads, 3x3 kernel, padding 1\n")
    for batch in (int(b) for b in FLAGS.batches):
        for c, h, w in SEED_SHAPES:
            k = max(c, 64)
            x = torch.randn(batch, c, h, w)
            weight = torch.randn(k, c, 3, 3)
            bias = torch.randn(k)
            flops = timing.conv2d_flops(batch, c, h, w, k, 3, 3, h, w)
            with torch.inference_mode():
                want = F.conv2d(x, weight, bias, padding=1)
                torch_s = timing.median_seconds(lambda: F.conv2d(x, weight, bias, padding=1), FLAGS.repeats)
            rows = [["pytorch", f"{torch_s * 1e3:.2f}", f"{flops / torch_s / 1e9:.1f}", "1.00", ""]]
            for algorithm in algorithms:
                try:
                    layer = ai3.layers.Conv2d(weight, bias, padding=1, algorithm=algorithm)
                except ai3.AlgorithmNotApplicable as e:
                    rows.append([algorithm, "-", "-", "-", str(e).split(": ")[-1]])
                    continue
                err = (layer(x) - want).abs().max().item()
                seconds = timing.median_seconds(lambda: layer(x), FLAGS.repeats)
                rows.append(
                    [algorithm, f"{seconds * 1e3:.2f}", f"{flops / seconds / 1e9:.1f}", f"{seconds / torch_s:.2f}", f"max err {err:.1e}"]
                )
            print(f"input ({batch}, {c}, {h}, {w}) -> {k} channels, {flops / 1e9:.2f} GFLOP")
            print(timing.format_table(["algorithm", "ms", "GFLOP/s", "ai3/torch", "note"], rows))
            print()


if __name__ == "__main__":
    app.run(main)
