"""ai3.layouts: running a model's convolutions, and the ops between them, in
the other memory order gives the model-layout result (and torch's) for
every op the pass carries or converts for, with few conversions."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
import pytest_main
import torch
import torch.nn.functional as F
from torch import nn

import ai3
from ai3 import layouts, spec
from ai3 import model as ai3_model
from ai3.spec import MODEL_INPUT, LayerSpec
from ai3.torch import fx

torch.manual_seed(0)


def _specs(module: nn.Module, shape: tuple[int, ...]) -> tuple[list[LayerSpec], int]:
    specs, output, _ = fx.to_specs(module, shape)
    specs, output = spec.remove_identities(specs, output)
    return spec.fold_batchnorm(specs, output)


def _build(module: nn.Module, shape: tuple[int, ...], plan: str | None, algos: Any = None, dtype=np.float32):
    specs, output = _specs(module, shape)
    return ai3_model.build(specs, output, algos, dtype=dtype, layout="NCHW", sample_input_shape=shape, layout_plan=plan)


def _permutes(model: ai3.Model) -> list[str]:
    return [name for name, op, _ in model.layers() if op == "permute"]


class ResBlock(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1)
        self.down = nn.Conv2d(c, 2 * c, 1, stride=2)
        self.conv3 = nn.Conv2d(c, 2 * c, 3, stride=2, padding=1)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = F.relu(self.conv2(y) + x)
        return F.relu(self.conv3(y) + self.down(y))


class Net(nn.Module):
    """conv, a residual block, a squeeze-excite gate (global pool, 1x1
    convs, broadcasting mul), a concat of branches, a depthwise conv, pools,
    a softmax over channels and a classifier head."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.block = ResBlock(8)
        self.se1 = nn.Conv2d(16, 4, 1)
        self.se2 = nn.Conv2d(4, 16, 1)
        self.b1 = nn.Conv2d(16, 8, 1)
        self.b2 = nn.Conv2d(16, 8, 3, padding=1)
        self.dw = nn.Conv2d(16, 16, 3, padding=1, groups=16)
        self.pool = nn.MaxPool2d(2)
        self.avg = nn.AvgPool2d(2, ceil_mode=True)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = self.block(F.relu(self.stem(x)))
        gate = torch.sigmoid(self.se2(F.relu(self.se1(F.adaptive_avg_pool2d(x, 1)))))
        x = x * gate
        x = torch.cat([self.b1(x), F.relu(self.b2(x))], 1)
        x = F.hardswish(self.dw(x))
        x = torch.softmax(self.pool(x), dim=1) * 2.0 + self.avg(x)
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class Heads(nn.Module):
    """Ops the pass cannot carry: a flatten of a spatial map, a reshape, a
    mean over some axes, a channel slice; also an NHWC-order output."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 6, 3, padding=1)
        self.conv2 = nn.Conv2d(4, 4, 1)

    def forward(self, x):
        y = F.relu(self.conv(x))
        a = torch.flatten(y, 1)  # spatial: needs NCHW order
        b = y.mean(dim=(2, 3))  # the same (N, C) in both orders
        c = y.mean(dim=2, keepdim=True).flatten(1)
        d = self.conv2(y[:, 1:5])  # a channel slice feeding a conv
        e = F.pad(y, (1, 2, 0, 1))
        return torch.cat([a, b, c, d.flatten(1), e.flatten(1)], 1)


@pytest.mark.parametrize(
    "module, shape", [(Net(), (2, 3, 16, 24)), (Heads(), (1, 3, 7, 9)), (ResBlock(8), (1, 8, 9, 9))]
)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_convs_plan_matches_keep_and_torch(module, shape, dtype) -> None:
    module = module.eval().to(torch.float64 if dtype == np.float64 else torch.float32)
    x = np.random.default_rng(0).standard_normal(shape).astype(dtype)
    with torch.no_grad():
        want = module(torch.from_numpy(x)).numpy()
    keep = _build(module, shape, "keep", dtype=dtype)
    moved = _build(module, shape, "convs", dtype=dtype)
    tol = 1e-4 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(keep(x), want, rtol=tol, atol=tol)
    np.testing.assert_allclose(moved(x), want, rtol=tol, atol=tol)
    assert not _permutes(keep)
    assert _permutes(moved)  # something moved


def test_one_conversion_on_entry_none_on_exit() -> None:
    """Conv to global pool in NHWC: one permute of the input, and the
    flatten after the global pool reads NHWC as it is."""
    model = _build(Net().eval(), (1, 3, 16, 16), "convs")
    assert _permutes(model) == ["input.to_nhwc"]


def test_conversions_are_shared_and_output_converted_back() -> None:
    model = _build(ResBlock(8).eval(), (1, 8, 9, 9), "convs")
    names = _permutes(model)
    assert len(names) == 2 and names[0] == "input.to_nhwc" and names[1].endswith(".to_nchw")
    assert model.output_shape((1, 8, 9, 9)) == (1, 16, 5, 5)


def test_algorithm_without_nhwc_stays_nchw() -> None:
    """smm takes NCHW only: its convs stay, the others move, the result
    does not change."""
    module = ResBlock(8).eval()
    shape = (1, 8, 9, 9)
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    names = ["smm", "default", "smm", "default"]
    keep = _build(module, shape, "keep", {"conv2d": names})
    moved = _build(module, shape, "convs", {"conv2d": names})
    np.testing.assert_allclose(moved(x), keep(x), rtol=1e-4, atol=1e-4)
    assert [a for _, op, a in moved.layers() if op == "conv2d"][0] == "smm"
    assert _permutes(moved)


def test_bad_plan_names_the_choices() -> None:
    with pytest.raises(ai3.Error, match="layout plan must be one of 'default', 'keep', 'convs'"):
        _build(ResBlock(4).eval(), (1, 4, 5, 5), "blocked")


def test_nhwc_model_runs_convs_in_nchw() -> None:
    """A channels-last (Keras) model: the alternative is NCHW."""
    rng = np.random.default_rng(2)
    w1 = rng.standard_normal((6, 3, 3, 3)).astype(np.float32)
    w2 = rng.standard_normal((6, 6, 1, 1)).astype(np.float32)
    conv = {"stride": (1, 1), "padding": (1, 1, 1, 1), "dilation": (1, 1), "groups": 1}
    conv1x1 = dict(conv, padding=(0, 0, 0, 0))

    def specs():
        return [
            LayerSpec("c1", "conv2d", [MODEL_INPUT], dict(conv), {"weight": w1}, input_shape=(1, 8, 8, 3)),
            LayerSpec("r1", "relu", [0], input_shape=(1, 8, 8, 6)),
            LayerSpec("c2", "conv2d", [1], dict(conv1x1), {"weight": w2}, input_shape=(1, 8, 8, 6)),
            LayerSpec("sum", "add", [2, 1], input_shape=(1, 8, 8, 6)),
            LayerSpec("cat", "concat", [3, 0], {"axis": -1}, input_shape=(1, 8, 8, 6)),
        ]

    x = rng.standard_normal((1, 8, 8, 3)).astype(np.float32)
    kw = dict(dtype=np.float32, layout="NHWC", sample_input_shape=(1, 8, 8, 3))
    keep = ai3_model.build(specs(), 4, None, layout_plan="keep", **kw)
    moved = ai3_model.build(specs(), 4, None, layout_plan="convs", **kw)
    np.testing.assert_allclose(moved(x), keep(x), rtol=1e-4, atol=1e-4)
    assert _permutes(moved) == ["input.to_nchw", "cat.to_nhwc"]


def test_constant_operand_is_permuted() -> None:
    class Scale(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3)
            self.register_buffer("s", torch.arange(4.0).reshape(4, 1, 1) + 1)

        def forward(self, x):
            return self.conv(x) * self.s - 1.0

    module = Scale().eval()
    x = np.random.default_rng(3).standard_normal((1, 3, 6, 5)).astype(np.float32)
    with torch.no_grad():
        want = module(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(_build(module, x.shape, "convs")(x), want, rtol=1e-4, atol=1e-4)


def test_fastest_times_every_plan_and_records_the_choice() -> None:
    module = Net().eval()
    shape = (1, 3, 16, 16)
    specs, output = _specs(module, shape)
    x = np.random.default_rng(4).standard_normal(shape).astype(np.float32)
    model = layouts.fastest(
        ai3_model.build, specs, output, None, x, repeats=2, dtype=np.float32, layout="NCHW", sample_input_shape=shape
    )
    d = model.layout_decision
    assert set(d.seconds) == {"keep", "default"}  # "convs" builds what "default" does here
    assert d.plan in ("keep", "default")
    assert ("conv" in str(d)) and (d.plan == "keep") == (not d.conversions)
    with torch.no_grad():
        np.testing.assert_allclose(model(x), module(torch.from_numpy(x)).numpy(), rtol=1e-4, atol=1e-4)
    # The specs given are left as they were, for the caller's next build.
    assert all("layout" not in s.attrs for s in specs)


def test_auto_retimes_moved_convs_in_their_layout(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("AI3_CACHE_DIR", str(tmp_path))
    module = ResBlock(4).eval()
    shape = (1, 4, 8, 8)
    x = np.random.default_rng(5).standard_normal(shape).astype(np.float32)
    timed: list[tuple[str, str]] = []  # (layer, layout) of every conv "auto" timed
    select = layouts.selection.select

    def recording_select(op, selector, candidates, **kwargs):
        if op == "conv2d" and selector == "auto":
            timed.extend((c.name, c.layout) for c in candidates)
        return select(op, selector, candidates, **kwargs)

    monkeypatch.setattr(layouts.selection, "select", recording_select)
    model = _build(module, shape, "convs", {"conv2d": "auto"})
    with torch.no_grad():
        np.testing.assert_allclose(model(x), module(torch.from_numpy(x)).numpy(), rtol=1e-4, atol=1e-4)
    # (smm takes NHWC now, so which algorithm wins there is the timing's
    # business; what must hold is that every moved conv was timed in NHWC.)
    convs = {name for name, op, _ in model.layers() if op == "conv2d"}
    assert convs and all((name, "NHWC") in timed for name in convs)


def test_default_plan_moves_only_convs_measured_faster_there() -> None:
    """ "default" moves guess's (and "default"'s) float32 convs; an
    explicitly named algorithm measured no faster in NHWC stays; float64
    (no guess) stays."""
    module = ResBlock(8).eval()
    shape = (1, 8, 9, 9)
    assert _permutes(_build(module, shape, None)) == _permutes(_build(module, shape, "convs"))
    assert not _permutes(_build(module, shape, None, {"conv2d": "implicit gemm"}))
    assert _permutes(_build(module, shape, "convs", {"conv2d": "implicit gemm"}))
    assert not _permutes(_build(module.double(), shape, None, dtype=np.float64))


def test_default_plan_moves_winograd_where_channels_fill_vectors() -> None:
    """winograd counts as faster in NHWC only where it runs there with
    channels in the lanes (ungrouped, channels in whole vectors of 8): the
    8-channel block moves whole; at 4 channels its winograd convs would stay
    while the guess ones move, so the default plan keeps NCHW."""
    names = ["winograd", "winograd", "guess", "guess"]  # conv1, conv2 (3x3 stride 1); conv3, down
    shape = (1, 8, 9, 9)
    module = ResBlock(8).eval()
    assert _permutes(_build(module, shape, None, {"conv2d": names})) == _permutes(_build(module, shape, "convs"))
    assert not _permutes(_build(ResBlock(4).eval(), (1, 4, 9, 9), None, {"conv2d": names}))


def test_dynamic_batch() -> None:
    """Shapes with a symbolic batch (ONNX dynamic axes): the plan holds for
    every batch size."""
    module = Net().eval()
    specs, output = _specs(module, (1, 3, 16, 16))
    for s in specs:
        if s.input_shape is not None:
            s.input_shape = (None, *s.input_shape[1:])
    model = ai3_model.build(
        specs, output, None, dtype=np.float32, layout="NCHW", sample_input_shape=(None, 3, 16, 16), layout_plan="convs"
    )
    assert _permutes(model) == ["input.to_nhwc"]
    for n in (1, 3):
        x = np.random.default_rng(n).standard_normal((n, 3, 16, 16)).astype(np.float32)
        with torch.no_grad():
            np.testing.assert_allclose(model(x), module(torch.from_numpy(x)).numpy(), rtol=1e-4, atol=1e-4)


def test_default_plan_declines_conversions_inside_the_model() -> None:
    """Only some convs faster in NHWC: the default plan would convert
    between them, which it cannot weigh without timing, so it keeps NCHW;
    "convs" moves every conv that takes NHWC."""
    module = ResBlock(8).eval()
    shape = (1, 8, 9, 9)
    names = ["guess", "implicit gemm", "guess", "guess"]
    assert not _permutes(_build(module, shape, None, {"conv2d": names}))
    x = np.random.default_rng(6).standard_normal(shape).astype(np.float32)
    moved = _build(module, shape, "convs", {"conv2d": names})
    with torch.no_grad():
        np.testing.assert_allclose(moved(x), module(torch.from_numpy(x)).numpy(), rtol=1e-4, atol=1e-4)


def _build_without_shapes(module: nn.Module, plan: str | None, algos: Any = None):
    """As swap_backend without sample_input_shape: no spec records a shape."""
    specs, output, _ = fx.to_specs(module, None)
    specs, output = spec.remove_identities(specs, output)
    specs, output = spec.fold_batchnorm(specs, output)
    assert all(s.input_shape is None for s in specs)
    return ai3_model.build(specs, output, algos, dtype=np.float32, layout="NCHW", layout_plan=plan)


class Pooled(nn.Module):
    """A conv, then a pool to `size` and a flatten into a linear head."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.size = size
        self.fc = nn.Linear(8 * size * size, 5)

    def forward(self, x):
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(F.relu(self.conv(x)), self.size), 1))


