#!/bin/sh
# Regenerates testdata/torch/NAME/*.npy: PyTorch's float64 outputs of every example model for the
# weights `gcomp init-weights` writes (seed 0) and the inputs `gcomp run` draws (seed 0). The Go
# test in examples/ checks the reference interpreter against them.
#
# Then testdata/torch/ports/NAME/ for the line-by-line ports in testdata/ports: their outputs
# likewise and the keys of PyTorch's state_dict (scripts/torch_ports_reference.py), after which
# PyTorch's full state_dict goes back into gcomp under --strict and must give the same outputs as
# gcomp's own file.
#
# Needs Debian's python3-torch, python3-torchvision and python3-numpy.
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
for m in resnet vit; do
	model="testdata/ports/$m/model.go"
	"$tmp/gcomp" init-weights "$model" -o "$tmp/ports_$m.safetensors"
	"$tmp/gcomp" run "$model" --weights "$tmp/ports_$m.safetensors" --strict --save-inputs \
		--output-dir "$tmp/ports_$m" 2>/dev/null
	rm -rf "testdata/torch/ports/$m"
	"$py" scripts/torch_ports_reference.py "$m" "$tmp/ports_$m.safetensors" "$tmp/ports_$m/inputs" \
		"testdata/torch/ports/$m" "$tmp/ports_$m.torch.safetensors"
	"$tmp/gcomp" run "$model" --weights "$tmp/ports_$m.torch.safetensors" --strict \
		--input "x=$tmp/ports_$m/inputs/x.npy" --output-dir "$tmp/ports_$m.torch" 2>/dev/null
	cmp "$tmp/ports_$m/logits.npy" "$tmp/ports_$m.torch/logits.npy"
	echo "testdata/torch/ports/$m: $(ls "testdata/torch/ports/$m" | tr '\n' ' ')"
done
