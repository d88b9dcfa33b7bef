"""Which memory each work-group step touches, and where a barrier is needed between steps.

Memory is named by its root: a function argument, or "local" for alloca memory (allocas may
share memory, so they are one root). A step that writes a root some other work-item may still
read or write, or reads a root someone may have written, needs a barrier first.
"""

from __future__ import annotations

from dataclasses import dataclass, field


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

    def add(self, reads: set[str], writes: set[str]) -> None:
        self.reads |= reads
        self.writes |= writes

    def clear(self) -> None:
        self.reads.clear()
        self.writes.clear()
