"""Execute one job with papermill: the function an rq work horse runs.

The attempt starts and ends in the record as :mod:`.attempt` says; in between papermill runs
the notebook in this process (the default) or, when the worker runs jobs as their owners, in a
process of the owner's (:mod:`.owner_job`).
"""
from __future__ import annotations

import json
import logging
import math
import os
import re
import socket
from contextlib import contextmanager
from pathlib import Path

from ..core.config import CELL_TIMEOUT_MARGIN_S, HOST, KERNEL_START_TRIES, OUTPUT_AUTOSAVE_S, Settings
from ..core.errors import one_line
from ..core.inputs import WORK_DIR
from ..core.lifecycle import KERNEL_KILLED, timeout_error
from ..core.models import JobRecord
from ..core.notebooks import load_nbformat
from ..control.store import JobStore
from . import as_owner
from .attempt import die_with_parent, end, finish, job_environment, start_attempt
from .attempt_output import claim, fenced_path
from .attempt_output import write as write_output
from .deadline import Deadline
from .kernels import kernel_config, kernel_processes, remove_kernel_sockets
from .warm_kernel import finish_shutdowns, offered, shut_down

nbformat = load_nbformat()  # without jsonschema's slow optional IRI checker (core.notebooks)

log = logging.getLogger("nbrunner.execute")


class JobTimeout(Exception):
    pass


def describe_failure(exc: BaseException, timeout: float | None, earlier: tuple = (), output: Path | None = None) -> str:
    """The one-line ``error`` of a failed job, naming its cause."""
    from nbclient.exceptions import CellTimeoutError, DeadKernelError
    from papermill.exceptions import PapermillExecutionError
    from rq.timeouts import JobTimeoutException

    if isinstance(exc, PapermillExecutionError):
        if exc.ename == "CellExecutionError" and not exc.evalue and output is not None:
            real = cell_error(output, exc.cell_index)  # e.g. a line magic's UsageError, shown only on stderr
            if real:
                return one_line(real)
        if exc.ename == "ElasticTrainingError" and exc.evalue:
            # its first line names the cause (a learner's exception); tracebacks follow
            return one_line(exc.evalue.strip().splitlines()[0])
        return one_line(f"{exc.ename}: {exc.evalue}" if exc.evalue else exc.ename)
    if isinstance(exc, (CellTimeoutError, JobTimeoutException, JobTimeout)):
        return timeout_error(timeout)
    if isinstance(exc, DeadKernelError):
        code = kernel_exit_code(earlier)
        if code is not None and code < 0:
            import signal

            return f"{KERNEL_KILLED} by {signal.Signals(-code).name} (DeadKernelError)"
        return f"kernel died (DeadKernelError): the notebook's process exited with code {code}"
    return one_line(f"{exc.__class__.__name__}: {exc}")


ERROR_LINE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit)): (.+)$")


def cell_error(output: Path, index: int) -> str | None:
    """"Name: message" of the failed cell ``index`` when papermill only says CellExecutionError:
    IPython shows some errors (``UsageError`` of an unknown magic) as stderr text, not as an error."""
    try:
        nb = nbformat.read(str(output), as_version=4)
    except Exception:  # noqa: BLE001 - no notebook: the generic message stays
        return None
    failed = [c for c in nb.cells if c.get("metadata", {}).get("papermill", {}).get("exception")]
    cell = failed[0] if failed else nb.cells[index] if 0 <= index < len(nb.cells) else None
    if cell is None:
        return None
    found = None
    for out in cell.get("outputs", []):
        if out.get("output_type") == "error" and out.get("ename"):
            return f"{out['ename']}: {out.get('evalue', '')}".rstrip(": ")
        if out.get("output_type") == "stream" and out.get("name") == "stderr":
            for line in strip_ansi(out.get("text", "")).splitlines():
                m = ERROR_LINE.match(line.strip())
                if m:
                    found = f"{m.group(1)}: {m.group(2)}"
    return found


