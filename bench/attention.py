"""bazel run //bench:attention — each ai3 attention algorithm next to PyTorch's SDPA.

Attention alone, q = k = v shaped (1, H, L, 64), float32, at sequence
lengths L = S = 512, 2048 and 8192, with H = 8 and H = 12 heads, plain and
causal: the median time of torch.nn.functional.scaled_dot_product_attention
and of each ai3 algorithm, measured in this one process on the same
threads, their ratio ai3 / PyTorch (below 1 means ai3 is faster), the
largest difference from PyTorch's result and the workspace each algorithm
keeps (naive: the whole (L, S) score matrix per head).

On a machine shared with other work, run it with OMP_WAIT_POLICY=PASSIVE
(both libraries then sleep rather than spin between parallel regions):
spinning OpenMP threads of two runtimes (torch's and the core's) starve each
other there, which costs the algorithms with many short parallel regions
(naive and chunked: GEMMs and softmaxes per head or chunk) far more than flash
(one parallel region per call).
"""

from __future__ import annotations

import os

from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_integer("threads", 2, "Threads for PyTorch and ai3 (OpenMP).")
flags.DEFINE_integer("repeats", 3, "Timed runs per measurement (median kept).")
flags.DEFINE_list("lengths", ["512", "2048", "8192"], "Sequence lengths (L = S).")
flags.DEFINE_list("heads", ["8", "12"], "Head counts.")
flags.DEFINE_list("algorithms", ["naive", "flash", "chunked"], "ai3 attention algorithms to time.")
flags.DEFINE_bool("causal", True, "Also time causal attention.")


def main(argv: list[str]) -> None:
    del argv
    os.environ.setdefault("OMP_NUM_THREADS", str(FLAGS.threads))
    import torch
    import torch.nn.functional as F

    import ai3
    from bench import timing

    torch.set_num_threads(FLAGS.threads)
    print(f"ai3 attention vs PyTorch {torch.__version__} SDPA, float32, B = 1, E = 64, {FLAGS.threads} threads\n")
    for length in (int(n) for n in FLAGS.lengths):
        for heads in (int(h) for h in FLAGS.heads):
            for causal in (False, True) if FLAGS.causal else (False,):
                torch.manual_seed(0)
                q, k, v = (torch.randn(1, heads, length, 64) for _ in range(3))
                with torch.inference_mode():
                    want = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                    torch_s = timing.median_seconds(
                        lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal), FLAGS.repeats
                    )
                rows = [["pytorch sdpa", f"{torch_s * 1e3:.1f}", "1.00", "", ""]]
                for algorithm in FLAGS.algorithms:
                    layer = ai3.layers.Attention(causal=causal, algorithm=algorithm)
                    workspace = layer.workspace_bytes([q.shape, k.shape, v.shape])
                    err = (torch.as_tensor(layer(q, k, v)) - want).abs().max().item()
                    seconds = timing.median_seconds(lambda: layer(q, k, v), FLAGS.repeats)
                    rows.append(
                        [
                            algorithm,
                            f"{seconds * 1e3:.1f}",
                            f"{seconds / torch_s:.2f}",
                            f"{workspace / 2**20:.2f}",
                            f"max err {err:.1e}",
                        ]
                    )
                print(f"L = S = {length}, H = {heads}{', causal' if causal else ''}")
                print(timing.format_table(["algorithm", "ms", "ai3/torch", "workspace MiB", "note"], rows))
                print()


if __name__ == "__main__":
    app.run(main)
