"""Implementations that run in this process: the reference interpreter and `python:` plug-ins.

A plug-in is `FUNCTION(source_text, args, func=None, groups=None) -> dict`; TLError subclasses
signal rejection (exit_status 2) and undefined behaviour / run-time failure (exit_status 1).
Anything else it raises, exit() included, is a crash of that job."""

from __future__ import annotations

import importlib
import os
import sys
import threading
import traceback
from collections.abc import Callable
from contextlib import contextmanager
from typing import Optional

import numpy as np

from tlinterp.impl.base import (
    DEFAULT_OPTIONS,
    Implementation,
    ImplOptions,
    Job,
    Outcome,
    SpecError,
    outcome_of_error,
)
from tlinterp.io.foreigntext import printable
from tlinterp.lang.diagnostics import TLError

PluginFn = Callable[..., dict]


class InProcess(Implementation):
    def __init__(self, spec: str, fn: Callable[[Job], dict],
                 options: ImplOptions = DEFAULT_OPTIONS, reference: bool = False):
        self.spec, self.fn, self.options, self.reference = spec, fn, options, reference

    def run(self, job: Job, timeout: Optional[float] = None) -> Outcome:
        if timeout is None:
            return self._call(job)
        result: list[Outcome] = []
        worker = threading.Thread(target=lambda: result.append(self._call(job)), daemon=True)
        worker.start()
        worker.join(timeout)
        if worker.is_alive():  # a thread cannot be stopped: it finishes in the background
            return Outcome("timeout", message=f"no answer within {timeout:g} s")
        return result[0] if result else Outcome("crashed", message="ended without an answer")

    def _call(self, job: Job) -> Outcome:
        with _standard_streams_kept():
            return self._call_guarded(job)

    def _call_guarded(self, job: Job) -> Outcome:
        try:
            out = self.fn(job)
        except TLError as e:
            return outcome_of_error(e)
        except SystemExit as e:  # a plug-in calling exit() must not end the tool
            return Outcome("crashed", message=f"called exit({e.code!r})")
        except MemoryError:
            return Outcome("crashed", message="ran out of memory")
        except BaseException as e:  # noqa: BLE001 - a crashing implementation is a result
            # Ctrl-C reaches the main thread only: there it is the user's, not the plug-in's
            if isinstance(e, KeyboardInterrupt) and \
                    threading.current_thread() is threading.main_thread():
                raise
            tb = printable(traceback.format_exception_only(type(e), e)[-1].strip())
            return Outcome("crashed", message=f"raised {tb}")
        if not isinstance(out, dict):
            return Outcome("crashed", message=f"returned {type(out).__name__}, not a dict")
        try:
            outputs = {str(k): np.asarray(v) for k, v in out.items()}
        except Exception as e:  # noqa: BLE001 - e.g. ragged lists
            return Outcome("crashed", message=f"returned values that are no arrays ({e})")
        return Outcome("ok", outputs=outputs)


_SAVED_FDS: dict[int, int] = {}
_FD_LOCK = threading.Lock()


def _identity(fd: int) -> Optional[tuple[int, int]]:
    try:
        st = os.fstat(fd)
    except OSError:
        return None
    return st.st_dev, st.st_ino


@contextmanager
def _standard_streams_kept():
    """A plug-in shares this process's file descriptors: one that closes or redirects fd 0,
    1 or 2 (os.close(1), a C library's freopen) would take the tool's report with it. Each is
    kept as a duplicate made before the first plug-in runs and put back after every call if
    it changed."""
    with _FD_LOCK:
        for fd in (0, 1, 2):
            if fd not in _SAVED_FDS and _identity(fd) is not None:
                _SAVED_FDS[fd] = os.dup(fd)  # inheritable=False: no child gets it
    try:
        yield
    finally:
        with _FD_LOCK:
            for fd, saved in _SAVED_FDS.items():
                if _identity(fd) != _identity(saved):
                    try:
                        os.dup2(saved, fd)
                    except OSError:
                        pass


def _interp(job: Job) -> dict:
    from tlinterp.interp import run

    return run(job.program if job.program is not None else _parse(job), job.args,
               func=job.func, groups=job.groups)


def _parse(job: Job):
    from tlinterp.front.pipeline import read

    return read(job.source, job.filename, job.lang)


def interp_factory(arg: Optional[str], options: ImplOptions) -> Implementation:
    """the reference interpreter (reports every undefined behaviour)"""
    if arg:
        raise SpecError(f"'interp:{arg}': the interpreter takes no argument")
    impl = InProcess("interp", _interp, options, reference=True)
    impl.front_end = True
    return impl


def load_plugin(module: str, function: str) -> PluginFn:
    """The plug-in function; the working directory is searched first, as `python -m` does."""
    cwd = os.getcwd()
    added = cwd not in sys.path
    if added:
        sys.path.insert(0, cwd)
    try:
        mod = importlib.import_module(module)
    except SystemExit as e:
        raise SpecError(f"importing {module} called exit({e.code!r})") from None
    except Exception as e:  # noqa: BLE001 - any import failure is the user's to fix
        raise SpecError(f"cannot import {module} ({type(e).__name__}: {e})") from None
    finally:
        if added and cwd in sys.path:
            sys.path.remove(cwd)
    fn = getattr(mod, function, None)
    if not callable(fn):
        raise SpecError(f"{module} has no function {function}")
    return fn


def python_factory(arg: Optional[str], options: ImplOptions) -> Implementation:
    """a Python function: python:MODULE:FUNCTION(source, args, func=, groups=) -> dict"""
    parts = (arg or "").split(":")
    spec = f"python:{arg or ''}"
    if len(parts) != 2 or not all(parts):
        raise SpecError(f"'{spec}': expected python:MODULE:FUNCTION")
    try:
        fn = load_plugin(parts[0], parts[1])
    except SpecError as e:
        raise SpecError(f"'{spec}': {e}") from None

    def call(job: Job) -> dict:
        return fn(job.source, dict(job.args), func=job.func, groups=job.groups)

    return InProcess(spec, call, options)
