#!/usr/bin/env bash
# Runs a test under --config=asan (the --run_under of .bazelrc's asan config).
#
# 1. The Python tests load the sanitized _core.so into an interpreter that
#    was not built with ASan. ASan must own malloc from the process's first
#    allocation, so its runtime is preloaded: the compiler's own (the one
#    _core.so was linked against), found the way the compiler finds it rather
#    than by a hard-coded path. libstdc++ is preloaded right after it: ASan
#    intercepts __cxa_throw and looks the real one up when it starts; Python
#    does not link libstdc++, so without the preload the lookup finds nothing
#    and the first C++ exception (any ai3::Error) stops the process with
#    "CHECK failed: asan_interceptors.cpp ... real___cxa_throw". For cc_tests,
#    which link both themselves, the preload changes nothing. UBSan's runtime
#    needs no preload: it replaces no allocator and loads as a dependency.
# 2. pytest captures file descriptor 2, and a sanitizer report written there
#    is lost when the report ends the process. So the reports go to files
#    (log_path) in a scratch folder, and are copied to the test log when the
#    test ends; a report fails the test even if its process exited 0 (e.g. a
#    subprocess whose parent carried on).
set -uo pipefail

cc="${CC:-gcc}"
preload=""
for lib in libasan.so libstdc++.so; do
  path="$("$cc" -print-file-name="$lib")"
  if [ ! -e "$path" ]; then
    echo "sanitizer_env: $cc has no $lib (got '$path')" >&2
    exit 1
  fi
  preload="$preload${preload:+:}$path"
done
reports="$(mktemp -d "${TEST_TMPDIR:-/tmp}/sanitizer.XXXXXX")"

# Only the test gets the preload, not this script's own commands below.
LD_PRELOAD="$preload${LD_PRELOAD:+:$LD_PRELOAD}" \
  ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}log_path=$reports/asan" \
  UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}log_path=$reports/ubsan" \
  "$@"
status=$?

found=0
for report in "$reports"/*; do
  [ -s "$report" ] || continue
  found=1
  echo "==== sanitizer report $(basename "$report") ====" >&2
  cat "$report" >&2
done
rm -rf "$reports"
if [ "$status" -eq 0 ] && [ "$found" -eq 1 ]; then
  echo "sanitizer_env: the test passed but a sanitizer reported the above" >&2
  status=1
fi
exit "$status"