@pytest.mark.parametrize("plan", [None, "convs"])
def test_without_shapes_a_global_pool_proves_the_flatten(plan) -> None:
    """No shapes recorded: an adaptive pool to (1, 1) fixes its output to
    (N, C, 1, 1), the same bytes in both orders, so the flatten after it
    reads NHWC as it is and the plan is the one a sample shape gives."""
    module = Net().eval()
    shape = (2, 3, 16, 24)
    model = _build_without_shapes(module, plan)
    assert _permutes(model) == _permutes(_build(module, shape, plan)) == ["input.to_nhwc"]
    x = np.random.default_rng(7).standard_normal(shape).astype(np.float32)
    with torch.no_grad():
        np.testing.assert_allclose(model(x), module(torch.from_numpy(x)).numpy(), rtol=1e-4, atol=1e-4)


def test_without_shapes_a_spatial_flatten_converts() -> None:
    """A pool to (2, 2) leaves a spatial map, whose flatten differs between
    the orders: the default plan keeps NCHW, "convs" converts before the
    flatten, and both give torch's result."""
    module = Pooled(2).eval()
    x = np.random.default_rng(8).standard_normal((1, 3, 8, 8)).astype(np.float32)
    with torch.no_grad():
        want = module(torch.from_numpy(x)).numpy()
    kept = _build_without_shapes(module, None)
    moved = _build_without_shapes(module, "convs")
    assert not _permutes(kept)
    assert len(_permutes(moved)) == 2
    np.testing.assert_allclose(kept(x), want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(moved(x), want, rtol=1e-4, atol=1e-4)
    assert _permutes(_build_without_shapes(Pooled(1).eval(), None)) == ["input.to_nhwc"]


def test_auto_chooses_the_layout_plan_end_to_end(tmp_path, monkeypatch) -> None:
    """swap_backend with "auto" convs and a sample shape times whole forward
    passes under each layout plan and keeps the fastest; ai3.plan records
    that choice, a saved plan keeps it, and the plan as a selector replays
    it without timing."""
    monkeypatch.setenv("AI3_CACHE_DIR", str(tmp_path / "cache"))
    module = Net().eval()
    shape = (1, 3, 16, 16)
    model = ai3.swap_backend(module, "auto", sample_input_shape=shape)
    decision = model.layout_decision
    assert layouts.KEEP in decision.seconds and len(decision.seconds) >= 2
    assert decision.seconds[decision.candidate] == min(decision.seconds.values())
    x = np.random.default_rng(9).standard_normal(shape).astype(np.float32)
    with torch.no_grad():
        np.testing.assert_allclose(model(x), module(torch.from_numpy(x)).numpy(), rtol=1e-4, atol=1e-4)

    plan = ai3.plan(module, shape, {"conv2d": "auto"})
    assert plan.layout["plan"] in layouts.PLANS and plan.layout["seconds"]
    assert "layout plan" in str(plan)
    path = tmp_path / "net.plan.json"
    plan.save(path)
    loaded = ai3.Plan.load(path)
    assert loaded.layout == plan.layout
    replayed = ai3.swap_backend(module, loaded)
    assert replayed.layout_decision.plan == plan.layout["plan"]
    assert not replayed.layout_decision.seconds  # replayed, not timed
    assert replayed.layout_decision.layouts == plan.layout["layouts"]


def _net_and_output(seed: int) -> tuple[nn.Module, tuple[int, ...], np.ndarray, np.ndarray]:
    """Net, its input shape, an input and torch's output for it."""
    module = Net().eval()
    shape = (1, 3, 16, 16)
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    with torch.no_grad():
        want = module(torch.from_numpy(x)).numpy()
    return module, shape, x, want


def _auto_answers_gemm(monkeypatch) -> None:
    """Per-layer "auto" answers "gemm" for every conv, so that builds with
    "default"'s convs differ from its own; also where a selector lists
    "auto" per layer (the residual variant), whose "default" entries keep
    their answer and whose algorithm names (the mixed build's) their own."""
    select = layouts.selection.select

    def gemm_for_auto(op, selector, candidates, **kwargs):
        if op == "conv2d" and selector == "auto":
            return ["gemm"] * len(candidates)
        if op == "conv2d" and isinstance(selector, list):
            default = select(op, "default", candidates, **kwargs)
            return ["gemm" if w == "auto" else d if w == "default" else w for w, d in zip(selector, default)]
        return select(op, selector, candidates, **kwargs)

    monkeypatch.setattr(layouts.selection, "select", gemm_for_auto)


def _clock_favouring(suffix: str):
    """A whole-model clock (time_alternately's stand-in) by which the
    candidates whose label ends in `suffix` are the faster (which one is,
    here, is the clock's business)."""
    return lambda calls, *args, **kwargs: {label: 1e-3 if label.endswith(suffix) else 2e-3 for label in calls}


def _no_timing(*args, **kwargs):
    raise AssertionError("the whole-model choice was cached")


def test_auto_keeps_default_conv_algorithms_where_they_run_the_model_faster(tmp_path, monkeypatch) -> None:
    """Under "auto" each layout plan is built a second time with conv2d's
    "default" algorithms; where that build runs the whole model faster it is
    the one kept, and the choice is cached, recorded by ai3.plan and
    replayed from the plan."""
    monkeypatch.setenv("AI3_CACHE_DIR", str(tmp_path / "cache"))
    module, shape, x, want = _net_and_output(12)
    _auto_answers_gemm(monkeypatch)
    default_is_faster = _clock_favouring(", conv2d default")
    monkeypatch.setattr(layouts, "time_alternately", default_is_faster)
    model = ai3.swap_backend(module, "auto", sample_input_shape=shape)
    d = model.layout_decision
    assert d.conv2d == "default" and d.candidate.endswith(", conv2d default")
    assert any(label in layouts.PLANS for label in d.seconds)  # the per-layer answers were timed too
    assert "conv2d algorithms of 'default'" in str(d)

    def convs(m: ai3.Model) -> dict[str, str]:
        return {name: algorithm for name, op, algorithm in m.layers() if op == "conv2d"}

    # What "default" answers depends on the layout the conv runs in.
    default_build = _build(module, shape, d.plan, {"conv2d": "default"})
    assert convs(model) == convs(default_build) and "gemm" not in convs(model).values()
    np.testing.assert_allclose(model(x), want, rtol=1e-4, atol=1e-4)

    monkeypatch.setattr(layouts, "time_alternately", _no_timing)
    again = ai3.swap_backend(module, "auto", sample_input_shape=shape)
    assert again.layout_decision.conv2d == "default" and again.layers() == model.layers()
    monkeypatch.setattr(layouts, "time_alternately", default_is_faster)  # ai3.plan's algos key another entry
    plan = ai3.plan(module, shape, {"conv2d": "auto"})
    assert plan.layout["conv2d"] == "default"
    assert {lp.name: lp.choice for lp in plan.layers if lp.op == "conv2d"} == convs(model)
    replayed = ai3.swap_backend(module, plan)
    assert convs(replayed) == convs(model)
    np.testing.assert_allclose(replayed(x), want, rtol=1e-4, atol=1e-4)


def test_auto_also_tries_default_for_the_convs_a_residual_add_reads(tmp_path, monkeypatch) -> None:
    """ "auto" also builds each plan with its own conv picks but "default"'s
    for every conv whose only reader is a residual add (the core fuses that
    add into a "guess" conv, which per-layer timing cannot see); where that
    build runs the model fastest it is kept, and the choice is cached."""
    monkeypatch.setenv("AI3_CACHE_DIR", str(tmp_path / "cache"))
    module, shape, x, want = _net_and_output(13)
    _auto_answers_gemm(monkeypatch)
    monkeypatch.setattr(layouts, "time_alternately", _clock_favouring(ai3_model.RESIDUAL_DEFAULT))
    model = ai3.swap_backend(module, "auto", sample_input_shape=shape)
    d = model.layout_decision
    assert d.conv2d == ai3_model.RESIDUAL_DEFAULT
    convs = {name: algorithm for name, op, algorithm in model.layers() if op == "conv2d"}
    # The convs each add reads: block.conv2 (+ x), block.conv3 and block.down (+ each other).
    residual = {"block.conv2", "block.conv3", "block.down"}
    assert residual < set(convs)
    assert all(convs[n] != "gemm" for n in residual), convs
    assert all(a == "gemm" for n, a in convs.items() if n not in residual), convs
    np.testing.assert_allclose(model(x), want, rtol=1e-4, atol=1e-4)

    monkeypatch.setattr(layouts, "time_alternately", _no_timing)
    again = ai3.swap_backend(module, "auto", sample_input_shape=shape)
    assert again.layout_decision.conv2d == ai3_model.RESIDUAL_DEFAULT and again.layers() == model.layers()


def test_auto_also_tries_each_conv_with_the_algorithm_that_ran_it_faster_inside_the_model(
    tmp_path, monkeypatch
) -> None:
    """Under the kept plan, "auto" profiles its build and "default"'s node
    by node, and builds the model once more with each conv running
    whichever of the two algorithms ran it faster there; where that build
    runs the model fastest it is kept, its per-conv list cached (a second
    build times nothing) and recorded by ai3.plan, which replays it."""
    monkeypatch.setenv("AI3_CACHE_DIR", str(tmp_path / "cache"))
    module, shape, x, want = _net_and_output(14)
    _auto_answers_gemm(monkeypatch)

    def stem_faster_without_gemm(model, x, repeats):
        """The per-node profile's stand-in: "default"'s stem ran in half
        gemm's time; every other node ran as fast in either build."""
        return {n: 0.5e-3 if n == "stem" and a != "gemm" else 1e-3 for n, _, a in model.layers()}

    mixed_is_faster = _clock_favouring(layouts.IN_MODEL)
    monkeypatch.setattr(layouts, "node_seconds", stem_faster_without_gemm)
    monkeypatch.setattr(layouts, "time_alternately", mixed_is_faster)
    model = ai3.swap_backend(module, "auto", sample_input_shape=shape)
    d = model.layout_decision
    assert d.conv2d == layouts.IN_MODEL and d.candidate in d.seconds
    assert "conv2d algorithms of 'faster inside the model'" in str(d)

    def convs(m: ai3.Model) -> dict[str, str]:
        return {name: algorithm for name, op, algorithm in m.layers() if op == "conv2d"}

    assert convs(model)["stem"] != "gemm"
    assert all(a == "gemm" for n, a in convs(model).items() if n != "stem"), convs(model)
    np.testing.assert_allclose(model(x), want, rtol=1e-4, atol=1e-4)

    monkeypatch.setattr(layouts, "time_alternately", _no_timing)
    monkeypatch.setattr(layouts, "node_seconds", _no_timing)
    again = ai3.swap_backend(module, "auto", sample_input_shape=shape)
    assert again.layout_decision.conv2d == layouts.IN_MODEL and again.layers() == model.layers()

    monkeypatch.setattr(layouts, "time_alternately", mixed_is_faster)
    monkeypatch.setattr(layouts, "node_seconds", stem_faster_without_gemm)
    # A cached list naming no algorithm of this build is timed again, not obeyed.
    (path,) = [p for p in (tmp_path / "cache").rglob("*.json") if '"selection"' in p.read_text()]
    data = json.loads(path.read_text())
    data["result"]["selection"][0] = "no such algorithm"
    path.write_text(json.dumps(data))
    assert convs(ai3.swap_backend(module, "auto", sample_input_shape=shape)) == convs(model)
    assert "no such algorithm" not in path.read_text()  # rewritten

    # ai3.plan's algos key another entry.
    plan = ai3.plan(module, shape, {"conv2d": "auto"})
    assert plan.layout["conv2d"] == layouts.IN_MODEL
    assert {lp.name: lp.choice for lp in plan.layers if lp.op == "conv2d"} == convs(model)
    replayed = ai3.swap_backend(module, plan)
    assert convs(replayed) == convs(model)
    np.testing.assert_allclose(replayed(x), want, rtol=1e-4, atol=1e-4)


def test_the_mixed_build_is_not_kept_where_it_runs_the_model_slower(tmp_path, monkeypatch) -> None:
    """The mixed build is one more candidate, not a given: where whole
    forward passes of it are slower, the kept build stays."""
    monkeypatch.setenv("AI3_CACHE_DIR", str(tmp_path / "cache"))
    module, shape, _, _ = _net_and_output(15)
    _auto_answers_gemm(monkeypatch)
    monkeypatch.setattr(
        layouts, "node_seconds", lambda m, x, r: {n: 0.5e-3 if a != "gemm" else 1e-3 for n, _, a in m.layers()}
    )
    slower = lambda calls, *a, **k: {label: 2e-3 if label.endswith(layouts.IN_MODEL) else 1e-3 for label in calls}  # noqa: E731
    monkeypatch.setattr(layouts, "time_alternately", slower)
    model = ai3.swap_backend(module, "auto", sample_input_shape=shape)
    d = model.layout_decision
    assert d.conv2d != layouts.IN_MODEL
    assert any(label.endswith(layouts.IN_MODEL) for label in d.seconds)  # built and timed


def _fused_nodes(model: ai3.Model) -> list[int]:
    """The nodes the core's graph fusion moved (after a forward pass)."""
    return [i for i in range(len(model._core)) if model._core.fused_into(i) >= 0]


def test_auto_chooses_graph_fusion_end_to_end(tmp_path, monkeypatch) -> None:
    """ "auto" also times whole forward passes with the core's graph fusion
    (the in-place residual add, zero-copy concat, concat -> batchnorm2d) on
    and off and keeps the faster; the choice is recorded, cached, replayed
    by the plan and kept by a pickled model, and either way the output is
    torch's."""
    import pickle

    monkeypatch.setenv("AI3_CACHE_DIR", str(tmp_path / "measured"))
    module = Net().eval()
    shape = (1, 3, 16, 16)
    x = np.random.default_rng(10).standard_normal(shape).astype(np.float32)
    with torch.no_grad():
        want = module(torch.from_numpy(x)).numpy()
    model = ai3.swap_backend(module, "auto", sample_input_shape=shape)
    d = model.layout_decision
    assert set(d.fusion_seconds) == {"on", "off"}
    assert d.fusion == (d.fusion_seconds["off"] >= d.fusion_seconds["on"] * layouts.FUSION_OFF_MARGIN)
    np.testing.assert_allclose(model(x), want, rtol=1e-4, atol=1e-4)
    assert bool(_fused_nodes(model)) == d.fusion  # the residual add, when on
    assert "graph fusion" in str(d)

    # Where off measures faster, off is what runs (timings stubbed: which
    # one wins on this machine is the clock's business).
    monkeypatch.setenv("AI3_CACHE_DIR", str(tmp_path / "stubbed"))
    stub = lambda m, x, repeats=10: {"on": 2e-3, "off": 1e-3}  # noqa: E731
    monkeypatch.setattr(layouts, "time_fusion", stub)
    off = ai3.swap_backend(module, "auto", sample_input_shape=shape)
    assert off.layout_decision.fusion is False and off.layout_decision.fusion_seconds == {"on": 2e-3, "off": 1e-3}
    np.testing.assert_allclose(off(x), want, rtol=1e-4, atol=1e-4)
    assert not _fused_nodes(off)
    unpickled = pickle.loads(pickle.dumps(off))
    np.testing.assert_allclose(unpickled(x), want, rtol=1e-4, atol=1e-4)
    assert unpickled.layout_decision.fusion is False and not _fused_nodes(unpickled)

    # A second build reads the cached choice instead of timing.
    def no_timing(*args, **kwargs):
        raise AssertionError("the fusion choice was cached")

    monkeypatch.setattr(layouts, "time_fusion", no_timing)
    again = ai3.swap_backend(module, "auto", sample_input_shape=shape)
    assert again.layout_decision.fusion is False
    monkeypatch.setattr(layouts, "time_fusion", stub)
    plan = ai3.plan(module, shape, {"conv2d": "auto"})
    assert plan.fusion is False and plan.layout["fusion_seconds"] == {"on": 2e-3, "off": 1e-3}
    assert "graph fusion off" in str(plan)
    path = tmp_path / "net.plan.json"
    plan.save(path)
    replayed = ai3.swap_backend(module, ai3.Plan.load(path))
    np.testing.assert_allclose(replayed(x), want, rtol=1e-4, atol=1e-4)
    assert replayed.layout_decision.fusion is False and not _fused_nodes(replayed)


def test_auto_without_a_concrete_shape_keeps_the_default_plan() -> None:
    """A symbolic batch cannot be timed end to end: the default plan."""
    module = ResBlock(8).eval()
    specs, output = _specs(module, (1, 8, 9, 9))
    model = ai3_model.build(specs, output, "auto", dtype=np.float32, layout="NCHW", sample_input_shape=(None, 8, 9, 9))
    assert model.layout_decision.plan == layouts.DEFAULT and not model.layout_decision.seconds


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_default_plan_moves_direct_convs(dtype) -> None:
    """direct is measured faster in NHWC (FASTER_IN), in either dtype: the
    default plan moves a model of direct convs there, with torch's result."""
    module = Net().eval().to(torch.float64 if dtype == np.float64 else torch.float32)
    shape = (1, 3, 16, 16)
    model = _build(module, shape, None, {"conv2d": "direct"}, dtype=dtype)
    assert _permutes(model) == ["input.to_nhwc"]
    x = np.random.default_rng(10).standard_normal(shape).astype(dtype)
    tol = 1e-4 if dtype == np.float32 else 1e-10
    with torch.no_grad():
        np.testing.assert_allclose(model(x), module(torch.from_numpy(x)).numpy(), rtol=tol, atol=tol)


class ChannelsLastBlock(nn.Module):
    """ConvNeXt's block: a depthwise conv, a permute to channels-last, a
    LayerNorm and an MLP on the last dim, a permute back, a layer-scale
    mul and a residual add; then a permute to channels-last as the output
    (and, with `real_permute`, a permute no layout makes a no-op)."""

    def __init__(self, c: int = 8, real_permute: bool = False) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, c, 3, padding=1)
        self.dw = nn.Conv2d(c, c, 7, padding=3, groups=c)
        self.norm = nn.LayerNorm(c)
        self.fc1 = nn.Linear(c, 4 * c)
        self.fc2 = nn.Linear(4 * c, c)
        self.gamma = nn.Parameter(torch.rand(c, 1, 1))
        self.real_permute = real_permute

    def forward(self, x):
        x = self.stem(x)
        y = self.dw(x).permute(0, 2, 3, 1)
        y = self.fc2(F.gelu(self.fc1(self.norm(y)))).permute(0, 3, 1, 2)
        x = x + self.gamma * y
        out = x.permute(0, 2, 3, 1)
        return out + x.permute(0, 3, 2, 1).transpose(1, 2) if self.real_permute else out


