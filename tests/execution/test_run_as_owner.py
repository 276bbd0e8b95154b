"""Jobs run as their owners (``nbrunner worker --run-as-owner``): on a real cluster of two hosts
(worker A runs the driver, worker B a learner through its agent), with Unix accounts made here
(alice, bob, and a service account whose group reads job directories), removed after the module.

A job of alice runs, writes and trains as alice (uid, groups, home, a clean environment) and her
job directory is hers and the service group's only; with the job's own Redis credential the job
can read nothing of other jobs, workers or rq, and the credential is gone once the job ended; an
owner without an account fails in one line; a worker that is not root refuses the option."""
from __future__ import annotations

import json
import os
import secrets
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import redis

from nbrunner.client.cluster import Cluster
from nbrunner.core.config import PASSWORD_FILE, Settings
from nbrunner.core.job_access import job_user
from nbrunner.core.keys import WORKERS, job_key, worker_key
from nbrunner.control.store import reachable
from nbrunner.execution.supervisor import Supervisor

from support import REPO, make_notebook, short_tmpdir, unix_accounts, wait_for

pytestmark = pytest.mark.slow

TAG = secrets.token_hex(3)
ALICE, BOB, SERVICE = f"nbra{TAG}", f"nbrb{TAG}", f"nbrs{TAG}"  # unique: other test runs may share the machine
SECRET = f"worker-secret-{secrets.token_hex(8)}"  # in every worker's environment

WHO = """import json, os, pwd, pathlib
import nbrunner
me = pwd.getpwuid(os.getuid())
print("user", me.pw_name, "groups", sorted(os.getgroups()), "cwd", os.getcwd())
nbrunner.record("uid", os.getuid())
job = pathlib.Path(os.environ["NBRUNNER_JOB_DIR"])
(job / "env.json").write_text(json.dumps(dict(os.environ)))
(job / "made-by-kernel.txt").write_text("mine")
pathlib.Path("made-in-cwd.txt").write_text("mine")"""

PROBE = """import json, os, pathlib, redis
r = redis.Redis.from_url(os.environ["NBRUNNER_REDIS_URL"], decode_responses=True)
def attempt(*cmd):
    try:
        r.execute_command(*cmd)
        return "allowed"
    except redis.exceptions.NoPermissionError:
        return "refused"
    except redis.exceptions.ResponseError as exc:
        return str(exc).split()[0]
out = {"own": r.get("nbrunner:job:" + os.environ["NBRUNNER_JOB_ID"]) is not None,
       "read other": attempt("GET", "nbrunner:job:" + OTHER), "change other": attempt("SET", "nbrunner:job:" + OTHER, "{}"),
       "delete other": attempt("DEL", "nbrunner:job:" + OTHER), "own record set": attempt("SET", "nbrunner:job:" + os.environ["NBRUNNER_JOB_ID"], "{}"),
       "registration": attempt("GET", "nbrunner:worker:" + WORKER), "workers": attempt("SMEMBERS", "nbrunner:workers"),
       "rq worker": attempt("HGETALL", "rq:worker:" + WORKER), "rq enqueue": attempt("RPUSH", "rq:queue:default", "x"),
       "events": attempt("XADD", "nbrunner:events", "*", "type", "x"), "holdings": attempt("HDEL", "nbrunner:slots", "h/0"),
       "config": attempt("CONFIG", "GET", "requirepass"), "acl": attempt("ACL", "LIST"), "keys": attempt("KEYS", "*")}
try:
    from rq import Queue
    Queue("default", connection=redis.Redis.from_url(os.environ["NBRUNNER_REDIS_URL"])).enqueue("os.getcwd")
    out["rq api"] = "allowed"
except redis.exceptions.NoPermissionError:
    out["rq api"] = "refused"
pathlib.Path(os.environ["NBRUNNER_JOB_DIR"], "probe.json").write_text(json.dumps(out))
pathlib.Path(os.environ["NBRUNNER_JOB_DIR"], "url.txt").write_text(os.environ["NBRUNNER_REDIS_URL"])"""

SLEEP = """import time
time.sleep(600)"""

