"""Pre-warmed, single-use kernels: the worker starts the next job's kernel while it waits.

The worker (rq's parent process) keeps one :class:`SpareKernel` started for the default
kernel name.  The work horse of the next job *adopts* it (:func:`adopt`): it connects to
it, moves it into the job's working directory and environment, and hands it to papermill
as its kernel manager.  A kernel is never reused: whatever happens, the worker kills the
spare with the job's other leftovers when the job ends and starts a new one, so each job
still gets a fresh kernel, as with papermill.  A spare that died is started again before
the next job; none is left behind when the worker stops.

The horse is not the kernel's parent, so it cannot ``waitpid`` it: :class:`AdoptedProcess`
gives jupyter_client a ``Popen``-like handle that reads the kernel's state (and, once it is
a zombie, its exit status) from ``/proc``.
"""
from __future__ import annotations

import json
import logging
import os
import signal
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from ..core.config import KERNEL_START_TIMEOUT_S, SPARE_KERNEL, WARM_KERNEL
from .kernel_forkserver import NATIVE_ARGV, ForkServer
from .kernels import ADOPTED, kernel_config, remove_kernel_sockets

log = logging.getLogger("nbrunner.worker")

ENV_SPARE = SPARE_KERNEL.name  # the spare's description, from the worker to its horse


def spare_kernel_name() -> str:
    """The kernel name each worker starts ahead (``NBRUNNER_WARM_KERNEL``)."""
    return WARM_KERNEL.required()


class SpareKernel:
    """The kernel a worker keeps started ahead for its next job (worker side)."""

    def __init__(self, kernel_name: str | None = None):
        self.kernel_name = kernel_name or spare_kernel_name()
        self.pid: int | None = None
        self.connection_file: str | None = None
        self.config = None
        self.forkserver = ForkServer(KERNEL_START_TIMEOUT_S)

    def start(self) -> None:
        """Launch a fresh kernel (no client: the worker never talks to it, its horse does);
        forked from the fork server when the kernel is this Python's own ipykernel."""
        from jupyter_client.connect import write_connection_file
        from jupyter_client.kernelspec import KernelSpecManager
        from jupyter_client.launcher import launch_kernel

        spec = KernelSpecManager().get_kernel_spec(self.kernel_name)
        self.config = config = kernel_config()
        transport = config.KernelManager.get("transport", "tcp")
        ip = config.KernelManager.get("ip", "127.0.0.1")
        fname = os.path.join(_runtime_dir(), f"nbrunner-spare-{uuid.uuid4().hex}.json")
        fname, _ = write_connection_file(fname, transport=transport, ip=ip, key=uuid.uuid4().hex.encode(),
                                         kernel_name=self.kernel_name)
        argv = [a.format(connection_file=fname, resource_dir=spec.resource_dir, prefix=sys.prefix) for a in spec.argv]
        if argv and argv[0] in {"python", f"python{sys.version_info[0]}", "python%i.%i" % sys.version_info[:2]}:
            argv[0] = sys.executable  # as jupyter_client does: the worker's own Python
        env = {**os.environ, **(spec.env or {})}
        env.pop(ENV_SPARE, None)
        if argv[0] == sys.executable and argv[1:] == [a.format(connection_file=fname) for a in NATIVE_ARGV]:
            try:
                self.pid = self.forkserver.spawn(fname, {**env, "JPY_PARENT_PID": str(os.getpid())})
                self.connection_file = fname
                return
            except Exception as exc:  # noqa: BLE001 - launched the usual way below
                log.warning("kernel fork server: %s; launching the kernel", exc)
                self.forkserver.close()
        proc = launch_kernel(argv, env=env, independent=False)
        self.pid, self.connection_file = proc.pid, fname
        # the worker reaps it (kill_children); no Popen is kept, so a horse never mistakes a
        # copy of it for a kernel of its own
        import subprocess

        if proc in getattr(subprocess, "_active", []):
            subprocess._active.remove(proc)
        proc.returncode = 0  # forget it: psutil reaps the process, not this object

    def alive(self) -> bool:
        return self.pid is not None and _state(self.pid) not in (None, "Z", "X")

    def ensure(self) -> None:
        """Start a spare if there is none, or the last one died."""
        if not self.alive():
            self.discard()
            self.start()

    def describe(self) -> str:
        return json.dumps({"pid": self.pid, "connection_file": self.connection_file, "kernel_name": self.kernel_name})

    def discard(self) -> None:
        """Kill the spare (if it still runs) and remove its connection file and sockets."""
        if self.pid is not None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            _reap(self.pid)
        if self.connection_file:
            Path(self.connection_file).unlink(missing_ok=True)
        if self.config is not None:
            remove_kernel_sockets(self.config)
        self.pid = self.connection_file = self.config = None

    def detach(self) -> "SpareKernel":
        """Hand the current spare over (to be discarded once it is dead) and keep none: the next
        :meth:`ensure` starts a new one."""
        old = SpareKernel.__new__(SpareKernel)
        old.kernel_name, old.forkserver = self.kernel_name, None
        old.pid, old.connection_file, old.config = self.pid, self.connection_file, self.config
        self.pid = self.connection_file = self.config = None
        return old

    def close(self) -> None:
        """Discard the spare and stop the fork server (the worker is stopping)."""
        self.discard()
        self.forkserver.close()


def _runtime_dir() -> str:
    from jupyter_core.paths import jupyter_runtime_dir

    path = jupyter_runtime_dir()
    os.makedirs(path, mode=0o700, exist_ok=True)
    return path


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


