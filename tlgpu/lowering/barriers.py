"""Which memory each work-group step touches, and where a barrier is needed between steps.

Memory is named by its root: a function argument, or `ALLOCA` for alloca memory (allocas may
share memory, so they are one root), or `STAGE` for gemm staging buffers; those two are not
identifiers, so no argument is ever taken for local memory. A barrier whose
conflicts are all in local memory fences local memory only and leaves the global accesses
pending, so a later global conflict still gets a (global) barrier. A step that writes a root
some other work-item may still read or write, or reads a root someone may have written, needs
a barrier first.
"""

from __future__ import annotations

from dataclasses import dataclass, field

ALLOCA, STAGE = "<alloca>", "<stage>"  # the alloca slab and gemm staging (local memory)
LOCAL_ROOTS = frozenset({ALLOCA, STAGE})


@dataclass
class Pending:
    reads: set[str] = field(default_factory=set)
    writes: set[str] = field(default_factory=set)

    def copy(self) -> Pending:
        return Pending(set(self.reads), set(self.writes))

    def union(self, other: Pending) -> Pending:
        return Pending(self.reads | other.reads, self.writes | other.writes)

    def __le__(self, other: Pending) -> bool:
        return self.reads <= other.reads and self.writes <= other.writes

    def conflicts(self, reads: set[str], writes: set[str], minimise: bool) -> bool:
        if not minimise:
            return bool(self.reads or self.writes) and bool(reads or writes)
        return bool(reads & self.writes) or bool(writes & (self.reads | self.writes))

    def conflicting(self, reads: set[str], writes: set[str]) -> set[str]:
        """The roots a step would race on (what the barrier before it must fence)."""
        return (reads & self.writes) | (writes & (self.reads | self.writes))

    def drop(self, roots) -> None:
        self.reads -= set(roots)
        self.writes -= set(roots)

    def add(self, reads: set[str], writes: set[str]) -> None:
        self.reads |= reads
        self.writes |= writes

    def clear(self) -> None:
        self.reads.clear()
        self.writes.clear()