TRAIN = """import os, pathlib, torch
from torch import nn
from nbrunner.elastic import ElasticTrainer

def get_datasets():
    import os, pathlib, torch
    from torch.utils.data import TensorDataset
    pathlib.Path(os.environ["NBRUNNER_JOB_DIR"], f"learner-{os.getpid()}.uid").write_text(str(os.getuid()))
    g = torch.Generator().manual_seed(0)
    X = torch.randn(256, 8, generator=g)
    y = (X.sum(1) > 0).long()
    return TensorDataset(X[:200], y[:200]), TensorDataset(X[200:], y[200:])

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
history = ElasticTrainer(model, get_datasets, nn.CrossEntropyLoss(), torch.optim.SGD(model.parameters(), lr=0.1)).train(
    epochs=2, effective_batch_size=32, min_gpus=2, max_gpus=2, timeout=60)
print("trained", history.epochs[-1]["val_accuracy"])"""


def as_user(user: str, code: str, *args: str) -> subprocess.CompletedProcess:
    """``python -c code args`` as ``user`` (a fresh login environment, this test's Python)."""
    return subprocess.run(["runuser", "-u", user, "--", sys.executable, "-c", code, *args], capture_output=True,
                          text=True, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(REPO)},
                          cwd="/", timeout=120)


def can_read(user: str, path: Path) -> bool:
    p = as_user(user, "import sys\ntry:\n open(sys.argv[1]).read(1)\nexcept PermissionError:\n sys.exit(3)", str(path))
    assert p.returncode in (0, 3), p.stderr
    return p.returncode == 0


@pytest.fixture(scope="module")
def accounts():
    """alice and bob (with homes), and a service account in the group that owns the storage."""
    with unix_accounts(ALICE, BOB, service=SERVICE) as made:
        yield made


@pytest.fixture(scope="module")
def owners_cluster(accounts):
    """A cluster whose workers run jobs as their owners: host A (embedded Redis, scheduler, one
    worker, 1 CPU slot) and host B (a second worker, 1 CPU slot); ``runs/`` belongs to the
    service's group."""
    ws = short_tmpdir()
    os.chmod(ws, 0o711)  # users reach their job directories and the Redis socket, and list nothing
    (ws / "runs").mkdir()
    os.chown(ws / "runs", 0, accounts[SERVICE].pw_gid)
    os.chmod(ws / "runs", 0o751)
    make_notebook(ws / "proj" / "who.ipynb", WHO)
    make_notebook(ws / "probe.ipynb", PROBE, parameters="OTHER = ''\nWORKER = ''")
    make_notebook(ws / "train.ipynb", TRAIN)
    make_notebook(ws / "sleep.ipynb", SLEEP)
    home = Path(accounts[ALICE].pw_dir)
    (home / "proj").mkdir()
    os.chown(home / "proj", accounts[ALICE].pw_uid, accounts[ALICE].pw_gid)
    saved = {k: os.environ.pop(k) for k in ("NBRUNNER_REDIS_URL", "NBRUNNER_STORAGE") if k in os.environ}
    os.environ["NBRUNNER_TEST_SECRET"] = SECRET
    settings = Settings.load(ws)
    sup = Supervisor(settings, gpus=1, workers=1, host="hostA", run_as_owner=True).start()
    log = open(settings.state_dir / "logs" / "worker-b.log", "ab")
    b = subprocess.Popen([sys.executable, "-m", "nbrunner", "worker", "--slots", "0", "--host", "hostB", "--run-as-owner"],
                         env=sup.env(), stdout=log, stderr=subprocess.STDOUT, cwd=ws, start_new_session=True)
    try:
        cluster = Cluster(settings, reachable(settings), sup)
        cluster.wait_ready(2, timeout=90)
        yield cluster
    finally:
        b.terminate()
        try:
            b.wait(20)
        except subprocess.TimeoutExpired:
            b.kill()
            b.wait()
        log.close()
        sup.stop()
        os.environ.pop("NBRUNNER_TEST_SECRET", None)
        os.environ.update(saved)
        subprocess.run(["rm", "-rf", str(ws)], check=False)


def ended(job, timeout: float = 180):
    """The job once it has ended and its worker released it (its directory handed over)."""
    job.wait(timeout=timeout)
    wait_for(lambda: job.refresh().record.phase.value == "ended", 60, 0.1, f"job {job.id} released")
    return job.record


