"""Every ```python example of README.md and docs/*.md runs as written.

Each page runs in its own Python process (the frameworks a page imports do
not leak into the next), its examples one after another in one namespace,
as a reader would paste them, in an empty scratch directory (files an
example writes, such as resnet18.onnx, land there) with a fresh tuning cache.
A failing example's traceback names the page and the line in it. ```sh
blocks are commands (the build, the demo, explore's command line), not run
here: the README's are what CI runs; the rest are the //:demo and
//:explore targets.
"""

from __future__ import annotations

import glob
import os
import re
import subprocess
import sys
import tempfile

import pytest
import pytest_main

RUNFILES = os.path.join(os.environ["TEST_SRCDIR"], os.environ.get("TEST_WORKSPACE", "ai3"))
PAGES = ["README.md"] + sorted(os.path.relpath(p, RUNFILES) for p in glob.glob(os.path.join(RUNFILES, "docs", "*.md")))
BLOCK = re.compile(r"^```python\n(.*?)^```$", re.S | re.M)

# Runs the examples given as (page, first line, code) in one namespace.
RUNNER = """
import json, sys
namespace = {"__name__": "__main__"}
for page, line, code in json.load(sys.stdin):
    exec(compile("\\n" * (line - 1) + code, page, "exec"), namespace)
"""


def examples(page: str) -> list[tuple[str, int, str]]:
    with open(os.path.join(RUNFILES, page), encoding="utf-8") as f:
        text = f.read()
    return [(page, text.count("\n", 0, m.start(1)) + 1, m.group(1)) for m in BLOCK.finditer(text)]


def test_every_page_is_found() -> None:
    assert {"README.md", "docs/torch.md", "docs/keras.md", "docs/onnx.md", "docs/auto.md"} <= set(PAGES), PAGES
    assert {"docs/custom_algorithms.md", "docs/cuda.md"} <= set(PAGES), PAGES


@pytest.mark.parametrize("page", [p for p in PAGES if examples(p)])
def test_examples_run(page: str) -> None:
    import json

    scratch = tempfile.mkdtemp()
    env = dict(os.environ)
    env.update(
        PYTHONPATH=os.pathsep.join(p for p in sys.path if p),
        AI3_CACHE_DIR=os.path.join(scratch, "tuning"),
        AI3_NO_PROGRESS="1",
        OMP_WAIT_POLICY="PASSIVE",
        MPLBACKEND="Agg",
    )
    run = subprocess.run(
        [sys.executable, "-c", RUNNER],
        input=json.dumps(examples(page)),
        cwd=scratch,
        env=env,
        capture_output=True,
        text=True,
    )
    print(run.stdout)
    assert run.returncode == 0, f"{page}: an example failed\n{run.stdout[-3000:]}\n{run.stderr[-6000:]}"


if __name__ == "__main__":
    pytest_main.run(__file__)
