"""bazel run //bench:training — training through ai3's swapped layers next to
PyTorch (issue 16).

1. For the seed paper's four convolution shapes (N, C, H, W) = (10,3,224,224),
   (10,64,112,112), (10,256,28,28), (10,512,14,14), a 3x3 convolution with
   padding 1 to max(C, 64) output channels, float32: the median time of one
   forward + backward (the input's and the weight's and bias's gradients)
   through a swapped nn.Conv2d, for each algorithm of each conv2d gradient
   op (the other gradients on "default", the forward on "default"), and
   through torch's own nn.Conv2d, in this one process; the ratio to torch
   (below 1: ai3 faster).
2. A resnet18 (weights=None) training step at batch 8, 224x224: forward,
   cross-entropy backward and an Adam step, with every nn.Conv2d and the
   nn.Linear swapped (forward and backward "default"), against torch. The
   ai3 step includes rebuilding each core layer after Adam moved its
   weights (the layers are keyed by the weights' version, ai3.torch.ops).

Writes bench/results/training.md. On a shared machine set
OMP_WAIT_POLICY=PASSIVE (see bench/conv2d.py). A quick run:
bazel run //bench:training -- --shapes=3 --reps=2 --resnet_reps=2
"""

from __future__ import annotations

import copy
import os

from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_integer("threads", 2, "Threads for PyTorch and ai3 (OpenMP).")
flags.DEFINE_integer("reps", 3, "Timed forward + backward runs per conv row (median kept).")
flags.DEFINE_integer("batch", 10, "Batch of the conv shapes (the seed's is 10).")
flags.DEFINE_list("shapes", ["0", "1", "2", "3"], "Which of the four seed shapes to run (indices).")
flags.DEFINE_float("budget_s", 20.0, "Stop repeating a row after this many seconds (at least one timed run).")
flags.DEFINE_integer("resnet_batch", 8, "Batch of the resnet18 training step.")
flags.DEFINE_integer("resnet_reps", 3, "Timed resnet18 training steps (median kept).")
flags.DEFINE_string("results_dir", "", "Where to write training.md (default: bench/results).")

SEED_SHAPES = [(3, 224, 224), (64, 112, 112), (256, 28, 28), (512, 14, 14)]


def conv_rows(torch, nn, ai3, timing) -> list[list[str]]:
    rows = []
    for index in (int(i) for i in FLAGS.shapes):
        c, h, w = SEED_SHAPES[index]
        shape = (FLAGS.batch, c, h, w)
        torch.manual_seed(0)
        ref = nn.Conv2d(c, max(c, 64), 3, padding=1)
        x = torch.randn(shape)
        grad = torch.randn(FLAGS.batch, max(c, 64), h, w)

        def step(module):
            def run():
                xg = x.clone().requires_grad_()
                module.zero_grad(set_to_none=True)
                module(xg).backward(grad)

            return run

        torch_s = timing.median_seconds(step(ref), FLAGS.reps, budget_s=FLAGS.budget_s)
        label = "x".join(str(d) for d in shape)
        rows.append([label, "torch", "", f"{torch_s * 1e3:.1f}", "1.00", ""])
        choices = [("default", "default")]
        for target, grad_op in ai3.layers.backward_ops("conv2d").items():
            choices += [(target, a) for a in ai3.algorithms()[grad_op]]
        for target, algorithm in choices:
            notes: list[str] = []
            backward = None if target == "default" else {f"backward_{target}": algorithm}

            def make():
                return ai3.swap_conv2d(copy.deepcopy(ref), "default", backward=backward)

            swapped = timing.attempt(notes, "swap", make)
            seconds = (
                None
                if swapped is None
                else timing.attempt(
                    notes, "run", lambda: timing.median_seconds(step(swapped), FLAGS.reps, budget_s=FLAGS.budget_s)
                )
            )
            chosen = "" if swapped is None else ", ".join(f"{t}={a}" for t, a in swapped.resolved_backward().items())
            rows.append(
                [
                    label,
                    f"ai3 {target}={algorithm}" if backward else "ai3 default",
                    chosen,
                    "" if seconds is None else f"{seconds * 1e3:.1f}",
                    "" if seconds is None else f"{seconds / torch_s:.2f}",
                    "; ".join(notes),
                ]
            )
            print(
                timing.format_table(
                    ["shape", "run", "gradient algorithms", "fwd+bwd ms", "x torch", "note"], rows[-1:]
                ),
                flush=True,
            )
    return rows


def resnet_rows(torch, nn, ai3, timing) -> list[list[str]]:
    import torch.nn.functional as F
    import torchvision

    torch.manual_seed(0)
    ref = torchvision.models.resnet18(weights=None)
    swapped = ai3.swap_linear(ai3.swap_conv2d(copy.deepcopy(ref)))
    g = torch.Generator().manual_seed(1)
    x = torch.randn(FLAGS.resnet_batch, 3, 224, 224, generator=g)
    labels = torch.randint(0, 1000, (FLAGS.resnet_batch,), generator=g)

    def step(model):
        model.train()
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)

        def run():
            optimizer.zero_grad()
            F.cross_entropy(model(x), labels).backward()
            optimizer.step()

        return run

    torch_s = timing.median_seconds(step(ref), FLAGS.resnet_reps, budget_s=120)
    ai3_s = timing.median_seconds(step(swapped), FLAGS.resnet_reps, budget_s=120)
    label = f"resnet18 batch {FLAGS.resnet_batch}"
    return [
        [label, "torch", f"{torch_s * 1e3:.0f}", "1.00"],
        [label, "ai3 (conv2d + linear swapped, default)", f"{ai3_s * 1e3:.0f}", f"{ai3_s / torch_s:.2f}"],
    ]


def main(argv: list[str]) -> None:
    del argv
    os.environ.setdefault("OMP_NUM_THREADS", str(FLAGS.threads))
    import torch
    from torch import nn

    import ai3
    from bench import timing

    torch.set_num_threads(FLAGS.threads)
    conv_headers = ["shape", "run", "gradient algorithms", "fwd+bwd ms", "x torch", "note"]
    conv = conv_rows(torch, nn, ai3, timing)
    print(timing.format_table(conv_headers, conv))
    step_headers = ["model", "run", "train step ms", "x torch"]
    resnet = resnet_rows(torch, nn, ai3, timing)
    print(timing.format_table(step_headers, resnet))
    path = os.path.join(timing.results_dir(FLAGS.results_dir), "training.md")
    timing.write_markdown(
        path,
        "Training: forward + backward through swapped layers vs PyTorch",
        [
            (f"conv2d forward + backward, 3x3 padding 1, float32, {FLAGS.threads} threads", conv_headers, conv),
            ("resnet18 training step (forward, backward, Adam), float32", step_headers, resnet),
        ],
        [
            "x torch: ai3's time over torch's in the same process (below 1: ai3 faster).",
            "A conv row's gradient algorithms: what each gradient op ran ('default' resolved).",
            "The resnet18 ai3 step rebuilds each core layer after Adam's update (layers are keyed by the weights' version).",
        ],
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    app.run(main)
