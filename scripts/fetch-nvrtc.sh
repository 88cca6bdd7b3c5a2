#!/bin/sh
# fetch-nvrtc.sh [DIR]
#
# Fetches NVIDIA's runtime compiler NVRTC (libnvrtc.so.11.2, CUDA 11.8) and
# its builtins library (libnvrtc-builtins.so.11.8) from Debian bookworm's
# non-free component and unpacks them into DIR (default: .cache/nvrtc at the
# repository root). gcomp loads them through purego to compile the CUDA C of a
# model's custom ops to PTX; no GPU is needed.
#
# Nothing outside DIR is changed: apt runs with its own sources, lists and
# cache under DIR/apt, and the packages are unpacked with dpkg -x, not
# installed. Idempotent: when DIR already holds both libraries the script
# only prints where libnvrtc is. Needs apt-get and dpkg.
#
# Prints the path of libnvrtc.so.11.2 on its last line.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$root/.cache/nvrtc}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

libdir=$dir/usr/lib/x86_64-linux-gnu
lib=$libdir/libnvrtc.so.11.2
builtins=$libdir/libnvrtc-builtins.so.11.8
stamp=$dir/.fetched

if [ -f "$stamp" ] && [ -s "$lib" ] && [ -s "$builtins" ]; then
	echo "$lib"
	exit 0
fi

pkgs="libnvrtc11.2 libnvrtc-builtins11.8"

state=$dir/apt
mkdir -p "$state/lists/partial" "$state/cache/archives/partial" "$state/debs"
cat >"$state/nf.sources" <<'SRC'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: non-free
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC

apt() {
	apt-get -q \
		-o Dir::Etc::SourceList="$state/nf.sources" \
		-o Dir::Etc::SourceParts=/dev/null \
		-o Dir::State::Lists="$state/lists" \
		-o Dir::Cache="$state/cache" \
		-o APT::Sandbox::User=root \
		"$@"
}

echo "fetch-nvrtc: updating package lists in $state" >&2
apt update >&2

echo "fetch-nvrtc: downloading $pkgs" >&2
(cd "$state/debs" && rm -f ./*.deb && apt download $pkgs >&2)

for deb in "$state"/debs/*.deb; do
	echo "fetch-nvrtc: unpacking $(basename "$deb")" >&2
	dpkg -x "$deb" "$dir"
done
rm -f "$state"/debs/*.deb

for f in "$lib" "$builtins"; do
	if [ ! -s "$f" ]; then
		echo "fetch-nvrtc: the packages did not contain $f" >&2
		exit 1
	fi
done
touch "$stamp"
echo "$lib"
