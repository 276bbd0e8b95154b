"""The documentation's sources, read without building: tested blocks where they should be, the
generated reference complete, every page in a toctree (fast tier)."""
import re
import sys

from pages import DOCS, REPO, blocks, script

sys.path.insert(0, str(DOCS / "_ext"))

import nbrunner_reference  # noqa: E402

TUTORIALS = ["first-job", "sweep-to-model", "elastic-training"]


def test_each_tutorial_has_tested_bash_and_python_blocks():
    for name in TUTORIALS:
        page = DOCS / "tutorials" / f"{name}.md"
        tested = [b for b in blocks(page) if "tested" in b.classes]
        assert any(b.language == "bash" for b in tested), name
        text = script(page)
        assert text.startswith("set -euo pipefail\n") and "nbrunner " in text, name
    assert {b.language for p in TUTORIALS for b in blocks(DOCS / "tutorials" / f"{p}.md") if "tested" in b.classes} \
        == {"bash", "python"}


def test_the_hub_checklist_has_every_step_as_a_block():
    page = DOCS / "admin" / "jupyterhub.md"
    text = script(page, "checklist")
    for needed in ("useradd", "redis.conf", "nbrunner-scheduler.service", "nbrunner-worker.service",
                   "nbrunner-redis.service", "jupyterhub_config.py", "localprocess",
                   "ConfigurableHTTPProxy.command", '"user": "nbrunner"'):
        assert needed in text, needed
    assert {c for b in blocks(page) for c in b.classes} == {"checklist", "checklist-apt", "checklist-install",
                                                           "checklist-systemd"}


def test_cli_reference_lists_every_command_and_option():
    text = nbrunner_reference.cli_markdown()
    for command in ("submit", "jobs", "sweep", "sweep-show", "sweeps", "schedule add", "model register", "service"):
        assert f"## `{command}`" in text, command
    for option in ("--language", "--cwd", "--report-mode", "--retries", "--max-gpus", "--sweep"):
        assert f"`{option}`" in text, option
    assert "default: --min-gpus" in text  # the max_gpus default is said


def test_rest_reference_has_every_route_of_the_openapi_document():
    from nbrunner.server.openapi import document

    text = nbrunner_reference.rest_markdown()
    for path, ops in document()["paths"].items():
        for method in ops:
            if method in ("get", "post", "put", "patch", "delete"):
                assert f"## `{method.upper()} {path}`" in text, (method, path)


def test_configuration_reference_has_every_variable():
    from nbrunner.core.config import VARIABLES

    text = nbrunner_reference.config_markdown()
    assert all(f"`{v.name}`" in text for v in VARIABLES)


def test_every_page_is_in_a_toctree():
    listed = set()
    for index in DOCS.rglob("*.md"):
        for block in re.findall(r"```\{toctree\}\n(.*?)```", index.read_text(), re.S):
            listed |= {(index.parent / e.strip()).resolve() for e in block.splitlines()
                       if e.strip() and not e.strip().startswith(":")}
    pages = {p.with_suffix("").resolve() for p in DOCS.rglob("*.md")
             if "_generated" not in p.parts and "_build" not in p.parts}
    topic = {(DOCS / name).resolve() for name in nbrunner_reference.TOPIC_PAGES}  # joined at build time
    missing = pages - listed - topic - {(DOCS / "index").resolve()}
    assert not missing, sorted(str(p.relative_to(DOCS)) for p in missing)


def test_readme_keeps_the_quickstart_and_links_to_existing_pages():
    readme = (REPO / "README.md").read_text()
    assert "bash scripts/setup.sh && .venv/bin/nbrunner up --dir notebooks" in readme
    assert "bash scripts/test.sh" in readme
    for target in re.findall(r"\]\(((?:docs/|CONTRIBUTING)[^)#]*)\)", readme):
        assert (REPO / target).exists(), target
