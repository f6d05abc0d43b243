#!/usr/bin/env bash
# The AVX-512 build of a kernel (an op's :avx512 library, core/ops/defs.bzl)
# must define no global symbol other than its *Avx512* entry points: no weak
# (COMDAT) copy of an inline function or template, which the linker could
# pick for the AVX2 code too and so run AVX-512 instructions on a CPU
# without them. Its kernel headers keep their code in an unnamed namespace
# for that reason; this test checks the result in the built objects.
#
# Arguments: the library's outputs ($(locations :avx512)).
set -euo pipefail
checked=0
bad=0
for lib in "$@"; do
  if [ ! -f "$lib" ]; then
    # A cc_library's shared object reaches the runfiles as a link under
    # _solib_<cpu>/ named after its path ('_' spelt '_U', then '/' '_S');
    # its archives don't.
    mangled="${lib//_/_U}"
    lib="$(ls _solib_*/"lib${mangled//\//_S}" 2>/dev/null | head -1 || true)"
    [ -n "$lib" ] || continue
  fi
  while read -r type name; do
    case "$name" in __bss_start | _edata | _end | _init | _fini) continue ;; esac  # the linker's
    if [ "$type" != "T" ] || [[ "$name" != *Avx512* ]]; then
      echo "FAIL $lib: global symbol '$name' of type $type (only *Avx512* entry points, type T, may be global)"
      bad=1
    fi
    checked=$((checked + 1))
  # POSIX format, mangled (no spaces in names): "name type value size".
  done < <(nm --defined-only -g --format=posix "$lib" | awk 'NF >= 2 && $0 !~ /:$/ { print $2, $1 }')
done
[ "$checked" -gt 0 ] || { echo "FAIL: no symbols found in: $*"; exit 1; }
[ "$bad" -eq 0 ] && echo "ok: $checked global symbols, all AVX-512 entry points"
exit "$bad"
