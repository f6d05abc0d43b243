"""bazel run --config=cuda //bench:gpu_bench — ai3's CUDA algorithms next to
PyTorch (cuDNN) on one GPU, in one process (bench/gpu_check.sh runs it).

1. The seed paper's single convolutions at batch 10: inputs (10,3,224,224),
   (10,64,112,112), (10,256,28,28), (10,512,14,14), 3x3, padding 1, to
   max(C, 64) output channels: every CUDA conv2d algorithm and
   F.conv2d.
2. The seed paper's models at batch 10, (10,3,224,224), weights=None:
   AlexNet, DenseNet-121, GoogLeNet, Inception-v3, ResNet-50, Swin-T,
   ViT-B/16, SqueezeNet 1.1, VGG16: PyTorch, swap_conv2d with each
   conv2d algorithm (where it applies; the CUDA default elsewhere), and
   swap_backend with --backend_algorithms where the core has every op of
   the model on CUDA (else the reason is printed).

Times are medians of CUDA-event timings on the current stream
(ai3.cuda_timing), float32 with TF32 off on both sides (ai3's cuDNN
algorithms run plain FP32). ai3/torch below 1 means ai3 is faster.
"""

from __future__ import annotations

import copy
import time

from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_integer("batch", 10, "Batch size (the seed paper's: 10).")
flags.DEFINE_integer("repeats", 5, "Timed runs per measurement (median kept).")
flags.DEFINE_list("algorithms", [], "ai3 conv2d algorithms (default: every CUDA one).")
flags.DEFINE_list(
    "backend_algorithms",
    ["guess", "smm", "direct"],
    "conv2d algorithms also run through swap_backend (each is a whole-model trace and build, so a few).",
)
flags.DEFINE_list(
    "models",
    ["alexnet", "densenet121", "googlenet", "inception_v3", "resnet50", "swin_t", "vit_b_16", "squeezenet1_1", "vgg16"],
    "torchvision models to run.",
)
flags.DEFINE_bool("convs", True, "Run the single-convolution part.")
flags.DEFINE_float("budget_s", 480.0, "Stop starting new models after this many seconds.")

SEED_SHAPES = [(3, 224, 224), (64, 112, 112), (256, 28, 28), (512, 14, 14)]


def _where_applicable(algorithm: str):
    """swap_conv2d selector: `algorithm` where cuDNN/ai3 take the layer by
    its parameters, the CUDA default elsewhere."""

    def select(conv) -> str:
        if not hasattr(conv, "stride"):  # not an nn.Conv2d: let the core decide
            return "default" if algorithm in ("winograd", "fft") else algorithm
        plain = conv.stride == (1, 1) and conv.dilation == (1, 1) and conv.groups == 1
        if algorithm == "winograd" and not (plain and conv.kernel_size in ((3, 3), (5, 5))):
            return "default"
        if algorithm == "fft" and not plain:
            return "default"
        return algorithm

    return select


def _relative_error(got, want) -> float:
    return ((got - want).abs().max() / want.abs().max().clamp_min(1e-30)).item()


def conv_part(torch, F, ai3, timing, time_call, algorithms) -> None:
    print(f"== single convolutions, batch {FLAGS.batch}, 3x3, padding 1, float32 ==\n")
    for c, h, w in SEED_SHAPES:
        k = max(c, 64)
        x = torch.randn(FLAGS.batch, c, h, w, device="cuda")
        weight = torch.randn(k, c, 3, 3, device="cuda")
        bias = torch.randn(k, device="cuda")
        flops = timing.conv2d_flops(FLAGS.batch, c, h, w, k, 3, 3, h, w)
        with torch.no_grad():
            want = F.conv2d(x, weight, bias, padding=1)
            torch_s = time_call(lambda: F.conv2d(x, weight, bias, padding=1), repeats=FLAGS.repeats)
        rows = [["pytorch (cuDNN)", f"{torch_s * 1e3:.3f}", f"{flops / torch_s / 1e9:.0f}", "1.00", ""]]
        for algorithm in algorithms:
            try:
                with ai3.cuda.layer_device("cuda"):
                    layer = ai3.layers.Conv2d(weight, bias, padding=1, algorithm=algorithm)
                got = layer(x)
                seconds = time_call(lambda: layer(x), repeats=FLAGS.repeats)
            except ai3.AlgorithmNotApplicable as e:
                rows.append([algorithm, "-", "-", "-", str(e).split(": ", 1)[-1][:70]])
                continue
            rows.append(
                [
                    algorithm,
                    f"{seconds * 1e3:.3f}",
                    f"{flops / seconds / 1e9:.0f}",
                    f"{seconds / torch_s:.2f}",
                    f"rel err {_relative_error(got, want):.1e}",
                ]
            )
        print(f"input ({FLAGS.batch}, {c}, {h}, {w}) -> {k} channels, {flops / 1e9:.1f} GFLOP")
        print(timing.format_table(["algorithm", "ms", "GFLOP/s", "ai3/torch", "note"], rows))
        print(flush=True)


