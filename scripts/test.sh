#!/usr/bin/env bash
# Set up and run the whole test suite (what CI runs): install into the project venv .venv, run the
# JupyterLab extension's unit tests (Node), check the Quickstart from a clean clone with the stock
# Debian python, then pytest in .venv (which also builds the docs site, sphinx -W, in tests/docs/).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# the docs site's tools (Sphinx, MyST, the PyData theme): tests/docs/ builds it with warnings as errors
.venv/bin/python -m pip install -q -e ".[test,docs]"
# system tools the tests drive: Debian's chromium (browser tests), docker-compose (validates docker/),
# iproute2 (network namespaces for the multi-host test), prometheus (its server and promtool run the
# monitoring rules)
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v docker-compose >/dev/null 2>&1 || missing+=(docker-compose)
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
{ [ -x /usr/bin/prometheus ] && [ -x /usr/bin/promtool ]; } || missing+=(prometheus)
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
bash scripts/test_extension.sh
# JupyterHub's own proxy, from npm, for the hub tests: it streams responses (the push channel)
[ -x .cache/chp/node_modules/.bin/configurable-http-proxy ] ||
  npm install --prefix .cache/chp --no-audit --no-fund --silent configurable-http-proxy@5.3.0
bash scripts/check_quickstart.sh
# the fast tier first (pure tests: no Redis, kernel or process; seconds), then the slow one
.venv/bin/python -m pytest -q -m "not slow" "$@"
exec .venv/bin/python -m pytest -q -m slow --durations=30 "$@"
