#!/usr/bin/env bash
# tools/lint.sh [--fix]: the lint and format checks CI runs (.ci/run).
#   Python: ruff check (rules in ruff.toml) and ruff format --check;
#   C++/CUDA: clang-format (.clang-format) over every tracked .cc/.h/.cu/.cuh.
# With --fix it applies what the tools fix themselves (ruff's safe fixes, the
# formatters) and then reports what is left to fix by hand.
# Without it, it changes nothing, prints each finding, a count per rule, and
# exits 1 if there is any. The tools are the pinned ones in .venv
# (requirements.txt; ./bazelw creates it).
set -uo pipefail
cd "$(dirname "$0")/.."

fix=0
case "${1:-}" in
  --fix) fix=1 ;;
  "") ;;
  *) echo "usage: tools/lint.sh [--fix]" >&2; exit 2 ;;
esac

bin=.venv/bin
for tool in ruff clang-format; do
  [ -x "$bin/$tool" ] || { echo "lint: $bin/$tool is missing; run ./bazelw once (it installs requirements.txt)" >&2; exit 2; }
done

mapfile -t cxx < <(git ls-files '*.cc' '*.h' '*.cu' '*.cuh')
status=0

if [ "$fix" -eq 1 ]; then
  "$bin/ruff" check --fix --quiet . || true
  "$bin/ruff" format --quiet .
  "$bin/clang-format" -i --style=file "${cxx[@]}"
fi

echo "lint: ruff check"
if ! "$bin/ruff" check --output-format concise .; then
  "$bin/ruff" check --statistics . | sed 's/^/lint:   /'
  status=1
fi

echo "lint: ruff format --check"
if ! "$bin/ruff" format --check .; then
  status=1
fi

echo "lint: clang-format (${#cxx[@]} files)"
log="$(mktemp)"
"$bin/clang-format" --dry-run --style=file "${cxx[@]}" 2>"$log"
if [ -s "$log" ]; then
  grep -E '^[^ ]+:[0-9]+:[0-9]+: (warning|error):' "$log"
  files=$(grep -oE '^[^:]+' <(grep -E '^[^ ]+:[0-9]+:[0-9]+: (warning|error):' "$log") | sort -u | wc -l)
  echo "lint: clang-format: $(grep -cE ': (warning|error):' "$log") places in $files files to reformat (tools/lint.sh --fix)"
  status=1
fi
rm -f "$log"

if [ "$status" -eq 0 ]; then
  echo "lint: clean"
else
  echo "lint: findings above; tools/lint.sh --fix applies the automatic fixes"
fi
exit "$status"
