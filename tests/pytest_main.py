"""Runs one test file under pytest from a Bazel py_test.

Each test file ends with ``if __name__ == "__main__": pytest_main.run(__file__)``.
Results go to Bazel's XML_OUTPUT_FILE so test logs show per-case results.
"""

from __future__ import annotations

import os
import sys

import pytest


def run(test_file: str) -> None:
    args = ["-q", "-p", "no:cacheprovider", test_file]
    xml = os.environ.get("XML_OUTPUT_FILE")
    if xml:
        args.append(f"--junitxml={xml}")
    # pytest's "shard" support: Bazel sets TEST_TOTAL_SHARDS/TEST_SHARD_INDEX.
    total = int(os.environ.get("TEST_TOTAL_SHARDS", "1"))
    if total > 1:
        status_file = os.environ.get("TEST_SHARD_STATUS_FILE")
        if status_file:
            open(status_file, "w").close()
        args += [
            "-W",
            "ignore::pytest.PytestAssertRewriteWarning",
            "-p",
            "pytest_main",
            "--ai3-shard",
            os.environ["TEST_SHARD_INDEX"] + "/" + str(total),
        ]
    sys.exit(pytest.main(args))


def pytest_addoption(parser):
    parser.addoption("--ai3-shard", default=None)


def pytest_collection_modifyitems(config, items):
    shard = config.getoption("--ai3-shard", default=None)
    if not shard:
        return
    index, total = (int(v) for v in shard.split("/"))
    items[:] = [item for i, item in enumerate(items) if i % total == index]
