"""Local-memory plan for allocas: offsets in one slab, reused when lifetimes do not overlap."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from math import prod

from tlinterp import ir

ALIGN = 8  # bytes; keeps f64/i64 aligned and lets 8/16-bit atomics use the containing word


def alloca_bytes(t) -> int:
    extent = 1 + sum((s - 1) * st for s, st in zip(t.shape, t.stride)) if prod(t.shape) else 0
    return max(extent, 1) * t.element.dtype.itemsize


def _round(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def _names(x) -> Iterator[str]:
    if isinstance(x, ir.Value):
        yield x.name
    elif isinstance(x, (tuple, list)):
        for y in x:
            yield from _names(y)
    elif isinstance(x, ir.Slice):
        yield from _names(x.offset)
        yield from _names(x.size)


def _mentioned(inst) -> Iterator[str]:
    """Names of the values an instruction mentions itself (nested regions excluded)."""
    for f in dataclasses.fields(inst):
        v = getattr(inst, f.name)
        if not isinstance(v, ir.Region):
            yield from _names(v)


def _alloca_roots(body: ir.Region) -> dict[str, str]:
    """Every alloca and every view derived from one (subview/expand/fuse) -> the alloca."""
    roots: dict[str, str] = {}
    for inst in ir.walk(body):
        if isinstance(inst, ir.Alloca):
            roots[inst.result.name] = inst.result.name
        elif isinstance(inst, (ir.Subview, ir.Expand, ir.Fuse)) and inst.operand.name in roots:
            roots[inst.result.name] = roots[inst.operand.name]
    return roots


def plan_allocas(body: ir.Region, reuse: bool,
                 infer_lifetimes: bool = False) -> tuple[dict[str, int], int]:
    """Byte offset of every alloca (by result name) and the slab size.

    Instructions are numbered in pre-order; an alloca lives from its position to its
    lifetime_stop, else to the end of its enclosing region (nested regions included). With
    `infer_lifetimes` it lives from the first to the end of the last instruction of that region
    that uses it or a view of it (a loop using it keeps it for the whole loop): before its
    first use it holds nothing, after its last use nothing reads it."""
    intervals: dict[str, list[int]] = {}
    sizes: dict[str, int] = {}
    declared: dict[str, int] = {}
    counter = [0]
    roots = _alloca_roots(body) if infer_lifetimes else {}

    def touched(inst) -> set[str]:
        names = set(_mentioned(inst))
        for r in ir.regions_of(inst):
            for nested in ir.walk(r):
                names.update(_mentioned(nested))
        return {roots[n] for n in names if n in roots}

    def visit(region: ir.Region) -> None:
        opened = []
        first_use: dict[str, int] = {}  # alloca -> pre-order number of its first user here
        last_use: dict[str, int] = {}  # alloca -> last pre-order number of its last user here
        for inst in region.instructions:
            pos = counter[0]
            counter[0] += 1
            if isinstance(inst, ir.Alloca):
                intervals[inst.result.name] = [pos, -1]
                declared[inst.result.name] = pos
                sizes[inst.result.name] = _round(alloca_bytes(inst.type))
                opened.append(inst.result.name)
            elif isinstance(inst, ir.LifetimeStop) and inst.operand.name in intervals:
                intervals[inst.operand.name][1] = pos
            for r in ir.regions_of(inst):
                visit(r)
            if infer_lifetimes and not isinstance(inst, ir.Alloca):
                for name in touched(inst):
                    first_use.setdefault(name, pos)
                    last_use[name] = counter[0] - 1
        for name in opened:
            if infer_lifetimes and name in first_use:  # untouched memory needs no place yet
                intervals[name][0] = first_use[name]
            if intervals[name][1] < 0:
                intervals[name][1] = last_use.get(name, intervals[name][0]) \
                    if infer_lifetimes else counter[0]

    visit(body)
    if not infer_lifetimes:
        return _first_fit(sorted(intervals, key=lambda n: intervals[n][0]), intervals, sizes,
                          reuse)
    # first fit depends on the order; with tighter intervals no single order always wins, so
    # keep the smallest of three (declaration order, first use, largest first)
    orders = (sorted(intervals, key=declared.__getitem__),
              sorted(intervals, key=lambda n: intervals[n][0]),
              sorted(intervals, key=lambda n: (-sizes[n], intervals[n][0])))
    return min((_first_fit(o, intervals, sizes, reuse) for o in orders), key=lambda r: r[1])


def _first_fit(order: list[str], intervals: dict[str, list[int]], sizes: dict[str, int],
               reuse: bool) -> tuple[dict[str, int], int]:
    offsets: dict[str, int] = {}
    placed: list[tuple[int, int, int, int]] = []  # (start, end, offset, size)
    total = 0
    for name in order:
        start, end = intervals[name]
        size = sizes[name]
        busy = sorted((o, o + s) for (a, b, o, s) in placed
                      if not reuse or not (b < start or end < a))
        off = 0
        for lo, hi in busy:  # first fit
            if off + size <= lo:
                break
            off = max(off, hi)
        offsets[name] = off
        placed.append((start, end, off, size))
        total = max(total, off + size)
    return offsets, total