def model_part(torch, torchvision, ai3, timing, time_call, algorithms, started: float) -> None:
    print(f"== models, batch {FLAGS.batch}, (3, 224, 224), float32, weights=None ==\n")
    for name in FLAGS.models:
        if time.monotonic() - started > FLAGS.budget_s:
            print(f"{name}: skipped, the {FLAGS.budget_s:.0f} s budget is spent\n")
            continue
        torch.manual_seed(0)
        kwargs = {"aux_logits": False, "init_weights": False} if name in ("googlenet", "inception_v3") else {}
        model = getattr(torchvision.models, name)(weights=None, **kwargs).eval().cuda()
        x = torch.randn(FLAGS.batch, 3, 224, 224, device="cuda")
        with torch.no_grad():
            want = model(x)
            torch_s = time_call(lambda: model(x), repeats=FLAGS.repeats)
        rows = [["pytorch (cuDNN)", "", f"{torch_s * 1e3:.2f}", "1.00", ""]]
        for algorithm in algorithms:
            hows = ("swap_conv2d", "swap_backend") if algorithm in FLAGS.backend_algorithms else ("swap_conv2d",)
            for how in hows:
                try:
                    if how == "swap_conv2d":
                        run = ai3.swap_conv2d(copy.deepcopy(model), _where_applicable(algorithm))
                    else:
                        run = ai3.swap_backend(model, {"conv2d": _where_applicable(algorithm)})
                    with torch.no_grad():
                        got = run(x)
                        seconds = time_call(lambda: run(x), repeats=FLAGS.repeats)
                except ai3.Error as e:
                    rows.append([algorithm, how, "-", "-", f"{type(e).__name__}: {str(e)[:80]}"])
                    continue
                rows.append(
                    [
                        algorithm,
                        how,
                        f"{seconds * 1e3:.2f}",
                        f"{seconds / torch_s:.2f}",
                        f"rel err {_relative_error(got, want):.1e}",
                    ]
                )
        print(name)
        print(timing.format_table(["conv2d algorithm", "how", "ms", "ai3/torch", "note"], rows))
        print(flush=True)
        model = None  # frees it before the next model
        torch.cuda.empty_cache()


def main(argv: list[str]) -> None:
    del argv
    started = time.monotonic()
    import torch
    import torch.nn.functional as F
    import torchvision

    import ai3
    from ai3.cuda_timing import time_call
    from bench import timing

    reason = ai3.cuda.unavailable_reason()
    if reason:
        raise SystemExit(f"gpu_bench: cannot run: {reason}")
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    algorithms = FLAGS.algorithms or [a for a in ai3.algorithms("cuda")["conv2d"] if a != "custom"]
    print(
        f"ai3 on {torch.cuda.get_device_name()} vs PyTorch {torch.__version__} (cuDNN {torch.backends.cudnn.version()})\n"
    )
    if FLAGS.convs:
        conv_part(torch, F, ai3, timing, time_call, algorithms)
    model_part(torch, torchvision, ai3, timing, time_call, algorithms, started)
    print(f"total {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    app.run(main)
