#!/bin/sh
echo "coverage is not available in ai3's offline build (no remote_coverage_tools)" >&2
exit 1
