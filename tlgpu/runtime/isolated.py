"""Build and launch in a child process, so that a kernel doing something undefined on the
device cannot take the caller down or corrupt the results it reports.

    result = run_isolated(program, args, func=None, groups=None, device="pocl", repeat=1)
    result.outputs        # the .npz convention, like tlgpu.run
    result.device         # "PLATFORM DRIVER-VERSION: DEVICE" (devices.label)
    result.build_seconds  # lowering + OpenCL build (the driver may serve it from its cache)
    result.kernel_seconds # one profiled duration per launch
    result.log            # compiler warnings and whatever the driver printed

The child is a fresh `python -m tlgpu.runtime.isolated` (never a fork: OpenCL state must not be
inherited) in a session of its own; the caller kills it on Ctrl-C, so an interrupt stops at
once even in a long launch. It reads the pickled job on stdin and sends back either the
outputs or the error it raised; errors are re-raised here as the same `TLError` class.
A child that dies without answering (a signal, typically SIGSEGV from an out-of-bounds access
on a CPU device) becomes an `ExecutionError` (exit status 1). The outputs are read back
from the device buffers of the child: memory the kernel corrupted outside them never reaches
the caller.
"""

from __future__ import annotations

import os
import pickle
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Optional, Union

import numpy as np

from tlgpu.lowering.config import LoweringConfig
from tlinterp.io.args import Groups
from tlinterp.lang import diagnostics as _diagnostics
from tlinterp.lang import ir
from tlinterp.lang.deepstack import FRAMES_PER_LEVEL, call_deep, call_with_frames, nesting
from tlinterp.lang.diagnostics import ExecutionError, TLError
from tlinterp.lang.v03.parser import MAX_NESTING

__all__ = ["IsolatedResult", "RunTimeout", "run_isolated"]


class RunTimeout(ExecutionError):
    """The child ran past its time bound and was killed: the implementations report it as a
    timeout (their "timeout" status), never as a failure of the kernel."""

# frames for unpickling any program the parser accepts (a few per nesting level)
_UNPICKLE_FRAMES = FRAMES_PER_LEVEL * (MAX_NESTING + 10)


@dataclass
class IsolatedResult:
    outputs: dict[str, np.ndarray]
    device: str
    build_seconds: float
    kernel_seconds: list[float] = field(default_factory=list)
    log: str = ""  # compiler warnings and driver output, for --verbose


def _launch(program: ir.Program, args, func, groups, device, config, repeat) -> dict[str, Any]:
    """The child's work: bind, build (timed), launch `repeat` times, unbind."""
    from tlgpu.runtime.launch import _as_program, prepare, run_bound
    from tlinterp.io.args import bind, unbind

    program = _as_program(program)
    function = program.function(func)
    bound = bind(function, args)
    n = bound.grid(groups)
    start = time.perf_counter()
    dev, _, _ = prepare(program, function, device, config)
    build = time.perf_counter() - start
    d = dev.device
    # guard zones catch stores next to an argument; Oclgrind checks every access itself
    guard = "oclgrind" not in d.platform.name.lower()
    times = run_bound(program, function, bound, n, device=device, config=config, repeat=repeat,
                      guard=guard)
    from tlgpu.runtime.devices import label

    return {"outputs": unbind(bound), "device": label(d),
            "build_seconds": build, "kernel_seconds": times}


def _die_with_parent() -> None:
    """Linux: SIGKILL when the parent dies (even by SIGKILL), so no launch outlives `tlrun`."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass


def _serve() -> None:
    """The child: one pickled job on stdin, one pickled (reply, log) on the saved stdout."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when to stop
    _die_with_parent()
    reply_fd = os.dup(1)
    from tlgpu.runtime.devices import notes_said

    said_before = notes_said()
    # the OpenCL compiler writes warnings straight to fds 1 and 2: keep them for --verbose
    log = tempfile.TemporaryFile()
    os.dup2(log.fileno(), 1)
    os.dup2(log.fileno(), 2)
    # a deeply nested program pickles recursively: unpickled on a deep stack
    job = call_with_frames(lambda: pickle.load(sys.stdin.buffer), _UNPICKLE_FRAMES)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            reply: tuple = ("ok", _launch(*job))
        except TLError as e:
            reply = ("error", type(e).__name__, e.diagnostics, e.source,
                     getattr(e, "reports", None))
        except KeyError as e:  # program.function(): no such function
            reply = ("error", "ArgumentError", str(e.args[0]), "", None)
        except Exception as e:  # noqa: BLE001 - reported to the caller as an internal error
            reply = ("internal", f"{type(e).__name__}: {e}")
    # dict: a warning repeated by a second build lookup of the same kernel is shown once
    notes = list(dict.fromkeys(f"{w.category.__name__}: {w.message}" for w in caught))
    log.seek(0)
    notes.append(log.read().decode("utf-8", "replace"))
    with os.fdopen(reply_fd, "wb") as out:
        # the device notes it said (a fallback) went to the log: the caller says them
        said = [n for n in notes_said() if n not in said_before]
        pickle.dump((reply, "\n".join(n.strip() for n in notes if n.strip()), said), out,
                    protocol=pickle.HIGHEST_PROTOCOL)


