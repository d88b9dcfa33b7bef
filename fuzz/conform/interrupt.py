"""Stopping a conformance run on Ctrl-C: kill every process the run started.

The implementations start their processes in worker threads (and may put them in process
groups of their own, which a terminal's Ctrl-C does not reach), so on an interrupt the main
thread finds the processes below ours itself and kills them with their process groups.
"""

from __future__ import annotations

import os
import signal

__all__ = ["descendants", "kill_children"]


def _parents() -> dict[int, int]:
    """{pid: parent pid} of every process we can see (Linux /proc; empty elsewhere)."""
    out: dict[int, int] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:  # pragma: no cover - no /proc
        return out
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
        if len(fields) > 1:
            out[int(entry)] = int(fields[1])
    return out


def descendants(root: int) -> list[int]:
    """Children, grandchildren, ... of `root`, parents before their children."""
    children: dict[int, list[int]] = {}
    for pid, parent in _parents().items():
        children.setdefault(parent, []).append(pid)
    out, todo = [], list(children.get(root, []))
    while todo:
        pid = todo.pop(0)
        out.append(pid)
        todo += children.get(pid, [])
    return out


def kill_children() -> int:
    """SIGKILL every process below us, and the process groups they lead (which may hold
    processes already re-parented away); returns how many processes were found."""
    ours = os.getpgrp()
    pids = descendants(os.getpid())
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
