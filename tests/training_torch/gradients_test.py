"""Gradients through every in-place swapped op against torch's autograd.

- every swapped op's cases (training_cases.CASES), float32 and float64,
  with each algorithm of each of its gradient ops (the other gradients on
  "default"), and a backward selector of each form;
- conv2d over its parameter grid: unbatched (C, H, W), batch 1 with a
  (4, 3) kernel, batch 10, stride, padding, dilation, groups, bias;
- torch.autograd.gradcheck of ai3::layer in float64 on small shapes, for
  every op with gradient ops;
- an algorithm a gradient op cannot take for a layer is refused when
  swapping (AlgorithmNotApplicable naming the layer), never run wrongly.
"""

from __future__ import annotations

import pytest
import pytest_main
import torch
from training_cases import (
    CASES,
    DTYPES,
    case_ids,
    check_gradients,
    gradient_algorithms,
    has_gradients,
    op_of,
    prepared,
    randn,
    targets,
)

import ai3
from ai3.torch import ops

torch.set_num_threads(2)


def gradient_algorithm_cases() -> list[tuple[str, int, str, str]]:
    """(op, case, target, algorithm) for each algorithm of each gradient op."""
    return [(op, i, target, algorithm) for op, i in case_ids() for target, algorithm in gradient_algorithms(op)]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("op,index", case_ids())
def test_default_gradients_match_torch(op, index, dtype):
    module, shape = CASES[op][index]
    ref = prepared(module, dtype, index)
    check_gradients(ref, shape, dtype, what=f"{op} {module}")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("op,index,target,algorithm", gradient_algorithm_cases())
def test_each_gradient_algorithm_matches_torch(op, index, target, algorithm, dtype):
    module, shape = CASES[op][index]
    ref = prepared(module, dtype, index)
    if target not in targets(ref):
        pytest.skip(f"{module} asks no {target} gradient")
    selector = {f"backward_{target}": algorithm}
    try:
        net_check = ai3.torch.Layer.from_module(ref, "default", "0", {target: algorithm})
    except ai3.AlgorithmNotApplicable as e:
        assert "layer '0'" in str(e) and algorithm in str(e)
        with pytest.raises(ai3.AlgorithmNotApplicable):
            check_gradients(ref, shape, dtype, backward=selector)
        return
    assert net_check.resolved_backward()[target] == algorithm
    check_gradients(ref, shape, dtype, backward=selector, what=f"{op} {module}, {target} by {algorithm}")


# conv2d's grid: (in, out, kernel, stride, padding, dilation, groups, bias, input shape)
CONV_GRID = [
    (3, 4, 3, 1, 1, 1, 1, True, (3, 8, 8)),  # unbatched
    (3, 4, (4, 3), 1, 0, 1, 1, True, (1, 3, 10, 9)),  # batch 1, a (4, 3) kernel
    (3, 4, 3, 1, 1, 1, 1, True, (10, 3, 8, 8)),  # batch 10
    (2, 3, 3, 2, 1, 1, 1, False, (2, 2, 9, 9)),
    (2, 4, 3, (2, 1), (0, 2), (2, 1), 2, True, (2, 2, 11, 7)),
    (4, 8, 1, 1, 0, 1, 1, True, (2, 4, 5, 5)),  # 1x1
    (4, 4, 5, 1, 2, 1, 4, False, (1, 4, 9, 9)),  # depthwise
    (3, 2, 2, 3, 0, 1, 1, True, (2, 3, 7, 8)),  # stride larger than the kernel
]


def conv_backward_selectors() -> list:
    return [None, "default", *({f"backward_{t}": a} for t, a in gradient_algorithms("conv2d"))]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("backward", conv_backward_selectors(), ids=str)
@pytest.mark.parametrize("case", range(len(CONV_GRID)))
def test_conv2d_grid(case, backward, dtype):
    cin, cout, k, s, p, d, g, bias, shape = CONV_GRID[case]
    ref = prepared(torch.nn.Conv2d(cin, cout, k, stride=s, padding=p, dilation=d, groups=g, bias=bias), dtype, case)
    try:
        check_gradients(ref, shape, dtype, backward=backward, what=f"conv2d case {case}, backward {backward}")
    except ai3.AlgorithmNotApplicable as e:
        assert "conv2d_backward_" in str(e) and "layer '0'" in str(e)
        pytest.skip(f"not applicable: {e}")


# ---- gradcheck ---------------------------------------------------------------

