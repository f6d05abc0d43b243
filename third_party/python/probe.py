"""Printed as JSON for python_configure.bzl: where this interpreter keeps
what ai3's native code compiles against."""

import json
import sys
import sysconfig

info = {
    "version": "{}.{}".format(*sys.version_info[:2]),
    "include": sysconfig.get_paths()["include"],
    "pybind11_include": None,
    "site_packages": sysconfig.get_paths()["purelib"],
}
try:
    import pybind11

    info["pybind11_include"] = pybind11.get_include()
except ImportError:
    pass

# TensorFlow's flags for custom op libraries (frontends/ai3/keras/tf_ops). Optional: without
# TensorFlow the :tensorflow_framework target is left empty and only the
# Keras frontend's op library fails to build.
info["tf_compile_flags"] = None
info["tf_link_flags"] = None
try:
    import contextlib
    import os

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    with contextlib.redirect_stdout(sys.stderr):  # keep stdout pure JSON
        import tensorflow as tf

        info["tf_compile_flags"] = tf.sysconfig.get_compile_flags()
        info["tf_link_flags"] = tf.sysconfig.get_link_flags()
except Exception:  # ImportError, or a broken TensorFlow install
    pass
print(json.dumps(info))
