"""ai3's exceptions.

Everything ai3 raises for bad input derives from `ai3.Error`, and also from
the builtin it resembles, so ``except ValueError`` keeps working for code
that does not know ai3. Messages name the layer and what was wrong. The C++
core raises these through ai3._core's exception translator.
"""

from __future__ import annotations

import re


class Error(Exception):
    """Base class of every error ai3 raises on purpose."""


class InvalidArgument(Error, ValueError):
    """A layer parameter or argument ai3 cannot use (e.g. groups=0)."""


class ShapeError(Error, ValueError):
    """An input or weight whose shape the layer cannot take."""


class DTypeError(Error, TypeError):
    """An unsupported dtype, or one that does not match the layer's."""


class UnknownAlgorithm(Error, ValueError):
    """An algorithm name this build does not have for that op and device."""


class AlgorithmNotApplicable(Error, ValueError):
    """A known algorithm that cannot take this layer's parameters."""


class InvalidSelector(Error, ValueError, TypeError):
    """An algorithm selector of the wrong type or length, or one that
    returned something that is not an algorithm name."""


class UnsupportedOperation(Error, NotImplementedError):
    """An operation, layer or feature ai3 does not implement."""


class InternalError(Error, RuntimeError):
    """A failure inside ai3 or a math library: a bug, please report it."""


# How ai3's in-graph ops (the TensorFlow op, the native ONNX Runtime op) mark
# an ai3 error in the framework's error message: "ai3.<ErrorClass>: <text>".
_MARKER = re.compile(r"ai3\.(\w+): (.*)", re.S)


def marked(message: str) -> tuple[type[Error], str] | None:
    """The ai3.Error class and text that a framework's error message
    carries (see _MARKER), or None if it carries none. An unknown class name
    reads as InternalError."""
    match = _MARKER.search(message)
    if not match:
        return None
    cls = globals().get(match.group(1))
    if not (isinstance(cls, type) and issubclass(cls, Error)):
        cls = InternalError
    return cls, match.group(2)


__all__ = [
    "AlgorithmNotApplicable",
    "DTypeError",
    "Error",
    "InternalError",
    "InvalidArgument",
    "InvalidSelector",
    "ShapeError",
    "UnknownAlgorithm",
    "UnsupportedOperation",
    "marked",
]
