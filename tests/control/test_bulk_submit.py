"""Submitting in bulk: ``cluster.submit_many`` checks every request, then creates every job or none."""
from __future__ import annotations

import pytest

from nbrunner.core.errors import InvalidRequest
from nbrunner.core.models import JobRecord

from support import make_notebook

pytestmark = pytest.mark.slow


def snapshot(cluster):
    """What a submit leaves behind: the records, the job directories, the ``submitted`` events (the
    stream's newest entry id, to see only the ones after it)."""
    runs = cluster.settings.storage
    return (set(cluster.store.ids()), sorted(p.name for p in runs.iterdir()) if runs.exists() else [],
            cluster.store.last_event_id())


def unchanged(cluster, before) -> bool:
    ids, dirs, last = before
    submitted = [f for _, f in cluster.store.r.xrange("nbrunner:events", f"({last}", "+") if f.get("type") == "submitted"]
    return snapshot(cluster)[:2] == (ids, dirs) and not submitted


def test_submit_many_queues_every_job_in_order_and_each_runs(cluster, shared_workspace):
    make_notebook(shared_workspace / "bulk.ipynb", "print('bulk', N)", parameters="N = 0")
    jobs = cluster.submit_many([{"notebook": "bulk.ipynb", "parameters": {"N": n}, "name": f"b{n}"} for n in range(4)]
                               + ["bulk.ipynb"])
    assert [j.record.name for j in jobs] == ["b0", "b1", "b2", "b3", "bulk"]
    assert [j.record.parameters for j in jobs] == [{"N": 0}, {"N": 1}, {"N": 2}, {"N": 3}, {}]
    assert len({j.id for j in jobs}) == 5 and all(j.record.status == "queued" for j in jobs)
    listed = [j.id for j in cluster.jobs(limit=5)]  # oldest first: the order given
    assert listed == [j.id for j in jobs]
    for n, job in enumerate(jobs):
        job.wait(120)
        assert job.record.status == "completed", job.record.error
        assert f"bulk {n if n < 4 else 0}" in job.logs()
        assert (job.dir / "input.ipynb").is_file() and (job.dir / "output.html").is_file()


def test_one_bad_request_creates_nothing_and_names_it(cluster, shared_workspace):
    make_notebook(shared_workspace / "bulk.ipynb", "print('bulk', N)", parameters="N = 0")
    before = snapshot(cluster)
    bad_entries = [
        ({"notebook": "missing.ipynb"}, "missing.ipynb"),
        ({"notebook": "bulk.ipynb", "priority": 0}, "priority"),
        ({"notebook": "bulk.ipynb", "min_gpus": 2, "max_gpus": 1}, "min_gpus"),
        ({"notebook": "bulk.ipynb", "kernel": "no-such-kernel"}, "no-such-kernel"),
    ]
    for entry, words in bad_entries:
        with pytest.raises(InvalidRequest) as err:
            cluster.submit_many([{"notebook": "bulk.ipynb"}, {"notebook": "bulk.ipynb"}, entry])
        message = str(err.value)
        assert message.startswith("jobs[2]: ") and words in message and "\n" not in message, message
        assert unchanged(cluster, before), entry
    for requests, words in (([], "non-empty list"), ([{"parameters": {}}], r"jobs\[0\]")):
        with pytest.raises(InvalidRequest, match=words):
            cluster.submit_many(requests)
    assert unchanged(cluster, before)


def test_create_many_writes_nothing_when_an_id_is_taken(cluster):
    from nbrunner.core.lifecycle import submitted

    store = cluster.store
    taken = store.ids()[0]
    new = [submitted(JobRecord(id=f"zz{i}bulk", name="x", notebook="x.ipynb")) for i in range(3)]
    before = snapshot(cluster)
    assert store.create_many(new + [submitted(JobRecord(id=taken, name="x", notebook="x.ipynb"))]) is False
    assert unchanged(cluster, before) and all(store.find(r.id) is None for r in new)
    assert store.get(taken).name != "x"
