"""The pure rules of running jobs as their owners: a job's Redis rules and URL, the environment
its processes keep, where its kernel starts, which accounts are refused; and how a privileged
process writes into a job directory its owner controls (replacing a link, never following it)."""
from __future__ import annotations

import os
from urllib.parse import urlsplit

import pytest

from nbrunner.core.job_access import acl_rules, job_user, url_with_user
from nbrunner.control.safe_write import write_into
from nbrunner.core.unix_account import Account, owner_environment, refusal, workdir_candidates

ALICE = Account(name="alice", uid=1500, gid=1500, groups=(1500, 27), home="/home/alice", shell="/bin/bash")


def test_a_jobs_rules_name_only_its_own_keys_and_read_commands():
    rules = acl_rules("abc12345", "pw")
    assert rules[:3] == ["reset", "on", ">pw"] and "resetchannels" in rules
    keys = sorted(r[1:] for r in rules if r.startswith("~"))
    assert keys == ["nbrunner:channel:abc12345", "nbrunner:channel:abc12345:*", "nbrunner:grant:abc12345",
                    "nbrunner:job:abc12345"]
    assert [r for r in rules if r.startswith("&")] == ["&nbrunner:grant:abc12345"]
    assert sorted(r for r in rules if r[0] in "+-") == ["+blpop", "+get", "+ping", "+rpush", "+subscribe",
                                                       "+unsubscribe", "-@all"]
    for bad in ("a*", "a b", "", "ab:c", "é1"):  # a job id becomes a key pattern
        with pytest.raises(ValueError):
            acl_rules(bad, "pw")
    assert job_user("abc12345") == "nbrunner-job-abc12345"


@pytest.mark.parametrize("url, host, path", [
    ("unix://:secret@/ws/.nbrunner-socket/redis.sock", "", "/ws/.nbrunner-socket/redis.sock"),
    ("redis://admin:secret@10.0.0.1:6380/0?password=other&socket_timeout=5", "10.0.0.1", "/0"),
    ("rediss://[::1]:6379/2", "::1", "/2"),
])
def test_a_jobs_url_logs_in_as_its_user_and_keeps_nothing_of_the_clusters_credentials(url, host, path):
    job = url_with_user(url, "nbrunner-job-x1", "p/w@:")
    parts = urlsplit(job)
    assert (parts.username, parts.hostname or "", parts.path) == ("nbrunner-job-x1", host, path)
    assert "secret" not in job and "other" not in job and "admin" not in job
    import redis

    kwargs = redis.connection.parse_url(job)
    assert (kwargs["username"], kwargs["password"]) == ("nbrunner-job-x1", "p/w@:")


def test_a_jobs_environment_keeps_no_secret_of_the_workers():
    worker = {"PATH": "/venv/bin:/usr/bin", "LANG": "C.UTF-8", "LC_ALL": "C", "PYTHONPATH": "/src",
              "NCCL_SOCKET_IFNAME": "eth0", "NBRUNNER_ELASTIC_THREADS": "2", "NBRUNNER_HOST": "h1",
              "NBRUNNER_REDIS_URL": "unix://:pw@/s", "NBRUNNER_WORKSPACE": "/ws", "AWS_SECRET_ACCESS_KEY": "k",
              "JUPYTERHUB_API_TOKEN": "t", "HOME": "/root", "USER": "root", "RQ_WORKER_ID": "w", "SUDO_USER": "x"}
    env = owner_environment(ALICE, worker, {"NBRUNNER_JOB_ID": "j1", "NBRUNNER_REDIS_URL": "unix://job@/s"})
    assert env == {"PATH": "/venv/bin:/usr/bin", "LANG": "C.UTF-8", "LC_ALL": "C", "PYTHONPATH": "/src",
                   "NCCL_SOCKET_IFNAME": "eth0", "NBRUNNER_ELASTIC_THREADS": "2", "NBRUNNER_HOST": "h1",
                   "HOME": "/home/alice", "USER": "alice", "LOGNAME": "alice", "SHELL": "/bin/bash",
                   "NBRUNNER_JOB_ID": "j1", "NBRUNNER_REDIS_URL": "unix://job@/s"}


def test_the_kernel_starts_in_the_home_relative_directory_first():
    assert workdir_candidates("/home/alice", "proj/a.ipynb") == ["/home/alice/proj"]
    assert workdir_candidates("/home/alice", "a.ipynb", "data") == ["/home/alice/data", "/home/alice"]
    assert workdir_candidates("/home/alice", "/srv/a.ipynb") == []
    assert workdir_candidates("/home/alice", "../bob/a.ipynb", "../bob") == []


def test_accounts_refused():
    assert refusal("ghost", None, 1000) == "no Unix account for owner 'ghost'"
    assert refusal("alice", ALICE, 1000) is None
    root = Account(name="root", uid=0, gid=0, groups=(0,), home="/root", shell="/bin/sh")
    assert refusal("root", root, 1000) == "owner 'root' is a system account (uid 0 < 1000): jobs run only as user accounts"


def test_writing_into_a_job_directory_replaces_a_link_instead_of_following_it(tmp_path):
    job, target = tmp_path / "job", tmp_path / "precious"
    job.mkdir()
    target.write_text("keep")
    (job / "output.html").symlink_to(target)
    write_into(job, "output.html", b"<html>")
    assert target.read_text() == "keep" and not (job / "output.html").is_symlink()
    assert (job / "output.html").read_bytes() == b"<html>" and os.listdir(job) == ["output.html"]
