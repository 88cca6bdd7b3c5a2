#!/bin/sh
# gen-llvm-ptx.sh [--check]
#
# Regenerates sim/testdata/llvm/NAME.ptx from every NAME.ll beside it with
# LLVM's NVPTX backend (llc, LLVM 14; set LLC to use another binary).
# With --check, writes nothing and fails if any committed .ptx differs from
# what llc produces now (sim's TestLLVMCorpusUpToDate runs this).
#
# Flags: sm_80 and PTX ISA 7.0, as the corpus's consumers expect;
# -nvptx-fma-level=0 so llc never fuses a mul and an add on its own: every
# fma in the corpus is an explicit llvm.fma call, and the semantics written
# at the top of each .ll stay exact.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
dir=$root/sim/testdata/llvm
check=
[ "${1:-}" = "--check" ] && check=1

llc=${LLC:-}
if [ -z "$llc" ]; then
	for c in llc-14 llc; do
		if command -v "$c" >/dev/null 2>&1; then llc=$c; break; fi
	done
fi
[ -n "$llc" ] || { echo "gen-llvm-ptx: llc not found (install llvm-14 or set LLC)" >&2; exit 1; }
if ! "$llc" --version | grep -q 'LLVM version 14\.'; then
	echo "gen-llvm-ptx: warning: $llc is not LLVM 14; output will differ from the committed files" >&2
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
for ll in "$dir"/*.ll; do
	name=$(basename "$ll" .ll)
	"$llc" -march=nvptx64 -mcpu=sm_80 -mattr=+ptx70 -nvptx-fma-level=0 "$ll" -o "$tmp/$name.ptx"
	if [ -n "$check" ]; then
		if ! cmp -s "$tmp/$name.ptx" "$dir/$name.ptx"; then
			echo "gen-llvm-ptx: $name.ptx is stale; run scripts/gen-llvm-ptx.sh" >&2
			status=1
		fi
	else
		cp "$tmp/$name.ptx" "$dir/$name.ptx"
		echo "$name.ptx"
	fi
done
exit $status
