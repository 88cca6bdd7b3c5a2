#!/bin/sh
# compare-producers.sh [REGEXP]
#
# Prints docs/perf.md's kernel-by-kernel comparison of the two PTX producers
# (codegen/ptx and codegen/nvvm through libNVVM) as a Markdown table: for every
# kernel the NVVM producer takes in every example and the perf kernels (or only
# the models REGEXP matches), registers and occupancy from ptxas for sm_80,
# SASS instructions from cuobjdump, the simulator's warp instructions and global
# load and store efficiency over the whole launch, and the producer
# --backend auto's rule picks. Needs libNVVM and ptxas (scripts/fetch-cuda-tools.sh).
# Long: the simulator runs every launch whole (an hour on two busy cores).
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
status=0
out=$(go test ./codegen/backend -run '^TestCompare$' -compare -compare-only "${1:-}" -v -timeout 0) || status=$?
echo "$out" | sed -n 's/^ *compare_test\.go:[0-9]*: \(| .* |\)$/\1/p' | grep -v '^| model |' |
	{ echo '| model | kernel | registers ptx / nvvm | occupancy ptx / nvvm | SASS instructions ptx / nvvm | simulated warp instructions ptx / nvvm | global load efficiency ptx / nvvm | global store efficiency ptx / nvvm | auto |'
	  echo '|---|---|---|---|---|---|---|---|---|'
	  cat; }
if [ $status -ne 0 ]; then
	echo "$out" >&2
fi
exit $status
