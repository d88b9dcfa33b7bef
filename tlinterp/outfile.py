"""Writing a results file without ever losing the previous one.

The arrays go to a temporary file in the target's directory, which is then renamed over the
target: a full disk, a crash or Ctrl-C while saving leaves the old file (possibly the input
arguments themselves, when --out equals --args) untouched. The path is used exactly as given
(numpy.savez would append `.npz` to a name without it).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping

import numpy as np

from .diagnostics import ArgumentError


def check_target(path: str) -> None:
    """Refuse, before any work is done, a target that cannot be a results file."""
    if os.path.isdir(path):
        raise ArgumentError(f"{path}: is a directory; --out needs a file name")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise ArgumentError(f"{path}: cannot write (directory {parent} does not exist)")
    if not os.access(parent, os.W_OK | os.X_OK):  # the temporary file goes there
        raise ArgumentError(f"{path}: cannot write (no permission to create files in {parent})")


def save_npz(path: str, arrays: Mapping[str, np.ndarray]) -> None:
    """Write `arrays` to exactly `path`, atomically; failures are ArgumentErrors."""
    check_target(path)
    directory = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".tlrun-", suffix=".npz.tmp", dir=directory)
    except OSError as e:
        raise ArgumentError(f"{path}: cannot write ({e.strerror or e})") from None
    try:
        with os.fdopen(fd, "wb") as f:  # a file object: numpy appends no suffix
            np.savez(f, **arrays)
            f.flush()
            os.fsync(f.fileno())
        try:  # keep the mode of a file being replaced
            os.chmod(tmp, os.stat(path).st_mode & 0o7777)
        except FileNotFoundError:
            os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError):
            raise ArgumentError(f"{path}: cannot write ({e.strerror or e})") from None
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
