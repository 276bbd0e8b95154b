"""A job run as its owner: the work horse's side (``nbrunner worker --run-as-owner``).

The horse stays root and keeps the cluster's credential; the notebook runs in a process of the
owner's (:mod:`.owner_runner`), which starts a fresh kernel as its own child (never the worker's
pre-warmed kernel nor its fork server: both run as the worker's user), and learners as its
children in turn.  Meanwhile the horse carries out the job's requests
(:class:`nbrunner.control.channel_server.ChannelServer`): the job's processes hold only the
job's own Redis credential (:mod:`nbrunner.control.job_access`).  A job whose owner has no Unix
account (or a system one) fails with a one-line error, its ``output.html`` rendered from its
input as for any job that never ran.
"""
from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time

from ..control.channel_server import ChannelServer
from ..control.job_access import JobCredential, grant_access, restore_access
from ..core.config import JOB_CHANNEL, REDIS_URL, Settings
from ..core.errors import one_line
from ..core.lifecycle import KERNEL_KILLED
from ..core.models import JobRecord
from ..control.store import JobStore
from ..core.unix_account import Account
from .as_owner import environment, give_job_dir, identity, resolve, service_group
from .attempt import die_with_parent_preexec, end, job_environment

log = logging.getLogger("nbrunner.execute")
SERVE_WAIT_S = 0.2  # the horse notices its runner's end this often
CHECK_ACCESS_S = 5.0  # and that Redis still has the job's user (a restarted server has lost it)


def run_as_owner(store: JobStore, settings: Settings, rec: JobRecord) -> str:
    """Run started attempt ``rec`` as its owner; returns the final status."""
    account, refused = resolve(rec.owner)
    give_job_dir(settings.job_dir(rec.id), account, service_group(settings.storage))
    if refused:
        return end(store, settings, rec, refused, False)
    if rec.input_refs:  # copied as root, each entry the owner's as it is made (no link followed)
        from ..control.input_store import copy_for_job

        failed = copy_for_job(settings, rec, (account.uid, service_group(settings.storage)))
        if failed:
            return end(store, settings, rec, failed, False)
    cred = grant_access(store, rec.id)
    env = environment(account, {**job_environment(settings, rec), REDIS_URL.name: cred.url, JOB_CHANNEL.name: "worker"})
    try:
        runner, result = start_runner(rec, settings, account, env)
    except (OSError, subprocess.SubprocessError) as exc:  # e.g. this Python is out of the account's reach
        return end(store, settings, rec, one_line(f"cannot start the notebook as {account.name}: {exc}"), False)
    serve(store, cred, runner, rec.attempt)
    error, timed_out = outcome(runner, result)
    return end(store, settings, rec, error, timed_out)


def start_runner(rec: JobRecord, settings: Settings, account: Account, env: dict[str, str]):
    """The owner's process running the notebook, and the read end of its result pipe."""
    job_dir = settings.job_dir(rec.id)
    r, w = os.pipe()
    try:
        proc = subprocess.Popen([sys.executable, "-m", "nbrunner.execution.owner_runner", str(w)], stdin=subprocess.PIPE,
                                pass_fds=(w,), env=env, cwd=job_dir, preexec_fn=die_with_parent_preexec,
                                **identity(account))
    except BaseException:
        os.close(r)
        raise
    finally:
        os.close(w)
    proc.stdin.write(json.dumps({"record": rec.to_json(), "job_dir": str(job_dir)}).encode())
    proc.stdin.close()
    os.set_blocking(r, False)
    return proc, r


def serve(store: JobStore, cred: JobCredential, runner: subprocess.Popen, attempt: int | None = None) -> None:
    """Carry out the job's requests (on behalf of ``attempt``) until its runner exits."""
    server = ChannelServer(store, cred.job_id, attempt)
    check = time.monotonic() + CHECK_ACCESS_S
    while runner.poll() is None:
        try:
            server.serve(SERVE_WAIT_S)
            if time.monotonic() > check:
                check = time.monotonic() + CHECK_ACCESS_S
                if restore_access(store, cred):
                    log.warning("job %s: Redis had lost the job's user: made again", cred.job_id)
        except Exception as exc:  # noqa: BLE001 - Redis restarting: the job's requests wait
            log.warning("job %s: requests: %s: %s", cred.job_id, exc.__class__.__name__, exc)
            time.sleep(SERVE_WAIT_S)


def outcome(runner: subprocess.Popen, result: int) -> tuple[str | None, bool]:
    """The runner's ``(error, timed_out)``; a runner that ended without one failed with its exit."""
    try:
        raw = os.read(result, 65536)
    except BlockingIOError:
        raw = b""
    finally:
        os.close(result)
    try:
        answer = json.loads(raw.decode().strip().splitlines()[-1])
        return answer["error"], bool(answer["timed_out"])
    except (ValueError, IndexError, KeyError, TypeError, AttributeError):
        code = runner.returncode
    if code is not None and code < 0:
        return f"{KERNEL_KILLED} by {signal.Signals(-code).name} (the notebook's process)", False
    return f"the notebook's process exited with code {code}", False
