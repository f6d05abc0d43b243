"""The TensorFlow version check of `import ai3.keras`.

ai3's TensorFlow ops (`_tf_ops.so`) are compiled against one TensorFlow's
headers and link its libtensorflow_framework; TensorFlow's C++ ABI changes
between releases, so under another version the library fails to load with
undefined symbols, or loads and misbehaves. The wheel records the version
it was built with in ai3/build_info.json (tools/build_wheel.py), and
`import ai3.keras` refuses any other with an error that says both versions
and how to get the right one. (A Bazel build runs in the venv it was built
in and has no build_info.json: nothing to check.)
"""

from __future__ import annotations

import json
import os

from ai3 import errors

BUILD_INFO = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "build_info.json")


def built_version() -> str | None:
    """The TensorFlow version _tf_ops.so was built against, or None where it is not recorded."""
    if not os.path.exists(BUILD_INFO):
        return None
    with open(BUILD_INFO) as f:
        return json.load(f).get("tensorflow")


def check(installed: str) -> None:
    """Raises ai3.UnsupportedOperation unless `installed` is the TensorFlow
    version the op library was built for."""
    built = built_version()
    if built is not None and installed != built:
        raise errors.UnsupportedOperation(
            f"ai3.keras: this ai3 was built against TensorFlow {built}, but TensorFlow {installed} is "
            f"installed; its TensorFlow ops (_tf_ops.so) only load in the TensorFlow they were compiled "
            f"for. Install that one (pip install 'ai3[keras]' pins it: tensorflow-cpu=={built}) "
            f"or build ai3 from source against yours."
        )
