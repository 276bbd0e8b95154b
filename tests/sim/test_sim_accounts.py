"""The simulator with an accounts tree: owners place jobs in accounts, the GPUs are divided down
the tree, and the result has a row per account (pure: toy traces, no process)."""
from __future__ import annotations

import json

import pytest

from nbrunner.sim import load_workload, main, simulate

from .test_sim import toy  # noqa: F401 - the fixture

TREE = {"accounts": [{"name": "vision", "weight": 3, "members": ["alice"]},
                     {"name": "nlp", "weight": 1, "members": ["@nlp-team"]}]}


def owned(workload, rows):
    """A workload CSV with owner and groups columns."""
    path = workload("owned", [r[:5] for r in rows])
    lines = path.read_text().splitlines()
    lines[0] += ",owner,groups"
    for i, r in enumerate(rows, start=1):
        lines[i] += f",{r[5]},{r[6]}"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_owner_columns_are_read(toy):  # noqa: F811
    _, workload = toy
    path = owned(workload, [("a", 0, "long", 1, 32, "alice", ""), ("b", 0, "long", 1, 32, "bob", "nlp-team;x")])
    jobs = load_workload(path)
    assert [(j.owner, j.groups) for j in jobs] == [("alice", ()), ("bob", ("nlp-team", "x"))]


def workload_rows() -> list[tuple]:
    rows = [(f"v{i}", 0, "long", 4, 32, "alice", "") for i in range(2)]
    return rows + [(f"n{i}", 0, "long", 4, 32, "bob", "nlp-team") for i in range(2)]


def test_weights_divide_the_gpus_while_both_accounts_have_demand(toy):  # noqa: F811
    _, workload = toy
    rows = workload_rows()
    res = simulate(owned(workload, rows), 4, "fairshare", accounts=TREE, restart_pause=0.0)
    first = {j.name: j for j in res.jobs}
    # 4 GPUs: vision 3, nlp 1 until vision's jobs end; so nlp's jobs take longer
    assert max(first[f"v{i}"].finish for i in range(2)) < min(first[f"n{i}"].finish for i in range(2))
    rows = {r["account"]: r for r in res.accounts}
    assert set(rows) == {"vision", "nlp"} and rows["vision"]["jobs"] == rows["nlp"]["jobs"] == 2
    assert rows["vision"]["avg_jct_s"] < rows["nlp"]["avg_jct_s"]
    assert rows["vision"]["gpu_share"] + rows["nlp"]["gpu_share"] == pytest.approx(1.0)
    flat = simulate(owned(workload, workload_rows()), 4, "fairshare", restart_pause=0.0).jobs
    assert len({round(j.finish, 6) for j in flat}) == 1  # without accounts: one GPU each, all end together




def test_tiresias_has_no_accounts_and_the_cli_reports_accounts(toy, capsys, tmp_path):  # noqa: F811
    traces, workload = toy
    path = owned(workload, [("v", 0, "long", 2, 32, "alice", ""), ("n", 0, "short", 2, 32, "bob", "nlp-team")])
    with pytest.raises(ValueError, match="tiresias policy has no accounts"):
        simulate(path, 4, "tiresias", accounts=TREE)
    accounts = tmp_path / "accounts.yaml"
    accounts.write_text("accounts:\n  - {name: vision, weight: 3, members: [alice]}\n"
                        "  - {name: nlp, weight: 1, members: ['@nlp-team']}\n")
    assert main([str(path), "--gpus", "4", "--accounts", str(accounts), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [a["account"] for a in out["accounts"]] == ["vision", "nlp"]
    accounts.write_text("accounts:\n  - {name: vision, weight: -3}\n")
    assert main([str(path), "--gpus", "4", "--accounts", str(accounts)]) == 2
    err = capsys.readouterr().err
    assert "line 2" in err and "weight" in err and len(err.strip().splitlines()) == 1


def test_owners_are_given_in_turn(toy, capsys):  # noqa: F811
    _, workload = toy
    path = workload("plain", [("a", 0, "long", 1, 32), ("b", 0, "long", 1, 32), ("c", 0, "short", 1, 32)])
    assert main([str(path), "--gpus", "4", "--owners", "alice,bob", "--json"]) == 0
    assert "accounts" not in json.loads(capsys.readouterr().out)  # owners alone: no tree, no rows
