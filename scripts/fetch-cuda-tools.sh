#!/bin/sh
# fetch-cuda-tools.sh [DIR]
#
# Fetches NVIDIA's PTX tools (ptxas, cuobjdump, nvdisasm) and the CUDA driver
# library (libcuda.so.1) from Debian bookworm's non-free component and unpacks
# them into DIR (default: .cache/cuda at the repository root). Nothing outside
# DIR is changed: apt runs with its own sources, lists and cache under DIR/apt,
# and the packages are unpacked with dpkg -x, not installed. (apt-get update
# still runs the hooks the machine's apt configuration defines; on Debian they
# only clear apt's own regenerable caches.)
#
# Idempotent: when DIR already holds a working ptxas the script only prints
# where it is. Needs apt-get and dpkg (any Debian or Ubuntu machine); running
# as root is not required but apt-get may want it for its lock files.
#
# Prints the path of ptxas on its last line.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$root/.cache/cuda}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

# Packages unpacked into DIR. nvidia-cuda-toolkit holds ptxas, cuobjdump and
# nvdisasm (they need only libc); libcuda1 is the driver library a
# loader links against at run time.
pkgs="nvidia-cuda-toolkit libcuda1"

ptxas=$dir/usr/bin/ptxas
stamp=$dir/.fetched

if [ -f "$stamp" ] && [ -x "$ptxas" ] && "$ptxas" --version >/dev/null 2>&1; then
	echo "$ptxas"
	exit 0
fi

state=$dir/apt
mkdir -p "$state/lists/partial" "$state/cache/archives/partial" "$state/debs"
cat >"$state/nf.sources" <<'EOF'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: non-free
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF

apt() {
	apt-get -q \
		-o Dir::Etc::SourceList="$state/nf.sources" \
		-o Dir::Etc::SourceParts=/dev/null \
		-o Dir::State::Lists="$state/lists" \
		-o Dir::Cache="$state/cache" \
		-o APT::Sandbox::User=root \
		"$@"
}

echo "fetch-cuda-tools: updating package lists in $state" >&2
apt update >&2

echo "fetch-cuda-tools: downloading $pkgs" >&2
(cd "$state/debs" && rm -f ./*.deb && apt download $pkgs >&2)

for deb in "$state"/debs/*.deb; do
	echo "fetch-cuda-tools: unpacking $(basename "$deb")" >&2
	dpkg -x "$deb" "$dir"
done
rm -f "$state"/debs/*.deb

if ! "$ptxas" --version >/dev/null 2>&1; then
	echo "fetch-cuda-tools: $ptxas does not run; ldd says:" >&2
	ldd "$ptxas" >&2 || true
	exit 1
fi
touch "$stamp"
echo "$ptxas"
