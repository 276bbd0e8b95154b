"""The push channel (``GET /events``) and the paged, filtered job listing, on a real Jupyter server
in multi-user mode over a real cluster: each user's channel carries their own changes only,
small messages with ids, resuming after a cut connection without a gap or a duplicate."""
from __future__ import annotations

import asyncio
import json
import time

import pytest

from support import multi_user_server, rest_api, served_workspace, wait_status

pytestmark = pytest.mark.slow

pytest_plugins = ["pytest_jupyter.jupyter_server"]


@pytest.fixture(scope="module")
def root():
    with served_workspace({"hello.ipynb": "print('hi')"}, gpus=1, workers=1) as (ws, cluster):
        yield ws, cluster


@pytest.fixture
def jp_root_dir(root):
    return root[0]


@pytest.fixture
def jp_server_config():
    return multi_user_server()


class Channel:
    """A client of ``GET /events`` on a raw connection (HTTP/1.0: the body is the stream until the
    server closes it), so that a test can cut it like a network failure would."""

    def __init__(self, port: int, base_url: str, user: str | None):
        self.port, self.path, self.user = port, f"{base_url}nbrunner/api/events", user
        self.messages: list[dict] = []  # {"id", "event", "data"} in arrival order
        self.last_id: str | None = None
        self.status = 0
        self._reader = self._writer = None
        self._buffer = b""

    async def open(self, last_id: str | None = None) -> "Channel":
        self._reader, self._writer = await asyncio.open_connection("127.0.0.1", self.port)
        extra = f"Last-Event-ID: {last_id}\r\n" if last_id else ""
        if self.user:
            extra += f"Authorization: token user:{self.user}\r\n"
        self._writer.write(f"GET {self.path} HTTP/1.0\r\nHost: 127.0.0.1\r\n{extra}\r\n".encode())
        head = await asyncio.wait_for(self._reader.readuntil(b"\r\n\r\n"), 10)
        self.status = int(head.split(b" ", 2)[1])
        self.headers = head.decode()
        return self

    async def read_until(self, done, timeout: float = 20.0) -> None:
        """Read messages until ``done(self)`` or ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while not done(self):
            left = deadline - time.monotonic()
            assert left > 0, f"{self.user}'s channel: timed out with {len(self.messages)} messages"
            chunk = await asyncio.wait_for(self._reader.read(65536), left)
            assert chunk, f"{self.user}'s channel was closed by the server"
            self._parse(chunk)

    def cut(self) -> None:
        """Drop the connection at once, whatever is still in flight."""
        self._writer.transport.abort()

    def _parse(self, chunk: bytes) -> None:
        self._buffer += chunk
        while b"\n\n" in self._buffer:
            block, self._buffer = self._buffer.split(b"\n\n", 1)
            msg = {"id": None, "event": "message", "data": ""}
            for line in block.decode().split("\n"):
                name, _, value = line.partition(": ")
                if name in ("id", "event", "data"):
                    msg[name] = value
            if msg["id"] is not None:
                self.last_id = msg["id"]
            if msg["data"]:
                msg["data"] = json.loads(msg["data"])
                self.messages.append(msg)

    def of(self, event: str) -> list[dict]:
        return [m for m in self.messages if m["event"] == event]

    def jobs(self) -> dict[str, dict]:
        """The newest record of every job the channel told of."""
        return {m["data"]["job"]["id"]: m["data"]["job"] for m in self.of("job") if "job" in m["data"]}


@pytest.fixture
def channel(jp_http_port, jp_base_url):
    opened: list[Channel] = []

    async def connect(user: str | None, last_id: str | None = None) -> Channel:
        c = await Channel(jp_http_port, jp_base_url, user).open(last_id)
        opened.append(c)
        return c

    yield connect
    for c in opened:
        if c._writer is not None:
            c.cut()


def as_user(jp_fetch, user):
    return rest_api(jp_fetch, headers={"Authorization": f"token user:{user}"})


async def test_each_user_gets_their_own_job_changes_and_the_cluster(jp_fetch, channel):
    alice, bob = as_user(jp_fetch, "alice"), as_user(jp_fetch, "bob")
    ca, cb, cadmin = await channel("alice"), await channel("bob"), await channel("root-admin")
    for c in (ca, cb, cadmin):
        assert c.status == 200 and "text/event-stream" in c.headers
        await c.read_until(lambda c: c.of("ready"))
        assert c.of("ready")[0]["data"] == {"resumed": False, "user": c.user, "admin": c.user == "root-admin"}
        assert c.last_id
    _, a = await alice("POST", "jobs", body={"notebook": "hello.ipynb", "name": "alice-job", "max_gpus": 1})
    _, b = await bob("POST", "jobs", body={"notebook": "hello.ipynb", "name": "bob-job"})
    await wait_status(alice, a["id"])
    await wait_status(bob, b["id"])
    await ca.read_until(lambda c: c.jobs().get(a["id"], {}).get("status") == "completed")
    await cb.read_until(lambda c: c.jobs().get(b["id"], {}).get("status") == "completed")
    await cadmin.read_until(lambda c: {a["id"], b["id"]} <= set(c.jobs()))
    assert set(ca.jobs()) == {a["id"]} and set(cb.jobs()) == {b["id"]}
    for c in (ca, cb):  # neither sees anything of the other's job, not even its id
        assert all(m["data"].get("id") not in (a["id"], b["id"]) or m["data"]["id"] in c.jobs() for m in c.messages)
    other = b["id"] if ca.jobs() else a["id"]
    assert other not in json.dumps(ca.messages)
    assert a["id"] not in json.dumps(cb.messages)
    # the record as the REST API gives it, in messages the size of one record
    _, record = await alice("GET", "jobs", a["id"])
    assert ca.jobs()[a["id"]] == record
    assert max(len(json.dumps(m["data"])) for m in ca.of("job")) < 4000
    # every user hears of the cluster; a slot held by another user's job does not name it
    await cb.read_until(lambda c: any(s["job"] for m in c.of("cluster") for h in m["data"]["cluster"]["hosts"]
                                      for s in h["slots"]))
    held = {s["job"] for m in cb.of("cluster") for h in m["data"]["cluster"]["hosts"] for s in h["slots"]} - {None}
    assert held == {"(another user's job)"}
    ids = [m["id"] for m in ca.messages if m["id"]]
    assert ids == sorted(set(ids), key=lambda i: tuple(int(x) for x in i.replace(".", "-").split("-")))


async def test_a_cut_connection_resumes_without_a_gap_or_a_duplicate(jp_fetch, channel, root):
    """A burst of submissions; the connection is cut mid-burst; the client reconnects with the last
    id it saw and gets every job of the burst, each once."""
    from nbrunner.control import submit

    cluster = root[1]
    first = await channel("alice")
    await first.read_until(lambda c: c.of("ready"))
    burst: list[str] = []

    def submit_burst(n: int) -> None:  # queued for ever: 5 GPUs are more than the cluster has
        for _ in range(n):
            rec = submit.submit(cluster.store, cluster.settings, {"notebook": str(root[0] / "hello.ipynb"),
                                                                  "min_gpus": 5, "max_gpus": 5}, owner="alice")
            burst.append(rec.id)

    writer = asyncio.get_running_loop().run_in_executor(None, submit_burst, 120)
    await first.read_until(lambda c: len(set(c.jobs()) & set(burst)) >= 30)
    first.cut()
    at_cut = len(burst)
    second = await channel("alice", first.last_id)
    await writer
    await second.read_until(lambda c: set(burst) <= set(first.jobs()) | set(c.jobs()))
    assert second.of("ready")[0]["data"] == {"resumed": True, "user": "alice", "admin": False}
    assert at_cut < len(burst) and set(second.jobs()) & set(burst)  # cut mid-burst; the rest came on the second
    got = {m["data"]["job"]["id"] for c in (first, second) for m in c.of("job") if m["data"]["job"]["id"] in burst}
    assert got == set(burst)  # none missed (a job may change again: the scheduler says why it waits)
    ids = [m["id"] for c in (first, second) for m in c.of("job")]
    assert len(ids) == len(set(ids))  # no change delivered twice, across the cut either
    for rec_id in burst:
        submit.cancel(cluster.store, rec_id, cluster.settings)


async def test_an_id_the_stream_cannot_resume_from_asks_for_one_reload(jp_fetch, channel):
    ahead = await channel("alice", "99999999999999-0.0")  # from another history
    await ahead.read_until(lambda c: c.of("reload"))
    assert [m["event"] for m in ahead.messages] == ["reload"] and ahead.last_id != "99999999999999-0.0"
    bad = await channel("alice", "yesterday")
    assert bad.status == 400
    body = await bad._reader.read()
    assert "Last-Event-ID" in json.loads(body)["message"]
    stranger = await channel(None)  # no identity
    assert stranger.status in (401, 403)


async def test_the_listing_pages_and_filters_on_the_server(jp_fetch, root):
    """GET /jobs: sweep, owner (admins), q (name), order, with the cursor."""
    from nbrunner.control import submit

    cluster = root[1]
    made = {}
    for owner in ("carol", "dave"):
        for i in range(5):
            rec = submit.submit(cluster.store, cluster.settings, {
                "notebook": str(root[0] / "hello.ipynb"), "name": f"{owner}-Probe-{i}", "min_gpus": 9, "max_gpus": 9},
                owner=owner)
            made.setdefault(owner, []).append(rec.id)
    carol, admin = as_user(jp_fetch, "carol"), as_user(jp_fetch, "root-admin")
    _, page = await carol("GET", "jobs", q="probe", limit="3")
    assert [j["id"] for j in page["jobs"]] == made["carol"][::-1][:3] and page["next"]
    _, rest = await carol("GET", "jobs", q="probe", limit="3", cursor=page["next"])
    assert [j["id"] for j in rest["jobs"]] == made["carol"][::-1][3:] and rest["next"] is None
    _, oldest = await carol("GET", "jobs", q="PROBE", order="oldest", limit="2")
    assert [j["id"] for j in oldest["jobs"]] == made["carol"][:2]
    _, following = await carol("GET", "jobs", q="probe", limit="2", after=made["carol"][3])
    assert [j["id"] for j in following["jobs"]] == made["carol"][2:0:-1]
    _, newer = await carol("GET", "jobs", q="probe", order="oldest", limit="9", after=made["carol"][2])
    assert [j["id"] for j in newer["jobs"]] == made["carol"][3:]
    for theirs in (made["dave"][0], "nosuchjob"):  # another user's job is no place in the listing
        code, err = await carol("GET", "jobs", after=theirs)
        assert code == 400 and "after must be" in err["message"]
    _, others = await carol("GET", "jobs", owner="dave")
    assert others["jobs"] == []  # another user's jobs: none, as if there were none
    _, daves = await admin("GET", "jobs", owner="dave", q="probe")
    assert [j["id"] for j in daves["jobs"]] == made["dave"][::-1]
    _, none = await admin("GET", "jobs", sweep="nosuchsweep")
    assert none == {"jobs": [], "next": None}
    for params, says in (({"order": "sideways"}, "order must be"), ({"q": "x" * 201}, "q must be")):
        code, err = await admin("GET", "jobs", **params)
        assert code == 400 and says in err["message"]
    _, models = await admin("GET", "models", jobs=",".join(made["carol"]))
    assert models["jobs_with_model"] == []
    code, err = await admin("GET", "models", jobs="../etc")
    assert code == 400
    for ids in made.values():
        for rec_id in ids:
            submit.cancel(cluster.store, rec_id, cluster.settings)


async def test_a_reloaded_accounts_file_is_pushed_at_once(jp_fetch, channel, root):
    """An accounts file published or reloaded is a cluster change: an open cluster view reads the
    accounts again at once, not at its next minute's read."""
    from nbrunner.control import accounts
    from nbrunner.core.keys import ACCOUNTS

    ws, cluster = root
    path = ws / "accounts.yaml"
    path.write_text("accounts:\n  - name: vision\n    members: [alice]\n")
    c = await channel("alice")
    await c.read_until(lambda c: c.of("ready"))
    try:
        accounts.publish(cluster.store, str(path))
        await c.read_until(lambda c: c.of("cluster"), timeout=5)
        before = len(c.of("cluster"))
        path.write_text("accounts:\n  - name: vision\n    members: [alice]\n  - name: nlp\n    members: [bob]\n")
        accounts.reload(cluster.store)
        await c.read_until(lambda c: len(c.of("cluster")) > before, timeout=5)
    finally:
        cluster.store.r.delete(ACCOUNTS)
