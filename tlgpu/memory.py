"""Local-memory plan for allocas: offsets in one slab, reused when lifetimes do not overlap."""

from __future__ import annotations

from math import prod

from tlinterp import ir

ALIGN = 8  # bytes; keeps f64/i64 aligned and lets 8/16-bit atomics use the containing word


def alloca_bytes(t) -> int:
    extent = 1 + sum((s - 1) * st for s, st in zip(t.shape, t.stride)) if prod(t.shape) else 0
    return max(extent, 1) * t.element.dtype.itemsize


def _round(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def plan_allocas(body: ir.Region, reuse: bool) -> tuple[dict[int, int], int]:
    """Byte offset of every alloca (keyed by `id` of the instruction: sibling regions may
    reuse a name) and the slab size.

    Instructions are numbered in pre-order; an alloca lives from its position to its
    lifetime_stop, else to the end of its enclosing region (nested regions included)."""
    intervals: dict[int, list[int]] = {}
    sizes: dict[int, int] = {}
    counter = [0]

    def visit(region: ir.Region, outer: dict[str, int]) -> None:
        visible = dict(outer)  # name -> alloca key, as scoped as the names themselves
        opened = []
        for inst in region.instructions:
            pos = counter[0]
            counter[0] += 1
            if isinstance(inst, ir.Alloca):
                key = id(inst)
                intervals[key] = [pos, -1]
                sizes[key] = _round(alloca_bytes(inst.type))
                visible[inst.result.name] = key
                opened.append(key)
            elif isinstance(inst, ir.LifetimeStop) and inst.operand.name in visible:
                intervals[visible[inst.operand.name]][1] = pos
            for r in ir.regions_of(inst):
                visit(r, visible)
        for key in opened:
            if intervals[key][1] < 0:
                intervals[key][1] = counter[0]

    visit(body, {})
    offsets: dict[int, int] = {}
    placed: list[tuple[int, int, int, int]] = []  # (start, end, offset, size)
    total = 0
    for key in sorted(intervals, key=lambda k: intervals[k][0]):
        start, end = intervals[key]
        size = sizes[key]
        busy = sorted((o, o + s) for (a, b, o, s) in placed
                      if not reuse or not (b < start or end < a))
        off = 0
        for lo, hi in busy:  # first fit
            if off + size <= lo:
                break
            off = max(off, hi)
        offsets[key] = off
        placed.append((start, end, off, size))
        total = max(total, off + size)
    return offsets, total
