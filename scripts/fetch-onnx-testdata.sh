#!/bin/sh
# fetch-onnx-testdata.sh [DIR]
#
# Fetches ONNX's backend test data (Debian bookworm's libonnx-testdata, main
# component) and unpacks it into DIR (default: .cache/onnx-testdata at the
# repository root). The node suite lands in
# DIR/usr/share/libonnx-testdata/data/node: one folder per case, each with a
# model.onnx and test_data_set_0/{input,output}_N.pb.
#
# Nothing outside DIR is changed (scripts/debian-fetch.sh's apt recipe: apt's
# own sources, lists and cache under DIR/apt; dpkg -x, not installed).
# Idempotent: when DIR already holds the node suite the script only
# prints where it is. Needs apt-get and dpkg.
#
# Prints the node suite's folder on its last line.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$root/.cache/onnx-testdata}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

node=$dir/usr/share/libonnx-testdata/data/node
stamp=$dir/.fetched
if [ -f "$stamp" ] && [ -d "$node" ]; then
	echo "$node"
	exit 0
fi

sh "$root/scripts/debian-fetch.sh" main "$dir" libonnx-testdata

if [ ! -d "$node" ]; then
	echo "fetch-onnx-testdata: the package has no $node" >&2
	exit 1
fi
touch "$stamp"
echo "$node"
