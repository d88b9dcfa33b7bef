"""The machine's free memory, and allocations checked against it before they are made (an
arguments file, an alloca, the interpreter's lanes): a clear message instead of a MemoryError."""

from __future__ import annotations

import os

from tlinterp.lang.diagnostics import ArgumentError


def _memory_limit() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        return 1 << 40


def check_allocation(nbytes: int, what: str, error=ArgumentError) -> None:
    """Refuse, with a clear message, an allocation larger than the machine's free memory."""
    limit = _memory_limit()
    if nbytes > limit:
        raise error(f"{what} needs {nbytes / 2**30:.2f} GiB, more than the "
                    f"{limit / 2**30:.2f} GiB of memory available")
