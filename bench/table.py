"""The one table every benchmark prints: rows of ``{benchmark, value, baseline, ratio, goal, ok}``."""
from __future__ import annotations


def format_table(rows: list[dict]) -> str:
    lines = ["| benchmark | value | baseline | ratio | goal | ok |", "|---|---:|---:|---:|---|---|"]
    for r in rows:
        lines.append(f"| {r['benchmark']} | {r['value']:.4g} | {r['baseline']:.4g} | {r['ratio']:.3g} | {r['goal']} | "
                     f"{'yes' if r['ok'] else 'NO'} |")
    return "\n".join(lines)


def print_table(rows: list[dict]) -> None:
    print(format_table(rows))
