#!/usr/bin/env bash
# Install nbrunner and its test tools into the current Python (torch's CPU build first, so
# the `torch>=` range is already met and pip never pulls a CUDA build).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
$PY -m pip install -q "torch==2.13.0"
$PY -m pip install -q -e ".[test]"
