"""Writing a results file without ever losing the previous one.

The arrays go to a temporary file in the target's directory, which is then renamed over the
target: a full disk, a crash or Ctrl-C while saving leaves the old file (possibly the input
arguments themselves, when --out equals --args) untouched. The path is used exactly as given
(numpy.savez would append `.npz` to a name without it). A symbolic link is followed, so its
target gets the results and the link stays; an existing target that is not a regular file (a
FIFO, /dev/null, a terminal) is written in place, since renaming over it would destroy it.
"""

from __future__ import annotations

import io
import os
import stat
import tempfile
from collections.abc import Callable, Mapping
from typing import BinaryIO

import ml_dtypes
import numpy as np

from tlinterp.lang.diagnostics import ArgumentError


def check_target(path: str, option: str = "--out") -> None:
    """Refuse, before any work is done, a target that cannot be a results file (`option`
    names the command-line option that gave it)."""
    if not path:
        raise ArgumentError(f"{option} needs a file name, got an empty one")
    real = os.path.realpath(path)
    if _special(real):
        return
    if os.path.isdir(real):
        raise ArgumentError(f"{path}: is a directory; {option} needs a file name")
    parent = os.path.dirname(real)
    if not os.path.isdir(parent):
        raise ArgumentError(f"{path}: cannot write (directory {parent} does not exist)")
    if not os.access(parent, os.W_OK | os.X_OK):  # the temporary file goes there
        raise ArgumentError(f"{path}: cannot write (no permission to create files in {parent})")


_BF16 = np.dtype(ml_dtypes.bfloat16)


def save_npz(path: str, arrays: Mapping[str, np.ndarray]) -> None:
    """Write `arrays` to exactly `path`, atomically; failures are ArgumentErrors."""
    check_target(path)
    # .npy cannot name bfloat16: such arrays are written as their uint16 bit patterns
    # (docs/language.md "Arguments")
    arrays = {k: a.view(np.uint16) if a.dtype == _BF16 else a for k, a in arrays.items()}
    _write_atomic(path, _npz_writer(arrays), "", prefix=".tlrun-", suffix=".npz.tmp")


def _npz_writer(arrays: Mapping[str, np.ndarray]) -> Callable[[BinaryIO, bool], None]:
    def write(f: BinaryIO, special: bool) -> None:
        if special:  # zipfile seeks, and /dev/null's positions are not a file's
            data = io.BytesIO()
            np.savez(data, **arrays)
            f.write(data.getbuffer())
        else:  # a file object: numpy appends no suffix
            np.savez(f, **arrays)
    return write


def write_text(path: str, text: str, option: str = "--out") -> None:
    """Write `text` (UTF-8) to exactly `path`, atomically, like `save_npz`: a full disk or an
    I/O error (also one that only fsync reports) or a signal while writing leaves neither a
    partial file nor a temporary one; failures are ArgumentErrors naming `option`."""
    write_bytes(path, text.encode("utf-8"), option)


def write_bytes(path: str, data: bytes, option: str = "--out") -> None:
    """`write_text` for bytes."""
    def write(f: BinaryIO, special: bool) -> None:
        f.write(data)
    _write_atomic(path, write, option + " ", prefix=None, suffix=".tmp")


def _write_atomic(path: str, write: Callable[[BinaryIO, bool], None], label: str,
                  prefix: str | None, suffix: str) -> None:
    """The one atomic write behind `save_npz` and `write_bytes`: `write(f, special)` fills
    the open file (`special`: written in place, not a seekable temporary file); failures are
    ArgumentErrors starting with `label` and the path as given. The temporary file is named
    `prefix`, by default "." and the target's name, then random letters and `suffix`."""
    shown, path = path, os.path.realpath(path)

    def failed(e: OSError) -> ArgumentError:
        return ArgumentError(f"{label}{shown}: cannot write ({e.strerror or e})")

    if _special(path):  # a FIFO, /dev/null, /dev/full, a terminal: written in place
        try:
            with open(path, "wb") as f:
                write(f, True)
        except OSError as e:
            raise failed(e) from None
        return
    try:
        if prefix is None:
            prefix = "." + os.path.basename(path) + "."
        fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=os.path.dirname(path))
    except OSError as e:
        raise failed(e) from None
    try:
        with os.fdopen(fd, "wb") as f:
            write(f, False)
            f.flush()
            os.fsync(f.fileno())  # a full or failing disk may only say so here
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
            raise failed(e) from None
        raise


def _special(path: str) -> bool:
    """An existing target that is not a regular file or a directory."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
