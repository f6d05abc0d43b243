"""ai3's ONNX frontend: one ONNX -> LayerSpec mapping (ai3.onnx.graph),
three routes.

  swap_backend(model, algos)     the whole graph as an ai3.Model, run by
                                 the core (ai3.onnx.graph);
  partition(model, algos)        a new ModelProto whose every maximal
                                 region ai3 can run (one input, one
                                 output) is ONE "ai3"-domain node running
                                 an ai3.Model of the region, the rest left
                                 to ONNX Runtime: the route to pick for a
                                 whole model inside ORT;
  swap_operation(op, model, algos), swap_conv2d, ...
                                 a new ModelProto whose each `op` layer is
                                 one "ai3"-domain node (ai3.onnx.rewrite).
  ai3.onnx.backend               ONNX's backend API (onnx.backend.base:
                                 prepare / run, run_node) over
                                 swap_backend, as ONNX's backend test suite
                                 drives it (tests/onnx_conformance).

Models at opsets 7 to 10 are converted by ONNX's version converter as they
are loaded (ai3.onnx.graph.load), for every route.

The rewritten models run in ONNX Runtime (ai3.onnx.session)::

    model = ai3.onnx.partition("resnet18.onnx", {"conv2d": "auto"})
    sess = ai3.onnx.InferenceSession(model)     # an onnxruntime.InferenceSession
    y, = sess.run(None, {"input": x})
"""

from __future__ import annotations

from typing import Any

from ai3.onnx.rewrite import (
    ROUTES,
    partition,
    swap_adaptiveavgpool2d,
    swap_avgpool2d,
    swap_conv2d,
    swap_flatten,
    swap_linear,
    swap_maxpool2d,
    swap_operation,
    swap_relu,
)

# The frontend contract (ai3.frontend): ONNX models compute on NCHW images.
LAYOUT = "NCHW"

_SESSION_EXPORTS = ("InferenceSession", "session_options", "clear_cache")
_GRAPH_EXPORTS = ("swap_backend", "load")


def __getattr__(name: str) -> Any:
    # Lazy: the session half imports onnxruntime(-extensions); graph.py is
    # another module that may not be present in every build.
    if name in _SESSION_EXPORTS:
        from ai3.onnx import session

        return getattr(session, name)
    if name in _GRAPH_EXPORTS:
        try:
            from ai3.onnx import graph
        except ImportError as e:
            raise AttributeError(f"ai3.onnx.{name} is unavailable: ai3.onnx.graph did not import ({e})") from e
        return getattr(graph, name)
    raise AttributeError(f"module 'ai3.onnx' has no attribute {name!r}")


__all__ = [
    "LAYOUT",
    *ROUTES,
    *_SESSION_EXPORTS,
    *_GRAPH_EXPORTS,
]
