"""Run every benchmark and print one table: ``python bench/run.py [name ...]``."""
from __future__ import annotations

import importlib
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from table import print_table  # noqa: E402

BENCHMARKS = ["bench_jobs", "bench_allocate", "bench_sim", "bench_live_trace", "bench_elastic_throughput",
              "bench_elastic_rescale", "bench_elastic_pauses", "bench_elastic_equivalence", "bench_load", "bench_hub_load",
              "bench_cli", "bench_history", "bench_push_tabs", "bench_push_lab", "bench_startup", "bench_accounts",
              "bench_multihost", "bench_run_as_owner", "bench_metrics", "bench_estimates", "bench_small_jobs",
              "bench_scheduler_pass"]


def main(names: list[str]) -> int:
    rows: list[dict] = []
    for name in names or BENCHMARKS:
        path = Path(__file__).resolve().parent / f"{name}.py"
        if not path.exists():
            print(f"(skipping {name}: not present)", file=sys.stderr)
            continue
        t = time.perf_counter()
        module = importlib.import_module(name)
        got = module.run()
        print(f"{name}: {len(got)} rows in {time.perf_counter() - t:.0f} s", file=sys.stderr)
        rows += got
    print_table(rows)
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
