"""Assembles the ai3 wheel from Bazel outputs (run by //:wheel).

The wheel holds the `ai3` package sources, the `_core` extension and the
math libraries the extension links that are not part of every Linux system
(oneDNN, BLIS and what they pull in), next to it: `_core.so` is linked
with an RPATH of $ORIGIN, so an environment without Debian's libdnnl or
BLIS still imports it.

Its metadata: the extras ai3[torch], ai3[keras], ai3[onnx], ai3[explore]
and ai3[all], each pinned to the version in requirements.txt, which is the
version the build ran against (bazelw installs exactly that file); the
licence; the README as the long description. `ai3/build_info.json` records
the TensorFlow `_tf_ops.so` was compiled and linked against, which
`import ai3.keras` checks (ai3/keras/tf_version.py): the op library uses
TensorFlow's C++ ABI, which changes between releases.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import importlib.metadata
import json
import os
import re
import subprocess
import sys
import zipfile

# Libraries every Linux system (and every Python) already has; never bundled.
SYSTEM_LIBRARIES = re.compile(r"^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|libgomp)\.")


def bundled_libraries(extension: str) -> list[str]:
    """Resolved paths of the shared libraries `extension` needs (ldd is
    transitive) that are not system libraries."""
    out = subprocess.run(["ldd", extension], check=True, capture_output=True, text=True).stdout
    libs = []
    for line in out.splitlines():
        match = re.match(r"\s*(\S+) => (\S+)", line)
        if match and not SYSTEM_LIBRARIES.match(match.group(1)) and os.path.exists(match.group(2)):
            libs.append(match.group(2))
        elif "not found" in line:
            sys.exit(f"build_wheel: {extension} needs a library ldd cannot find: {line.strip()}")
    return libs


# The distributions each extra brings, by name; their versions are read from
# requirements.txt. ai3[all] is their union.
EXTRAS = {
    "torch": ["torch", "torchvision"],
    "keras": ["tensorflow-cpu", "keras"],
    "onnx": ["onnx", "onnxruntime", "onnxruntime-extensions"],
    "explore": ["rich", "matplotlib"],
}
# The one requirement of `import ai3` itself.
CORE_REQUIREMENTS = ["numpy"]
LICENSE = "Apache-2.0"


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def read_pins(requirements: str) -> dict[str, str]:
    """{canonical name: "name==version"} for every exact pin in requirements.txt."""
    pins = {}
    with open(requirements) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            match = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9_.-]*)==(\S+)", line)
            if match:
                pins[canonical(match.group(1))] = f"{match.group(1)}=={match.group(2)}"
            elif line:
                sys.exit(f"build_wheel: {requirements}: not an exact pin: {line!r}")
    return pins


def pinned(pins: dict[str, str], name: str) -> str:
    if canonical(name) not in pins:
        sys.exit(f"build_wheel: requirements.txt pins no version of {name}, which the wheel's metadata names")
    return pins[canonical(name)]


def metadata(version: str, url: str, pins: dict[str, str], readme: str) -> str:
    """The wheel's METADATA (core metadata 2.1), the README as its long description."""
    lines = [
        "Metadata-Version: 2.1",
        "Name: ai3",
        f"Version: {version}",
        "Summary: Choose, layer by layer, the algorithm that runs each operation of a DNN.",
        f"Home-page: {url}",
        f"Project-URL: Source, {url}",
        f"License: {LICENSE}",
        "Classifier: License :: OSI Approved :: Apache Software License",
        "Classifier: Programming Language :: Python :: 3.11",
        "Classifier: Operating System :: POSIX :: Linux",
        "Requires-Python: >=3.11,<3.12",
    ]
    lines += [f"Requires-Dist: {pinned(pins, name)}" for name in CORE_REQUIREMENTS]
    everything = [name for names in EXTRAS.values() for name in names]
    for extra, names in [*EXTRAS.items(), ("all", everything)]:
        lines.append(f"Provides-Extra: {extra}")
        for name in names:
            lines.append(f'Requires-Dist: {pinned(pins, name)} ; extra == "{extra}"')
    lines.append("Description-Content-Type: text/markdown")
    return "\n".join(lines) + "\n\n" + readme


def built_tensorflow_version() -> str:
    """The version of the TensorFlow installed beside the build's Python: the
    one whose headers and libtensorflow_framework _tf_ops.so was built with."""
    for name in ("tensorflow-cpu", "tensorflow"):
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    sys.exit("build_wheel: --tf_ops given, but no TensorFlow is installed beside this Python")


def record_line(arcname: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(data)}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--version", required=True)
    parser.add_argument("--extension", required=True)
    parser.add_argument(
        "--tf_ops", help="the TensorFlow op library (links the pip TensorFlow's own library, which is not bundled)"
    )
    parser.add_argument("--ort_ops", help="ai3's native ONNX Runtime op library (links no ONNX Runtime)")
    parser.add_argument("--url", required=True, help="the project's home page")
    parser.add_argument("--requirements", required=True, help="requirements.txt: the extras' pins")
    parser.add_argument("--readme", required=True, help="the long description")
    parser.add_argument("--license", required=True, help="the licence file")
    parser.add_argument("--stubs", help="_core.pyi, the extension's type stubs")
    parser.add_argument("sources", nargs="+", help="ai3 package .py files (paths end in ai3/...)")
    args = parser.parse_args()

    dist_info = f"ai3-{args.version}.dist-info"
    files: dict[str, bytes] = {}
    for source in args.sources:
        relative = source[source.rindex("ai3/") :]
        with open(source, "rb") as f:
            files[relative] = f.read()
    with open(args.extension, "rb") as f:
        files["ai3/_core.so"] = f.read()
    build_info = {"ai3": args.version}
    if args.tf_ops:
        with open(args.tf_ops, "rb") as f:
            files["ai3/_tf_ops.so"] = f.read()
        build_info["tensorflow"] = built_tensorflow_version()
    if args.ort_ops:
        with open(args.ort_ops, "rb") as f:
            files["ai3/_ort_ops.so"] = f.read()
    files["ai3/build_info.json"] = (json.dumps(build_info, indent=1, sort_keys=True) + "\n").encode()
    if args.stubs:
        with open(args.stubs, "rb") as f:
            files["ai3/_core.pyi"] = f.read()
        files["ai3/py.typed"] = b""  # PEP 561: the package's annotations and stubs are to be used
    for lib in bundled_libraries(args.extension):
        with open(lib, "rb") as f:
            files["ai3/" + os.path.basename(lib)] = f.read()
    with open(args.readme, encoding="utf-8") as f:
        readme = f.read()
    files[f"{dist_info}/METADATA"] = metadata(args.version, args.url, read_pins(args.requirements), readme).encode()
    with open(args.license, "rb") as f:
        files[f"{dist_info}/LICENSE"] = f.read()
    files[f"{dist_info}/WHEEL"] = (
        b"Wheel-Version: 1.0\n"
        b"Generator: ai3 tools/build_wheel.py\n"
        b"Root-Is-Purelib: false\n"
        b"Tag: cp311-cp311-linux_x86_64\n"
    )
    record = [record_line(name, data) for name, data in sorted(files.items())]
    record.append(f"{dist_info}/RECORD,,")
    files[f"{dist_info}/RECORD"] = ("\n".join(record) + "\n").encode()

    with zipfile.ZipFile(args.out, "w", compression=zipfile.ZIP_DEFLATED) as wheel:
        for name, data in files.items():
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))  # reproducible
            info.external_attr = (0o755 if name.endswith(".so") or ".so." in name else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            wheel.writestr(info, data)


if __name__ == "__main__":
    main()