def strip_ansi(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", text)


def kernel_exit_code(earlier: tuple = ()) -> int | None:
    """Exit code of the kernel papermill started in this process (negative: killed by a signal),
    ignoring the ``Popen`` objects in ``earlier`` (kernels that failed to start).

    papermill only says ``DeadKernelError``; the kernel's ``Popen`` object still holds how it
    ended, so an exit of the notebook's own (``os._exit``) is told apart from a kill."""
    for proc in kernel_processes():
        if all(proc is not old for old in earlier) and proc.returncode is not None:
            return proc.returncode
    return None


def never_started(exc: BaseException, output: Path) -> bool:
    """Did the kernel fail before running any cell (so the notebook can simply be run again)?"""
    if not isinstance(exc, (RuntimeError, TimeoutError)):  # not a cell's error (PapermillExecutionError)
        return False
    try:
        nb = nbformat.read(str(output), as_version=4)
    except Exception:
        return False
    return not any(c.get("metadata", {}).get("papermill", {}).get("start_time") for c in nb.cells)


def mark_failure(output: Path, error: str, attempt: int | None = None) -> None:
    """Show where a job stopped when papermill did not mark it (timeout, dead kernel); written
    only while ``attempt`` owns the job directory (:mod:`.attempt_output`)."""
    try:
        nb = nbformat.read(str(output), as_version=4)
    except Exception:
        return
    if any(c.get("metadata", {}).get("papermill", {}).get("exception") for c in nb.cells):
        nb.metadata.setdefault("nbrunner", {})["error"] = error
        write_output(output, nbformat.writes(nb), attempt)
        return
    at = len(nb.cells)
    for i, cell in enumerate(nb.cells):
        if cell.get("metadata", {}).get("papermill", {}).get("status") == "running":
            at = i + 1
            break
    note = nbformat.v4.new_markdown_cell(f"**nbrunner: the job failed here.** `{error}`")
    note.metadata["tags"] = ["nbrunner-error"]
    nb.cells.insert(at, note)
    nb.metadata.setdefault("nbrunner", {})["error"] = error
    write_output(output, nbformat.writes(nb), attempt)


@contextmanager
def papermill_log(path: Path):
    """papermill's own log goes to ``path`` while the block runs."""
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    pm_logger = logging.getLogger("papermill")
    pm_logger.addHandler(handler)
    pm_logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        pm_logger.removeHandler(handler)
        handler.close()


def notebook_kernel_name(rec: JobRecord, notebook: Path) -> str | None:
    """The kernel papermill would start for the job: its own, else its notebook's."""
    if rec.kernel:
        return rec.kernel
    try:
        nb = json.loads(notebook.read_text())
    except (OSError, ValueError):
        return None
    spec = nb.get("metadata", {}).get("kernelspec") if isinstance(nb, dict) else None
    return spec.get("name") if isinstance(spec, dict) else None


def warm_kernel(rec: JobRecord, job_dir: Path, cwd: Path, env: dict[str, str], spare: dict | None, out):
    """The worker's pre-warmed kernel as papermill's kernel manager, if it fits this job."""
    if spare is None or notebook_kernel_name(rec, job_dir / "input.ipynb") != spare.get("kernel_name"):
        return None
    from .warm_kernel import adopt

    try:
        return adopt(spare, str(cwd), env)
    except Exception as exc:  # noqa: BLE001 - the job starts a kernel of its own instead
        out.write(f"[nbrunner] the pre-warmed kernel could not be used ({one_line(exc)}); starting one\n")
        return None


def preload() -> None:
    """Import papermill (with its I/O handlers and engines) now: a worker does it before it forks
    work horses, so that each job does not pay for it."""
    import papermill  # noqa: F401

    from . import ready_client  # noqa: F401 - and the kernel clients each job uses


def execute_notebook(rec: JobRecord, job_dir: Path, cwd: Path, out, failed_kernels: list, deadline: Deadline,
                     km=None) -> None:
    """papermill on the job's input snapshot, into ``output.ipynb``.  A kernel that dies before
    running a cell is started again (``KERNEL_START_TRIES`` in all); the processes of the kernels
    that failed so are added to ``failed_kernels`` (held: their ids could be reused).  The
    ``deadline`` ends the whole run at the job's wall-time limit.  ``km``: a kernel already
    started for this job (the worker's pre-warmed one), used by the first try."""
    import papermill as pm

    from .ready_client import ReadyKernelManager

    output = job_dir / "output.ipynb"
    for tries_left in reversed(range(KERNEL_START_TRIES)):
        if deadline.expired.is_set():  # no new kernel once the job's time is up
            raise JobTimeout()
        config = kernel_config()
        warm, km = km, None
        try:
            pm.execute_notebook(
                str(job_dir / "input.ipynb"),
                fenced_path(output, rec.attempt),  # saved only while this attempt owns the job
                parameters=rec.parameters,
                kernel_name=rec.kernel,
                language=rec.language,
                report_mode=rec.report_mode,
                # a backstop per cell; the deadline ends the job at its wall time
                execution_timeout=math.ceil(rec.timeout) + CELL_TIMEOUT_MARGIN_S if rec.timeout else None,
                progress_bar=False,
                log_output=True,
                stdout_file=out,
                stderr_file=out,
                cwd=str(cwd),
                request_save_on_cell_execute=True,
                autosave_cell_every=OUTPUT_AUTOSAVE_S,
                config=config,
                **({"km": warm} if warm is not None else {"kernel_manager_class": ReadyKernelManager}),
            )
            return
        except Exception as exc:
            if not tries_left or deadline.expired.is_set() or not never_started(exc, output):
                raise
            out.write(f"\n[nbrunner] the kernel failed to start ({one_line(exc)}); starting it again\n")
            failed_kernels[:] = kernel_processes()
        finally:
            remove_kernel_sockets(config)
            if warm is not None:
                shut_down(warm)


def run_notebook(rec: JobRecord, job_dir: Path, cwd: Path, env: dict[str, str], spare: dict | None = None,
                 interrupted=None) -> tuple[str | None, bool]:
    """Run the job's notebook (its logs in ``job_dir/logs``); returns its one-line ``error`` (None:
    completed) and whether its time ran out.  An interrupt (KeyboardInterrupt, SystemExit) calls
    ``interrupted(error, timed_out)``, then goes on up."""
    logs = job_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    output = job_dir / "output.ipynb"
    error, timed_out = None, False
    failed_kernels: list = []  # kernels that died before running a cell (held: ids could be reused)
    deadline = Deadline(rec.timeout)  # the timeout is the job's whole wall time
    with papermill_log(logs / "papermill.log"), open(logs / "driver.log", "a", buffering=1) as out, deadline:
        try:
            km = warm_kernel(rec, job_dir, cwd, env, spare, out)
            execute_notebook(rec, job_dir, cwd, out, failed_kernels, deadline, km)
        except BaseException as exc:  # noqa: BLE001 - every way a notebook can end is recorded
            error = describe_failure(exc, rec.timeout, tuple(failed_kernels), output)
            timed_out = deadline.expired.is_set() or error == timeout_error(rec.timeout)
            if timed_out:
                error = timeout_error(rec.timeout)
            out.write(f"\n[nbrunner] job failed: {error}\n")
            if output.exists():
                mark_failure(output, error, rec.attempt)
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                if interrupted is not None:
                    interrupted(error, timed_out)
                raise
    return error, timed_out


def run_job(job_id: str, attempt: int) -> str:
    """Run attempt ``attempt`` of job ``job_id``; returns the final status (or 'skipped')."""
    die_with_parent()
    spare = offered()  # read first: no kernel of this job must inherit it
    settings = Settings.load()
    store = JobStore.from_url(settings.url)
    worker = os.environ.get("RQ_WORKER_ID", "local")
    host = HOST.text() or socket.gethostname()
    rec = start_attempt(store, job_id, attempt, worker, host)
    if rec is None:
        return "skipped"
    claim(settings.job_dir(job_id), rec.attempt)  # from now on an earlier attempt's output is refused
    if as_owner.enabled():
        from .owner_job import run_as_owner

        return run_as_owner(store, settings, rec)

    job_dir = settings.job_dir(job_id)
    env = job_environment(settings, rec)
    os.environ.update(env)
    notebook_dir = (settings.workspace / rec.notebook).parent
    cwd = notebook_dir if notebook_dir.is_dir() else job_dir
    if rec.cwd:
        cwd = settings.workspace / rec.cwd
    if rec.input_refs:  # its own working directory, with its inputs where the notebook had them
        from ..control.input_store import copy_for_job

        failed = copy_for_job(settings, rec)
        if failed:
            return end(store, settings, rec, failed, False)
        cwd = job_dir / WORK_DIR
    error, timed_out = run_notebook(rec, job_dir, cwd, env, spare,
                                    lambda e, t: finish(store, settings, job_id, attempt, e, t))
    try:
        return end(store, settings, rec, error, timed_out)
    finally:
        finish_shutdowns()  # the kernel exited while the end was recorded; nothing of it outlives the horse
