"""Shrink and regrow across hosts: the scenario of ``tests/reliability/test_multihost.py``.

Three hosts on one machine (network namespaces; needs root and iproute2): one elastic job spans
hosts B and C (2 CPU slots each).  C's link is cut: the time until the job runs on B alone is
compared with the worker heartbeat TTL + 1 s (a lost host cannot be told from a slow one
before its registration expires).  C's link comes back: the time until the job runs on 4
learners again is compared with 5 s.  ``NBRUNNER_BENCH_MULTIHOST_RUNS`` runs (default 2),
medians."""
from __future__ import annotations

import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "reliability")]

RUNS = int(os.environ.get("NBRUNNER_BENCH_MULTIHOST_RUNS", "2"))
REGROW_GOAL_S = 5.0


def run() -> list[dict]:
    from support import short_tmpdir
    from test_multihost import TTL, cut_and_restore, three_hosts

    shrinks, regrows = [], []
    for i in range(RUNS):
        with three_hosts():
            shrunk, grown = cut_and_restore(short_tmpdir())
        print(f"run {i + 1}: shrunk in {shrunk:.2f} s, grew back in {grown:.2f} s (load {_load()})", file=sys.stderr)
        shrinks.append(shrunk)
        regrows.append(grown)
    shrink, regrow = statistics.median(shrinks), statistics.median(regrows)
    return [
        {"benchmark": f"cut link: job shrunk to the other host vs heartbeat TTL + 1 s (s, median of {RUNS})",
         "value": shrink, "baseline": TTL + 1.0, "ratio": shrink / (TTL + 1.0), "goal": "<= 1.0",
         "ok": shrink <= TTL + 1.0},
        {"benchmark": f"restored link: job grown back vs 5 s (s, median of {RUNS})",
         "value": regrow, "baseline": REGROW_GOAL_S, "ratio": regrow / REGROW_GOAL_S, "goal": "<= 1.0",
         "ok": regrow <= REGROW_GOAL_S},
    ]


def _load() -> str:
    try:
        return " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "?"


if __name__ == "__main__":
    from table import print_table

    print_table(run())