def test_a_job_runs_and_writes_as_its_owner(owners_cluster, accounts):
    alice = accounts[ALICE]
    job = owners_cluster.submit("proj/who.ipynb", owner=ALICE, max_gpus=0)
    rec = ended(job)
    assert rec.status == "completed", rec.error
    assert rec.metrics["uid"] == alice.pw_uid  # nbrunner.record from alice's kernel
    jd = owners_cluster.settings.job_dir(job.id)
    log = (jd / "logs" / "driver.log").read_text()
    groups = sorted(set(os.getgrouplist(ALICE, alice.pw_gid)))
    assert f"user {ALICE} groups {groups} cwd {alice.pw_dir}/proj" in log, log
    assert (Path(alice.pw_dir) / "proj" / "made-in-cwd.txt").stat().st_uid == alice.pw_uid

    st = os.stat(jd)
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (alice.pw_uid, accounts[SERVICE].pw_gid, 0o2770)
    files = ["input.ipynb", "output.ipynb", "output.html", "job.json", "metrics.jsonl", "made-by-kernel.txt",
             "logs/driver.log", "logs/papermill.log"]
    for name in files:
        st = os.lstat(jd / name)
        assert st.st_uid == alice.pw_uid and not st.st_mode & 0o007, (name, st)
        assert can_read(SERVICE, jd / name), name  # the service's group reads every file
    assert can_read(ALICE, jd / "output.html") and can_read(ALICE, jd / "logs" / "driver.log")
    assert not can_read(BOB, jd / "output.html") and not can_read(BOB, jd / "logs" / "driver.log")
    p = as_user(BOB, "import os, sys; os.listdir(sys.argv[1])", str(jd))
    assert p.returncode != 0 and "PermissionError" in p.stderr

    env = json.loads((jd / "env.json").read_text())
    password = (owners_cluster.settings.state_dir / PASSWORD_FILE).read_text().strip()
    assert not [k for k, v in env.items() if SECRET in v or password in v], "a worker secret reached the kernel"
    assert "NBRUNNER_TEST_SECRET" not in env and "RQ_WORKER_ID" not in env
    assert (env["HOME"], env["USER"], env["LOGNAME"]) == (alice.pw_dir, ALICE, ALICE)
    assert redis.Redis.from_url(env["NBRUNNER_REDIS_URL"]).connection_pool.connection_kwargs["username"] == \
        job_user(job.id)


def test_the_job_credential_reaches_only_its_own_keys_and_ends_with_the_job(owners_cluster, accounts):
    other = owners_cluster.submit("proj/who.ipynb", owner=BOB, max_gpus=0)
    assert ended(other).status == "completed"
    worker = sorted(owners_cluster.store.r.smembers(WORKERS))[0]
    job = owners_cluster.submit("probe.ipynb", {"OTHER": other.id, "WORKER": worker}, owner=ALICE, max_gpus=0)
    rec = ended(job)
    assert rec.status == "completed", rec.error
    jd = owners_cluster.settings.job_dir(job.id)
    probe = json.loads((jd / "probe.json").read_text())
    assert probe.pop("own") is True
    assert probe == {k: "refused" for k in probe}, probe
    before = owners_cluster.store.r.get(job_key(other.id))
    assert json.loads(before)["owner"] == BOB and owners_cluster.store.r.exists(worker_key(worker))
    # after the job: its user is gone, and its credential opens nothing
    assert owners_cluster.store.r.execute_command("ACL", "GETUSER", job_user(job.id)) is None
    with pytest.raises(redis.AuthenticationError):
        redis.Redis.from_url((jd / "url.txt").read_text()).get(job_key(job.id))
    # nor can alice read the password nbrunner's own processes use
    assert not can_read(ALICE, owners_cluster.settings.state_dir / PASSWORD_FILE)


def test_elastic_learners_on_both_hosts_run_as_the_owner(owners_cluster, accounts):
    alice = accounts[ALICE]
    job = owners_cluster.submit("train.ipynb", owner=ALICE, min_gpus=2, max_gpus=2)
    rec = ended(job, timeout=300)
    assert rec.status == "completed", rec.error
    jd = owners_cluster.settings.job_dir(job.id)
    uids = {p.name: (p.read_text(), p.stat().st_uid) for p in jd.glob("learner-*.uid")}
    assert len(uids) >= 2, uids  # the driver's host ran one learner, host B's agent the other
    assert set(uids.values()) == {(str(alice.pw_uid), alice.pw_uid)}, uids
    logs = sorted(jd.glob("logs/learner-*.log"))
    assert len(logs) >= 2 and all(p.stat().st_uid == alice.pw_uid for p in logs), logs
    timeline = {h for point in owners_cluster.store.r.xrange("nbrunner:slotlog")
                for h in [point[1]["slot"].split("/")[0]] if point[1]["job"] == job.id}
    assert timeline == {"hostA", "hostB"}


