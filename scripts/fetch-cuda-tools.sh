#!/bin/sh
# fetch-cuda-tools.sh [DIR]
# fetch-cuda-tools.sh --dev [DIR]
# fetch-cuda-tools.sh --nvvm [DIR]
# fetch-cuda-tools.sh --nvrtc [DIR]
# fetch-cuda-tools.sh --cuda12 [DIR]
#
# Fetches NVIDIA's PTX tools (ptxas, cuobjdump, nvdisasm) and the CUDA driver
# library (libcuda.so.1) from Debian bookworm's non-free component and unpacks
# them into DIR (default: .cache/cuda at the repository root), with the apt
# recipe of scripts/debian-fetch.sh: nothing outside DIR is changed.
#
# With --dev it fetches instead the two files the cgo binding behind the
# `gorgonia` build tag compiles against: cuda.h and the link stub libcuda.so,
# from the nvidia-cuda-dev package (CUDA 11.8; a 774 MB download of which
# only those files are kept). They land in DIR/include/cuda.h and
# DIR/lib/libcuda.so (default DIR: .cache/cuda-dev); the .deb is deleted.
# Use them with
#   CGO_CFLAGS=-IDIR/include CGO_LDFLAGS=-LDIR/lib go build -tags gorgonia ./...
#
# With --nvvm it fetches NVIDIA's libNVVM (libnvvm.so.4, CUDA 11.8) from the
# libnvvm4 package into DIR (default .cache/nvvm); codegen/nvvm compiles NVVM
# IR to PTX with it. The library lands in DIR/usr/lib/x86_64-linux-gnu/.
#
# With --nvrtc it fetches NVIDIA's runtime compiler NVRTC (libnvrtc.so.11.2,
# CUDA 11.8) and its builtins library (libnvrtc-builtins.so.11.8) from the
# libnvrtc11.2 and libnvrtc-builtins11.8 packages into DIR (default
# .cache/nvrtc); codegen/nvrtc compiles the CUDA C of custom ops with them.
#
# With --cuda12 it fetches CUDA 12.4's ptxas, nvdisasm and cuobjdump from
# Debian trixie's non-free nvidia-cuda-toolkit (an 87 MB download of which only
# those three binaries are kept, in DIR/bin; default DIR .cache/cuda12). They
# know the targets CUDA 11.8's do not: sm_89 (fp8 cvt and mma) and sm_90a.
#
# Idempotent: when DIR already holds a working ptxas (with --dev: both files)
# the script only prints where it is. Needs apt-get and dpkg (any Debian or
# Ubuntu machine); running as root is not required but apt-get may want it for
# its lock files.
#
# Prints the path of ptxas (with --dev: DIR; with --nvvm: libnvvm.so.4; with
# --nvrtc: libnvrtc.so.11.2; with --cuda12: DIR/bin/ptxas) on its last line.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
mode=tools
case "${1:-}" in
--dev | --nvvm | --nvrtc | --cuda12)
	mode=${1#--}
	shift
	;;
esac
if [ "$mode" = dev ]; then
	dir=${1:-$root/.cache/cuda-dev}
elif [ "$mode" = nvvm ]; then
	dir=${1:-$root/.cache/nvvm}
elif [ "$mode" = nvrtc ]; then
	dir=${1:-$root/.cache/nvrtc}
elif [ "$mode" = cuda12 ]; then
	dir=${1:-$root/.cache/cuda12}
else
	dir=${1:-$root/.cache/cuda}
fi
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

ptxas=$dir/usr/bin/ptxas
stamp=$dir/.fetched

if [ "$mode" = cuda12 ]; then
	ptxas=$dir/bin/ptxas
	if [ -f "$stamp" ] && [ -x "$ptxas" ] && "$ptxas" --version >/dev/null 2>&1; then
		echo "$ptxas"
		exit 0
	fi
	# trixie packages ptxas only inside the whole toolkit.
	pkgs="nvidia-cuda-toolkit"
elif [ "$mode" = dev ]; then
	if [ -f "$stamp" ] && [ -s "$dir/include/cuda.h" ] && [ -s "$dir/lib/libcuda.so" ]; then
		echo "$dir"
		exit 0
	fi
	# nvidia-cuda-dev holds cuda.h and stubs/libcuda.so (and 2 GB of
	# libraries we do not need).
	pkgs="nvidia-cuda-dev"
elif [ "$mode" = nvvm ] || [ "$mode" = nvrtc ]; then
	# The libraries a mode must leave in DIR (the first is printed).
	if [ "$mode" = nvvm ]; then
		# libnvvm4 holds libnvvm.so.4 (it needs only libc, libm and libdl).
		libs="libnvvm.so.4"
		pkgs="libnvvm4"
	else
		libs="libnvrtc.so.11.2 libnvrtc-builtins.so.11.8"
		pkgs="libnvrtc11.2 libnvrtc-builtins11.8"
	fi
	# found prints the path of each of $libs under DIR, or fails when one is missing.
	found() {
		for l in $libs; do
			p=$(find "$dir/usr" -name "$l" 2>/dev/null | head -n 1)
			[ -n "$p" ] && [ -s "$p" ] || return 1
			echo "$p"
		done
	}
	if [ -f "$stamp" ] && paths=$(found); then
		echo "$paths" | head -n 1
		exit 0
	fi
else
	if [ -f "$stamp" ] && [ -x "$ptxas" ] && "$ptxas" --version >/dev/null 2>&1; then
		echo "$ptxas"
		exit 0
	fi
	# nvidia-cuda-toolkit holds ptxas, cuobjdump and nvdisasm (they need
	# only libc); libcuda1 is the driver library a loader links against at
	# run time.
	pkgs="nvidia-cuda-toolkit libcuda1"
fi

state=$dir/apt
if [ "$mode" = cuda12 ]; then
	sh "$root/scripts/debian-fetch.sh" --download --suite trixie non-free "$dir" $pkgs
elif [ "$mode" = dev ]; then
	sh "$root/scripts/debian-fetch.sh" --download non-free "$dir" $pkgs
else
	sh "$root/scripts/debian-fetch.sh" non-free "$dir" $pkgs
fi

if [ "$mode" = cuda12 ]; then
	deb=$(ls "$state"/debs/*.deb)
	tmp=$dir/unpack
	rm -rf "$tmp"
	mkdir -p "$tmp" "$dir/bin"
	echo "fetch-cuda-tools: extracting ptxas and cuobjdump from $(basename "$deb")" >&2
	dpkg-deb --fsys-tarfile "$deb" |
		tar -x -C "$tmp" --wildcards '*/ptxas' '*/cuobjdump'
	for t in ptxas cuobjdump; do
		# /usr/bin may hold a symlink into /usr/lib/nvidia-cuda-toolkit/bin.
		f=$(find "$tmp" -name "$t" -type f | head -n 1)
		if [ -z "$f" ]; then
			echo "fetch-cuda-tools: $(basename "$deb") lacks $t" >&2
			exit 1
		fi
		cp "$f" "$dir/bin/$t"
		chmod 755 "$dir/bin/$t"
	done
	rm -rf "$tmp" "$state"/debs/*.deb
	if ! "$ptxas" --version >/dev/null 2>&1; then
		echo "fetch-cuda-tools: $ptxas does not run; ldd says:" >&2
		ldd "$ptxas" >&2 || true
		exit 1
	fi
	touch "$stamp"
	echo "$ptxas"
	exit 0
fi

if [ "$mode" = dev ]; then
	deb=$(ls "$state"/debs/*.deb)
	tmp=$dir/unpack
	rm -rf "$tmp"
	mkdir -p "$tmp" "$dir/include" "$dir/lib"
	echo "fetch-cuda-tools: extracting cuda.h and stubs/libcuda.so from $(basename "$deb")" >&2
	dpkg-deb --fsys-tarfile "$deb" |
		tar -x -C "$tmp" --wildcards '*/include/cuda.h' '*/stubs/libcuda.so'
	h=$(find "$tmp" -name cuda.h -path '*/include/*' | head -n 1)
	so=$(find "$tmp" -name libcuda.so -path '*/stubs/*' | head -n 1)
	if [ -z "$h" ] || [ -z "$so" ]; then
		echo "fetch-cuda-tools: $(basename "$deb") lacks cuda.h or stubs/libcuda.so" >&2
		exit 1
	fi
	cp "$h" "$dir/include/cuda.h"
	cp -L "$so" "$dir/lib/libcuda.so"
	rm -rf "$tmp" "$state"/debs/*.deb
	touch "$stamp"
	echo "$dir"
	exit 0
fi

if [ "$mode" = nvvm ] || [ "$mode" = nvrtc ]; then
	if ! paths=$(found); then
		echo "fetch-cuda-tools: $pkgs did not hold $libs" >&2
		exit 1
	fi
	touch "$stamp"
	echo "$paths" | head -n 1
	exit 0
fi

if ! "$ptxas" --version >/dev/null 2>&1; then
	echo "fetch-cuda-tools: $ptxas does not run; ldd says:" >&2
	ldd "$ptxas" >&2 || true
	exit 1
fi
touch "$stamp"
echo "$ptxas"
