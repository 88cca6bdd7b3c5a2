#!/bin/sh
# Regenerates testdata/torch_train/*.npy: PyTorch's losses for 100 SGD and 100 Adam steps of an
# MLP, and parameter trajectories of every optimizer configuration on a tiny problem. The data
# and initial weights come from a hash both sides compute, so nothing else is committed. The Go
# tests in train/ compare the reference device's training with them.
#
# Needs Debian's python3-torch and python3-numpy (apt-get install python3-torch python3-numpy).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
py=${PYTHON:-/usr/bin/python3}
"$py" scripts/torch_train_reference.py testdata/torch_train
ls -l testdata/torch_train
