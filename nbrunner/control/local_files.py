"""The files nbrunner reads on a caller's behalf: YAML files (sweep specs, parameters, accounts,
pipelines) with a size limit, notebook files, a job's inputs beside its notebook, and the metrics
a job reported.  The decisions about what is read stay in ``core`` (which reads no file): these
functions hand it bytes and text.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from ..core.config import MAX_NOTEBOOK_BYTES, MAX_YAML_BYTES
from ..core.errors import InvalidRequest
from ..core.inputs import MAX_INPUT_FILES, Collected, too_large

if TYPE_CHECKING:
    from ..core.accounts import AccountTree


def read_limited(path, limit: int = MAX_YAML_BYTES) -> bytes:
    """The bytes of a (YAML) file, refused when larger than ``limit``; OSError as open() raises it."""
    with open(Path(path), "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise InvalidRequest(f"{path} is larger than {limit // 1024} KiB")
    return data


def read_notebook_text(path: Path, shown: str) -> str:
    """The text of the notebook file at ``path`` (``shown``: its name in messages), to send as a
    request's ``content``; InvalidRequest (one line) if it cannot be read, is larger than
    MAX_NOTEBOOK_BYTES or is not UTF-8.  Its JSON is checked where it is submitted."""
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_NOTEBOOK_BYTES + 1)
    except OSError as exc:
        raise InvalidRequest(f"cannot read notebook {shown}: {exc.strerror or exc.__class__.__name__}") from None
    if len(raw) > MAX_NOTEBOOK_BYTES:
        raise InvalidRequest(f"notebook is larger than {MAX_NOTEBOOK_BYTES // 2**20} MiB: {shown}")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidRequest(f"not a notebook (invalid JSON): {shown}") from None


def notebook_file(path: Path, shown: str, inside: Path | None = None) -> Path:
    """The real path of the notebook file ``path`` (``shown``: as the caller wrote it), refused in
    one line unless it exists, is a ``.ipynb`` file and (with ``inside``) resolves inside that
    directory: a symbolic link leading out counts as outside."""
    try:
        real = path.resolve(strict=True)
    except FileNotFoundError:
        raise InvalidRequest(f"notebook not found: {shown}") from None
    except (OSError, RuntimeError) as exc:
        raise InvalidRequest(f"cannot read notebook {shown}: {exc.__class__.__name__}") from None
    if inside is not None and real != inside and inside not in real.parents:
        raise InvalidRequest(f"notebook path is outside the workspace: {shown}")
    if not real.is_file():
        raise InvalidRequest(f"not a file: {shown}")
    if real.suffix != ".ipynb":
        raise InvalidRequest(f"not a notebook (expected a .ipynb file): {shown}")
    return real


def _inside(real: Path, base: Path) -> bool:
    return real == base or base in real.parents


def _files_of(base: Path, path: str) -> tuple[str, list[tuple[str, Path]]]:
    """The kind of input ``path`` under ``base`` and its files (relative path, real path); every
    real path stays inside ``base`` (a link leading out is refused)."""
    try:
        real = (base / path).resolve(strict=True)
    except FileNotFoundError:
        raise InvalidRequest(f"input not found beside the notebook: {path}") from None
    except (OSError, RuntimeError) as exc:
        raise InvalidRequest(f"cannot read input {path}: {exc.__class__.__name__}") from None
    if not _inside(real, base):
        raise InvalidRequest(f"input {path!r} leaves the notebook's directory")
    if real.is_file():
        return "file", [("", real)]
    if not real.is_dir():
        raise InvalidRequest(f"input {path!r} is neither a file nor a folder")
    found: list[tuple[str, Path]] = []
    for top, dirs, names in os.walk(real):  # links to folders are not followed
        dirs.sort()
        for name in sorted(names):
            file = Path(top) / name
            target = file.resolve()
            if not _inside(target, base):
                raise InvalidRequest(f"input {path}/{file.relative_to(real).as_posix()} leaves the notebook's directory")
            if target.is_file():
                found.append((file.relative_to(real).as_posix(), target))
            if len(found) > MAX_INPUT_FILES:
                raise InvalidRequest(f"inputs hold more than {MAX_INPUT_FILES} files")
    return "folder", found


def collect_inputs(base: Path, paths: Iterable[str], limit: int) -> Collected:
    """Read the inputs ``paths`` (checked with :func:`check_paths`) beside the notebook, whose
    directory is ``base``; TooLarge past ``limit`` bytes (checked before anything is read),
    InvalidRequest for a path that is missing or leads out of ``base``."""
    base = base.resolve()
    listed = [(path, *_files_of(base, path)) for path in paths]
    total = sum(real.stat().st_size for _, _, files in listed for _, real in files)
    if total > limit:
        raise too_large(total, limit)
    out = Collected()
    for path, kind, files in listed:
        read = {}
        for rel, real in files:
            try:
                read[rel] = real.read_bytes()
            except OSError as exc:
                raise InvalidRequest(f"cannot read input {path}: {exc.strerror or exc.__class__.__name__}") from None
        out.entries.append((path, kind, read))
    if out.total > limit:  # a file grew while it was read
        raise too_large(out.total, limit)
    return out


def reported_values(job_dir: Path, metric: str, limit: int | None = None) -> list[float | None]:
    """The values of ``metric`` in the order the job reported them (``metrics.jsonl``)."""
    from ..core.sweeps.asha import numeric  # the sweeps package loads pydantic

    out: list[float | None] = []
    try:
        with open(job_dir / "metrics.jsonl", "rb") as f:
            for line in f:
                if not line.endswith(b"\n"):
                    break  # being written
                try:
                    row = json.loads(line)
                except ValueError:
                    continue
                if isinstance(row, dict) and metric in row:
                    out.append(numeric(row[metric]))
                    if limit is not None and len(out) >= limit:
                        break
    except OSError:
        pass
    return out


def read_accounts(path) -> AccountTree:
    """``parse_accounts`` of a file; a file that cannot be read is a one-line ``InvalidRequest``."""
    from ..core.accounts import parse_accounts  # pydantic: not for the CLI's read commands

    try:
        raw = read_limited(path)
    except OSError as exc:
        raise InvalidRequest(f"cannot read the accounts file {path}: {exc.strerror or exc}") from None
    return parse_accounts(raw, str(path))


def spec_source(spec: Any) -> tuple[Any, str]:
    """A sweep spec given as a YAML file path read into bytes, with the name its errors use;
    any other spec (a mapping, YAML text) as it is."""
    if not (isinstance(spec, os.PathLike) or (isinstance(spec, str) and _looks_like_path(spec))):
        return spec, "sweep spec"
    path = Path(spec).expanduser()
    try:
        data = read_limited(path)
    except FileNotFoundError:
        raise InvalidRequest(f"sweep spec file not found: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidRequest(f"cannot read sweep spec {path}: {getattr(exc, 'strerror', None) or exc.__class__.__name__}") from None
    return data, f"sweep spec {path}"


def _looks_like_path(text: str) -> bool:
    if "\n" in text or not text.strip():
        return False
    t = text.strip()
    if t.endswith((".yaml", ".yml", ".json")):
        return True
    try:
        return Path(t).expanduser().is_file()
    except (OSError, ValueError):
        return False
