#!/usr/bin/env bash
# Build nbrunner's JupyterLab extension (TypeScript -> prebuilt labextension).
#
# Output: ../nbrunner/labextension (shipped in the wheel as
# share/jupyter/labextensions/nbrunner). Needs Node >= 18 and JupyterLab 4
# (for `jlpm` and `jupyter labextension build`) on PATH.
#
#   extension/build.sh          install dependencies and build (production)
#   extension/build.sh --dev    development build (source maps, unminified)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

if ! command -v node >/dev/null 2>&1; then
  echo "build.sh: node (>= 18) is required to build the JupyterLab extension" >&2
  exit 1
fi
if ! command -v jlpm >/dev/null 2>&1; then
  echo "build.sh: jlpm not found: pip install 'jupyterlab>=4.6'" >&2
  exit 1
fi

# yarn.lock is committed: under CI=true yarn refuses to change it.
jlpm install
# Start from a clean output so no stale hashed bundle is left behind.
jlpm clean
if [[ "${1:-}" == "--dev" ]]; then
  jlpm build:dev
else
  jlpm build
fi
echo "build.sh: built $(cd ../nbrunner/labextension && pwd)"
