"""Undefined-behaviour reports: the kinds, one report per offending element, and raising them.

Checks collect `UBReport`s while an instruction runs (`Collector.add_lanes`/`add_first` report
the first MAX_PER_KIND offenders and count the rest); a `with col.checks():` block raises them
together (as `UndefinedBehaviour`, exit 1) when it ends, before the instruction's memory
effects happen.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from tlinterp.interp.values import Lanes
from tlinterp.lang.diagnostics import Diagnostic, UndefinedBehaviour
from tlinterp.lang.ir import Span

KINDS = (
    "out-of-bounds", "data-race", "uninitialised-read", "use-after-lifetime", "division-by-zero",
    "division-overflow", "signed-overflow", "shift-out-of-range", "invalid-cast",
    "overlapping-operands", "order-dependent-atomic", "invalid-view", "shape-mismatch",
    "non-uniform", "barrier-divergence",  # v0.4 work-items and sub-groups
)

_TITLES = {k: k.replace("-", " ") for k in KINDS}

# Elements reported per instruction and kind; the rest are counted in the last message.
MAX_PER_KIND = 4

Described = tuple[tuple[int, ...], Optional[tuple], str]  # (groups, element, message)


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
    """Reports of one instruction; `add` keeps MAX_PER_KIND per kind and counts the others.
    `filename` and `source` are where the reports point when they are raised."""

    filename: str = "<input>"
    source: str = ""
    reports: list[UBReport] = field(default_factory=list)
    # (kind, what was cut: "element(s) " or "" for lanes) -> how many reports were not kept
    dropped: dict[tuple[str, str], int] = field(default_factory=dict)
    repeats: dict[int, int] = field(default_factory=dict)  # report index -> times seen

    def add(self, kind: str, span, groups, element, message: str) -> None:
        assert kind in KINDS, kind
        for i, r in enumerate(self.reports):  # the same report again: counted, not repeated
            if r.kind == kind and r.span == span and r.message == message:
                self.repeats[i] = self.repeats.get(i, 1) + 1
                return
        if sum(r.kind == kind for r in self.reports) >= MAX_PER_KIND:
            self.drop(kind, 1)
            return
        el = None if element is None else tuple(int(e) for e in element)
        self.reports.append(UBReport(kind, span, tuple(int(g) for g in groups), el, message))

    def drop(self, kind: str, n: int, what: str = "element(s) ") -> None:
        """Count `n` reports of `kind` not kept, for the "N more WHAT like the above" line."""
        self.dropped[kind, what] = self.dropped.get((kind, what), 0) + n

    def add_first(self, kind: str, mask, span, describe: Callable[[tuple], Described],
                  count_rest: bool = True) -> None:
        """Report the first MAX_PER_KIND true positions of `mask` (C order), each as
        `describe(position) -> (groups, element, message)`; the others are counted into the
        "N more element(s)" line, or when not `count_rest` (the positions are lanes, not
        elements) into an "N more" line."""
        mask = np.asarray(mask, bool)
        hits = np.flatnonzero(mask) if mask.ndim == 1 else np.argwhere(mask)
        if not len(hits):  # the common case: cheap
            return
        for p in hits[:MAX_PER_KIND]:
            self.add(kind, span, *describe((int(p),) if mask.ndim == 1 else
                                           tuple(int(i) for i in p)))
        rest = len(hits) - min(len(hits), MAX_PER_KIND)
        if rest:  # never cut silently (work-groups 4-7 listed, 8 dropped without a word)
            self.drop(kind, rest, "element(s) " if count_rest else "")

    def add_lanes(self, kind: str, mask, lanes: Lanes, span,
                  describe: Callable[[int, int], tuple[Optional[tuple], str]],
                  count_rest: bool = True) -> None:
        """Report the first MAX_PER_KIND lanes where `mask` (0-d or one entry per lane) holds,
        among the lanes that really run; `describe(lane, group) -> (element, message)`."""
        m = np.asarray(mask, bool)
        if m.shape != (lanes.n,):
            m = np.broadcast_to(m, (lanes.n,))
        if lanes.live is not None:
            m = m & lanes.live

        def one(p: tuple) -> Described:
            g = int(lanes.gid[p[0]])
            return ((g,), *describe(p[0], g))

        self.add_first(kind, m, span, one, count_rest)

    @contextmanager
    def checks(self) -> Iterator[Collector]:
        """A block of checks; leaving it raises what they reported, so that nothing after
        the block (an instruction's effects) happens with undefined behaviour."""
        yield self
        raise_reports(self)

    def __bool__(self) -> bool:
        return bool(self.reports)


def raise_reports(col: Collector) -> None:
    """Raise `UndefinedBehaviour` carrying `col.reports` (no-op when there are none)."""
    if not col.reports:
        return
    filename = col.filename
    diags = [r.diagnostic(filename) for r in col.reports]
    for i, times in col.repeats.items():
        d = diags[i]
        diags[i] = Diagnostic(f"{d.message} ({times} times)", d.span, d.filename)
    for (kind, what), n in col.dropped.items():
        span = next(r.span for r in col.reports if r.kind == kind)
        diags.append(Diagnostic(f"{_TITLES[kind]}: {n} more {what}like the above", span,
                                filename))
    err = UndefinedBehaviour(diags, col.source)
    err.reports = list(col.reports)
    raise err
