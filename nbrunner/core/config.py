"""Where a cluster lives: workspace, Redis URL and storage, from arguments and the environment."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

ENV_WORKSPACE = "NBRUNNER_WORKSPACE"
ENV_REDIS_URL = "NBRUNNER_REDIS_URL"
ENV_STORAGE = "NBRUNNER_STORAGE"
# a file a learner started by a worker's learner agent writes once it has loaded its job: the
# modules loading imported (the agent's warm learner interpreters import them ahead)
ENV_LEARNER_LOADED = "NBRUNNER_LEARNER_LOADED"

STATE_DIR = ".nbrunner"
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
        return self.state_dir / "redis.sock"

    @property
    def embedded(self) -> bool:
        return self.redis_url is None

    @property
    def url(self) -> str:
        """The Redis URL clients use (the embedded server's unix socket when none is set)."""
        return self.redis_url or f"unix://{self.socket_path}"

    def job_dir(self, job_id: str) -> Path:
        return self.storage / job_id

    def env(self) -> dict[str, str]:
        """Environment that makes a child process see this same cluster."""
        return {ENV_WORKSPACE: str(self.workspace), ENV_STORAGE: str(self.storage), ENV_REDIS_URL: self.url}


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
