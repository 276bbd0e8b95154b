#!/usr/bin/env bash
# The README's Quickstart on a stock Debian/Ubuntu Python, from a clean clone: Debian's own
# /usr/bin/python3 (which refuses `pip install` into itself, PEP 668) makes the venv; then the
# installed `nbrunner` starts a cluster, runs a notebook and stops. Run by scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
SYSPY=${SYSTEM_PYTHON:-/usr/bin/python3}
if [ ! -x "$SYSPY" ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3 python3-venv >/dev/null
fi
work=$(mktemp -d /tmp/nbrqs.XXXXXX)
up_pid=""
step() { echo "check_quickstart: $*" >&2; }
cleanup() {
  rc=$?
  if [ -n "$up_pid" ] && kill -0 "$up_pid" 2>/dev/null; then kill -INT "$up_pid"; wait "$up_pid" || true; fi
  if [ "$rc" -ne 0 ] && [ -f "$work/up.log" ]; then tail -20 "$work/up.log" >&2; fi
  rm -rf "$work"
}
trap cleanup EXIT
step "clone"
git clone -q "$PWD" "$work/nbrunner"   # what is committed, nothing else
cd "$work/nbrunner"
unset PYTHONPATH NBRUNNER_WORKSPACE NBRUNNER_REDIS_URL NBRUNNER_STORAGE VIRTUAL_ENV
export NBRUNNER_RUNTIME_DIR="$work/runtime"
step "setup with $SYSPY"
PYTHON="$SYSPY" bash scripts/setup.sh >/dev/null
.venv/bin/nbrunner --help >/dev/null
.venv/bin/python -c 'import nbrunner, pathlib, sys; assert pathlib.Path(nbrunner.__file__).is_relative_to(pathlib.Path.cwd()), nbrunner.__file__'
step "nbrunner up, submit from the directory above, list, stop"
.venv/bin/nbrunner up --dir notebooks --no-lab --gpus 0 --workers 1 >"$work/up.log" 2>&1 &
up_pid=$!
for _ in $(seq 120); do .venv/bin/nbrunner cluster --json >/dev/null 2>&1 && break; sleep 0.5; done
job=$(.venv/bin/nbrunner submit notebooks/hello.ipynb --wait) || { echo "submit: $job" >&2; exit 1; }  # from above the workspace
listing=$(.venv/bin/nbrunner list --json)
case "$listing" in *'/notebooks"'*) ;; *) echo "nbrunner list does not show the cluster: $listing" >&2; exit 1 ;; esac
kill -INT "$up_pid"
wait "$up_pid" || { echo "nbrunner up exited with $?" >&2; exit 1; }
up_pid=""
echo "quickstart on $("$SYSPY" --version) from a clean clone: ok (job ${job%% *})"
