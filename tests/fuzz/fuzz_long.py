"""The long fuzz run: fuzz_ops_test.py with many examples and a random seed.

    ./bazelw run //tests/fuzz:fuzz_long                 # 1000 per pair, random seed
    ./bazelw run //tests/fuzz:fuzz_long -- 5000 1234    # examples, seed
    ./bazelw run //tests/fuzz:fuzz_long -- 500 random -k conv2d

A failing example prints its seed and a @reproduce_failure blob; a case
worth keeping goes into regressions_test.py.
"""

from __future__ import annotations

import os
import random
import sys

import pytest


def main(argv: list[str]) -> int:
    examples = argv[0] if argv else "1000"
    seed = argv[1] if len(argv) > 1 else "random"
    if seed == "random":
        seed = str(random.SystemRandom().randrange(2**32))
    os.environ["AI3_FUZZ_EXAMPLES"] = examples
    os.environ["AI3_FUZZ_SEED"] = seed
    print(f"fuzz_long: {examples} examples per (op, algorithm), seed {seed}", flush=True)
    test = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fuzz_ops_test.py")
    return pytest.main(["-q", "-p", "no:cacheprovider", test, *argv[2:]])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
