"""A job's kind: the runs of one owner's notebook with one training set-up, whose throughput
points fill in the model of a job that has measured its own first one."""
from __future__ import annotations

from nbrunner import allocate
from nbrunner.core.kinds import kind_of, with_kind


def test_a_kind_is_the_owner_the_notebook_its_parameters_and_the_set_up():
    p = {"lr": 0.1, "size": 224}
    k = kind_of("alice", "train.ipynb", p, "ab12")
    assert k == kind_of("alice", "train.ipynb", {"size": 224, "lr": 0.1}, "ab12") and len(k) == 40
    others = {kind_of("bob", "train.ipynb", p, "ab12"), kind_of("alice", "other.ipynb", p, "ab12"),
              kind_of("alice", "train.ipynb", {**p, "size": 128}, "ab12"), kind_of("alice", "train.ipynb", p, "cd34")}
    assert len(others) == 4 and k not in others
    assert kind_of("alice", "train.ipynb", p, None) is None and kind_of("alice", "train.ipynb", p, "") is None


def test_a_jobs_own_points_win_and_a_job_that_measured_nothing_is_lent_nothing():
    kind = {"1": 100.0, "2": 180.0, "4": 300.0}
    assert with_kind({"2": 190.0}, kind) == {"1": 100.0, "2": 190.0, "4": 300.0}
    assert with_kind({}, kind) == {}
    assert with_kind({3: 50.0}, {}) == {3: 50.0}


def test_a_kinds_points_change_what_goodput_gives_a_job_measured_at_one_size():
    """Measured at 2 learners alone, a job is modelled as scaling linearly from there; its kind's runs
    show it flat past 2, so the GPUs go to the job that scales."""
    scales = {"id": "s", "min_gpus": 1, "max_gpus": 4, "priority": 5000, "submitted_at": 0.0,
              "throughput": {"1": 150.0, "2": 200.0, "3": 250.0, "4": 300.0}}
    alone = {"id": "f", "min_gpus": 1, "max_gpus": 4, "priority": 5000, "submitted_at": 1.0,
             "throughput": {"2": 100.0}}
    lent = dict(alone, throughput=with_kind(alone["throughput"], {"1": 100.0, "3": 100.0, "4": 100.0}))
    assert allocate(4, [scales, alone], "goodput") == {"s": 2, "f": 2}
    assert allocate(4, [scales, lent], "goodput") == {"s": 3, "f": 1}
