"""Fixtures of the hub tests: one real cluster and one real JupyterHub running ``nbrunner service``
for the whole package (see harness.py), with users and their API tokens made through the hub.

Users: alice (group ml-team), bob (group vision), hubadmin (a hub admin), dora (in the service's
``--admin-group``, not a hub admin), erin (who may use the hub service "other" too).

The hub's spawner is ``hub_spawner`` (SimpleLocalProcessSpawner); tests that need another one, or
other hub settings, start a ``Hub(..., spawner=..., extra_config=...)`` of their own (e.g.
``c.Spawner.environment`` for single-user servers)."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from support import make_notebook, own_cluster, short_tmpdir

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import ADMIN_GROUP, OTHER_USERS, Hub, request  # noqa: E402

USERS = {"alice": ["ml-team"], "bob": ["vision"], "hubadmin": [], "dora": [ADMIN_GROUP], "erin": [OTHER_USERS]}

TRAIN = '''
import torch
from torch import nn
import nbrunner

model = nn.Linear(4, 3)
nbrunner.record("accuracy", 0.5)
print("saved to", nbrunner.save_model(model))
'''


@pytest.fixture(scope="package")
def hub_workspace() -> Path:
    ws = short_tmpdir("nbhw")
    make_notebook(ws / "hello.ipynb", "print('hello')", parameters="N = 0")
    make_notebook(ws / "train.ipynb", TRAIN)
    make_notebook(ws / "wait.ipynb", "import time\ntime.sleep(600)")
    make_notebook(ws / "tiny.ipynb", "import os\nwith open('executions.log', 'a') as f:\n"
                                     "    f.write(os.environ['NBRUNNER_JOB_ID'] + '\\n')", parameters="N = 0")
    return ws


@pytest.fixture(scope="package")
def hub_cluster(hub_workspace):
    """The cluster behind the hub: embedded Redis, scheduler, 2 workers, 2 CPU slots."""
    with own_cluster(hub_workspace, gpus=2, workers=2) as cluster:
        yield cluster


@pytest.fixture(scope="package")
def hub_spawner() -> str:
    return "simple"


ACCOUNTS = """accounts:
  - {name: vision, weight: 3, members: ["@vision"]}
  - {name: ml, weight: 1, members: ["@ml-team", erin]}
"""


@pytest.fixture(scope="package")
def hub(hub_cluster, hub_spawner, hub_workspace):
    """The running hub, with USERS created; its service shares the GPUs by the accounts of ACCOUNTS
    (hub groups decide who is in which)."""
    accounts = hub_workspace / "accounts.yaml"
    accounts.write_text(ACCOUNTS)
    extra = f"service['command'] += ['--accounts', {str(accounts)!r}]"
    with Hub(hub_cluster.settings.env(), admins=["hubadmin"], spawner=hub_spawner, extra_config=extra) as running:
        for name, groups in USERS.items():
            running.add_user(name, groups)
        yield running


@pytest.fixture(scope="package")
def tokens(hub) -> dict[str, str]:
    """An API token of each user (made by the hub for that user: it has the user's roles)."""
    return {name: hub.token(name) for name in USERS}


class Service:
    """Calls to the nbrunner API through the hub's proxy with one token:
    ``svc("GET", "jobs", job_id, "log", body=None, params=None)`` -> (status, JSON body)."""

    def __init__(self, hub: Hub, token: str | None):
        self.hub, self.token = hub, token

    def __call__(self, method: str, *path: str, body: Any = None, params: str = "") -> tuple[int, Any]:
        url = "/".join([self.hub.service_api, *path]) + (f"?{params}" if params else "")
        status, payload, _ = request(method, url, self.token, body)
        return status, payload


@pytest.fixture(scope="package")
def as_user(hub, tokens):
    """``as_user("alice")``: a :class:`Service` with alice's token."""
    return lambda name: Service(hub, tokens[name])
