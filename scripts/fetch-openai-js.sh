#!/bin/sh
# fetch-openai-js.sh [DIR]
#
# Fetches OpenAI's own JavaScript client (npm's openai@5.23.2, no dependencies) into DIR
# (default .cache/npm/openai at the repository root), for lmserve's test that drives gcomp serve
# with an unchanged real client. `npm pack` fetches the tarball without installing or running
# anything. Idempotent. Prints DIR on its last line.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$root/.cache/npm/openai}
if [ -f "$dir/package.json" ]; then
	echo "$dir"
	exit 0
fi
command -v npm >/dev/null || { echo "fetch-openai-js: npm is not installed" >&2; exit 1; }
tmp="$dir.tmp"
rm -rf "$tmp"
mkdir -p "$tmp"
tgz=$(cd "$tmp" && npm pack --silent openai@5.23.2 | tail -n 1)
tar -xzf "$tmp/$tgz" -C "$tmp"
rm -rf "$dir"
mv "$tmp/package" "$dir"
rm -rf "$tmp"
echo "$dir"
