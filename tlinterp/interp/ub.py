"""Undefined-behaviour reports: the kinds, one report per offending element, and raising them.

Checks collect `UBReport`s while an instruction runs; the executor raises them together
(as `UndefinedBehaviour`, exit 1) before the instruction's memory effects happen.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from ..diagnostics import Diagnostic, UndefinedBehaviour
from ..ir import Span

KINDS = (
    "out-of-bounds", "data-race", "uninitialised-read", "use-after-lifetime", "division-by-zero",
    "division-overflow", "signed-overflow", "shift-out-of-range", "invalid-cast",
    "overlapping-operands", "order-dependent-atomic", "invalid-view",
)

_TITLES = {k: k.replace("-", " ") for k in KINDS}

# Elements reported per instruction and kind; the rest are counted in the last message.
MAX_PER_KIND = 4


@dataclass(frozen=True)
class UBReport:
    kind: str
    span: Optional[Span]
    groups: tuple[int, ...]
    element: Optional[tuple]
    message: str

    def diagnostic(self, filename: str) -> Diagnostic:
        return Diagnostic(f"{_TITLES[self.kind]}: {self.message}", self.span, filename)


def groups_text(groups) -> str:
    gs = sorted(set(int(g) for g in groups))
    if len(gs) == 1:
        return f"work-group {gs[0]}"
    return "work-groups " + ", ".join(str(g) for g in gs[:-1]) + f" and {gs[-1]}"


@dataclass
class Collector:
    """Reports of one instruction; `add` keeps MAX_PER_KIND per kind and counts the others."""

    reports: list[UBReport] = field(default_factory=list)
    dropped: dict[str, int] = field(default_factory=dict)
    repeats: dict[int, int] = field(default_factory=dict)  # report index -> times seen

    def add(self, kind: str, span, groups, element, message: str) -> None:
        assert kind in KINDS, kind
        for i, r in enumerate(self.reports):  # the same report again: counted, not repeated
            if r.kind == kind and r.span == span and r.message == message:
                self.repeats[i] = self.repeats.get(i, 1) + 1
                return
        if sum(r.kind == kind for r in self.reports) >= MAX_PER_KIND:
            self.dropped[kind] = self.dropped.get(kind, 0) + 1
            return
        el = None if element is None else tuple(int(e) for e in element)
        self.reports.append(UBReport(kind, span, tuple(int(g) for g in groups), el, message))

    def __bool__(self) -> bool:
        return bool(self.reports)


def raise_reports(col: Collector, filename: str, source: str) -> None:
    """Raise `UndefinedBehaviour` carrying `col.reports` (no-op when there are none)."""
    if not col.reports:
        return
    diags = [r.diagnostic(filename) for r in col.reports]
    for i, times in col.repeats.items():
        d = diags[i]
        diags[i] = Diagnostic(f"{d.message} ({times} times)", d.span, d.filename)
    for kind, n in col.dropped.items():
        span = next(r.span for r in col.reports if r.kind == kind)
        diags.append(Diagnostic(f"{_TITLES[kind]}: {n} more element(s) like the above", span,
                                filename))
    err = UndefinedBehaviour(diags, source)
    err.reports = list(col.reports)
    raise err
