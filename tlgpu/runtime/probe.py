"""Whether an OpenCL device can build a kernel on this machine (docs/devices.md).

A device can be listed and still build nothing: pocl 3.0 from PyPI (LLVM 14) calls an AMD
Zen 5 CPU "generic" and fails every build with "unknown target CPU 'generic'". So before a
device is chosen it builds a one-line kernel, in a child process bounded in time and memory
(a hanging or crashing driver cannot hang or kill the caller). The outcome is kept for the
process and in a small JSON file under the user cache directory, keyed by platform name,
device name and driver version: another driver release is probed afresh. A probe that ran out
of time is not written there (a busy machine is no property of the device).

    python -m tlgpu.runtime.devices PLATFORM DEVICE DRIVER-VERSION   # the child; prints JSON

(The child is tlgpu.runtime.devices's, the one place platforms are queried; this module
imports nothing of it.)
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

KERNEL = "kernel void tl_probe(global int *a) { a[0] = 1; }"
# pocl's first build of a kernel on a busy 2-core machine takes seconds; a driver that has not
# built one line in this long is as useless here as one that cannot
TIMEOUT = 60.0
# far above what a driver needs for one line (Intel's runtime reserves a few GiB of address
# space), so a runaway driver fails its allocation instead of taking the machine's memory
MEMORY = 32 << 30
_FILE = "device-probes.json"


@dataclass(frozen=True)
class Probe:
    builds: bool
    reason: str = ""  # why not: the first line of the build log, or how the probe ended
    keep: bool = True  # worth remembering across processes (a timeout is not)


def key(platform_name: str, device_name: str, driver_version: str) -> str:
    """A device's identity with its driver version: the probe cache's key."""
    return "|".join(s.strip() for s in (platform_name, device_name, driver_version))


def cache_file() -> Path:
    """The probe cache: under the user cache directory (XDG_CACHE_HOME moves it, as the test
    suite does)."""
    from tlgpu.runtime.icd import cache_root

    return cache_root().parent / _FILE


_LOCK = threading.Lock()
_SEEN: dict[str, Probe] = {}


def _load() -> dict:
    try:
        data = json.loads(cache_file().read_text())
    except (OSError, ValueError):  # none yet, unreadable or torn: probe again
        return {}
    return data if isinstance(data, dict) else {}


def _store(k: str, p: Probe) -> None:
    """Add one outcome to the cache file: written whole to a temporary file and renamed, so
    concurrent processes never read half a file (the last writer's other entries may be
    lost, which costs a probe, never a wrong answer)."""
    path = cache_file()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        data = _load()
        data[k] = {"builds": p.builds, "reason": p.reason}
        fd, tmp = tempfile.mkstemp(prefix=".probe-", dir=path.parent)
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(data, f, indent=1, sort_keys=True)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        pass  # an unwritable cache directory costs a probe per process, nothing else


def probe(platform_name: str, device_name: str, driver_version: str) -> Probe:
    """Whether the device builds the one-line kernel: from this process's memory, else the
    cache file, else a child process that builds it (then remembered in both)."""
    k = key(platform_name, device_name, driver_version)
    with _LOCK:
        if k in _SEEN:
            return _SEEN[k]
        entry = _load().get(k)
        if isinstance(entry, dict) and isinstance(entry.get("builds"), bool):
            found = Probe(entry["builds"], str(entry.get("reason", "")))
        else:
            found = _probe_in_child(platform_name, device_name, driver_version)
            if found.keep:
                _store(k, found)
        _SEEN[k] = found
        return found


def _probe_in_child(platform_name: str, device_name: str, driver_version: str) -> Probe:
    from tlinterp.impl.command import describe_exit, run_command

    # this very tlgpu, however the caller found it; a scratch working directory, since pocl
    # writes files (k.dot) into the current one when its compiler fails
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    start = (f"import runpy, sys; sys.path.insert(0, {root!r}); "
             "runpy.run_module('tlgpu.runtime.devices', run_name='__main__')")
    with tempfile.TemporaryDirectory(prefix="tl-probe-") as scratch:
        done = run_command([sys.executable, "-c", start, platform_name, device_name,
                            driver_version], timeout=TIMEOUT, cwd=scratch, memory=MEMORY)
    if done.code is None:
        return Probe(False, f"the probe build did not finish: {done.problem}", keep=False)
    lines = done.stdout.strip().splitlines()
    try:
        answer = json.loads(lines[-1]) if lines else None
    except ValueError:
        answer = None
    if done.code == 0 and isinstance(answer, dict) and isinstance(answer.get("builds"), bool):
        return Probe(answer["builds"], str(answer.get("reason", "")),
                     keep=bool(answer.get("keep", True)))
    said = first_line(done.stderr) or "no answer"
    return Probe(False, f"the probe build crashed ({describe_exit(done.code)}): {said}")


def first_line(log: str) -> str:
    """The first line of a build log that says something, without a leading "error: "."""
    for line in log.splitlines():
        line = line.strip()
        if line:
            return line[len("error:"):].strip() if line.lower().startswith("error:") else line
    return ""


def build_log_of(error: str) -> str:
    """The driver's build log inside pyopencl's build error (after its "Build on <device>:"
    line), else the whole message."""
    head, sep, rest = error.partition("Build on ")
    return rest.partition("\n")[2] if sep else head
