"""GPU-hours per day from GPU timelines (nbrunner.core.usage): cut at midnights and at the window."""
from __future__ import annotations

from datetime import datetime, timezone

import pytest

from nbrunner.core.attained import attained_service
from nbrunner.core.errors import InvalidRequest
from nbrunner.core.usage import daily_seconds, parse_since, usage_report

NOW = datetime(2026, 11, 28, 6, 0, tzinfo=timezone.utc)


def at(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def test_a_run_across_midnight_is_split_between_the_days():
    points = [{"t": "2026-11-26T23:00:00Z", "gpus": 2}, {"t": "2026-11-27T01:30:00Z", "gpus": 1},
              {"t": "2026-11-27T02:00:00Z", "gpus": 0}]
    days = daily_seconds(points, 0, NOW.timestamp())
    assert days == {"2026-11-26": 2 * 3600.0, "2026-11-27": 2 * 5400.0 + 1800.0}
    assert sum(days.values()) == attained_service(points, NOW.timestamp())


def test_the_window_clips_and_a_running_job_counts_up_to_now():
    points = [{"t": "2026-11-28T04:00:00Z", "gpus": 3}]
    assert daily_seconds(points, at("2026-11-28T05:00:00Z"), NOW.timestamp()) == {"2026-11-28": 3 * 3600.0}
    # a point earlier than the one before it counts for no time (another host's clock)
    odd = [{"t": "2026-11-28T04:00:00Z", "gpus": 1}, {"t": "2026-11-28T03:00:00Z", "gpus": 0}]
    assert daily_seconds(odd, 0, NOW.timestamp()) == {}


def test_the_report_adds_up_per_key_and_day():
    a = [{"t": "2026-11-27T10:00:00Z", "gpus": 1}, {"t": "2026-11-27T12:00:00Z", "gpus": 0}]
    b = [{"t": "2026-11-27T11:00:00Z", "gpus": 2}, {"t": "2026-11-28T01:00:00Z", "gpus": 0}]
    report = usage_report([("vision", a), ("vision", b), ("nlp", a)], "account", parse_since("7d", NOW, 7, 366), NOW)
    assert report["rows"] == [{"day": "2026-11-27", "account": "nlp", "gpu_hours": 2.0},
                              {"day": "2026-11-27", "account": "vision", "gpu_hours": 2.0 + 26.0},
                              {"day": "2026-11-28", "account": "vision", "gpu_hours": 2.0}]
    assert report["totals"] == {"nlp": 2.0, "vision": 30.0} and report["until"] == "2026-11-28T06:00:00Z"
    assert report["since"] == "2026-11-21T06:00:00Z"


def test_since_forms_and_refusals():
    assert parse_since("24h", NOW, 7, 366) == datetime(2026, 11, 27, 6, 0, tzinfo=timezone.utc)
    assert parse_since("2026-11-01", NOW, 7, 366) == datetime(2026, 11, 1, tzinfo=timezone.utc)
    assert parse_since(None, NOW, 7, 366) == datetime(2026, 11, 21, 6, 0, tzinfo=timezone.utc)
    for bad, words in (("7 days", "since must be like"), ("400d", "at most 366 days"), ("2027-01-01", "in the past"),
                       ("-1d", "since must be like")):
        with pytest.raises(InvalidRequest, match=words):
            parse_since(bad, NOW, 7, 366)
    with pytest.raises(InvalidRequest, match="by must be one of"):
        usage_report([], "team", NOW, NOW)
