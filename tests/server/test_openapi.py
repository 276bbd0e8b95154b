"""The OpenAPI document and the handlers agree: every served (path, method) is documented and
every documented one is served."""
from __future__ import annotations

import re

from tornado.web import RequestHandler

from nbrunner.server.handlers import API, routes
from nbrunner.server.openapi import document

METHODS = ("get", "post", "put", "patch", "delete")


def openapi_path(pattern: str) -> str:
    """``/nbrunner/api/jobs/(?P<job_id>[a-z0-9]{1,32})/log/?`` -> ``/jobs/{job_id}/log``."""
    path = pattern[len(API):] if pattern.startswith(API) else pattern
    path = re.sub(r"\(\?P<(\w+)>[^)]*\)", r"{\1}", path)
    path = path.removesuffix("/?").replace("\\.", ".")
    assert not set(path) & set("()[]?*+\\^$"), f"route pattern not understood: {pattern}"
    return path


def served() -> set[tuple[str, str]]:
    out = set()
    for pattern, handler in routes():
        for method in METHODS:
            if getattr(handler, method) is not getattr(RequestHandler, method):
                out.add((openapi_path(pattern), method))
    return out


def documented(doc: dict) -> set[tuple[str, str]]:
    return {(path, method) for path, item in doc["paths"].items() for method in item if method in METHODS}


def test_every_route_is_documented_and_every_documented_route_is_served():
    doc = document()
    assert served() - documented(doc) == set(), "routes without an OpenAPI entry"
    assert documented(doc) - served() == set(), "documented routes no handler serves"


def test_the_document_is_well_formed():
    doc = document("/base/nbrunner/api")
    assert doc["openapi"].startswith("3.") and doc["servers"] == [{"url": "/base/nbrunner/api"}]
    schemas = doc["components"]["schemas"]
    for path, item in doc["paths"].items():
        params = {p["name"] for p in item.get("parameters", []) if p["in"] == "path"}
        assert params == set(re.findall(r"{(\w+)}", path)), path
        for method in set(item) & set(METHODS):
            op = item[method]
            assert op["summary"] and op["responses"], (path, method)
    refs = re.findall(r"#/components/schemas/(\w+)", repr(doc))
    assert refs and set(refs) <= set(schemas)


def test_a_new_route_without_docs_is_caught():
    doc = document()
    del doc["paths"]["/jobs/{job_id}/rerun"]
    assert served() - documented(doc) == {("/jobs/{job_id}/rerun", "post")}


def test_statuses_and_priority_bounds_come_from_the_record_model():
    from nbrunner.core.models import PRIORITY_DEFAULT, PRIORITY_MAX, PRIORITY_MIN, STATUSES, JobRecord, JobRequest

    schemas = document()["components"]["schemas"]
    for name in ("Job", "JobRequest"):
        priority = schemas[name]["properties"]["priority"]
        assert (priority["minimum"], priority["maximum"]) == (PRIORITY_MIN, PRIORITY_MAX), name
    assert schemas["Job"]["properties"]["status"]["enum"] == list(STATUSES)
    assert schemas["JobRequest"]["properties"]["priority"]["default"] == PRIORITY_DEFAULT
    assert JobRequest(notebook="a").priority == JobRecord(id="a", name="a", notebook="a").priority == PRIORITY_DEFAULT
    listing = document()["paths"]["/jobs"]["get"]["parameters"]
    assert next(p for p in listing if p["name"] == "status")["schema"]["enum"] == list(STATUSES)


def test_the_cli_offers_the_same_statuses_and_default_priority():
    import inspect

    from nbrunner.client.cli import job_commands
    from nbrunner.core.models import PRIORITY_DEFAULT, STATUSES

    assert job_commands.STATUSES is STATUSES
    assert inspect.signature(job_commands.submit).parameters["priority"].default.default == PRIORITY_DEFAULT


def test_requests_are_counted_by_the_documented_route_pattern():
    """``nbrunner_api_requests_total``'s route label is the route's OpenAPI path, never a raw path."""
    doc = document()
    for pattern, handler in routes():
        assert handler.route == openapi_path(pattern) and handler.route in doc["paths"], pattern


def test_post_jobs_documents_the_bulk_form():
    """POST /jobs takes one request or a list of them (an array or {"jobs": [...]}), all or none."""
    from nbrunner.core.config import MAX_BULK_JOBS

    post = document()["paths"]["/jobs"]["post"]
    forms = post["requestBody"]["content"]["application/json"]["schema"]["oneOf"]
    assert forms[0] == {"$ref": "#/components/schemas/JobRequest"}
    assert forms[1]["type"] == "array" and forms[1]["maxItems"] == MAX_BULK_JOBS
    assert forms[2]["required"] == ["jobs"] and forms[2]["properties"]["jobs"]["items"] == forms[0]
    answers = post["responses"]["201"]["content"]["application/json"]["schema"]["oneOf"]
    assert answers[1]["properties"]["jobs"]["items"] == {"$ref": "#/components/schemas/Job"}
    assert "all or none" in post["summary"] and "400" in post["responses"]
