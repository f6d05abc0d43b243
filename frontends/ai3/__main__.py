"""`python -m ai3 <command>`: ai3's command line.

python -m ai3 explore --model resnet18     # see ai3.explore
python -m ai3 sweep --model resnet18 ...   # see ai3.sweep
python -m ai3 train-selector sweep.csv     # see ai3.predict
python -m ai3 algorithms                   # what this build offers
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

USAGE = """usage: python -m ai3 <command> [options]

commands:
  explore      time every applicable algorithm of every layer of a model
               (python -m ai3 explore --help)
  sweep        time every algorithm of every layer of many models on Ray workers,
               into the tuning cache and a dataset (python -m ai3 sweep --help)
  train-selector
               train the "predict" selector on a sweep's dataset
               (python -m ai3 train-selector --help)
  algorithms   list the algorithms of this build, per op and device
"""


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(USAGE, end="")
        return 0 if args else 2
    command, rest = args[0], args[1:]
    if command == "explore":
        from ai3 import explore

        return explore.main(rest)
    if command == "sweep":
        from ai3 import sweep

        return sweep.main(rest)
    if command == "train-selector":
        from ai3 import predict

        return predict.main(rest)
    if command == "algorithms":
        import ai3

        for device in ("cpu", "cuda"):
            for op, names in sorted(ai3.algorithms(device).items()):
                print(f"{device:5} {op:18} {', '.join(names)}")
        return 0
    print(f"python -m ai3: unknown command {command!r}\n\n{USAGE}", end="", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
