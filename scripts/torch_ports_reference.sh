#!/bin/sh
# Regenerates testdata/torch/ports/NAME/: PyTorch's float64 outputs of the line-by-line ports in
# testdata/ports for the weights `gcomp init-weights` writes (seed 0) and the inputs `gcomp run`
# draws (seed 0), and the keys of PyTorch's state_dict. Then it loads PyTorch's full state_dict
# back into gcomp under --strict and wants the same outputs as from gcomp's own file.
#
# Needs Debian's python3-torch, python3-torchvision and python3-numpy.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
py=${PYTHON:-/usr/bin/python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/gcomp" ./cmd/gcomp
for m in resnet vit; do
	model="testdata/ports/$m/model.go"
	"$tmp/gcomp" init-weights "$model" -o "$tmp/$m.safetensors"
	"$tmp/gcomp" run "$model" --weights "$tmp/$m.safetensors" --strict --save-inputs \
		--output-dir "$tmp/$m" 2>/dev/null
	rm -rf "testdata/torch/ports/$m"
	"$py" scripts/torch_ports_reference.py "$m" "$tmp/$m.safetensors" "$tmp/$m/inputs" \
		"testdata/torch/ports/$m" "$tmp/$m.torch.safetensors"
	"$tmp/gcomp" run "$model" --weights "$tmp/$m.torch.safetensors" --strict \
		--input "x=$tmp/$m/inputs/x.npy" --output-dir "$tmp/$m.torch" 2>/dev/null
	cmp "$tmp/$m/logits.npy" "$tmp/$m.torch/logits.npy"
	echo "testdata/torch/ports/$m: $(ls "testdata/torch/ports/$m" | tr '\n' ' ')"
done
