#!/usr/bin/env bash
# Prepare .gpu_wheels/ (ignored by git) on a networked machine: the device machine has no
# network, and tools/gpu_check.sh installs ndflow's own dependencies and the test tools from
# this folder into a venv that still sees the device's CuPy, JAX and PyTorch.
# Usage: bash tools/gpu_wheels.sh [python versions...]   (default: 3.10 3.11 3.12 3.13)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PY=${PYTHON:-python3}
versions=${*:-"3.10 3.11 3.12 3.13"}
mkdir -p .gpu_wheels
for v in $versions; do
  "$PY" -m pip download -q -d .gpu_wheels --only-binary=:all: --python-version "$v" \
    --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 \
    ml_dtypes opt_einsum pytest pytest-xdist hypothesis
done
du -sh .gpu_wheels
