"""Schedules on a real cluster (real clock, second resolution): Python, CLI, overlap, several
schedulers at once, failover, runs missed while no scheduler ran, a Redis restart."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from datetime import datetime, timedelta, timezone

import psutil
import pytest

from nbrunner.control.scheduler import Scheduler
from nbrunner.control.schedules import fire_due
from nbrunner.core.errors import InvalidRequest
from nbrunner.core.keys import LEASE
from nbrunner.core.models import parse_time
from nbrunner.core.schedules import ScheduleSpec, check_cron, next_fire

from support import assert_one_line_error, make_notebook, wait_for

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def ws(cluster, shared_workspace):
    make_notebook(shared_workspace / "quick.ipynb", "print('run', N)", parameters="N = 0")
    make_notebook(shared_workspace / "slow.ipynb", "import time\ntime.sleep(SECONDS)", parameters="SECONDS = 5")
    return shared_workspace


def finish(schedule) -> None:
    """Delete the schedule and cancel its unfinished runs (frees the workers for the next test)."""
    schedule.delete()
    for job in schedule.runs():
        if not job.record.finished:
            try:
                job.cancel()
            except Exception:  # noqa: BLE001 - it finished meanwhile
                pass


def created(jobs) -> list[datetime]:
    return [parse_time(j.record.created_at) for j in jobs]


# ---- pure: validation and fire times ------------------------------------------------------------

def test_fire_times_every_cron_and_timezones():
    now = datetime(2026, 3, 28, 23, 30, 10, tzinfo=timezone.utc)
    spec = ScheduleSpec.parse({"notebook": "x.ipynb", "every": 7})
    assert next_fire(spec, now, anchor=now) == now + timedelta(seconds=7)
    anchor = now - timedelta(seconds=30)  # missed fire times: the next one after now, on the same grid
    assert next_fire(spec, now, anchor=anchor) == anchor + timedelta(seconds=35)
    paris = ScheduleSpec.parse({"notebook": "x.ipynb", "cron": "0 3 * * *", "timezone": "Europe/Paris"})
    assert next_fire(paris, now) == datetime(2026, 3, 29, 1, 0, tzinfo=timezone.utc)  # after the DST change
    assert next_fire(ScheduleSpec.parse({"notebook": "x.ipynb", "cron": "@hourly"}), now) == \
        datetime(2026, 3, 29, 0, 0, tzinfo=timezone.utc)
    assert check_cron("  */5   *  * * 1-5 ") == "*/5 * * * 1-5"
    assert check_cron("@Midnight") == "@midnight"
    for bad in ({"cron": "0 0 * *"}, {"cron": "@reboot"}, {"cron": "*/0 * * * *"}, {"every": -1},
                {"every": True}, {"cron": "@daily", "every": 1}, {}, {"every": 1, "timezone": ""}):
        with pytest.raises(InvalidRequest):
            ScheduleSpec.parse({"notebook": "x.ipynb", **bad})


# ---- Python ----------------------------------------------------------------------------------------

def test_runs_about_every_two_seconds_pause_resume_delete(cluster, ws):
    s = cluster.schedule("quick.ipynb", {"N": 3}, every=2, overlap="queue", name="tick")
    assert s.to_dict()["every"] == 2 and s.record.owner
    runs = wait_for(lambda: (lambda r: r if len(r) >= 3 else None)(s.runs()), 30, what="three runs")
    assert all(j.record.schedule == s.id and j.record.parameters == {"N": 3} for j in runs)
    times = created(runs)
    assert times == sorted(times, reverse=True)
    gaps = [(a - b).total_seconds() for a, b in zip(times, times[1:])]
    assert all(1.0 < g < 3.5 for g in gaps), gaps
    assert [x.id for x in cluster.schedules()].count(s.id) == 1

    s.pause()
    assert s.record.paused and s.record.next_run_at is None
    count = len(s.runs())
    time.sleep(4.5)  # two periods: an active schedule would have fired twice
    assert len(s.runs()) == count
    s.resume()
    assert not s.refresh().record.paused and s.record.next_run_at
    resumed_at = datetime.now(timezone.utc)
    wait_for(lambda: len(s.runs()) > count, 10, what="a run after resume")
    assert created(s.runs())[0] > resumed_at + timedelta(seconds=1.5)  # the next fire time, not a make-up run
    finish(s)
    left = len(s.runs())
    time.sleep(2.5)
    assert len(s.runs()) == left >= count + 1  # deleted: no new runs, the old ones stay
    p = run("jobs", "--schedule", s.id, "--json", "--dir", str(ws))
    assert [j["id"] for j in json.loads(p.stdout)["jobs"]] == [j.id for j in s.runs()]


def active_runs(s) -> int:
    return sum(1 for j in s.runs() if not j.record.finished)


def test_overlap_skip_never_two_runs_at_once(cluster, ws):
    s = cluster.schedule("slow.ipynb", {"SECONDS": 3}, every=1, overlap="skip")
    saw_skip, deadline = False, time.monotonic() + 40
    while len(s.runs()) < 2:  # until the first run ended and a later fire time started another
        assert time.monotonic() < deadline, "no second run"
        assert active_runs(s) <= 1, [(j.id, j.record.status) for j in s.runs()]
        saw_skip = saw_skip or "skipped: the previous run" in (s.refresh().record.last_error or "")
        time.sleep(0.1)
    assert saw_skip
    second, first = s.runs()[:2]
    assert first.record.finished and second.record.created_at >= first.record.finished_at
    finish(s)


def test_overlap_queue_runs_pile_up(cluster, ws):
    s = cluster.schedule("slow.ipynb", {"SECONDS": 6}, every=1, overlap="queue")
    wait_for(lambda: active_runs(s) >= 3, 15, what="three runs queued or running at once")
    finish(s)


# ---- several schedulers ------------------------------------------------------------------------------

def test_each_fire_time_gives_one_run_with_many_schedulers(cluster, ws):
    s = cluster.schedule("quick.ipynb", every=1, overlap="queue")
    returned: list[str] = []
    stop = threading.Event()

    def racer():
        from nbrunner.control.store import JobStore

        store = JobStore.from_url(cluster.settings.url)
        while not stop.is_set():
            jobs, _ = fire_due(store, cluster.settings)
            returned.extend(jobs)
            time.sleep(0.002)

    threads = [threading.Thread(target=racer) for _ in range(4)]
    for t in threads:
        t.start()
    try:
        wait_for(lambda: len(s.runs()) >= 5, 20, what="five runs")
    finally:
        stop.set()
        for t in threads:
            t.join()
    finish(s)
    runs = s.runs()
    assert len(returned) == len(set(returned))
    times = created(runs)
    gaps = [(a - b).total_seconds() for a, b in zip(times, times[1:])]
    assert all(g > 0.5 for g in gaps), gaps  # one run per fire time (1 s apart), never two
    assert len(runs) <= (times[0] - times[-1]).total_seconds() + 1.5


def test_failover_keeps_firing_once_per_fire_time(cluster, ws):
    standby = Scheduler(cluster.settings, name="standby.test")
    thread = threading.Thread(target=standby.run)
    thread.start()
    s = cluster.schedule("quick.ipynb", every=1, overlap="queue")
    try:
        wait_for(lambda: len(s.runs()) >= 2, 15, what="runs before the failover")
        old = cluster.store.r.get(LEASE)
        assert old != "standby.test"
        cluster.supervisor.child("scheduler").proc.kill()
        killed_at = datetime.now(timezone.utc)
        wait_for(lambda: cluster.store.r.get(LEASE) not in (None, old), 20, what="another scheduler to take over")
        took_over = datetime.now(timezone.utc)
        wait_for(lambda: sum(t > took_over for t in created(s.runs())) >= 3, 20, what="runs after the failover")
    finally:
        standby.stop()
        thread.join()
    finish(s)
    times = created(s.runs())
    # fire times missed between the kill and the takeover gave one run, not one each
    assert sum(killed_at < t < took_over + timedelta(seconds=0.9) for t in times) <= 2
    # away from the takeover (where that late run may come just before the next fire time's),
    # no fire time gave two runs
    for part in ([t for t in times if t < killed_at], [t for t in times if t > took_over + timedelta(seconds=0.9)]):
        gaps = [(a - b).total_seconds() for a, b in zip(part, part[1:])]
        assert all(g > 0.3 for g in gaps), gaps


def test_missed_fire_times_give_one_run_when_a_scheduler_returns(cluster, ws):
    s = cluster.schedule("quick.ipynb", every=3, overlap="queue")
    grid = parse_time(s.record.next_run_at)  # fire times: grid + k*3 s
    wait_for(lambda: len(s.runs()) >= 1, 15, what="a first run")
    proc = psutil.Process(cluster.supervisor.child("scheduler").proc.pid)
    proc.suspend()  # no scheduler at all (no standby) for several periods
    try:
        stopped_at = datetime.now(timezone.utc)
        time.sleep(0.5)
        before = len(s.runs())
        # come back 0.2 s after a fire time, at least three fire times later: the next one is 2.8 s away
        k = int((stopped_at + timedelta(seconds=9) - grid).total_seconds() // 3) + 1
        resume_at = grid + timedelta(seconds=3 * k + 0.2)
        time.sleep((resume_at - datetime.now(timezone.utc)).total_seconds())
        assert len(s.runs()) == before
    finally:
        proc.resume()
    resumed = datetime.now(timezone.utc)
    wait_for(lambda: datetime.now(timezone.utc) > resumed + timedelta(seconds=2.4), 5, what="the window to pass")
    caught_up = [t for t in created(s.runs()) if t > resumed - timedelta(seconds=0.1)]
    assert len(caught_up) == 1, caught_up  # three or more missed fire times, one run
    wait_for(lambda: len(s.runs()) >= before + 2, 15, what="regular runs again")
    newest = created(s.runs())[0]
    assert newest > resumed + timedelta(seconds=2.5)
    finish(s)


# ---- CLI ------------------------------------------------------------------------------------------

def run(*args: str, timeout=60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nbrunner", *args], capture_output=True, text=True, timeout=timeout,
                          env=os.environ.copy())


def test_cli_add_list_show_pause_resume_delete(cluster, ws):
    d = ["--dir", str(ws)]
    p = run("schedule", "add", "quick.ipynb", "--cron", "30 4 * * 1", "--tz", "America/New_York", "-p", "N", "5",
            "--name", "weekly", "--priority", "7000", "--json", *d)
    assert p.returncode == 0, p.stderr
    s = json.loads(p.stdout)
    assert (s["cron"], s["timezone"], s["parameters"], s["name"], s["priority"], s["overlap"]) == \
        ("30 4 * * 1", "America/New_York", {"N": 5}, "weekly", 7000, "skip")
    listed = json.loads(run("schedule", "list", "--json", *d).stdout)
    assert s["id"] in [x["id"] for x in listed["schedules"]]
    table = run("schedule", "list", *d)
    assert table.returncode == 0 and s["id"] in table.stdout and "weekly" in table.stdout
    assert json.loads(run("schedule", "show", s["id"], *d).stdout) == s
    p = run("schedule", "pause", s["id"], *d)
    assert p.returncode == 0 and "paused" in p.stdout
    assert json.loads(run("schedule", "show", s["id"], *d).stdout)["paused"] is True
    p = run("schedule", "resume", s["id"], *d)
    assert p.returncode == 0 and "resumed" in p.stdout
    assert json.loads(run("schedule", "show", s["id"], *d).stdout)["next_run_at"] == s["next_run_at"]
    p = run("schedule", "delete", s["id"], *d)
    assert p.returncode == 0
    assert_one_line_error(run("schedule", "show", s["id"], *d), 1, "no schedule")
    p = run("schedule", "add", "quick.ipynb", "--every", "60", *d)
    assert p.returncode == 0 and len(p.stdout.strip()) == 8
    run("schedule", "delete", p.stdout.strip(), *d)


@pytest.mark.parametrize("args, code, words", [
    (["--cron", "61 * * * *"], 1, ["invalid cron"]),
    (["--cron", "0 3 * * *", "--every", "5"], 1, ["exactly one of cron and every"]),
    ([], 1, ["exactly one of cron and every"]),
    (["--every", "0"], 1, ["every must be between 1"]),
    (["--every", "soon"], 2, ["--every"]),
    (["--every", "5", "--tz", "Mars/Base"], 1, ["unknown timezone"]),
    (["--every", "5", "--overlap", "maybe"], 1, ["overlap must be"]),
    (["--every", "5", "--min-gpus", "2", "--max-gpus", "1"], 1, ["min_gpus"]),
])
def test_cli_bad_schedules_one_line_nothing_created(cluster, ws, args, code, words):
    before = run("schedule", "list", "--json", "--dir", str(ws)).stdout
    assert_one_line_error(run("schedule", "add", "quick.ipynb", *args, "--dir", str(ws)), code, *words)
    assert run("schedule", "list", "--json", "--dir", str(ws)).stdout == before


def test_cli_schedule_list_stays_light(cluster, ws):
    code = ("import sys; from nbrunner.client.cli import main\n"
            "try:\n    main(['schedule', 'list', '--json', '--dir', sys.argv[1]])\n"
            "except SystemExit:\n    pass\n"
            "print('HEAVY', sorted(m for m in ('nbformat', 'papermill', 'torch') if m in sys.modules))")
    p = subprocess.run([sys.executable, "-c", code, str(ws)], capture_output=True, text=True, timeout=60)
    assert "HEAVY []" in p.stdout, p.stdout + p.stderr


# ---- persistence ---------------------------------------------------------------------------------

def test_schedules_survive_a_redis_restart(cluster, ws):
    s = cluster.schedule("quick.ipynb", cron="@daily", name="persisted")
    s.pause()
    pid = cluster.supervisor.redis.pid()
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: cluster.supervisor.redis.running() and cluster.supervisor.redis.pid() != pid, 15, 0.05,
             "Redis to be restarted")

    def reread():
        try:
            return s.refresh().record
        except Exception:  # noqa: BLE001 - Redis still loading
            return None

    rec = wait_for(reread, 15, what="the schedule after the restart")
    assert rec.name == "persisted" and rec.paused and rec.cron == "@daily"
    s.delete()
