"""The CLI's plain tables (client.render): columns, colours, a terminal's width, the job rows."""
from __future__ import annotations

from nbrunner.client.render import JOB_COLUMNS, cluster_text, job_detail, jobs_table, jobs_text, text_table
from nbrunner.core.models import JobRecord


def test_columns_are_as_wide_as_their_widest_cell_two_spaces_apart():
    out = text_table(("id", "name", "status"), [("a", "hello", ("completed", "green")), ("bbbbbbbb", "x\ny", "failed")],
                     title="2 jobs")
    assert out.splitlines() == ["2 jobs",
                                "id        name   status",
                                "a         hello  completed",
                                "bbbbbbbb  x y    failed"]  # a cell's line break becomes a space


def test_colours_only_when_asked_and_cut_to_a_width():
    rows = [("a", ("completed", "green"), "a very long error message")]
    assert "\x1b" not in text_table(("id", "status", "error"), rows)
    coloured = text_table(("id", "status", "error"), rows, color=True).splitlines()
    assert coloured[0] == "\x1b[1mid\x1b[0m  \x1b[1mstatus\x1b[0m     \x1b[1merror\x1b[0m"
    assert coloured[1] == "a   \x1b[32mcompleted\x1b[0m  a very long error message"
    assert text_table(("id", "status", "error"), rows, width=20).splitlines() == ["id  status     error",
                                                                               "a   completed  a ver"]
    assert text_table(("id", "status", "error"), rows, width=6).splitlines() == ["id  st", "a   co"]


def test_job_rows_have_the_rich_tables_cells():
    queued = JobRecord(id="q1", name="wait", notebook="a.ipynb", queue_position=3,
                       waiting={"code": "gpus_busy", "message": "needs 1 GPU; 8 of the 8 go to 2 jobs ahead of it"})
    failed = JobRecord(id="f1", name="bad", notebook="b.ipynb", status="failed", error="ValueError: no")
    done = JobRecord(id="c1", name="ok", notebook="c.ipynb", status="completed", metrics={"loss": 0.123456, "accuracy": 0.9})
    lines = jobs_text([queued, failed, done]).splitlines()
    assert lines[0].split() == ["id", "name", "status", "waiting", "gpus", "priority", "duration", "error", "/",
                                "metric"]
    assert lines[1].split()[:5] == ["q1", "wait", "queued", "#3", "gpus_busy"] and lines[1].endswith("-")
    assert lines[2].split()[:3] == ["f1", "bad", "failed"] and lines[2].endswith("ValueError: no")
    assert lines[3].endswith("accuracy=0.9")
    status_column = lines[0].index("status")
    assert all(line[status_column - 2:status_column] == "  " for line in lines)
    rich_table = jobs_table([queued, failed, done])  # what notebooks print: the same columns and cells
    assert [c.header for c in rich_table.columns] == list(JOB_COLUMNS)
    assert list(rich_table.columns[0].cells) == ["q1", "f1", "c1"]
    assert list(rich_table.columns[2].cells) == ["[yellow]queued #3[/]", "[red]failed[/]", "[green]completed[/]"]
    # no job waits: no waiting column, in either table
    assert jobs_text([failed, done]).splitlines()[0].split()[:4] == ["id", "name", "status", "gpus"]
    assert "waiting" not in [c.header for c in jobs_table([failed, done]).columns]


def test_cluster_text_lists_every_slot_under_the_policy_line():
    status = {"policy": "fairshare", "gpus_free": 1, "gpus_total": 3,
              "hosts": [{"name": "a", "slots": [{"index": 0, "job": "j1"}, {"index": 1, "job": None}]},
                        {"name": "bb", "slots": [{"index": 0, "job": "j2"}]}]}
    assert cluster_text(status).splitlines() == ["policy fairshare: 1 of 3 GPUs free",
                                                 "host  slot  job",
                                                 "a     0     j1",
                                                 "a     1     -",
                                                 "bb    0     j2"]


def test_a_queued_jobs_row_and_detail_say_why_it_waits_and_when_it_should_start():
    why = {"code": "gpus_busy", "message": "needs 4 GPUs; 6 of the 8 go to the 2 jobs ahead of it"}
    queued = JobRecord(id="q1", name="wait", notebook="a.ipynb", queue_position=2, waiting=why,
                       expected_start="2026-01-01T10:05:00.000Z", expected_end="2026-01-01T10:15:00.000Z")
    running = JobRecord(id="r1", name="run", notebook="a.ipynb", status="running", expected_end="2026-01-01T10:05:00.000Z")
    lines = jobs_text([queued, running]).splitlines()
    waiting_at = lines[0].index("waiting")
    assert lines[1][waiting_at:].startswith("gpus_busy starts ~10:05")
    assert lines[2][waiting_at:waiting_at + 9].strip() == ""  # a running job does not wait
    detail = job_detail(queued).splitlines()
    assert [line.split(None, 1) for line in detail if line.startswith(("waiting", "expected_"))] == [
        ["waiting", "gpus_busy: needs 4 GPUs; 6 of the 8 go to the 2 jobs ahead of it"],
        ["expected_start", "2026-01-01T10:05:00.000Z"], ["expected_end", "2026-01-01T10:15:00.000Z"]]
