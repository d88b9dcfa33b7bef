"""Reading a file that another program or person made, without trusting it: opened without
blocking (a FIFO nobody writes would hang the reader past every timeout), refused unless it
is a regular file (a FIFO, /dev/zero, a socket), and read only up to a bound (a huge or
endless file must not exhaust memory).  Every tool reads untrusted files through here:
tlrun's kernel source, an `ir:`/`opencl-c:`/`spirv:` command's `{out}`, tlconform's corpus
and tlfuzz's findings."""

from __future__ import annotations

import errno
import os
import stat

MiB = 1 << 20
# a kernel source (tlrun's file, a corpus case, a finding): far beyond any real kernel;
# parsing 4 MiB takes ~15 s, ~1 GB
MAX_SOURCE_BYTES = 4 * MiB
# one line of text that names a command (a finding's NAME.txt): far beyond any real one
MAX_LINE_BYTES = 64 << 10


class RefusedFile(OSError):
    """The file is not read: not a regular file, or larger than the bound.  An OSError, so
    the callers' handlers for unreadable files report it; str() is `PATH: why`."""

    def __init__(self, path: str, why: str):
        super().__init__(errno.EINVAL, why, path)

    def __str__(self) -> str:
        return f"{self.filename}: {self.strerror}"


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISDIR, "a directory")):
        if test(mode):
            return name
    return "not a regular file"


def size_text(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", MiB), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n} bytes"


def _open(path: str, what: str, regular_only: bool = True):
    """`path` opened for reading as a binary file, after its kind is checked."""
    flags = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0)
    if regular_only:
        flags |= os.O_NONBLOCK  # opening a FIFO for reading would wait for a writer
    fd = os.open(path, flags)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode) or (regular_only and not stat.S_ISREG(mode)):
            raise RefusedFile(path, f"is {_kind(mode)}, not a regular file: refused as "
                                    f"{what}")
        if regular_only:
            os.set_blocking(fd, True)
        return open(fd, "rb", closefd=True)
    except BaseException:
        os.close(fd)
        raise


def read_bounded(path: str, limit: int, what: str = "a file",
                 regular_only: bool = True) -> bytes:
    """The bytes of `path`, at most `limit` of them (`what` it is, with its article, names
    it in messages); RefusedFile when it is larger, or (with
    `regular_only`) not a regular file; other OSErrors (no such file, no permission) as they
    come.  Without `regular_only` a pipe the user gave (`<(gen)`) is read, still bounded."""
    with _open(path, what, regular_only) as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise RefusedFile(path, f"is larger than {size_text(limit)}, the most read as "
                                f"{what}")
    return data


def read_first_line(path: str, limit: int, what: str = "a file") -> str:
    """The first line of a regular file, without its newline, decoded as UTF-8 (bad bytes
    replaced); RefusedFile when that line is longer than `limit` bytes."""
    with _open(path, what) as f:
        line = f.readline(limit + 1)
    if len(line) > limit and not line.endswith(b"\n"):
        raise RefusedFile(path, f"its first line is longer than {size_text(limit)}, the "
                                f"most read as the first line of {what}")
    return line.rstrip(b"\r\n").decode("utf-8", errors="replace")


__all__ = ["MiB", "MAX_SOURCE_BYTES", "MAX_LINE_BYTES", "RefusedFile", "read_bounded",
           "read_first_line", "size_text"]
