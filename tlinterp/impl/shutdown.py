"""Ending a tool in order, whatever stops it: tlrun, and through fuzz/shutdown.py tlconform and
tlfuzz.

SIGTERM, SIGHUP (the terminal closed, an ssh session dropped) and SIGINT (Ctrl-C) become
`Stopped` in the main thread (`stop_on_signals`): a KeyboardInterrupt, so the tool's own
cleanup runs as for Ctrl-C: every process below ours is killed with the process groups it
leads (implementations start their processes in worker threads or child processes, often in
sessions of their own that neither a terminal's Ctrl-C nor the death of their parent reaches;
`adopt_orphans` makes those that outlive their parent, setsid or not, come back to us), the
scratch directory (`scratch_dir`: every temporary file of the tool, its children and the
implementations they start lives below it, through TMPDIR) is removed, and a half-written
file is deleted. The tool then exits with 128 + the signal's number (`exit_status_of`: 129
for SIGHUP, 130 for SIGINT, 143 for SIGTERM).
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["STOP_SIGNALS", "Stopped", "stop_on_signals", "stop_on_sigterm", "exit_status_of",
           "adopt_orphans", "scratch_dir", "descendants", "kill_children",
           "kill_children_settled", "kill_tree"]

# the signals that stop a tool in order (SIGKILL cannot be caught)
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


class Stopped(KeyboardInterrupt):
    """A signal asked the tool to stop; a KeyboardInterrupt, so that every handler of Ctrl-C
    also handles SIGTERM and SIGHUP."""

    def __init__(self, signum: int = signal.SIGINT):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise_stopped(signum, _frame) -> None:
    # once is enough: a second signal during the cleanup must not interrupt it
    for s in STOP_SIGNALS:
        signal.signal(s, signal.SIG_IGN)
    raise Stopped(signum)


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """Within it, SIGTERM, SIGHUP and SIGINT raise `Stopped` in the main thread; the previous
    handlers come back afterwards (a tool called in-process, as the tests do, leaves its
    caller's handlers as they were). Outside the main thread it changes nothing."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    saved = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    for s in saved:
        signal.signal(s, _raise_stopped)
    try:
        yield
    finally:
        for s, handler in saved.items():
            signal.signal(s, handler if handler is not None else signal.SIG_DFL)


def stop_on_sigterm() -> None:
    """In a child process of a tool: SIGTERM and SIGHUP raise `Stopped`, so the child ends in
    order (its files written whole or not at all) when the tool stops it."""
    for s in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, _raise_stopped)


def exit_status_of(stop: BaseException) -> int:
    """128 + the signal's number, the shell's convention (a plain KeyboardInterrupt: 130)."""
    return 128 + int(getattr(stop, "signum", signal.SIGINT))


def adopt_orphans() -> None:
    """Become the Linux "child subreaper": a process whose parent dies (an implementation's
    compiler whose job was killed, a daemonising tool, one started with setsid) is
    re-parented to us instead of to init, so that killing our descendants still finds it.
    Nothing elsewhere."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass


@contextmanager
def scratch_dir(prefix: str) -> Iterator[str]:
    """A private temporary directory that holds every temporary file of this process and of
    the processes it starts (TMPDIR and tempfile point there), removed at the end, also
    after a signal. The previous settings come back afterwards."""
    root = tempfile.mkdtemp(prefix=prefix)
    saved_env, saved_dir = os.environ.get("TMPDIR"), tempfile.tempdir
    os.environ["TMPDIR"] = root
    tempfile.tempdir = root
    try:
        yield root
    finally:
        if saved_env is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = saved_env
        tempfile.tempdir = saved_dir
        shutil.rmtree(root, ignore_errors=True)


def process_table() -> dict[int, tuple[int, float]]:
    """{pid: (parent pid, CPU seconds: user and system time, its own and its reaped
    children's)} of every process we can see (Linux /proc; empty elsewhere)."""
    out: dict[int, tuple[int, float]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:  # pragma: no cover - no /proc
        return out
    tick = os.sysconf("SC_CLK_TCK")
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:  # exited meanwhile
            continue
        # the command name (field 2) may contain spaces and parentheses: split after it
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > 14:
            out[int(entry)] = (int(fields[1]),
                               sum(int(x) for x in fields[11:15]) / tick)  # utime..cstime
    return out


def _parents() -> dict[int, int]:
    """{pid: parent pid} of every process we can see (Linux /proc; empty elsewhere)."""
    return {pid: parent for pid, (parent, _) in process_table().items()}


def descendants(root: int, spare: frozenset[int] = frozenset()) -> list[int]:
    """Children, grandchildren, ... of `root` (none of `spare` or below them), parents before
    their children."""
    children: dict[int, list[int]] = {}
    for pid, parent in _parents().items():
        children.setdefault(parent, []).append(pid)
    out, todo = [], list(children.get(root, []))
    while todo:
        pid = todo.pop(0)
        if pid in spare:
            continue
        out.append(pid)
        todo += children.get(pid, [])
    return out


def kill_children(spare: frozenset[int] = frozenset()) -> int:
    """SIGKILL every process below us (but those in `spare`, with theirs), and the process
    groups they lead (which may hold processes already re-parented away); returns how many
    processes were found."""
    return kill_tree(os.getpid(), root_too=False, spare=spare)


def kill_tree(root: int, root_too: bool = True, spare: frozenset[int] = frozenset()) -> int:
    """SIGKILL `root` (with `root_too`) and every process below it, with the process groups
    they lead (other than ours); returns how many processes were found below it."""
    ours = os.getpgrp()
    pids = descendants(root, spare)
    if root_too:
        try:
            os.kill(root, signal.SIGKILL)  # first: it cannot start more meanwhile
        except (ProcessLookupError, PermissionError):
            pass
    for pid in pids:
        try:
            group = os.getpgid(pid)
            if group == pid and group != ours:
                os.killpg(group, signal.SIGKILL)
            else:
                os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            continue
    return len(pids)


def kill_children_settled(quiet: float = 0.3, limit: float = 3.0) -> None:
    """Kill every process below us until none has appeared for `quiet` seconds: a worker
    thread that had taken its next case just before the interrupt may still start one."""
    import time

    deadline = time.monotonic() + limit
    calm_since = time.monotonic()
    while time.monotonic() < deadline:
        if kill_children():
            calm_since = time.monotonic()
        elif time.monotonic() - calm_since >= quiet:
            return
        time.sleep(0.02)
