#!/bin/sh
# fetch-llvm.sh [DIR]
#
# Fetches LLVM 14's tools (llvm-as, llc: Debian bookworm's llvm-14, main
# component) with the shared libraries they need beyond a base system, and
# unpacks them into DIR (default: .cache/llvm at the repository root) with
# scripts/debian-fetch.sh's apt recipe: nothing outside DIR is changed, nothing
# is installed. The binaries need LD_LIBRARY_PATH to find their libraries, so
# DIR/bin gets llvm-as-14 and llc-14, two wrappers that set it; `make test`
# puts DIR/bin on PATH (codegen/nvvm's TestLLVMAs checks every NVVM IR module
# with llvm-as-14, sim's LLVM corpus test runs llc-14).
#
# Idempotent: when DIR/bin/llvm-as-14 runs the script only prints where it is.
# Prints the path of the llvm-as-14 wrapper on its last line.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$root/.cache/llvm}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

as=$dir/bin/llvm-as-14
stamp=$dir/.fetched
if [ -f "$stamp" ] && "$as" --version >/dev/null 2>&1; then
	echo "$as"
	exit 0
fi

# llvm-14 holds the tools, libllvm14 libLLVM-14.so.1; the rest is what
# libLLVM-14.so.1 links against that a minimal Debian lacks.
sh "$root/scripts/debian-fetch.sh" main "$dir" \
	llvm-14 libllvm14 libz3-4 libedit2 libbsd0 libmd0 libffi8 libxml2 libicu72

mkdir -p "$dir/bin"
for tool in llvm-as llc; do
	# The wrapper finds DIR from its own path, so DIR may move.
	cat >"$dir/bin/$tool-14" <<WRAP
#!/bin/sh
d=\$(cd "\$(dirname "\$0")/.." && pwd)
LD_LIBRARY_PATH="\$d/usr/lib/llvm-14/lib:\$d/usr/lib/x86_64-linux-gnu\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" exec "\$d/usr/lib/llvm-14/bin/$tool" "\$@"
WRAP
	chmod +x "$dir/bin/$tool-14"
done
if ! "$as" --version >/dev/null 2>&1; then
	echo "fetch-llvm: $as does not run; ldd says:" >&2
	LD_LIBRARY_PATH="$dir/usr/lib/llvm-14/lib:$dir/usr/lib/x86_64-linux-gnu" ldd "$dir/usr/lib/llvm-14/bin/llvm-as" >&2 || true
	exit 1
fi
touch "$stamp"
echo "$as"
