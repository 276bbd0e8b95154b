"""Notifications on a real cluster: a real SMTP server (aiosmtpd) and a real HTTP endpoint
receiving Apprise's json:// posts; the scheduler's notifier sends them, retries a failing target
with back-off, then logs it failed; secrets are masked in the log; targets the allow list does not
admit, or malformed ones, are refused in one line and change nothing."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from nbrunner.core.errors import InvalidRequest
from support import free_port, make_notebook, own_cluster, short_tmpdir, wait_for

pytestmark = pytest.mark.slow


class Inbox:
    """aiosmtpd's handler: every message received, as text."""

    def __init__(self):
        self.messages: list[dict] = []

    async def handle_DATA(self, server, session, envelope):
        self.messages.append({"to": envelope.rcpt_tos, "text": envelope.content.decode("utf-8", "replace")})
        return "250 OK"


@pytest.fixture(scope="module")
def smtp():
    from aiosmtpd.controller import Controller

    inbox = Inbox()
    port = free_port()  # aiosmtpd checks it is up by connecting to the port it was given: not 0
    controller = Controller(inbox, hostname="127.0.0.1", port=port)
    controller.start()
    yield inbox, port
    controller.stop()


@pytest.fixture(scope="module")
def webhook():
    posts: list[tuple[str, dict, dict]] = []

    class Hook(BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            posts.append((self.path, body, dict(self.headers)))
            self.send_response(500 if self.path.startswith("/fail") else 200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield posts, server.server_address[1]
    server.shutdown()


@pytest.fixture(scope="module")
def notify_cluster(smtp, webhook):
    ws = short_tmpdir("nbnt")
    make_notebook(ws / "ok.ipynb", "print('fine')")
    make_notebook(ws / "boom.ipynb", "raise ValueError('boom')")
    make_notebook(ws / "trial.ipynb", "import nbrunner\nnbrunner.record('n', N)", parameters="N = 0")
    env = {"NBRUNNER_SMTP_URL": f"smtp://127.0.0.1:{smtp[1]}?from=nbrunner@example.org",
           "NBRUNNER_NOTIFY_ALLOW": "mailto,json://127.0.0.1", "NBRUNNER_NOTIFY_RETRIES": "2",
           "NBRUNNER_NOTIFY_BACKOFF_S": "0.4", "NBRUNNER_NOTIFY_PAGE_URL": "https://lab.example.org/lab"}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        with own_cluster(ws, gpus=0, workers=1) as cluster:
            yield cluster
    finally:
        for k, v in saved.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)


def log_of(cluster, subject: str, outcome: str | None = None) -> list[dict]:
    return [e for e in cluster.backend.notification_log() if e["subject"] == subject
            and (outcome is None or e["outcome"] == outcome)]


def test_a_finished_job_reaches_an_smtp_inbox_and_a_webhook(notify_cluster, smtp, webhook):
    (inbox, _), (posts, port) = smtp, webhook
    backend = notify_cluster.backend
    kept = backend.set_notifications({"targets": ["mailto:alice@example.org", f"json://127.0.0.1:{port}/ok"],
                                      "on": ["failed", "completed"]})
    assert kept == {"targets": ["mailto:alice@example.org", f"json://127.0.0.1:{port}/ok"],
                    "on": ["completed", "failed"]}
    assert backend.notifications() == kept
    job = notify_cluster.submit(notify_cluster.settings.workspace / "boom.ipynb")
    job.wait(timeout=120)
    assert job.status == "failed"
    wait_for(lambda: len(log_of(notify_cluster, f"job {job.id}", "sent")) == 2, 60, 0.2, "two deliveries")
    mail = next(m for m in inbox.messages if job.id in m["text"])
    assert mail["to"] == ["alice@example.org"]
    assert "Subject: nbrunner: job boom failed" in mail["text"] and "ValueError: boom" in mail["text"]
    assert f"https://lab.example.org/lab?nbrunner-job={job.id}" in mail["text"]
    path, body, _ = next(p for p in posts if job.id in p[1]["message"])
    assert path == "/ok" and body["title"] == "nbrunner: job boom failed" and body["type"] == "failure"
    assert "ValueError: boom" in body["message"] and f"?nbrunner-job={job.id}" in body["message"]
    for entry in log_of(notify_cluster, f"job {job.id}"):
        assert entry["event"] == "failed" and entry["outcome"] == "sent" and entry["attempt"] == 1


def test_a_failing_target_is_retried_with_back_off_then_logged_failed_with_its_secret_masked(notify_cluster,
                                                                                              webhook):
    posts, port = webhook
    target = f"json://hook:s3cr3t-token@127.0.0.1:{port}/fail"
    notify_cluster.backend.set_notifications({"targets": [target], "on": ["completed"]})
    job = notify_cluster.submit(notify_cluster.settings.workspace / "ok.ipynb", name="fine-job")
    job.wait(timeout=120)
    assert job.status == "completed"
    subject = f"job {job.id}"
    wait_for(lambda: log_of(notify_cluster, subject, "failed"), 60, 0.2, "the final failure")
    entries = list(reversed(log_of(notify_cluster, subject)))  # oldest first
    assert [(e["outcome"], e["attempt"]) for e in entries] == [("retrying", 1), ("retrying", 2), ("failed", 3)]
    times = [datetime.fromisoformat(e["time"].replace("Z", "+00:00")) for e in entries]
    gaps = [(b - a).total_seconds() for a, b in zip(times, times[1:])]
    assert gaps[0] >= 0.4 and gaps[1] >= 0.8, gaps  # NBRUNNER_NOTIFY_BACKOFF_S, doubled
    assert all("s3cr3t" not in json.dumps(e) for e in entries) and "127.0.0.1" in entries[0]["target"]
    assert len([p for p in posts if p[0] == "/fail" and job.id in p[1]["message"]]) == 3
    assert "s3cr3t" not in json.dumps(notify_cluster.backend.notification_log())


def test_a_jobs_own_notify_overrides_its_owners_settings(notify_cluster, smtp):
    inbox, _ = smtp
    notify_cluster.backend.set_notifications({"targets": ["mailto:alice@example.org"], "on": ["failed"]})
    job = notify_cluster.submit(notify_cluster.settings.workspace / "ok.ipynb",
                                notify={"targets": ["mailto:bob@example.org"], "on": ["completed"]})
    job.wait(timeout=120)
    wait_for(lambda: log_of(notify_cluster, f"job {job.id}", "sent"), 60, 0.2, "bob's mail")
    assert [m["to"] for m in inbox.messages if job.id in m["text"]] == [["bob@example.org"]]


def test_a_sweep_is_told_once_when_it_ends_and_its_trials_not_one_by_one(notify_cluster, webhook):
    posts, port = webhook
    notify_cluster.backend.set_notifications({"targets": [f"json://127.0.0.1:{port}/ok"],
                                              "on": ["sweep", "completed"]})
    spec = {"parameters": {"N": [1, 2]}, "objective": {"metric": "n", "mode": "max"}}
    sweep = notify_cluster.sweep(notify_cluster.settings.workspace / "trial.ipynb", spec)
    sweep.wait(timeout=180)
    wait_for(lambda: log_of(notify_cluster, f"sweep {sweep.id}", "sent"), 60, 0.2, "the sweep's post")
    told = [p[1] for p in posts if sweep.id in p[1]["message"]]
    assert len(told) == 1 and told[0]["title"].startswith("nbrunner: sweep ") and "2 trials" in told[0]["message"]
    trials = {j.id for j in sweep.jobs}
    assert len(trials) == 2 and not [e for e in notify_cluster.backend.notification_log()
                                     if e["subject"].split()[-1] in trials]


def test_a_pipelines_end_is_told_through_notify_pipeline_ended(notify_cluster, webhook):
    from nbrunner.control.notifications import notify_pipeline_ended

    posts, port = webhook
    notify_cluster.backend.set_notifications({"targets": [f"json://127.0.0.1:{port}/ok"], "on": ["pipeline"]})
    record = {"id": "p1x2", "name": "digits", "owner": notify_cluster.backend.user, "status": "completed",
              "steps": {"prep": {"status": "completed"}, "train": {"status": "completed"}}}
    assert notify_pipeline_ended(notify_cluster.store, record) == 1
    assert notify_pipeline_ended(notify_cluster.store, record) == 0  # told once
    wait_for(lambda: any("p1x2" in p[1]["message"] for p in posts), 60, 0.2, "the pipeline's post")
    body = next(p[1] for p in posts if "p1x2" in p[1]["message"])
    assert body["title"] == "nbrunner: pipeline digits completed" and "2 completed" in body["message"]


def test_disallowed_or_malformed_targets_are_refused_in_one_line_and_change_nothing(notify_cluster, webhook):
    backend = notify_cluster.backend
    before = backend.set_notifications({"targets": ["mailto:alice@example.org"], "on": ["failed"]})
    for target, said in (("slack://T1JJ3T3L2/A1BRTD4JD/TIiajkdnlazkcOXrIdevi7FQ", "slack is not allowed"),
                         ("json://10.0.0.7/hook", "json://10.0.0.7 is not allowed"),
                         ("mailto:not-an-address", "malformed e-mail target"),
                         ("mailtos://user:pw@smtp.evil.example", "write mailto:ADDRESS"),
                         ("just words", "malformed notification target")):
        with pytest.raises(InvalidRequest, match=said) as err:
            backend.set_notifications({"targets": [target], "on": ["failed"]})
        assert "\n" not in str(err.value)
    with pytest.raises(InvalidRequest, match="unknown event 'finished'"):
        backend.set_notifications({"targets": [], "on": ["finished"]})
    with pytest.raises(InvalidRequest, match="slack is not allowed"):
        notify_cluster.submit(notify_cluster.settings.workspace / "ok.ipynb", notify=["slack://a/b/c"])
    assert backend.notifications() == before
    env = {**os.environ, "NBRUNNER_WORKSPACE": str(notify_cluster.settings.workspace)}
    cli = subprocess.run([sys.executable, "-m", "nbrunner", "notify", "--add", "slack://a/b/c"], env=env,
                         capture_output=True, text=True, timeout=120)
    assert cli.returncode == 1 and cli.stderr.count("\n") == 1 and "slack is not allowed" in cli.stderr
    added = subprocess.run([sys.executable, "-m", "nbrunner", "notify", "--add", "mailto:carol@example.org",
                            "--on", "completed", "--on", "sweep", "--json"], env=env, capture_output=True,
                           text=True, timeout=120)
    assert added.returncode == 0, added.stderr
    assert json.loads(added.stdout) == {"targets": ["mailto:alice@example.org", "mailto:carol@example.org"],
                                        "on": ["completed", "sweep"]}
