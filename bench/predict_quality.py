"""How good "predict" is on models left out of its training: top-1 agreement
with "auto", the end-to-end time of the "predict" model against the "auto"
model (interleaved in this process), and the time to select per layer.

    python bench/predict_quality.py --dataset sweep.csv --holdout mobilenet_v3_large \\
        --holdout regnet_y_400mf --size 64 --out bench/results/sweep_predict.md

It trains a selector on the dataset less the held-out models, then, per
held-out model: ai3.plan(..., "auto") (tuning-cache hits after the sweep)
and ai3.plan(..., "predict") with that selector; a conv2d/linear layer
agrees when "predict"'s choice is what "auto" measured fastest for the same
layer (its tuning-cache entry). Timings on a loaded machine are noisy: the
load average is printed beside each.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--dataset", required=True)
    p.add_argument("--holdout", action="append", required=True)
    p.add_argument("--size", type=int, default=64)
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--out")
    args = p.parse_args()

    import ai3
    from ai3 import explore, predict, sweep

    rows = sweep.read_dataset(args.dataset)
    selector = predict.train(rows, exclude_models=args.holdout)
    path = os.path.join(tempfile.mkdtemp(), "selector.json")
    selector.save(path)
    os.environ[predict.ENV_SELECTOR] = path
    trained = predict.training_set(rows, args.holdout)
    seen_digests = {d for _, (_, _, ds) in trained.items() for d in ds}
    held = predict.training_set([r for r in rows if r["model"] in args.holdout])
    overlap = {op: sum(d in seen_digests for d in ds) for op, (_, _, ds) in held.items()}

    # Time "predict"'s selection: rank alone, and choose (rank + the core's check).
    chosen_seconds: list[float] = []
    real_choose = predict.choose

    def timed_choose(op, candidates, device="cpu"):
        start = time.perf_counter()
        out = real_choose(op, candidates, device)
        chosen_seconds.append((time.perf_counter() - start) / max(1, len(candidates)))
        return out

    predict.choose = timed_choose
    lines = [
        '# "predict" on models left out of its training',
        "",
        f"Trained on: {', '.join(selector.data['trained_on'])} ({selector.data['layers']} distinct layers); "
        f"held out: {', '.join(args.holdout)}; batch 1, {args.size}x{args.size}, float32; machine {selector.machine}.",
        f"Held-out layers also in the training set (same key): {overlap} of "
        f"{ {op: len(ds) for op, (_, _, ds) in held.items()} }.",
        "",
        "| model | layers (conv2d+linear) | top-1 agree | predict fell back to default | auto ms | predict ms | predict/auto | load |",
        "|---|---|---|---|---|---|---|---|",
    ]
    total_agree = total = 0
    ratios: list[float] = []
    slowdowns: list[float] = []
    for name in args.holdout:
        loaded = explore.load_model(name, size=args.size)
        auto = ai3.plan(loaded.model, loaded.shape, "auto")
        pred = ai3.plan(loaded.model, loaded.shape, "predict")
        agree = n = fallback = 0
        for lp in pred.layers:
            if lp.op not in ("conv2d", "linear") or lp.measured is None:
                continue
            n += 1
            agree += lp.choice == lp.measured
            fallback += lp.predicted is None or lp.predicted != lp.choice
            # The chosen algorithm's measured time over the fastest's (the same cache entry).
            mine, best = lp.time_of(lp.choice), lp.time_of(lp.measured)
            if mine is not None and best:
                slowdowns.append(mine / best)
        x = np.random.default_rng(0).standard_normal(loaded.shape).astype(np.float32)
        a_t, p_t = [], []
        for _ in range(3):
            auto.model(x), pred.model(x)
        for _ in range(args.rounds):  # interleaved, so a load change hits both alike
            s = time.perf_counter()
            auto.model(x)
            a_t.append(time.perf_counter() - s)
            s = time.perf_counter()
            pred.model(x)
            p_t.append(time.perf_counter() - s)
        a, pr = statistics.median(a_t), statistics.median(p_t)
        ratios.append(pr / a)
        total_agree += agree
        total += n
        load = os.getloadavg()[0]
        lines.append(
            f"| {name} | {n} | {agree}/{n} ({agree / max(1, n):.0%}) | {fallback} | {a * 1e3:.2f} | "
            f"{pr * 1e3:.2f} | {pr / a:.2f}x | {load:.1f} |"
        )
        print(lines[-1], flush=True)
    xs = [x for op, (xx, _, _) in held.items() for x in xx]
    ops = [op for op, (xx, _, _) in held.items() for _ in xx]
    start = time.perf_counter()
    for op, x in zip(ops, xs):
        if op in selector.ops:
            selector.rank(op, x)
    rank_us = (time.perf_counter() - start) / max(1, len(xs)) * 1e6
    lines += [
        "",
        f'Overall top-1 agreement with "auto": {total_agree}/{total} ({total_agree / max(1, total):.1%}); '
        f"end to end predict/auto: geometric mean {float(np.exp(np.mean(np.log(ratios)))):.3f}x "
        f"(medians of {args.rounds} interleaved runs each).",
        f"Per layer, the chosen algorithm's measured time over the fastest's: geometric mean "
        f"{float(np.exp(np.mean(np.log(slowdowns)))) if slowdowns else float('nan'):.3f}x, within 10% of the fastest on "
        f"{sum(r <= 1.1 for r in slowdowns)}/{len(slowdowns)} layers.",
        f"Selecting: {rank_us:.0f} us per layer for the trees alone; {statistics.median(chosen_seconds) * 1e6:.0f} us "
        f"per layer for predict.choose (features + trees + the core building the layer once to check the algorithm "
        f"takes it), median over {len(chosen_seconds)} calls. 1-minute load average at the end: {os.getloadavg()[0]:.1f} "
        "(a 2-core machine shared with other jobs: the times are noisy).",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
