#!/bin/sh
# Regenerates testdata/torch/NAME/*.npy: PyTorch's float64 outputs of every example model for the
# weights `gcomp init-weights` writes (seed 0) and the inputs `gcomp run` draws (seed 0). The Go
# test in examples/ checks the reference interpreter against them.
#
# Needs Debian's python3-torch and python3-numpy (apt-get install python3-torch python3-numpy).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
py=${PYTHON:-/usr/bin/python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/gcomp" ./cmd/gcomp
for m in linreg mlp cnn rnn lstm transformer gpt resnet unet mobilenet; do
	"$tmp/gcomp" init-weights "examples/$m/model.go" -o "$tmp/$m.safetensors"
	"$tmp/gcomp" run "examples/$m/model.go" --weights "$tmp/$m.safetensors" --save-inputs \
		--output-dir "$tmp/$m" 2>/dev/null
	rm -rf "testdata/torch/$m"
	"$py" scripts/torch_reference.py "$m" "$tmp/$m.safetensors" "$tmp/$m/inputs" "testdata/torch/$m"
	echo "testdata/torch/$m: $(ls "testdata/torch/$m" | tr '\n' ' ')"
done