def _signal_name(code: int) -> str:
    try:
        return f"signal {-code}, {signal.Signals(-code).name}"
    except ValueError:
        return f"signal {-code}"


def _reraise(reply: tuple, log: str) -> None:
    if reply[0] == "internal":
        raise RuntimeError(f"the OpenCL child process failed: {reply[1]}")
    _, cls_name, diags, source, reports = reply
    cls = getattr(_diagnostics, cls_name, None)
    if not (isinstance(cls, type) and issubclass(cls, TLError)):
        cls = ExecutionError
    err = cls(diags, source)
    if reports is not None:
        err.reports = reports
    err.log = log
    raise err


def run_isolated(program: Union[ir.Program, str], args, func: Optional[str] = None,
                 groups: Optional[Groups] = None, device: Optional[str] = None,
                 config: Optional[LoweringConfig] = None, repeat: int = 1,
                 timeout: Optional[float] = None) -> IsolatedResult:
    """`tlgpu.run` in a child process (see the module doc). Raises the child's `TLError`;
    `ExecutionError` when the child crashes or runs past `timeout` seconds; on
    KeyboardInterrupt the child is killed before the interrupt propagates."""
    if repeat < 1:
        raise ValueError(f"repeat must be >= 1, got {repeat}")
    if isinstance(program, ir.Program):
        from tlinterp.front.pipeline import lowerable

        # refused here, in words, before a child starts (v0.4 code the lowering lacks)
        program = lowerable(program)
    depth = (max((nesting(f.body) for f in program.functions), default=0)
             if isinstance(program, ir.Program) else 0)
    # pickling walks the IR recursively: a program as deep as the parser accepts needs room
    job = call_deep(lambda: pickle.dumps((program, dict(args), func, groups, device, config,
                                          repeat), protocol=pickle.HIGHEST_PROTOCOL), depth)
    env = dict(os.environ)  # the child imports this very tlgpu
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    env["PYOPENCL_COMPILER_OUTPUT"] = "1"  # the build log itself goes to `log`, not a hint
    # a working directory of its own, removed after it: pocl writes files (k.dot, broken.dot)
    # into the current directory when its work-group compiler fails, and the caller's is not
    # ours to litter
    scratch = tempfile.mkdtemp(prefix="tl-isolated-")
    # a session of its own: a terminal's Ctrl-C reaches only us, and we kill the child
    try:
        proc = subprocess.Popen([sys.executable, "-m", "tlgpu.runtime.isolated"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, env=env, cwd=scratch,
                                start_new_session=True)
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    try:
        try:
            data, _ = proc.communicate(job, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise RunTimeout(f"the OpenCL run took longer than {timeout:g} s and was "
                             "stopped") from None
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        shutil.rmtree(scratch, ignore_errors=True)
    try:
        reply, log, said = pickle.loads(data)
    except Exception:  # noqa: BLE001 - no (complete) answer: the child died
        code = proc.returncode
        why = _signal_name(code) if code is not None and code < 0 else f"exit status {code}"
        raise ExecutionError(
            f"the OpenCL implementation crashed ({why}); the kernel may do something undefined "
            "(the OpenCL backend does not detect undefined behaviour: run it without --backend "
            "to check)") from None
    from tlgpu.runtime.devices import say_once

    for note in said:
        say_once(note)
    if reply[0] != "ok":
        _reraise(reply, log)
    return IsolatedResult(log=log, **reply[1])


if __name__ == "__main__":
    _serve()
