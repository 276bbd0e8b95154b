"""Notification targets, pure: the allow list, malformed targets, masking, settings, messages."""
from __future__ import annotations

import pytest

from nbrunner.core.errors import InvalidRequest
from nbrunner.core.notify_targets import (check_job_notify, check_settings, check_target, effective, job_message,
                                          mask, parse_allow)

ALLOW = "mailto://example.org, slack, json://hooks.example.org:8443"


def test_the_allow_list_admits_schemes_hosts_and_ports():
    assert parse_allow(ALLOW) == [("mailto", "example.org", None), ("slack", None, None),
                                  ("json", "hooks.example.org", 8443)]
    assert check_target("mailto:alice@example.org", ALLOW) == "mailto:alice@example.org"
    assert check_target("json://hooks.example.org:8443/x", ALLOW)
    assert check_target("slack://T1JJ3T3L2/A1BRTD4JD/TIiajkdnlazkcOXrIdevi7FQ/#general", ALLOW)
    for target, said in (("mailto:eve@evil.example", "mailto is not allowed"),
                         ("json://hooks.example.org/x", "json://hooks.example.org is not allowed"),
                         ("json://127.0.0.1:8443/x", "json://127.0.0.1 is not allowed"),
                         ("msteams://a/b/c", "msteams is not allowed")):
        with pytest.raises(InvalidRequest, match=said):
            check_target(target, ALLOW)
    with pytest.raises(InvalidRequest, match="allowed: nothing"):
        check_target("mailto:a@example.org", "")


def test_a_refusal_never_shows_a_secret_kept_in_the_host_part():
    with pytest.raises(InvalidRequest) as err:
        check_target("slack://SECRETTOKEN/B/C", "mailto")
    assert "SECRETTOKEN".lower() not in str(err.value).lower()


def test_malformed_targets_are_refused_in_one_line():
    for target, said in (("alice@example.org", "malformed notification target"), ("mailto:alice", "malformed e-mail"),
                         ("mailto://x:y@smtp.example.org", "write mailto:ADDRESS"), ("", "must be text"),
                         (7, "must be text"), ("slack://\n", "malformed"), ("slack://", "not a URL Apprise")):
        with pytest.raises(InvalidRequest, match=said) as err:
            check_target(target, "mailto,slack")
        assert "\n" not in str(err.value)


def test_secrets_are_masked():
    shown = mask("json://user:s3cr3t@hooks.example.org/path")
    assert "s3cr3t" not in shown and "hooks.example.org" in shown
    assert "TIiajkdnlazkcOXrIdevi7FQ" not in mask("slack://T1JJ3T3L2/A1BRTD4JD/TIiajkdnlazkcOXrIdevi7FQ/#general")
    assert mask("mailto:alice@example.org") == "mailto:alice@example.org"
    assert mask("nonsense") == "***"


def test_settings_and_a_jobs_own_notify(monkeypatch):
    monkeypatch.setenv("NBRUNNER_NOTIFY_ALLOW", "mailto")
    assert check_settings({}) == {"targets": [], "on": ["completed", "failed", "cancelled", "sweep", "pipeline"]}
    assert check_settings({"targets": ["mailto:a@example.org"] * 2, "on": ["failed", "completed"]}) == \
        {"targets": ["mailto:a@example.org"], "on": ["completed", "failed"]}
    for bad, said in (({"targets": "x"}, "must be a list"), ({"on": ["done"]}, "unknown event"),
                      ({"colour": 1}, "unknown field"), ([], "must be an object")):
        with pytest.raises(InvalidRequest, match=said):
            check_settings(bad)
    assert check_job_notify(["mailto:b@example.org"]) == {"targets": ["mailto:b@example.org"]}
    mine = {"targets": ["mailto:a@example.org"], "on": ["failed"]}
    assert effective(mine, {"on": ["completed"]}) == {"targets": ["mailto:a@example.org"], "on": ["completed"]}
    assert effective(None, None)["targets"] == []


def test_a_jobs_message_names_the_job_its_status_its_error_and_its_page():
    title, body, kind = job_message({"id": "abc", "name": "train", "status": "failed", "error": "ValueError: x",
                                     "notebook": "t.ipynb", "owner": "alice"}, "https://lab.example.org/lab/")
    assert title == "nbrunner: job train failed" and kind == "failure"
    assert "ValueError: x" in body and "https://lab.example.org/lab?nbrunner-job=abc" in body
