"""The service layer: validate a request, snapshot its notebook, record the job; cancel; reprioritize.

Every entry point of nbrunner (CLI, Python, REST) goes through here, so a bad request is
refused the same way everywhere, before anything is written.
"""
from __future__ import annotations

import getpass
import json
import os
import secrets
import shutil
import string
import threading
from collections import OrderedDict
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, NamedTuple, Sequence

import msgspec

from ..core.config import (CHECKED_NOTEBOOKS_BYTES, MAX_BULK_JOBS, MAX_INPUT_BYTES, MAX_NOTEBOOK_BYTES, PURGE_WAIT_S,
                           RETRIES, Settings)
from ..core.errors import Conflict, InvalidRequest, NbrunnerError
from ..core.inputs import InputRef
from ..core.keys import notify_once_key
from ..core.lifecycle import CancelRequested, Purge, Refused, SetPriority, submitted, transition
from ..core.models import JobRecord, JobRequest, check_content_name, utcnow
from ..core.notebooks import load_nbformat
from .local_files import notebook_file
from .store import JobStore
from .actions import advance, carry_out

if TYPE_CHECKING:  # imported on first use: the CLI's read commands and a plain submit never need it
    import nbformat

ID_ALPHABET = string.ascii_lowercase + string.digits


def retries(req: JobRequest) -> int:
    """The re-runs a job gets: its request's ``retries``, else ``NBRUNNER_RETRIES`` (read now)."""
    return RETRIES.count() if req.retries is None else req.retries


_ID_SPACE = 26 * 36 ** 7  # a letter, then 7 letters or digits


def new_id() -> str:
    """A new random id: a letter, then 7 letters or digits, all equally likely (one draw)."""
    n = secrets.randbelow(_ID_SPACE)
    chars = [string.ascii_lowercase[n % 26]]
    n //= 26
    for _ in range(7):
        n, k = divmod(n, 36)
        chars.append(ID_ALPHABET[k])
    return "".join(chars)


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except (OSError, ValueError):  # a name too long, a NUL byte
        return False


def resolve_notebook(settings: Settings, notebook: str, base: Path | None = None) -> Path:
    """The notebook's real path, refused unless it is a notebook file inside the workspace.

    A relative path is taken from ``base`` (the caller's directory) if it exists there, else
    from the workspace root."""
    root = settings.workspace
    raw = Path(notebook).expanduser()
    path = raw if raw.is_absolute() else root / raw
    if base is not None and not raw.is_absolute() and _exists(base / raw):
        path = base / raw  # CLI and Python: relative to the current directory first
    return notebook_file(path, notebook, inside=root)


class Checked(NamedTuple):
    """A notebook that passed :func:`read_notebook`: its node (shared: read it, never change
    it), the text of its ``input.ipynb`` snapshot, and whether it is elastic (:func:`uses_grants`)."""
    nb: nbformat.NotebookNode
    text: str
    elastic: bool


# Checked notebooks by (path, inode, size, mtime, ctime): a notebook submitted again and again
# (a sweep, a schedule, a burst of REST submits) is parsed and validated once; the oldest go
# first past CHECKED_NOTEBOOKS_BYTES of files.
_CHECKED: OrderedDict[tuple, Checked] = OrderedDict()
_checked_lock = threading.Lock()


def read_notebook(path: Path, shown: str) -> nbformat.NotebookNode:
    """Read and validate a notebook file, with one-line errors (the node is shared: do not change it)."""
    return check_notebook(path, shown).nb


