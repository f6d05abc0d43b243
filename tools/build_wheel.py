"""Assembles the ai3 wheel from Bazel outputs (run by //:wheel).

The wheel holds the `ai3` package sources, the `_core` extension and the
math libraries the extension links that are not part of every Linux system
(oneDNN, BLIS and what they pull in), next to it: `_core.so` is linked
with an RPATH of $ORIGIN, so an environment without Debian's libdnnl or
BLIS still imports it.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
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
    if args.tf_ops:
        with open(args.tf_ops, "rb") as f:
            files["ai3/_tf_ops.so"] = f.read()
    for lib in bundled_libraries(args.extension):
        with open(lib, "rb") as f:
            files["ai3/" + os.path.basename(lib)] = f.read()
    files[f"{dist_info}/METADATA"] = (
        "Metadata-Version: 2.1\n"
        "Name: ai3\n"
        f"Version: {args.version}\n"
        "Summary: Choose, layer by layer, the algorithm that runs each operation of a DNN.\n"
        "Requires-Python: >=3.11,<3.12\n"
        "Requires-Dist: numpy\n"
    ).encode()
    files[f"{dist_info}/WHEEL"] = (
        "Wheel-Version: 1.0\nGenerator: ai3 tools/build_wheel.py\nRoot-Is-Purelib: false\nTag: cp311-cp311-linux_x86_64\n"
    ).encode()
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
