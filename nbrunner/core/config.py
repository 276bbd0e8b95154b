"""Where a cluster lives: workspace, Redis URL and storage, from arguments and the environment."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

ENV_WORKSPACE = "NBRUNNER_WORKSPACE"
ENV_REDIS_URL = "NBRUNNER_REDIS_URL"
ENV_STORAGE = "NBRUNNER_STORAGE"
# a file a learner started by a worker's learner agent writes once it has loaded its job: the
# modules loading imported (the agent's warm learner interpreters import them ahead)
ENV_LEARNER_LOADED = "NBRUNNER_LEARNER_LOADED"

STATE_DIR = ".nbrunner"
# a workspace whose jobs run as their owners: its embedded Redis wants this password (only nbrunner's
# own processes can read it, in the 0700 state directory) on a socket the jobs can reach
PASSWORD_FILE = "redis.password"
SOCKET_DIR = ".nbrunner-socket"
JOB_GRACE_S = 30  # rq kills a job's work horse this long after the job's own timeout


@dataclass(frozen=True)
class Settings:
    """Resolved configuration of one nbrunner workspace."""

    workspace: Path
    storage: Path
    redis_url: str | None  # None: the embedded Redis of the workspace

    @classmethod
    def load(cls, workspace: str | os.PathLike | None = None) -> "Settings":
        ws = Path(workspace or os.environ.get(ENV_WORKSPACE) or os.getcwd()).expanduser().resolve()
        storage = os.environ.get(ENV_STORAGE)
        return cls(
            workspace=ws,
            storage=Path(storage).expanduser().resolve() if storage else ws / "runs",
            redis_url=os.environ.get(ENV_REDIS_URL) or None,
        )

    @property
    def state_dir(self) -> Path:
        return self.workspace / STATE_DIR

    @property
    def socket_path(self) -> Path:
        return embedded_socket(self.state_dir, embedded_password(self.state_dir) is not None)

    @property
    def embedded(self) -> bool:
        return self.redis_url is None

    @property
    def url(self) -> str:
        """The Redis URL clients use (the embedded server's unix socket when none is set)."""
        return self.redis_url or embedded_url(self.state_dir)

    def job_dir(self, job_id: str) -> Path:
        return self.storage / job_id

    def env(self) -> dict[str, str]:
        """Environment that makes a child process see this same cluster."""
        return {ENV_WORKSPACE: str(self.workspace), ENV_STORAGE: str(self.storage), ENV_REDIS_URL: self.url}


def embedded_password(state_dir: Path) -> str | None:
    """The password of the workspace's embedded Redis (None: it wants none, or this process may
    not know it)."""
    try:
        return (state_dir / PASSWORD_FILE).read_text().strip() or None
    except OSError:
        return None


def embedded_socket(state_dir: Path, shared: bool) -> Path:
    """The embedded Redis's socket: in the private state directory, or, when it is shared with the
    jobs' own processes (password-protected), in a directory beside it that they can reach."""
    return state_dir.parent / SOCKET_DIR / "redis.sock" if shared else state_dir / "redis.sock"


def embedded_url(state_dir: Path) -> str:
    """The URL of the workspace's embedded Redis, with its password if it has one."""
    password = embedded_password(state_dir)
    auth = f":{quote(password, safe='')}@" if password else ""
    return f"unix://{auth}{embedded_socket(state_dir, password is not None)}"


def redact(url: str) -> str:
    """A Redis URL with any password removed, for messages and logs."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.password is None and "@" not in parts.netloc:
        return url
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    user = f"{parts.username}:***@" if parts.username else "***@"
    return urlunsplit((parts.scheme, user + host, parts.path, parts.query, parts.fragment))