def _check_block(module: nn.Module, model: ai3.Model, shape: tuple[int, ...]) -> None:
    x = np.random.default_rng(11).standard_normal(shape).astype(np.float32)
    with torch.no_grad():
        np.testing.assert_allclose(model(x), module(torch.from_numpy(x)).numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("plan", [None, "convs"])
def test_channels_last_permutes_are_elided(plan) -> None:
    """With the convs in NHWC, the block's permute to channels-last reads the
    conv's NHWC buffer as it is and the permute back leaves its result
    stored NHWC: neither runs, and no conversion is added around them; nor
    does the output's permute to channels-last. What is left is the
    input's conversion."""
    module = ChannelsLastBlock().eval()
    shape = (2, 3, 9, 11)
    model = _build(module, shape, plan, {"conv2d": "direct"})
    assert _permutes(model) == ["input.to_nhwc"]
    assert len(model.layout_decision.elided) == 3, model.layout_decision
    assert "3 permutes elided" in str(model.layout_decision)
    _check_block(module, model, shape)
    keep = _build(module, shape, "keep", {"conv2d": "direct"})
    assert not keep.layout_decision.elided and len(_permutes(keep)) == 3
    _check_block(module, keep, shape)


def test_a_permute_the_layout_cannot_elide_still_runs() -> None:
    """A (0, 3, 2, 1) permute of a tensor the plan holds in NHWC is a real
    one: a conversion back to NCHW in front of it, and it runs; the
    block's own permutes are still elided. The default plan, which takes
    no conversion inside the model unmeasured, keeps NCHW."""
    module = ChannelsLastBlock(real_permute=True).eval()
    shape = (1, 3, 8, 6)
    model = _build(module, shape, "convs", {"conv2d": "direct"})
    assert len(model.layout_decision.elided) == 3
    assert len(model.layout_decision.conversions) == 2  # the input's, and x's back to NCHW
    _check_block(module, model, shape)
    default = _build(module, shape, None, {"conv2d": "direct"})
    assert not default.layout_decision.layouts and not default.layout_decision.elided
    _check_block(module, default, shape)


if __name__ == "__main__":
    pytest_main.run(__file__)
