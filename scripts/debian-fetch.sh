#!/bin/sh
# debian-fetch.sh [--download] [--suite SUITE] COMPONENT DIR PKG...
#
# The apt recipe every fetch script shares: downloads the packages PKG... from
# Debian SUITE's (default bookworm) COMPONENT (main or non-free) and unpacks them into DIR with
# dpkg -x. Nothing outside DIR is changed: apt runs with its own sources, lists
# and cache under DIR/apt (a machine whose apt has no bookworm lists, or none
# at all, still works; apt-get update still runs the hooks the machine's apt
# configuration defines, which on Debian only clear apt's own regenerable
# caches), and nothing is installed. With --download the .debs are left in
# DIR/apt/debs instead, for the caller to take files from. Needs apt-get and
# dpkg (any Debian or Ubuntu machine). --suite trixie reaches CUDA 12.4's
# packages (ptxas for sm_89/sm_90a).
set -eu

unpack=1
suite=bookworm
while :; do
	case "${1:-}" in
	--download)
		unpack=
		shift
		;;
	--suite)
		suite=$2
		shift 2
		;;
	*) break ;;
	esac
done
if [ $# -lt 3 ]; then
	echo "usage: debian-fetch.sh [--download] [--suite SUITE] COMPONENT DIR PKG..." >&2
	exit 2
fi
component=$1
dir=$2
shift 2

state=$dir/apt
mkdir -p "$state/lists/partial" "$state/cache/archives/partial" "$state/debs"
cat >"$state/$component.sources" <<SRC
Types: deb
URIs: http://deb.debian.org/debian
Suites: $suite
Components: $component
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC

apt() {
	apt-get -q \
		-o Dir::Etc::SourceList="$state/$component.sources" \
		-o Dir::Etc::SourceParts=/dev/null \
		-o Dir::State::Lists="$state/lists" \
		-o Dir::Cache="$state/cache" \
		-o APT::Sandbox::User=root \
		"$@"
}

echo "debian-fetch: updating $suite $component package lists in $state" >&2
apt update >&2

echo "debian-fetch: downloading $*" >&2
(cd "$state/debs" && rm -f ./*.deb && apt download "$@" >&2)
# The lists are only needed to download (10 MB and more).
rm -rf "$state/lists"

if [ -n "$unpack" ]; then
	for deb in "$state"/debs/*.deb; do
		echo "debian-fetch: unpacking $(basename "$deb")" >&2
		dpkg -x "$deb" "$dir"
	done
	rm -f "$state"/debs/*.deb
fi
