"""A kernel fork server: fresh IPython kernels forked from a process that imported ipykernel once.

Most of a Python kernel's start is importing IPython and ipykernel (about 1 s of CPU for each
kernel, every job).  The worker starts this server once (``python kernel_forkserver.py FD``);
it imports ``ipykernel.kernelapp``, starts no thread, creates no socket, and then, for each
request, forks a child that becomes a new kernel
(``IPKernelApp`` on the request's connection file, as ``python -m ipykernel_launcher -f``
would).  The server itself never runs a kernel, so every kernel is still a fresh, never-used
process, as with papermill; ``random`` is re-seeded in each child by Python's own fork hook.

The child forks once more and its parent exits, so the kernel is re-parented to the worker
(a child subreaper): the worker reaps it and kills it with a job's leftovers exactly as a
kernel it had launched itself, and the kernel's parent poller watches the worker.

Protocol: one JSON request a line on stdin, ``{"connection_file", "env", "parent"}``; one JSON
reply a line on the file descriptor given as the only argument, ``{"pid"}`` or ``{"error"}``.
"""
from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
import traceback

NATIVE_ARGV = ["-m", "ipykernel_launcher", "-f", "{connection_file}"]  # the python3 kernelspec's, after python


class ForkServer:
    """The worker's side: a fork server process and the pipes to it (``timeout``: seconds a reply may take).

    This module imports nothing of nbrunner (it also runs as the server itself), so the worker passes it."""

    def __init__(self, timeout: float):
        self.timeout = timeout
        self.proc: subprocess.Popen | None = None
        self._reply = None
        self._ready = False

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self) -> None:
        """Start the server process; it imports ipykernel while the worker goes on."""
        r, w = os.pipe()
        try:
            self.proc = subprocess.Popen([sys.executable, __file__, str(w)],
                                         stdin=subprocess.PIPE, pass_fds=(w,), close_fds=True)
        finally:
            os.close(w)
        self._reply = os.fdopen(r, "r")
        self._ready = False

    def _read(self) -> dict:
        ready, _, _ = select.select([self._reply], [], [], self.timeout)
        line = self._reply.readline() if ready else ""
        if not line:
            self.close()
            raise RuntimeError("the kernel fork server did not answer")
        return json.loads(line)

    def spawn(self, connection_file: str, env: dict[str, str]) -> int:
        """A new kernel on ``connection_file`` with ``env``, a child of this process; its pid."""
        if not self.alive():
            self.close()
            self.start()
        if not self._ready:
            self._read()  # {"ready": pid}: ipykernel is imported
            self._ready = True
        self.proc.stdin.write((json.dumps({"connection_file": connection_file, "env": env,
                                           "parent": os.getpid()}) + "\n").encode())
        self.proc.stdin.flush()
        answer = self._read()
        if "pid" not in answer:
            raise RuntimeError(answer.get("error") or "the kernel fork server failed")
        return int(answer["pid"])

    def close(self) -> None:
        """Stop the server (the kernels it forked are the worker's, and stay)."""
        if self.proc is not None:
            try:
                self.proc.kill()
            except OSError:
                pass
            self.proc.wait()
            try:
                self.proc.stdin.close()
            except OSError:
                pass
        if self._reply is not None:
            self._reply.close()
        self.proc = self._reply = None


_LAUNCHER = "ipykernel_launcher"  # its path once the server has found it (sys.argv[0] of a kernel)


def _become_kernel(connection_file: str, env: dict[str, str], parent: int) -> None:
    """In the grandchild: wait to be the worker's, then run a kernel until it is shut down."""
    os.environ.clear()
    os.environ.update(env)
    end = time.monotonic() + 10
    while os.getppid() != parent and time.monotonic() < end:  # the middle process is exiting
        time.sleep(0.001)
    from ipykernel import kernelapp
    from setproctitle import setproctitle

    setproctitle(f"{sys.executable} -m ipykernel_launcher -f {connection_file}")  # what ps shows for a kernel
    sys.argv = [_LAUNCHER, "-f", connection_file]
    # parent_handle's default was read from JPY_PARENT_PID when this server imported ipykernel
    kernelapp.launch_new_instance(argv=["-f", connection_file, f"--IPKernelApp.parent_handle={parent}"])


def _spawn(request: dict, reply_fd: int) -> int:
    """Fork the kernel for ``request``; returns its pid (the server's side)."""
    r, w = os.pipe()
    middle = os.fork()
    if middle == 0:  # the middle process: one more fork, then exit
        code = 1
        try:
            os.close(r)
            os.close(reply_fd)
            kernel = os.fork()
            if kernel == 0:
                os.close(w)
                try:
                    os.setsid()  # the kernel leads its own session and group, as with launch_kernel
                    null = os.open(os.devnull, os.O_RDONLY)
                    os.dup2(null, 0)
                    os.close(null)
                    signal.signal(signal.SIGINT, signal.default_int_handler)
                    signal.signal(signal.SIGTERM, signal.SIG_DFL)
                    _become_kernel(request["connection_file"], request["env"], int(request["parent"]))
                    code = 0
                except SystemExit as exc:
                    code = exc.code if isinstance(exc.code, int) else 1
                except BaseException:  # noqa: BLE001 - shown in the worker's log, like a kernel's own crash
                    traceback.print_exc()
                finally:
                    sys.stdout.flush()
                    sys.stderr.flush()
                    os._exit(code)
            os.write(w, f"{kernel}\n".encode())
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    with os.fdopen(r, "rb") as pipe:
        line = pipe.readline()
    os.waitpid(middle, 0)
    if not line.strip():
        raise RuntimeError("the kernel process could not be forked")
    return int(line)


def serve(reply_fd: int) -> None:
    """Answer requests from stdin until it closes (the worker stopped or discarded this server)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    except OSError:
        pass
    import importlib.util

    import ipykernel.kernelapp  # noqa: F401 - the import every kernel forked from here skips

    global _LAUNCHER
    _LAUNCHER = importlib.util.find_spec("ipykernel_launcher").origin or _LAUNCHER
    from setproctitle import setproctitle

    setproctitle(f"{sys.executable} {__file__} (nbrunner's kernel fork server)")

    reply = os.fdopen(reply_fd, "w", buffering=1)
    reply.write(json.dumps({"ready": os.getpid()}) + "\n")
    for line in sys.stdin:
        try:
            answer = {"pid": _spawn(json.loads(line), reply_fd)}
        except Exception as exc:  # noqa: BLE001 - the worker falls back to launching the kernel itself
            answer = {"error": f"{exc.__class__.__name__}: {exc}"}
        reply.write(json.dumps(answer) + "\n")


if __name__ == "__main__":
    # run as a file, so that nbrunner is not imported into every kernel; the kernels' sys.path
    # then starts with the working directory, as under ``python -m ipykernel_launcher``
    sys.path[0] = os.getcwd()
    serve(int(sys.argv[1]))
