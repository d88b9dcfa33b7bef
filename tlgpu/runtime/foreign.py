"""Building and launching another compiler's code (OpenCL C or SPIR-V) in worker processes
that a time bound reaches.

    runner = ForeignRunner("pocl")
    outcome = runner.run(ForeignJob("opencl-c", source, function, "f", args=args),
                         timeout=10)     # a tlinterp.impl.Outcome
    runner.close()

A worker is a `python -m tlgpu.runtime.foreign` child (spawned, never forked: OpenCL state
must not be inherited) in a session of its own, like tlgpu.runtime.isolated's; unlike it, it
stays: it opens the device once and keeps its builds (tlgpu.runtime.kernel caches them by
code, device and build options), so a case costs a build and a launch, not a Python and
pyopencl start-up. A runner keeps its idle workers (as many as jobs ran at once: one per
`-j` thread) and hands each job to one of them. When a job runs past its time the worker is
killed with its process group (status "timeout"); when it dies (a signal, typically SIGSEGV
from a stray access on a CPU device) the job is "crashed" with the signal, unless the worker
had run earlier jobs and the job passes in a fresh one (see `ForeignRunner.run`). Either way
the next job starts a fresh worker. Workers are started from one long-lived thread and die with it
(PR_SET_PDEATHSIG), so none outlives its tool, even when the tool is killed.

Messages both ways are pickles behind an 8-byte length, so that the parent can wait for an
answer with a deadline.
"""

from __future__ import annotations

import atexit
import os
import pickle
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Optional, Union

from tlgpu.runtime.isolated import _die_with_parent, _signal_name
from tlinterp.impl.base import Outcome, outcome_of_error
from tlinterp.io.args import Groups
from tlinterp.lang import diagnostics as _diagnostics
from tlinterp.lang import ir
from tlinterp.lang.diagnostics import ExecutionError, TLError

__all__ = ["DeviceInfo", "ForeignJob", "ForeignRunner", "START_TIMEOUT"]

START_TIMEOUT = 120.0  # seconds a worker may take to load pyopencl and open the device
_HEADER = struct.Struct("<Q")
_LOG = "worker.log"  # in the worker's working directory


@dataclass
class ForeignJob:
    """One build-and-launch: `code` is OpenCL C text (kind "opencl-c") or a SPIR-V module
    (kind "spirv") holding `kernel_name`, the kernel of `function` under calling convention
    `convention` (tlgpu.lowering.callconv; the program's language's)."""

    kind: str
    code: Union[str, bytes]
    function: ir.Function
    kernel_name: str
    work_group_size: Optional[tuple[int, int]] = None
    build_options: str = ""
    args: dict = field(default_factory=dict)
    groups: Optional[Groups] = None  # a count, or a v0.4 grid (x, y, z)
    convention: str = "v0.3"


@dataclass(frozen=True)
class DeviceInfo:
    """What a worker found when it opened the device."""

    name: str  # "PLATFORM: DEVICE"
    il_versions: str  # e.g. "SPIR-V_1.0 SPIR-V_1.1"; empty: takes no SPIR-V
    sub_groups: bool


# ---- the worker (child) side ----------------------------------------------------------------


def _send(f, obj) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    f.write(_HEADER.pack(len(data)) + data)
    f.flush()


def _read_exact(f, n: int) -> bytes:
    data = f.read(n)
    if data is None or len(data) < n:
        raise EOFError
    return data


def _job(job: ForeignJob, device: Optional[str]) -> dict:
    from tlgpu.runtime.kernel import from_il, from_source

    build = from_il if job.kind == "spirv" else from_source
    kernel = build(job.code, job.function, job.kernel_name, device, job.work_group_size,
                   job.build_options, job.convention)  # type: ignore[arg-type]
    # guard zones catch the code's stores next to an argument (the program is checked, so
    # they are the compiler's doing) before they corrupt this worker; Oclgrind checks itself
    grind = "oclgrind" in kernel.device.device.platform.name.lower()
    return kernel.run(job.args, job.groups,
                      guard=None if grind else "a program free of undefined behaviour (tlrun "
                      "without --backend checks it) stores only inside its arguments, so the "
                      "compiler's code did it")


def _text(e: TLError) -> str:
    """The error's messages without the `error:` prefix: the caller's message frames them."""
    return "\n".join(d.message for d in e.diagnostics)


def _answer(job: ForeignJob, device: Optional[str]) -> tuple:
    from tlgpu.runtime.kernel import ForeignCodeError, MissingFeatureError

    try:
        return ("ok", _job(job, device))
    except MissingFeatureError as e:
        return ("missing", _text(e))
    except ForeignCodeError as e:
        return ("foreign", _text(e))
    except TLError as e:
        return ("error", type(e).__name__, e.diagnostics, e.source)
    except KeyError as e:  # bind(): an argument the function does not name, ...
        return ("error", "ArgumentError", str(e.args[0]), "")
    except Exception as e:  # noqa: BLE001 - e.g. a driver error pyopencl did not wrap
        return ("internal", f"raised {type(e).__name__}: {e}")