GRADCHECK = [
    # op, attrs, input shape, weights (shapes, None: absent)
    (
        "conv2d",
        {"stride": [1, 1], "padding": [1, 1, 1, 1], "dilation": [1, 1], "groups": 1},
        (1, 2, 4, 4),
        [(3, 2, 3, 3), (3,)],
    ),
    (
        "conv2d",
        {"stride": [2, 1], "padding": [0, 1, 1, 0], "dilation": [1, 2], "groups": 2},
        (2, 2, 5, 5),
        [(2, 1, 2, 2), None],
    ),
    ("linear", {}, (3, 4), [(2, 4), (2,)]),
    ("relu", {}, (2, 5), []),
    ("sigmoid", {}, (2, 5), []),
    ("tanh", {}, (2, 5), []),
    ("gelu", {"approximate": "tanh"}, (2, 5), []),
    ("silu", {}, (2, 5), []),
    # issue 17's elementwise ops (core/ops/unary)
    ("elu", {"alpha": 0.5}, (2, 5), []),
    ("softplus", {"beta": 2.0, "threshold": 20.0}, (2, 5), []),
    ("mish", {}, (2, 5), []),
    ("sin", {}, (2, 5), []),
    ("atan", {}, (2, 5), []),
    ("permute", {"dims": [1, 0]}, (2, 5), []),
    ("roll", {"shifts": [2], "axes": [1]}, (2, 5), []),
    ("softmax", {"axis": -1}, (2, 5), []),
    ("log_softmax", {"axis": 1}, (2, 5), []),
    (
        "maxpool2d",
        {"kernel": [2, 2], "stride": [1, 1], "padding": [0, 0, 0, 0], "dilation": [1, 1], "ceil_mode": False},
        (1, 2, 4, 4),
        [],
    ),
    (
        "avgpool2d",
        {
            "kernel": [3, 3],
            "stride": [2, 2],
            "padding": [1, 1, 1, 1],
            "ceil_mode": True,
            "count_include_pad": False,
            "divisor_override": None,
        },
        (1, 2, 5, 5),
        [],
    ),
    ("adaptiveavgpool2d", {"output_size": [2, 3]}, (1, 2, 5, 7), []),
    ("layernorm", {"axes": 1, "eps": 1e-5}, (3, 4), [(4,), (4,)]),
    ("rmsnorm", {"axes": 1, "eps": 1e-5}, (3, 4), [(4,)]),
    ("groupnorm", {"groups": 2, "eps": 1e-5}, (2, 4, 3, 3), [(4,), (4,)]),
    ("mean", {"axes": [2, 3], "keepdim": True}, (2, 3, 4, 4), []),
    ("reduce_prod", {"axes": [1], "keepdim": False}, (2, 3, 4), []),
    ("reduce_max", {"axes": [-1], "keepdim": False}, (3, 5), []),
    ("reduce_l2", {"axes": [], "keepdim": False}, (3, 5), []),
    ("reduce_log_sum_exp", {"axes": [0, 2], "keepdim": True}, (2, 3, 4), []),
    ("tile", {"repeats": [2, 1, 3]}, (2, 3, 2), []),
    ("expand", {"shape": [2, 3, 4]}, (3, 1), []),
    ("resize", {"mode": "linear", "size": [5, 3]}, (1, 2, 3, 4), []),
    (
        "conv_transpose2d",
        {"stride": [2, 2], "padding": [1, 1, 0, 0], "output_padding": [1, 1], "dilation": [1, 1], "groups": 1},
        (1, 3, 3, 4),
        [(3, 2, 3, 3), (2,)],
    ),
    ("lrn", {"size": 4, "before": 2, "alpha": 0.5, "beta": 0.75, "bias": 2.0}, (2, 5, 3), []),
]


@pytest.mark.parametrize("case", range(len(GRADCHECK)), ids=lambda i: GRADCHECK[i][0] + str(i))
def test_gradcheck_float64(case):
    op, attrs, shape, weight_shapes = GRADCHECK[case]
    gradients = ai3.layers.backward_ops(op)
    names = [n for n, s in zip(ops.weight_names(op), weight_shapes) if s is not None]
    if not {"data", *names} <= set(gradients):
        pytest.skip(f"the core has no gradient op for every input of {op} ({gradients})")
    x = randn(*shape, dtype=torch.float64).requires_grad_()
    weights = [
        randn(*s, dtype=torch.float64, seed=k + 1).requires_grad_()
        for k, s in enumerate(weight_shapes)
        if s is not None
    ]

    def f(x, *weights):
        # gradcheck perturbs the weights through .data, which bumps no version
        # counter (ai3.torch.ops keys its layers by it): start afresh each call.
        ops.clear_cache()
        return torch.ops.ai3.layer([x], list(weights), ",".join(names), op, ops.canonical(attrs), "default", op)

    assert torch.autograd.gradcheck(f, (x, *weights), eps=1e-6, atol=1e-5)


def test_a_gradient_the_core_lacks_raises_naming_the_layer():
    # attention takes several inputs: no gradient ops (yet)
    q = randn(1, 1, 3, 4).requires_grad_()
    y = torch.ops.ai3.layer(
        [q, q.detach(), q.detach()],
        [],
        "",
        "attention",
        '{"causal":false,"has_mask":false,"scale":null}',
        "naive",
        "attn",
    )
    with pytest.raises(
        ai3.UnsupportedOperation,
        match="^attention layer 'attn': no gradient w.r.t. its input: gradients of multi-input",
    ):
        y.sum().backward()


def test_only_the_gradients_asked_for_are_computed(monkeypatch):
    ref = prepared(torch.nn.Conv2d(2, 3, 3), torch.float32)
    if not has_gradients(ref):
        pytest.skip("no conv2d gradient ops in this build")
    net = ai3.swap_conv2d(torch.nn.Sequential(ref))
    ran = []
    real = ops._entry

    def spy(named, op, attrs, algorithm, name):
        ran.append(op)
        return real(named, op, attrs, algorithm, name)

    monkeypatch.setattr(ops, "_entry", spy)
    for p in net.parameters():
        p.requires_grad_(False)
    x = randn(1, 2, 5, 5).requires_grad_()
    net(x).sum().backward()
    assert ran == ["conv2d", "conv2d_backward_data"], ran
    ran.clear()
    net[0].weight.requires_grad_(True)
    net(x.detach()).sum().backward()
    assert ran == ["conv2d", "conv2d_backward_weight"], ran
    assert op_of(ref) == "conv2d"


if __name__ == "__main__":
    pytest_main.run(__file__)