def test_a_cancelled_job_leaves_no_process_and_no_credential(owners_cluster, accounts):
    import psutil

    alice = accounts[ALICE]

    def alices() -> list[str]:
        return [" ".join(p.info["cmdline"] or []) for p in psutil.process_iter(["uids", "cmdline"])
                if p.info["uids"] and p.info["uids"].real == alice.pw_uid]

    job = owners_cluster.submit("sleep.ipynb", owner=ALICE, max_gpus=0)
    wait_for(lambda: job.refresh().record.status == "running" and any("ipykernel" in c for c in alices()),
             120, 0.2, "alice's kernel")
    assert owners_cluster.store.r.execute_command("ACL", "GETUSER", job_user(job.id)) is not None
    job.cancel()
    rec = ended(job)
    assert rec.status == "cancelled"
    assert alices() == []
    assert owners_cluster.store.r.execute_command("ACL", "GETUSER", job_user(job.id)) is None
    html = owners_cluster.settings.job_dir(job.id) / "output.html"
    assert html.stat().st_uid == alice.pw_uid and can_read(ALICE, html) and not can_read(BOB, html)


def test_an_owner_without_an_account_fails_in_one_line(owners_cluster):
    name = f"nbrnobody{TAG}"
    job = owners_cluster.submit("proj/who.ipynb", owner=name, max_gpus=0)
    rec = ended(job)
    assert rec.status == "failed" and rec.error == f"no Unix account for owner '{name}'"
    assert (owners_cluster.settings.job_dir(job.id) / "output.html").is_file()


def test_a_worker_refuses_the_option_without_root_and_a_plain_worker_this_cluster(owners_cluster, accounts):
    ws = str(owners_cluster.settings.workspace)
    p = as_user(BOB, "import sys\nfrom nbrunner.client.cli import main\nsys.argv[0] = 'nbrunner'\nmain()",
                "worker", "--run-as-owner")
    assert p.returncode == 2 and p.stderr.strip() == \
        "nbrunner: --run-as-owner needs root (it starts each job as its owner's Unix account)", p.stderr
    plain = subprocess.run([sys.executable, "-m", "nbrunner", "worker", "--slots", "none", "--dir", ws],
                           capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert plain.returncode == 1 and plain.stderr.strip().splitlines() == [
        "nbrunner: this cluster runs jobs as their owners: start the worker with --run-as-owner (as root)"]


def test_a_jobs_inputs_are_its_owners_files_in_its_working_directory(owners_cluster, accounts):
    alice = accounts[ALICE]
    ws = owners_cluster.settings.workspace
    make_notebook(ws / "proj" / "inputs.ipynb", "import os\nprint('read', open('data/rows.csv').read(), os.getcwd())\n"
                                                "open('data/rows.csv', 'a').write('+alice')")
    (ws / "proj" / "data").mkdir(exist_ok=True)
    (ws / "proj" / "data" / "rows.csv").write_text("rows")
    job = owners_cluster.submit(ws / "proj" / "inputs.ipynb", owner=ALICE, max_gpus=0, inputs=["data"])
    rec = ended(job)
    assert rec.status == "completed", rec.error
    work = owners_cluster.settings.job_dir(job.id) / "work"
    assert f"read rows {work}" in (work.parent / "logs" / "driver.log").read_text()
    assert (work / "data" / "rows.csv").read_text() == "rows+alice"  # her copy, which she may change
    for path, mode in ((work, 0o2770), (work / "data", 0o2770), (work / "data" / "rows.csv", 0o640)):
        st = os.lstat(path)
        assert (st.st_uid, st.st_gid) == (alice.pw_uid, accounts[SERVICE].pw_gid), path
        # (the owner's hand-over chmod drops setgid: she is not in the service's group)
        assert stat.S_IMODE(st.st_mode) & 0o777 == mode & 0o777, (path, oct(st.st_mode))
    assert (ws / "proj" / "data" / "rows.csv").read_text() == "rows"
    assert not can_read(BOB, work / "data" / "rows.csv")