def _serve(device: Optional[str]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when to stop
    _die_with_parent()
    warnings.simplefilter("ignore")
    reply = os.fdopen(os.dup(1), "wb")
    # OpenCL compilers and drivers write straight to fds 1 and 2: keep it per job, for
    # failures (a file in the working directory: the parent reads it when we die)
    log = open(_LOG, "w+b")
    os.dup2(log.fileno(), 1)
    os.dup2(log.fileno(), 2)
    try:
        from tlgpu.runtime.devices import handle
        from tlgpu.runtime.kernel import has_sub_groups, il_versions

        d = handle(device).device
        _send(reply, ("ready", DeviceInfo(f"{d.platform.name.strip()}: {d.name.strip()}",
                                          il_versions(d), has_sub_groups(d))))
    except TLError as e:  # no such device
        _send(reply, ("error", _text(e)))
        return
    inp = sys.stdin.buffer
    while True:
        try:
            (size,) = _HEADER.unpack(_read_exact(inp, _HEADER.size))
            job = pickle.loads(_read_exact(inp, size))
        except EOFError:  # the parent closed the pipe: done
            return
        log.seek(0)
        log.truncate()
        answer = _answer(job, device)
        log.seek(0)
        _send(reply, (answer, log.read(1 << 16).decode("utf-8", "replace").strip()))


# ---- the parent side ------------------------------------------------------------------------


class _Died(Exception):
    """The worker gave no (complete) answer: `why` says how it ended."""

    def __init__(self, why: str, timed_out: bool = False, said: str = ""):
        super().__init__(why)
        self.why, self.timed_out, self.said = why, timed_out, said


_SPAWNER: Optional[ThreadPoolExecutor] = None
_SPAWNER_LOCK = threading.Lock()


def _spawner() -> ThreadPoolExecutor:
    global _SPAWNER
    with _SPAWNER_LOCK:
        if _SPAWNER is None:
            _SPAWNER = ThreadPoolExecutor(1, thread_name_prefix="tl-foreign-spawner")
        return _SPAWNER


class _Worker:
    def __init__(self, device: Optional[str]):
        env = dict(os.environ)  # the child imports this very tlgpu
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        # some drivers drop debug files (pocl: broken.dot) into the working directory
        self.cwd = tempfile.mkdtemp(prefix="tl-foreign-")
        argv = [sys.executable, "-m", "tlgpu.runtime.foreign", device or ""]
        # started from one long-lived thread: PR_SET_PDEATHSIG fires when the thread that
        # started a child ends, and a pooled worker outlives the job thread that made it
        self.proc = _spawner().submit(
            subprocess.Popen, argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, cwd=self.cwd, env=env, start_new_session=True).result()
        self.info: Optional[DeviceInfo] = None
        self.jobs = 0  # answered so far
        _LIVE.add(self)

    def start(self) -> DeviceInfo:
        """Wait for the worker to open the device; ExecutionError when it cannot."""
        try:
            msg = self._recv(START_TIMEOUT)
        except _Died as e:
            self.kill()
            said = f"\n{e.said}" if e.said else ""
            raise ExecutionError(f"the OpenCL worker did not start: {e.why}{said}") from None
        if msg[0] != "ready":
            self.kill()
            raise ExecutionError(msg[1])
        self.info = msg[1]
        return self.info

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def call(self, job: ForeignJob, timeout: Optional[float]) -> tuple:
        data = pickle.dumps(job, protocol=pickle.HIGHEST_PROTOCOL)
        try:
            self.proc.stdin.write(_HEADER.pack(len(data)) + data)
            self.proc.stdin.flush()
        except OSError:
            raise self._died() from None
        return self._recv(timeout)

    def _recv(self, timeout: Optional[float]):
        deadline = None if timeout is None else time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        buf = b""
        need = _HEADER.size
        header = True
        while True:
            while len(buf) < need:
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                ready, _, _ = select.select([fd], [], [], left)
                if not ready:
                    self.kill()
                    raise _Died(f"no answer within {timeout:g} s (killed)", timed_out=True)
                chunk = os.read(fd, max(need - len(buf), 1 << 16))
                if not chunk:
                    raise self._died()
                buf += chunk
            if not header:
                try:
                    return pickle.loads(buf[:need])
                except Exception as e:  # noqa: BLE001 - a garbled answer: the worker is broken
                    self.kill()
                    raise _Died(f"an unreadable answer ({type(e).__name__}: {e})") from None
            (size,) = _HEADER.unpack(buf[:_HEADER.size])
            buf, need, header = buf[_HEADER.size:], size, False

    def _died(self) -> _Died:
        """How the worker ended, and what it printed last; it is killed."""
        try:
            code = self.proc.wait(5)
        except subprocess.TimeoutExpired:
            code = None
        said = self.said
        self.kill()
        how = "it closed its pipe but did not exit" if code is None else \
            _signal_name(code) if code < 0 else f"exit status {code}"
        return _Died(how, said=said)

    @property
    def said(self) -> str:
        """What the worker printed in its last job (a driver's last words)."""
        try:
            with open(os.path.join(self.cwd, _LOG), "rb") as f:
                f.seek(max(0, f.seek(0, os.SEEK_END) - 2000))
                text = f.read().decode("utf-8", "replace").strip()
        except OSError:
            return ""
        return text

    def kill(self) -> None:
        """The worker and whatever it started, now; its scratch directory removed."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # its own session: the pid is the group
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                f.close()
            except OSError:
                pass
        shutil.rmtree(self.cwd, ignore_errors=True)
        _LIVE.discard(self)

    def close(self) -> None:
        """Let an idle worker end by closing its input; kill it if it does not."""
        try:
            self.proc.stdin.close()
            self.proc.wait(5)
        except (OSError, subprocess.TimeoutExpired):
            pass
        self.kill()


# every worker not yet ended, whoever holds it: all end when the tool exits
_LIVE: set[_Worker] = set()


class ForeignRunner:
    """Workers for one device, as many as jobs ran at once (see the module doc)."""

    def __init__(self, device: Optional[str]):
        self.device = device
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()
        self.restarts = 0  # workers killed after a timeout or a crash

    def _take(self, fresh: bool = False) -> _Worker:
        with self._lock:
            while self._idle and not fresh:
                w = self._idle.pop()
                if w.alive:  # an idle worker may have been killed from outside
                    return w
                w.kill()
        w = _Worker(self.device)
        w.start()
        return w

    def _give_back(self, w: _Worker) -> None:
        with self._lock:
            self._idle.append(w)

    def device_info(self) -> DeviceInfo:
        """What the device offers (a worker opens it; that worker is kept for the jobs).
        ExecutionError when there is no such device or the worker cannot start."""
        w = self._take()
        self._give_back(w)
        assert w.info is not None
        return w.info

    def run(self, job: ForeignJob, timeout: Optional[float] = None) -> Outcome:
        """Build and launch `job`, waiting at most `timeout` seconds for it (the worker's own
        start-up, paid once, is not counted); every failure is an Outcome.

        A worker that dies in a job after earlier ones may have been broken by them (a kernel
        that stores out of bounds corrupts the worker's heap, and the next allocation aborts):
        the job is then rerun once in a fresh worker, whose answer counts."""
        start = time.monotonic()
        first, earlier_jobs = self._attempt(job, timeout)
        if isinstance(first, Outcome):
            return first
        if first.timed_out or earlier_jobs == 0:
            return _died(first)
        left = None if timeout is None else max(timeout - (time.monotonic() - start), 0.1)
        second, _ = self._attempt(job, left, fresh=True)
        if not isinstance(second, Outcome):
            return _died(second)
        note = (f"(a worker that had run earlier jobs died in this one ({first.why}); in a "
                "fresh worker it did not)")
        second.message = f"{note}\n{second.message}".strip()
        return second

    def _attempt(self, job: ForeignJob, timeout: Optional[float], fresh: bool = False
                 ) -> tuple[Outcome | _Died, int]:
        """One try in a kept (or a fresh) worker: its outcome, or how the worker died, with
        the number of jobs that worker had run before."""
        try:
            w = self._take(fresh=fresh)
        except TLError as e:
            return Outcome("crashed", message=_text(e)), 0
        try:
            answer, log = w.call(job, timeout)
        except _Died as e:
            self.restarts += 1
            return e, w.jobs
        w.jobs += 1
        self._give_back(w)
        return _outcome(answer, log), w.jobs - 1

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for w in idle:
            w.close()


def _died(e: _Died) -> Outcome:
    """A worker's death as the job's outcome: past its time bound, or crashed."""
    if e.timed_out:
        return Outcome("timeout", message=f"the OpenCL run: {e.why}")
    said = f"\nthe OpenCL worker printed:\n{e.said}" if e.said else ""
    return Outcome("crashed", message=f"the OpenCL run crashed ({e.why}); the code may do "
                   f"something undefined on the device{said}")


def _outcome(answer: tuple, log: str) -> Outcome:
    kind = answer[0]
    if kind == "ok":
        return Outcome("ok", outputs=answer[1])
    if kind in ("missing", "foreign", "internal"):
        return Outcome("crashed", message=f"{answer[1]}\n{log}".strip())
    _, cls_name, diags, source = answer
    cls = getattr(_diagnostics, cls_name, None)
    if not (isinstance(cls, type) and issubclass(cls, TLError)):
        cls = ExecutionError
    o = outcome_of_error(cls(diags, source))
    o.message = f"{o.message}\n{log}".strip()
    return o


@atexit.register
def _close_all() -> None:
    for w in list(_LIVE):
        w.close()


def close_workers() -> None:
    """End every kept worker now (a tool called in-process whose scratch directory, the
    workers' working directory, is about to go; later jobs start new ones)."""
    _close_all()


if __name__ == "__main__":
    # the module's own classes, not __main__'s copies, so that the parent can unpickle them
    from tlgpu.runtime.foreign import _serve as serve

    serve(sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] else None)
