"""A job's files read back (log, metrics, output) follow no link the job left in its directory: a job
run as its owner could point one at a file of another user's that the service may read."""
from __future__ import annotations

import pytest

from nbrunner.control.job_files import read_log, read_metrics, read_output
from nbrunner.core.errors import NotFound
from nbrunner.control.safe_write import list_beneath, open_beneath


def test_reading_a_job_directory_follows_no_link(tmp_path):
    job, other = tmp_path / "job", tmp_path / "other"
    (other / "logs").mkdir(parents=True)
    (other / "logs" / "driver.log").write_text("someone else's log")
    (other / "logs" / "learner-L1.log").write_text("someone else's learner")
    (other / "metrics.jsonl").write_text('{"loss": 1}\n')
    (other / "output.ipynb").write_text("{}")
    job.mkdir()
    (job / "logs").symlink_to(other / "logs")
    (job / "metrics.jsonl").symlink_to(other / "metrics.jsonl")
    (job / "output.ipynb").symlink_to(other / "output.ipynb")
    assert read_log(job, 0, finished=True) == ("", 0)
    assert read_metrics(job) == []
    with pytest.raises(NotFound):
        read_output(job, "j1")
    with pytest.raises(OSError):
        open_beneath(job, "logs", "driver.log")
    (job / "logs").unlink()
    (job / "logs").mkdir()
    (job / "logs" / "driver.log").write_text("mine\n")
    (job / "logs" / "learner-L2.log").symlink_to(other / "logs" / "learner-L1.log")
    assert read_log(job, 0, finished=True)[0] == "mine\n"
    assert list(list_beneath(job, "logs")) == ["driver.log"]
