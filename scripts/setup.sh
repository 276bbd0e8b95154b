#!/usr/bin/env bash
# Make (or reuse) the project's virtual environment .venv and install nbrunner and its test tools
# into it. A venv works the same on a stock Debian/Ubuntu Python, where `pip install` into the
# system interpreter is refused (PEP 668, "externally-managed-environment"), as anywhere else.
# torch's CPU build goes in first, so the `torch>=` range is already met and pip never pulls a
# CUDA build. PYTHON picks the interpreter that makes the venv (default: python3).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
VENV=.venv
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import sys' >/dev/null 2>&1; then
  rm -rf "$VENV"
  if ! "$PY" -m venv "$VENV" >/dev/null 2>&1; then
    rm -rf "$VENV"
    # Debian/Ubuntu ship venv (with ensurepip) in a package of its own
    ver=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    if command -v apt-get >/dev/null 2>&1 && { [ "$(id -u)" -eq 0 ] || command -v sudo >/dev/null 2>&1; }; then
      SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
      $SUDO apt-get update -qq
      DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "python${ver}-venv" >/dev/null \
        || DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-venv >/dev/null
      "$PY" -m venv "$VENV"
    else
      echo "setup.sh: $PY cannot make a virtual environment: install python${ver}-venv" >&2
      exit 1
    fi
  fi
fi
"$VENV/bin/python" -m pip install -q "torch==2.13.0"
"$VENV/bin/python" -m pip install -q -e ".[test]"
echo "nbrunner is installed in $VENV: run it as $VENV/bin/nbrunner (or: source $VENV/bin/activate)"
