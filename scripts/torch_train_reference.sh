#!/bin/sh
# Regenerates testdata/torch_train/*.npy: PyTorch's losses for 100 SGD and 100 Adam steps of an
# MLP, and parameter trajectories of every optimizer configuration on a tiny problem. The data
# and initial weights come from a hash both sides compute, so nothing else is committed. The Go
# tests in train/ compare the reference device's training with them.
#
# "torch_train_reference.sh bench" instead times one MLP training step on the reference device and
# in PyTorch (CPU) in the same run, for docs/perf.md.
#
# Needs Debian's python3-torch and python3-numpy (apt-get install python3-torch python3-numpy).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
py=${PYTHON:-/usr/bin/python3}
if [ "${1:-}" = bench ]; then
	go test ./train -run '^$' -bench MLPStepRef -benchtime 50x | grep Benchmark
	"$py" scripts/torch_train_reference.py bench
	exit 0
fi
"$py" scripts/torch_train_reference.py testdata/torch_train
ls -l testdata/torch_train
