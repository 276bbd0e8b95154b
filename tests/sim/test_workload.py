"""The shipped Pollux data and generated workloads of nbrunner.sim (pure: no process)."""

from __future__ import annotations

import json
import runpy
import sys
from collections import Counter

import numpy as np
import pytest

from nbrunner.sim import (DATA_DIR, TRACES_DIR, bundled_workloads, generate_workload, load_apps, load_workload,
                          main, resolve_workload, simulate, write_workload)

APPS = {"bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3"}


def shipped_rows() -> list[tuple[str, int, int]]:
    return [(j.app, j.replicas, j.batch) for p in bundled_workloads() for j in load_workload(p)]


def test_the_pollux_data_ships_in_the_package():
    readme = (DATA_DIR / "README.md").read_text()
    assert "OSDI 2021" in readme and "Apache License 2.0" in readme
    assert "Apache License" in (DATA_DIR / "LICENSE").read_text()
    paths = bundled_workloads()
    assert [p.name for p in paths] == [f"workload-{i}.csv" for i in range(1, 9)]
    apps = load_apps(TRACES_DIR)
    assert set(apps) == APPS
    for p in paths:
        jobs = load_workload(p)
        assert len(jobs) == 160 and {j.app for j in jobs} <= APPS
    # Every (application, batch) a workload names has the validation files its work is read from.
    for app, _, batch in set(shipped_rows()):
        assert apps[app].total_steps(batch) > 0
    assert not (TRACES_DIR / "philly.csv").exists()


def test_resolve_workload_by_name_or_path(tmp_path):
    assert resolve_workload("workload-3") == resolve_workload("workload-3.csv") == bundled_workloads()[2]
    own = tmp_path / "mine.csv"
    own.write_text("name,time,application,num_replicas,batch_size\n")
    assert resolve_workload(own) == own
    with pytest.raises(ValueError, match="workload-1"):
        resolve_workload("workload-9")


def test_generated_workloads_are_reproducible_and_drawn_from_the_shipped_mix():
    a, b = generate_workload(7), generate_workload(7)
    assert [(j.name, j.submit, j.app, j.replicas, j.batch) for j in a] == \
        [(j.name, j.submit, j.app, j.replicas, j.batch) for j in b]
    assert [j.submit for j in generate_workload(8)] != [j.submit for j in a]
    assert len(a) == 160 and [j.idx for j in a] == list(range(160))
    times = [j.submit for j in a]
    assert times == sorted(times) and 0 <= times[0] and times[-1] <= 8 * 3600
    assert all(j.name == f"{j.app}-{j.idx}" for j in a)
    rows = shipped_rows()
    assert {(j.app, j.replicas, j.batch) for j in a} <= set(rows)
    # Many jobs: each application's share and each hour's share follow the shipped workloads.
    big = generate_workload(1, jobs=40_000, duration_s=8 * 3600)
    share = Counter(j.app for j in big)
    ref = Counter(app for app, _, _ in rows)
    for app in APPS:
        assert share[app] / len(big) == pytest.approx(ref[app] / len(rows), abs=0.01)
    hours = np.bincount([int(j.submit // 3600) for j in big], minlength=8)[:8] / len(big)
    ref_hours = np.bincount([int(j.submit // 3600) for p in bundled_workloads() for j in load_workload(p)],
                            minlength=8)[:8] / len(rows)
    assert hours == pytest.approx(ref_hours, abs=0.01)
    assert max(j.submit for j in generate_workload(2, jobs=50, duration_s=600)) <= 600
    with pytest.raises(ValueError):
        generate_workload(1, jobs=-1)


def test_generated_workload_round_trips_and_replays(tmp_path):
    jobs = generate_workload(3, jobs=12)
    path = tmp_path / "gen.csv"
    write_workload(path, jobs)
    back = load_workload(path)
    assert [(j.name, j.submit, j.app, j.replicas, j.batch) for j in back] == \
        [(j.name, j.submit, j.app, j.replicas, j.batch) for j in jobs]
    res = simulate(path, 64, "tiresias")  # traces: the shipped ones (none beside tmp_path)
    assert len(res.jobs) == 12 and all(j.finish > j.submit for j in res.jobs)


def test_cli_generate_and_save(tmp_path, capsys):
    out = tmp_path / "w.csv"
    assert main(["--generate", "5", "--jobs", "10", "--save", str(out), "--policy", "goodput", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["avg_jct_s"] > 0 and len(load_workload(out)) == 10
    assert main([str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["avg_jct_s"] > 0
    with pytest.raises(SystemExit):
        main(["workload-1", "--generate", "5"])  # one or the other
    assert "either WORKLOAD or --generate" in capsys.readouterr().err
    assert main(["no-such-workload"]) == 2
    assert capsys.readouterr().err.startswith("error: no workload")


def test_bad_workload_csv_is_a_one_line_error(tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    bad.write_text("name,time,application,num_replicas,batch_size\nx,soon,ncf,1,32768\n")
    assert main([str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and "row 2" in err and len(err.strip().splitlines()) == 1


def test_module_runs_a_shipped_workload_by_name(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["nbrunner.sim", "--generate", "4", "--jobs", "6", "--policy", "static"])
    with pytest.raises(SystemExit) as exit_:
        runpy.run_module("nbrunner.sim", run_name="__main__", alter_sys=False)
    assert exit_.value.code == 0
    assert "avg JCT" in capsys.readouterr().out


def test_generated_arrival_processes():
    """uniform spreads the jobs over the window; bursty packs them into BURSTS short bursts; the default is
    Pollux's (the same workload as without the argument); an unknown process is refused."""
    from nbrunner.sim.workload import ARRIVALS, BURSTS

    assert ARRIVALS == ("pollux", "uniform", "bursty")
    assert [j.submit for j in generate_workload(4, arrivals="pollux")] == [j.submit for j in generate_workload(4)]
    window = 8 * 3600
    uni = np.array([j.submit for j in generate_workload(4, jobs=8000, arrivals="uniform")])
    assert np.bincount((uni // 3600).astype(int), minlength=8)[:8] / len(uni) == pytest.approx([1 / 8] * 8, abs=0.02)
    burst = generate_workload(4, jobs=400, arrivals="bursty")
    times = np.array([j.submit for j in burst])
    assert times.min() >= 0 and times.max() <= window and list(times) == sorted(times)
    # Every job is within a 48th of the window after some burst's start: at most BURSTS clusters of arrivals.
    gaps = np.diff(times)
    assert int((gaps > window / 48).sum()) <= BURSTS - 1
    assert len({(j.app, j.replicas, j.batch) for j in burst}) > 5
    assert [j.submit for j in generate_workload(4, arrivals="bursty")] == \
        [j.submit for j in generate_workload(4, arrivals="bursty")]
    with pytest.raises(ValueError, match="arrival process"):
        generate_workload(4, arrivals="poisson")


def test_cli_generates_with_another_arrival_process(tmp_path, capsys):
    out = tmp_path / "b.csv"
    assert main(["--generate", "6", "--jobs", "12", "--arrivals", "bursty", "--save", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["avg_jct_s"] > 0
    assert [j.submit for j in load_workload(out)] == [j.submit for j in generate_workload(6, 12, arrivals="bursty")]
