"""A job's inputs: files and folders beside its notebook that travel with the job.

A request names them in ``inputs``: paths relative to the notebook's directory (a file, or a
folder and everything in it).  They are read where the notebook is (:func:`collect`), or, when
the notebook travels as ``content`` (through an nbrunner service), sent beside it as
``inputs_content`` (:func:`encode` / :func:`decode`)::

    {"data": {"train.csv": BASE64, "sub/labels.txt": BASE64},   # a folder: its files
     "config.yaml": BASE64}                                     # a file

Stored once by content under ``<storage>/inputs/`` (:mod:`nbrunner.control.input_store`): a
file's bytes as the blob named by their sha256; a folder as its *manifest* (:func:`manifest`:
canonical JSON ``{"files": {relative path: sha256}}``), itself a blob, each file a blob of its
own.  So every job naming the same bytes shares them, and a folder named by two jobs is stored
once.  The job's record keeps, per input, its kind and sha256 (:class:`InputRef`); the worker
copies them into the job's working directory, ``runs/<id>/work/`` (:data:`WORK_DIR`), at the
same relative paths, before the notebook runs there.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
from pathlib import Path
from typing import Any, Iterable

import msgspec

from .config import MAX_INPUT_BYTES
from .errors import InvalidRequest, TooLarge

#: The job's working directory when it has inputs, inside its job directory.
WORK_DIR = "work"
#: Input paths one job may name.
MAX_INPUTS = 1000
#: Files one job's inputs may hold in all.
MAX_INPUT_FILES = 100_000


class InputRef(msgspec.Struct, frozen=True):
    """One stored input of a job: its path (relative to the notebook's directory), ``file`` or
    ``folder``, the sha256 of its blob (a folder's: its manifest's) and its size in bytes."""

    path: str
    kind: str
    sha256: str
    bytes: int = 0


class Collected(msgspec.Struct):
    """Inputs read (or decoded), not yet stored: per path, its kind and its files (a file's one
    file has the relative path ``""``)."""

    entries: list[tuple[str, str, dict[str, bytes]]] = []

    @property
    def total(self) -> int:
        return sum(len(data) for _, _, files in self.entries for data in files.values())


def body_allowance(limit: int) -> int:
    """Bytes a REST body may grow by when it carries ``inputs_content`` of at most ``limit`` bytes
    (base64 makes 4 of 3; paths and JSON besides)."""
    return limit // 3 * 4 + 8 * 1024 * 1024


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def manifest(files: dict[str, str]) -> bytes:
    """A folder's manifest: canonical JSON of its files' relative paths and sha256s."""
    return json.dumps({"files": dict(sorted(files.items()))}, separators=(",", ":"), sort_keys=True).encode()


def relative(path: Any, what: str = "input") -> str:
    """``path`` as a clean relative POSIX path; ValueError (its message the user's) if it is not
    text, is empty, absolute, or leaves its directory (``..``)."""
    if not isinstance(path, str) or not path.strip() or "\x00" in path:
        raise ValueError(f"{what} must be a path relative to the notebook's directory, got {str(path)[:80]!r}")
    text = path.replace("\\", "/")
    parts = [p for p in text.split("/") if p not in ("", ".")]
    if text.startswith(("/", "~")) or ".." in parts:
        raise ValueError(f"{what} {path!r} leaves the notebook's directory")
    if not parts:
        raise ValueError(f"{what} {path!r} is the notebook's directory itself: name files or folders in it")
    return "/".join(parts)


def check_paths(paths: Any) -> list[str]:
    """A request's ``inputs``: distinct relative paths, none inside another (ValueError)."""
    if not isinstance(paths, list):
        raise ValueError("inputs must be a list of paths relative to the notebook's directory")
    if len(paths) > MAX_INPUTS:
        raise ValueError(f"inputs name more than {MAX_INPUTS} paths")
    clean = [relative(p) for p in paths]
    for i, a in enumerate(clean):
        for b in clean[i + 1:]:
            if a == b or b.startswith(a + "/") or a.startswith(b + "/"):
                raise ValueError(f"inputs {a!r} and {b!r} overlap: name each file once")
    return clean


def too_large(total: int, limit: int) -> TooLarge:
    return TooLarge(f"inputs are larger than the limit of {limit} bytes ({MAX_INPUT_BYTES.name}): "
                    f"{total} bytes or more")


def encode(collected: Collected) -> dict[str, Any]:
    """The ``inputs_content`` of a request (see the module docstring)."""
    b64 = lambda data: base64.b64encode(data).decode("ascii")  # noqa: E731
    return {path: b64(files[""]) if kind == "file" else {rel: b64(data) for rel, data in files.items()}
            for path, kind, files in collected.entries}


def decoded_size(text: str) -> int:
    """Bytes the base64 ``text`` holds (an upper bound, without decoding it)."""
    return len(text) * 3 // 4


def decode(content: Any, paths: list[str], limit: int) -> Collected:
    """A request's ``inputs_content`` for its ``inputs`` ``paths``, checked: every path given (and
    no other), base64 text, relative file paths; TooLarge past ``limit`` bytes (judged before
    decoding)."""
    if not isinstance(content, dict):
        raise InvalidRequest("inputs_content must be an object: input path -> base64 (file) or {path: base64} (folder)")
    extra = set(content) - set(paths)
    if extra:
        raise InvalidRequest(f"inputs_content names {sorted(extra)[0]!r}, which is not among inputs")
    texts: list[tuple[str, str, dict[str, str]]] = []
    for path in paths:
        if path not in content:
            raise InvalidRequest(f"inputs_content lacks input {path!r}")
        value = content[path]
        if isinstance(value, str):
            texts.append((path, "file", {"": value}))
        elif isinstance(value, dict) and all(isinstance(v, str) for v in value.values()):
            try:
                texts.append((path, "folder", {relative(rel, f"file of input {path}"): v for rel, v in value.items()}))
            except ValueError as exc:
                raise InvalidRequest(str(exc)) from None
        else:
            raise InvalidRequest(f"inputs_content of {path!r} must be base64 text or an object of base64 texts")
    estimate = sum(decoded_size(v) for _, _, files in texts for v in files.values())
    if estimate > limit + 2 * sum(len(files) for _, _, files in texts):  # padding: at most 2 bytes a file
        raise too_large(estimate, limit)
    out = Collected()
    for path, kind, files in texts:
        try:
            out.entries.append((path, kind, {rel: base64.b64decode(v, validate=True) for rel, v in files.items()}))
        except (binascii.Error, ValueError):
            raise InvalidRequest(f"inputs_content of {path!r} is not valid base64") from None
    if out.total > limit:
        raise too_large(out.total, limit)
    return out

