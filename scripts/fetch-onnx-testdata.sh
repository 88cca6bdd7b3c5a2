#!/bin/sh
# fetch-onnx-testdata.sh [DIR]
#
# Fetches ONNX's backend test data (Debian bookworm's libonnx-testdata, main
# component) and unpacks it into DIR (default: .cache/onnx-testdata at the
# repository root). The node suite lands in
# DIR/usr/share/libonnx-testdata/data/node: one folder per case, each with a
# model.onnx and test_data_set_0/{input,output}_N.pb.
#
# Nothing outside DIR is changed: apt runs with its own sources, lists and
# cache under DIR/apt (a machine whose apt has no bookworm main lists, or none
# at all, still works), and the package is unpacked with dpkg -x, not
# installed. Idempotent: when DIR already holds the node suite the script only
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

state=$dir/apt
mkdir -p "$state/lists/partial" "$state/cache/archives/partial" "$state/debs"
cat >"$state/main.sources" <<'SRC'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC

apt() {
	apt-get -q \
		-o Dir::Etc::SourceList="$state/main.sources" \
		-o Dir::Etc::SourceParts=/dev/null \
		-o Dir::State::Lists="$state/lists" \
		-o Dir::Cache="$state/cache" \
		-o APT::Sandbox::User=root \
		"$@"
}

echo "fetch-onnx-testdata: updating package lists in $state" >&2
apt update >&2

echo "fetch-onnx-testdata: downloading libonnx-testdata" >&2
(cd "$state/debs" && rm -f ./*.deb && apt download libonnx-testdata >&2)

for deb in "$state"/debs/*.deb; do
	echo "fetch-onnx-testdata: unpacking $(basename "$deb")" >&2
	dpkg -x "$deb" "$dir"
done
rm -f "$state"/debs/*.deb
# The lists are only needed to download; they are 10 MB.
rm -rf "$state/lists"

if [ ! -d "$node" ]; then
	echo "fetch-onnx-testdata: the package has no $node" >&2
	exit 1
fi
touch "$stamp"
echo "$node"
