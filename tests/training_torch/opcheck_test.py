"""torch.library.opcheck of ai3::layer with inputs that require grad, for
every op the in-place swaps produce (training_cases.CASES) and each of its
gradient ops' algorithms: schema, autograd registration, fake kernel, and
AOTAutograd's dynamic-shape forward and backward against eager. An op the
core has no gradient ops for passes every check but the backward one,
whose eager backward raises naming the layer."""

from __future__ import annotations

import pytest
import pytest_main
import torch
from training_cases import CASES, DTYPES, case_ids, gradient_algorithms, has_gradients, prepared, randn

import ai3

torch.set_num_threads(2)

EVERY_CHECK = ("test_schema", "test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")


def layer_args(module: torch.nn.Module, shape: tuple, dtype: torch.dtype, backward: dict) -> tuple:
    """ai3::layer's arguments as the swapped module passes them, with an
    input (and weights) that require grad."""
    layer = ai3.torch.Layer.from_module(module, "default", "m", backward)
    x = randn(*shape, dtype=dtype)
    if layer._image and x.dim() == 3:  # the module adds the batch dim before the op
        x = x.unsqueeze(0)
    weights, names = layer.weights()
    weights = [w.detach().clone().requires_grad_(w.requires_grad) for w in weights]
    return (
        [x.requires_grad_()],
        weights,
        names,
        layer.op,
        layer.attrs_json(x.shape),
        layer.algorithm,
        layer.name,
        layer._backward_json,
    )


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("op,index", case_ids())
def test_opcheck_with_grad(op, index, dtype):
    module, shape = CASES[op][index]
    ref = prepared(module, dtype, index)
    for backward in [{}, *({t: a} for t, a in gradient_algorithms(op))]:
        try:
            args = layer_args(ref, shape, dtype, backward)
        except ai3.AlgorithmNotApplicable:
            continue  # refused when building, as a swap refuses it
        if has_gradients(ref):
            torch.library.opcheck(torch.ops.ai3.layer, args, test_utils=EVERY_CHECK)
        else:
            torch.library.opcheck(torch.ops.ai3.layer, args, test_utils=EVERY_CHECK[:3])
            with pytest.raises(ai3.UnsupportedOperation, match="layer 'm': no gradient w.r.t."):
                torch.ops.ai3.layer(*args).sum().backward()


if __name__ == "__main__":
    pytest_main.run(__file__)
