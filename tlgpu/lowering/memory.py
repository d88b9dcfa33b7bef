"""Local-memory plan for allocas: offsets in one slab, reused when lifetimes do not overlap."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from math import prod

from tlinterp.lang import ir

# bytes; keeps every element type aligned — c64 is a double2, which NVIDIA loads with 16-byte
# instructions (an 8-byte-aligned one failed the launch with -9999: H200 campaign findings) —
# and lets 8/16-bit atomics use the containing word. The slabs themselves are declared
# aligned(SLAB_ALIGN).
ALIGN = 16
SLAB_ALIGN = f"__attribute__((aligned({ALIGN})))"


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


def _operands(inst) -> Iterator[str]:
    """Names of the values an instruction uses itself (results, nested regions excluded)."""
    for f in dataclasses.fields(inst):
        if f.name in ("result", "results"):
            continue
        v = getattr(inst, f.name)
        if not isinstance(v, ir.Region):
            yield from _names(v)


def plan_allocas(body: ir.Region, reuse: bool,
                 infer_lifetimes: bool = False) -> tuple[dict[int, int], int]:
    """Byte offset of every alloca (keyed by `id` of the instruction: sibling regions may
    reuse a name) and the slab size.

    Instructions are numbered in pre-order; an alloca lives from its position to its
    lifetime_stop, else to the end of its enclosing region (nested regions included). With
    `infer_lifetimes` it lives from the first to the end of the last instruction of that region
    that uses it or a view of it (a loop using it keeps it for the whole loop): before its
    first use it holds nothing, after its last use nothing reads it."""
    intervals: dict[int, list[int]] = {}
    sizes: dict[int, int] = {}
    declared: dict[int, int] = {}
    counter = [0]

    def visit(region: ir.Region, outer: dict[str, int]) -> set[int]:
        """Plan the region; returns the allocas it (and its nested regions) touches."""
        visible = dict(outer)  # name -> alloca key (allocas and views of them), scoped
        opened = []
        first_use: dict[int, int] = {}  # alloca -> pre-order number of its first user here
        last_use: dict[int, int] = {}  # alloca -> last pre-order number of its last user here
        touched: set[int] = set()
        for inst in region.instructions:
            pos = counter[0]
            counter[0] += 1
            if isinstance(inst, ir.Alloca):
                key = id(inst)
                intervals[key] = [pos, -1]
                declared[key] = pos
                sizes[key] = _round(alloca_bytes(inst.type))
                visible[inst.result.name] = key
                opened.append(key)
                continue
            used = {visible[n] for n in _operands(inst) if n in visible}
            if isinstance(inst, ir.LifetimeStop) and inst.operand.name in visible:
                intervals[visible[inst.operand.name]][1] = pos
            for r in ir.regions_of(inst):
                used |= visit(r, visible)
            for res in ir.results_of(inst):  # a view of an alloca aliases it; others shadow
                if isinstance(inst, (ir.Subview, ir.Expand, ir.Fuse)) \
                        and inst.operand.name in visible:
                    visible[res.name] = visible[inst.operand.name]
                else:
                    visible.pop(res.name, None)
            for key in used:
                first_use.setdefault(key, pos)
                last_use[key] = counter[0] - 1
            touched |= used
        for key in opened:
            if infer_lifetimes and key in first_use:  # untouched memory needs no place yet
                intervals[key][0] = first_use[key]
            if intervals[key][1] < 0:
                intervals[key][1] = last_use.get(key, intervals[key][0]) \
                    if infer_lifetimes else counter[0]
        return touched

    visit(body, {})
    if not infer_lifetimes:
        return _first_fit(sorted(intervals, key=lambda k: intervals[k][0]), intervals, sizes,
                          reuse)
    # first fit depends on the order; with tighter intervals no single order always wins, so
    # keep the smallest of three (declaration order, first use, largest first)
    orders = (sorted(intervals, key=declared.__getitem__),
              sorted(intervals, key=lambda k: intervals[k][0]),
              sorted(intervals, key=lambda k: (-sizes[k], intervals[k][0])))
    return min((_first_fit(o, intervals, sizes, reuse) for o in orders), key=lambda r: r[1])


def _first_fit(order: list[int], intervals: dict[int, list[int]], sizes: dict[int, int],
               reuse: bool) -> tuple[dict[int, int], int]:
    offsets: dict[int, int] = {}
    placed: list[tuple[int, int, int, int]] = []  # (start, end, offset, size)
    total = 0
    for key in order:
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
