#!/usr/bin/env bash
# The JupyterLab extension's unit tests (vitest, extension/test/): install its node modules as
# extension/build.sh does (jlpm from the project venv, yarn.lock as committed), then `jlpm test`
# (type-check the tests, run them). Needs Node >= 20 and scripts/setup.sh's .venv. Run by
# scripts/test.sh before pytest.
set -euo pipefail
cd "$(dirname "$0")/../extension"
JLPM=${JLPM:-../.venv/bin/jlpm}
if ! command -v node >/dev/null 2>&1; then
  echo "test_extension.sh: node (>= 20) is required for the extension's unit tests" >&2
  exit 1
fi
if [ ! -x "$JLPM" ]; then
  echo "test_extension.sh: $JLPM not found: run scripts/setup.sh first" >&2
  exit 1
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
start=$SECONDS
# Under CI=true yarn refuses to change yarn.lock, so what installs is what was committed.
if ! "$JLPM" install >"$log" 2>&1; then
  tail -40 "$log" >&2
  echo "test_extension.sh: jlpm install failed" >&2
  exit 1
fi
echo "test_extension.sh: node modules installed in $((SECONDS - start)) s" >&2
"$JLPM" test