def check_notebook(path: Path, shown: str) -> Checked:
    """:func:`read_notebook`, with the snapshot text; cached while the file is unchanged."""
    st = path.stat()
    if st.st_size > MAX_NOTEBOOK_BYTES:
        raise InvalidRequest(f"notebook is larger than {MAX_NOTEBOOK_BYTES // 2**20} MiB: {shown}")
    key = (str(path), st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    with _checked_lock:
        hit = _CHECKED.get(key)
        if hit is not None:
            _CHECKED.move_to_end(key)
            return hit
    with open(path, "rb") as f:  # the key of what is read: a change while reading gives another key
        st = os.fstat(f.fileno())
        key = (str(path), st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        raw = f.read(MAX_NOTEBOOK_BYTES + 1)
    checked = _check_raw(raw, shown)
    with _checked_lock:
        _CHECKED[key] = checked
        while sum(k[2] for k in _CHECKED) > CHECKED_NOTEBOOKS_BYTES and len(_CHECKED) > 1:
            _CHECKED.popitem(last=False)
    return checked


def check_content(content: Any, shown: str) -> Checked:
    """A notebook sent as a request's ``content`` (its JSON text, or the JSON object), checked as
    :func:`check_notebook` checks a file: size, JSON, nbformat schema."""
    if isinstance(content, dict):
        try:
            content = json.dumps(content, ensure_ascii=False)
        except (TypeError, ValueError, RecursionError):
            raise InvalidRequest(f"not a notebook (content is not JSON): {shown}") from None
    if not isinstance(content, str):
        raise InvalidRequest("content must be the notebook: its JSON object or its text")
    try:
        raw = content.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidRequest(f"content of {shown} is not valid UTF-8 text") from None
    return _check_raw(raw, shown)


def _check_raw(raw: bytes, shown: str) -> Checked:
    if len(raw) > MAX_NOTEBOOK_BYTES:
        raise InvalidRequest(f"notebook is larger than {MAX_NOTEBOOK_BYTES // 2**20} MiB: {shown}")
    nb = _parse_notebook(raw, shown)
    text = load_nbformat().writes(nb)
    return Checked(nb, text if text.endswith("\n") else text + "\n", uses_grants(nb))


def split_content(request: Any) -> tuple[Any, Any]:
    """``request`` without its ``content`` (the notebook sent with it; None: read the file
    ``notebook`` names), and that content."""
    if not isinstance(request, dict) or "content" not in request:
        return request, None
    request = dict(request)
    return request, request.pop("content")


def _parse_notebook(raw: bytes, shown: str) -> nbformat.NotebookNode:
    try:
        text = raw.decode("utf-8")
        data = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise InvalidRequest(f"not a notebook (invalid JSON): {shown}") from None
    if not isinstance(data, dict) or not isinstance(data.get("nbformat"), int):
        raise InvalidRequest(f"not a notebook (no nbformat version): {shown}")
    nbformat = load_nbformat()
    try:
        nb = nbformat.reads(text, as_version=4)
        nbformat.validate(nb)
    except nbformat.ValidationError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else "schema error"
        raise InvalidRequest(f"invalid notebook format in {shown}: {first[:200]}") from None
    except Exception as exc:  # broken structure: conversion raises a zoo of errors
        raise InvalidRequest(f"invalid notebook format in {shown} ({exc.__class__.__name__})") from None
    return nb


ELASTIC_MARKERS = ("ElasticTrainer", "GrantClient", "ClusterSlots", "cluster_slot_source")


def uses_grants(nb: nbformat.NotebookNode) -> bool:
    """True if the notebook follows its GPU grant (elastic); others run as a fixed gang."""
    return any(c.cell_type == "code" and any(m in c.source for m in ELASTIC_MARKERS) for c in nb.cells)


_KERNELS: dict[str, str] = {}  # kernel name -> the directory of its spec, trusted while it exists


def check_kernel(kernel: str) -> None:
    """InvalidRequest unless jupyter_client knows the kernel ``kernel``."""
    known = _KERNELS.get(kernel)
    if known is not None and os.path.isdir(known):
        return
    from .kernelspecs import find

    found = find(kernel)  # without importing IPython
    if isinstance(found, str):
        _KERNELS[kernel] = found  # its directory: trusted while it exists, as below
    if found is None:  # a case only jupyter_client itself can settle
        from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

        try:
            spec = KernelSpecManager().get_kernel_spec(kernel)
        except NoSuchKernel:
            found = False
        else:
            found = True
            if spec.resource_dir:
                _KERNELS[kernel] = spec.resource_dir
    if not found:
        raise InvalidRequest(f"unknown kernel: {kernel!r}")


def check_notebook_kernel(nb: nbformat.NotebookNode, shown: str) -> None:
    """The kernel a notebook names in its metadata must exist here (papermill would fail later)."""
    spec = nb.metadata.get("kernelspec")
    name = spec.get("name") if isinstance(spec, dict) else None
    if isinstance(name, str) and name:
        try:
            check_kernel(name)
        except InvalidRequest:
            raise InvalidRequest(f"unknown kernel {name!r} named in the metadata of {shown} "
                                 "(pass kernel= to run it with another)") from None


def check_language(language: str) -> None:
    """papermill ``-l``: a language papermill can write parameters in."""
    from papermill.translators import papermill_translators

    known = sorted(papermill_translators._translators)
    if language not in known:
        raise InvalidRequest(f"unknown language {language!r} (papermill knows {', '.join(known)})")


def resolve_cwd(settings: Settings, cwd: str, base: Path | None = None) -> str:
    """papermill ``--cwd``: a directory inside the workspace, kept relative to it."""
    raw = Path(cwd).expanduser()
    path = raw if raw.is_absolute() else (base / raw if base is not None and _exists(base / raw)
                                          else settings.workspace / raw)
    try:
        real = path.resolve(strict=True)
    except (OSError, RuntimeError):
        raise InvalidRequest(f"cwd not found: {cwd}") from None
    root = settings.workspace
    if real != root and root not in real.parents:
        raise InvalidRequest(f"cwd is outside the workspace: {cwd}")
    if not real.is_dir():
        raise InvalidRequest(f"cwd is not a directory: {cwd}")
    return relative_to_workspace(settings, real) if real != root else "."


def relative_to_workspace(settings: Settings, path: Path) -> str:
    try:
        return str(path.relative_to(settings.workspace))
    except ValueError:
        return str(path)


class Prepared(NamedTuple):
    """A request that passed every check of :func:`submit`, ready to be recorded."""
    req: JobRequest
    checked: Checked
    shown: str
    stem: str
    cwd: str | None
    refs: Sequence[InputRef] = ()  # the job's inputs, already in the input store


def submit(store: JobStore, settings: Settings, request: dict[str, Any], owner: str | None = None,
           base: Path | None = None, groups: Sequence[str] = ()) -> JobRecord:
    """Validate a job request, snapshot its notebook to ``runs/<id>/input.ipynb`` and queue it;
    returns the new record, owned by ``owner`` (default: this process's user), with the owner's
    ``groups`` beside it.

    The notebook is the file ``notebook`` names (inside the workspace), or, when the request
    carries ``content`` (the notebook's JSON object or text), that content, which ``notebook``
    then names as given (a relative path: the job's name and working directory).  ``inputs`` are
    read beside that file, or, with ``content``, taken from the request's ``inputs_content``
    (:mod:`nbrunner.core.inputs`); the job runs in its own working directory with them."""
    return _record(store, settings, *prepare(settings, request, base), owner, groups)


def prepare(settings: Settings, request: dict[str, Any], base: Path | None = None) -> Prepared:
    """Every check of :func:`submit` on one request (InvalidRequest says what is wrong); nothing
    is written but the job's inputs, stored by content (shared with every job naming the same bytes)."""
    request, content = split_content(request)
    request, inputs_content = split_inputs(request)
    req = JobRequest.parse(request)
    if content is None:
        path = resolve_notebook(settings, req.notebook, base)
        shown, stem = relative_to_workspace(settings, path), path.stem
        checked = check_notebook(path, shown)
    else:  # the notebook came with the request: ``notebook`` names it, as given
        shown = check_content_name(req.notebook)
        stem = PurePosixPath(shown.replace("\\", "/")).stem
        checked = check_content(content, shown)
    if req.kernel:
        check_kernel(req.kernel)
    else:
        check_notebook_kernel(checked.nb, shown)
    if req.language:
        check_language(req.language)
    cwd = resolve_cwd(settings, req.cwd, base) if req.cwd else None
    refs = job_inputs(settings, req, None if content is not None else path.parent, inputs_content)
    return Prepared(req, checked, shown, stem, cwd, refs)


def split_inputs(request: Any) -> tuple[Any, Any]:
    """``request`` without its ``inputs_content`` (the inputs sent with a notebook's ``content``),
    and that content (None: none sent)."""
    if not isinstance(request, dict) or "inputs_content" not in request:
        return request, None
    request = dict(request)
    return request, request.pop("inputs_content")


def job_inputs(settings: Settings, req: JobRequest, notebook_dir: Path | None, sent: Any) -> list[InputRef]:
    """The stored inputs of ``req``: read beside the notebook file (``notebook_dir``), or decoded
    from ``sent`` when the notebook came as content; InvalidRequest or TooLarge (413) in one line,
    nothing stored, when they are refused."""
    from ..core.inputs import decode
    from .local_files import collect_inputs
    from .input_store import store

    if not req.inputs:
        if sent is not None:
            raise InvalidRequest("inputs_content given without inputs")
        return []
    if req.cwd:
        raise InvalidRequest("a job with inputs runs in its own working directory: give inputs or cwd, not both")
    limit = MAX_INPUT_BYTES.count()
    if notebook_dir is None:
        if sent is None:
            raise InvalidRequest("inputs of a notebook sent as content must come with it (inputs_content)")
        collected = decode(sent, req.inputs, limit)
    else:
        if sent is not None:
            raise InvalidRequest("inputs_content goes with a notebook sent as content")
        collected = collect_inputs(notebook_dir, req.inputs, limit)
    return store(settings, collected)


def submit_many(store: JobStore, settings: Settings, requests: Any, owner: str | None = None,
                base: Path | None = None, groups: Sequence[str] = ()) -> list[JobRecord]:
    """Submit a list of job requests, all or none: each is checked as :func:`submit` checks one (the
    first bad one raises, its message naming it, ``jobs[i]: ...``, and nothing is written), then
    every snapshot is written and every record stored in one atomic step.  Returns the records, in
    the order of ``requests``."""
    if not isinstance(requests, list) or not requests:
        raise InvalidRequest("jobs must be a non-empty list of job requests")
    if len(requests) > MAX_BULK_JOBS:
        raise InvalidRequest(f"at most {MAX_BULK_JOBS} jobs can be submitted at once, got {len(requests)}")
    ready = []
    for i, request in enumerate(requests):
        try:
            ready.append(prepare(settings, request, base))
        except NbrunnerError as exc:
            raise type(exc)(f"jobs[{i}]: {exc}") from None
    records: list[JobRecord] = []
    try:
        for p in ready:
            records.append(_stage(settings, p, owner, groups))
        if not store.create_many(records):
            raise Conflict("a job id was taken meanwhile: nothing was submitted, try again")
    except BaseException:
        for rec in records:
            shutil.rmtree(settings.job_dir(rec.id), ignore_errors=True)
        raise
    return records


def stage_each(settings: Settings, requests: Sequence[tuple[Any, str | None, Sequence[str]]],
               base: Path | None = None) -> list[JobRecord | Exception]:
    """Independent job requests, each ``(request, owner, groups)``, checked and their job directories
    written as :func:`submit` does for one, not stored yet (:func:`store_staged` stores them): in
    each request's place, its record or the error that refused it (the others are not affected)."""
    out: list[JobRecord | Exception] = []
    for request, owner, groups in requests:
        try:
            out.append(_stage(settings, prepare(settings, request, base), owner, groups))
        except Exception as exc:  # noqa: BLE001 - this request's own error, raised to its caller
            out.append(exc)
    return out


def store_staged(store: JobStore, settings: Settings,
                 out: list[JobRecord | Exception]) -> list[JobRecord | Exception]:
    """Every record :func:`stage_each` staged in ``out`` stored in one atomic Redis round trip
    (concurrent REST submits share it: :mod:`nbrunner.server.submit_batch`); a record that could
    not be stored is replaced by its error and its job directory removed."""
    out = list(out)
    staged = [r for r in out if isinstance(r, JobRecord)]
    try:
        if staged and not store.create_many(staged):  # an id taken meanwhile (36^8 ids): one by one
            for i, rec in enumerate(out):
                if isinstance(rec, JobRecord) and store.create(rec) is None:
                    shutil.rmtree(settings.job_dir(rec.id), ignore_errors=True)
                    out[i] = Conflict(f"job id {rec.id} already exists")
    except Exception as exc:  # noqa: BLE001 - Redis out of reach: every staged request gets it
        for i, rec in enumerate(out):
            if isinstance(rec, JobRecord):
                shutil.rmtree(settings.job_dir(rec.id), ignore_errors=True)
                out[i] = exc
    return out


def _record(store: JobStore, settings: Settings, req: JobRequest, checked: Checked, shown: str,
            stem: str, cwd: str | None, refs: Sequence[InputRef], owner: str | None,
            groups: Sequence[str]) -> JobRecord:
    """Snapshot ``checked`` to a new job directory and queue the job ``req`` (already validated),
    with its stored inputs ``refs``."""
    record = _stage(settings, Prepared(req, checked, shown, stem, cwd, refs), owner, groups)
    try:
        if store.create(record) is None:
            raise Conflict(f"job id {record.id} already exists")
    except BaseException:
        shutil.rmtree(settings.job_dir(record.id), ignore_errors=True)
        raise
    return record


def _stage(settings: Settings, p: Prepared, owner: str | None, groups: Sequence[str]) -> JobRecord:
    """A new job directory holding the snapshot of ``p`` and its ``job.json``, and the record to
    store (the directory is removed again if anything here fails)."""
    req = p.req
    for _ in range(10):
        job_id = new_id()
        job_dir = settings.job_dir(job_id)
        try:
            job_dir.mkdir(parents=True)
        except FileExistsError:
            continue
        break
    else:  # pragma: no cover - 36^8 ids
        raise Conflict("could not allocate a job id")
    try:
        (job_dir / "logs").mkdir()
        with open(job_dir / "input.ipynb", "wb") as f:
            f.write(p.checked.text.encode("utf-8"))
        record = submitted(JobRecord(
            id=job_id,
            name=req.name or p.stem,
            notebook=p.shown,
            parameters=req.parameters,
            priority=req.priority,
            min_gpus=req.min_gpus,
            max_gpus=req.max_gpus,
            owner=owner or getpass.getuser(),
            groups=list(groups),
            output=relative_to_workspace(settings, job_dir / "output.ipynb"),
            sweep=req.sweep,
            schedule=req.schedule,
            timeout=req.timeout,
            kernel=req.kernel,
            language=req.language,
            cwd=p.cwd,
            report_mode=req.report_mode,
            retries=retries(req),
            elastic=p.checked.elastic,
            pipeline=req.pipeline,
            step=req.step,
            inputs=[r.path for r in p.refs],
            input_refs=list(p.refs),
            notify=req.notify,
        ))
        with open(job_dir / "job.json", "wb") as f:  # to_dict()'s JSON, encoded by msgspec
            f.write(msgspec.json.format(msgspec.json.encode(record.public_view()), indent=1))
    except BaseException:
        shutil.rmtree(job_dir, ignore_errors=True)
        raise
    return record


def rerun(store: JobStore, settings: Settings, job_id: str, parameters: Any = None,
          owner: str | None = None, groups: Sequence[str] = ()) -> JobRecord:
    """A new job from ``job_id``'s input snapshot, with the same options and its parameters
    updated by ``parameters``; owned by ``owner`` (in ``groups``)."""
    old = store.get(job_id)
    if parameters is None:
        parameters = {}
    if not isinstance(parameters, dict):
        raise InvalidRequest("parameters must be a JSON object")
    req = JobRequest.parse({
        "notebook": old.notebook, "parameters": {**old.parameters, **parameters}, "name": old.name,
        "min_gpus": old.min_gpus, "max_gpus": old.max_gpus, "priority": old.priority, "timeout": old.timeout,
        "kernel": old.kernel, "language": old.language, "report_mode": old.report_mode, "retries": old.retries,
        "inputs": old.inputs, "notify": old.notify,
    })
    snapshot = settings.job_dir(job_id) / "input.ipynb"
    if not snapshot.is_file():
        raise Conflict(f"job {job_id} has no input snapshot to run again")
    checked = check_notebook(snapshot, f"the input of job {job_id}")
    cwd = resolve_cwd(settings, old.cwd) if old.cwd else None
    return _record(store, settings, req, checked, old.notebook, old.name, cwd, old.input_refs, owner, groups)


def purge(store: JobStore, settings: Settings, job_id: str, wait: float = PURGE_WAIT_S) -> None:
    """Remove a finished job: its record (everywhere Redis indexes it) and its directory.

    A job's worker confirms the release of its slots just after the final status: the purge
    waits up to ``wait`` seconds for it (Conflict after that), so no slot is freed while
    something of the job may still run on it."""
    import time

    from . import grants

    deadline = time.monotonic() + wait
    while True:
        rec = store.get(job_id)
        try:
            transition(rec, Purge())  # finished and released: Refused says why not
            if not grants.held_by(store.r, job_id):
                break
        except Refused:
            if not rec.finished or time.monotonic() > deadline:
                raise
        if time.monotonic() > deadline:
            raise Conflict(f"job {job_id} is still stopping: try again in a moment")
        time.sleep(0.1)
    done = store.remove(job_id, extra_keys=(grants.grant_key(job_id), grants.timeline_key(job_id),
                                            notify_once_key("job", job_id)))
    carry_out(store, job_id, done.actions, settings)


def cancel(store: JobStore, job_id: str, settings: Settings | None = None, reason: str = "cancelled") -> JobRecord:
    """Cancel a queued or running job (Conflict if it has finished); a running one is stopped by
    its worker.  With ``settings``, ``output.html`` is written before the final status."""
    return advance(store, job_id, CancelRequested(at=utcnow(), reason=reason), settings).record


def set_priority(store: JobStore, job_id: str, priority: Any) -> JobRecord:
    """Change a queued or running job's priority (1..10000)."""
    return advance(store, job_id, SetPriority(priority=priority)).record