def _stat(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return raw[raw.rindex(")") + 2:].split()  # fields from the 3rd (state) on; the name may hold spaces


def _state(pid: int) -> str | None:
    fields = _stat(pid)
    return fields[0] if fields else None


class AdoptedProcess:
    """A ``Popen``-like handle on a kernel this process did not start (see the module doc)."""

    stdin = stdout = stderr = None

    def __init__(self, pid: int, args: list[str]):
        self.pid = pid
        self.args = args
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            fields = _stat(self.pid)
            if fields is None:  # already reaped by the worker: the exit status is lost
                self.returncode = -signal.SIGKILL
            elif fields[0] in ("Z", "X"):
                status = int(fields[49]) if len(fields) > 49 else 0  # field 52: exit_code, as waitpid reports it
                self.returncode = os.waitstatus_to_exitcode(status) if status else 0
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.poll() is None and not _exited(self.pid, 1e9 if timeout is None else timeout):
            import subprocess

            raise subprocess.TimeoutExpired(self.args, timeout)
        return self.poll()

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)




def offered() -> dict[str, Any] | None:
    """The spare the worker offers this horse, if any (read once)."""
    raw = os.environ.pop(ENV_SPARE, None)
    if not raw:
        return None
    try:
        spare = json.loads(raw)
    except ValueError:
        return None
    pid = spare.get("pid")
    if not isinstance(pid, int) or _state(pid) in (None, "Z", "X"):
        return None
    return spare


PREAMBLE = "(lambda os: (os.chdir({cwd!r}), os.environ.update({env!r})))(__import__('os'))"


def adopt(spare: dict[str, Any], cwd: str, env: dict[str, str], startup_timeout: float = KERNEL_START_TIMEOUT_S):
    """An async kernel manager (what nbclient drives) for the worker's spare kernel, moved into
    ``cwd`` and ``env``; raises if it cannot be used (the caller then starts a kernel as usual).

    The move is one request on the shell channel, whose reply says the kernel is up: no IOPub and
    no ``wait_for_ready`` here (nbclient's client asks once more, see :mod:`.ready_client`)."""
    from jupyter_client.provisioning import LocalProvisioner

    from .ready_client import ReadyKernelManager

    km = ReadyKernelManager(kernel_name=spare["kernel_name"], connection_file=spare["connection_file"])
    km.load_connection_file()
    proc = AdoptedProcess(spare["pid"], ["ipykernel (pre-warmed)", str(spare["pid"])])
    provisioner = LocalProvisioner(kernel_id=str(uuid.uuid4()), kernel_spec=km.kernel_spec, parent=km)
    provisioner.process, provisioner.pid = proc, proc.pid
    provisioner.pgid = os.getpgid(proc.pid)
    provisioner.connection_info = km.get_connection_info()
    km.provisioner = provisioner
    ADOPTED.append(proc)
    kc = km.blocking_client()
    kc.start_channels(shell=True, iopub=False, stdin=False, hb=False, control=False)
    try:
        msg_id = kc.execute(PREAMBLE.format(cwd=cwd, env=env), silent=True, store_history=False)
        reply = _shell_reply(kc, proc, msg_id, startup_timeout)
        if reply["content"].get("status") != "ok":
            raise RuntimeError(f"setting its directory and environment failed: {reply['content'].get('evalue')}")
    finally:
        kc.stop_channels()
    return km


def _shell_reply(kc, proc: AdoptedProcess, msg_id: str, timeout: float) -> dict:
    """The kernel's shell reply to ``msg_id``; RuntimeError if the kernel dies or ``timeout`` passes."""
    from queue import Empty

    end = time.monotonic() + timeout
    while True:
        try:
            msg = kc.get_shell_msg(timeout=max(0.0, min(1.0, end - time.monotonic())))
        except Empty:
            if proc.poll() is not None:
                raise RuntimeError("the kernel died before it answered") from None
            if time.monotonic() > end:
                raise RuntimeError(f"the kernel did not answer in {timeout:g} s") from None
            continue
        if msg.get("parent_header", {}).get("msg_id") == msg_id:
            return msg


STOPPING: list = []  # adopted kernels asked to shut down, whose exit :func:`finish_shutdowns` awaits


def shut_down(km) -> None:
    """Ask an adopted kernel to shut down once papermill is done with it (papermill leaves a kernel
    it did not start running), without waiting: it exits (about 0.5 s of Python's teardown) while
    the job's end is recorded; :func:`finish_shutdowns` waits for it before the work horse exits."""
    from jupyter_core.utils import run_sync

    try:
        run_sync(km.request_shutdown)()
    except Exception:  # noqa: BLE001 - killed below, or by the worker with the job's leftovers
        pass
    STOPPING.append(km)


def finish_shutdowns() -> None:
    """Wait for the kernels :func:`shut_down` asked to stop (each up to its manager's
    ``shutdown_wait_time``), kill those still running, and release their managers' resources."""
    while STOPPING:
        km = STOPPING.pop()
        try:
            proc = km.provisioner.process
            if not _exited(proc.pid, km.shutdown_wait_time):
                proc.kill()
            km.cleanup_resources()
        except Exception:  # noqa: BLE001 - the worker kills whatever is left
            pass


def _exited(pid: int, timeout: float) -> bool:
    """Wait up to ``timeout`` seconds for process ``pid`` (not a child: a pidfd says when it ends)."""
    import select

    try:
        fd = os.pidfd_open(pid)
    except (OSError, AttributeError):  # gone already, or no pidfd here: poll
        end = time.monotonic() + timeout
        while _state(pid) not in (None, "Z", "X"):
            if time.monotonic() > end:
                return False
            time.sleep(0.01)
        return True
    try:
        return bool(select.select([fd], [], [], timeout)[0])
    finally:
        os.close(fd)
