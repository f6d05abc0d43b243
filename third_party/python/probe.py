"""Printed as JSON for python_configure.bzl: where this interpreter keeps
what ai3's native code compiles against."""

import json
import sys
import sysconfig

info = {
    "version": "%d.%d" % sys.version_info[:2],
    "include": sysconfig.get_paths()["include"],
    "pybind11_include": None,
    "site_packages": sysconfig.get_paths()["purelib"],
}
try:
    import pybind11

    info["pybind11_include"] = pybind11.get_include()
except ImportError:
    pass
print(json.dumps(info))
