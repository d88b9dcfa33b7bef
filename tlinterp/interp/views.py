"""View instructions on run-time memrefs: subview, expand, fuse, size, load from a group.

Metadata components are Python ints (uniform) or int64 arrays (one per lane). Ill-formed views
that only the run time can detect (negative offset, non-positive size, a dynamic fuse breaking
S_k s_k = S_{k+1}, a dynamic expand that does not divide) are reported as "invalid-view".
A subview may reach outside its parent: the view is then marked `inside=False`, and only
touching such an element is out of bounds.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from tlinterp.interp.memory import GroupBuffer, View
from tlinterp.interp.ub import Collector, groups_text
from tlinterp.interp.values import Lanes, is_var, uniform_or
from tlinterp.lang.types import GroupType, MemrefType


def meta(x):
    """A lane value (0-d or 1-d array) as view metadata (int or int64 array)."""
    if np.ndim(x) == 0:
        return int(x)
    return np.asarray(x, np.int64)


def _bad_lanes(col: Collector, kind: str, span, lanes: Lanes, mask, msg) -> None:
    col.add_lanes(kind, mask, lanes, span,
                  lambda lane, g: (None, f"{groups_text([g])}: {msg(lane)}"), count_rest=False)


def _at(x, lane):
    return int(x[lane]) if is_var(x) else int(x)


def subview(v: View, slices: list, lanes: Lanes, col: Collector, span) -> View:
    """slices: list of (offset, size, is_range) with offset/size metadata; size None = '?'."""
    off = v.off
    shape, strides = [], []
    inside = v.inside
    for k, (o, size, is_range) in enumerate(slices):
        parent = v.shape[k]
        _bad_lanes(col, "invalid-view", span, lanes, np.asarray(o) < 0,
                   lambda ln, o=o: f"subview offset {_at(o, ln)} is negative")
        if is_range:
            if size is None:
                size = parent - o if not (is_var(parent) or is_var(o)) else \
                    np.asarray(parent, np.int64) - o
            _bad_lanes(col, "invalid-view", span, lanes, np.asarray(size) <= 0,
                       lambda ln, s=size: f"subview size {_at(s, ln)} is not positive")
            end = o + size
        else:
            end = o + 1
        if inside and not bool(np.all((np.asarray(o) >= 0) & (np.asarray(end) <= parent))):
            inside = False
        if is_var(o) or o != 0:
            off = off + o * v.strides[k]
        if is_range:
            shape.append(uniform_or(size) if is_var(size) else size)
            strides.append(v.strides[k])
    return replace(v, off=off, shape=tuple(shape), strides=tuple(strides), inside=inside)


def expand(v: View, mode: int, entries: list, lanes: Lanes, col: Collector, span) -> View:
    """entries: metadata ints/arrays, None for '?'."""
    size = v.shape[mode]
    for e in entries:
        if e is not None:
            _bad_lanes(col, "invalid-view", span, lanes, np.asarray(e) <= 0,
                       lambda ln, e=e: f"expand size {_at(e, ln)} is not positive")
    known = 1
    for e in entries:
        if e is not None:
            known = known * np.maximum(e, 1) if is_var(e) else known * max(e, 1)
    new = list(entries)
    if None in entries:
        rem = np.asarray(size) % known
        _bad_lanes(col, "invalid-view", span, lanes, rem != 0,
                   lambda ln: f"expand shape does not divide the mode size {_at(size, ln)}")
        inferred = size // known
        new[entries.index(None)] = uniform_or(inferred) if is_var(inferred) else int(inferred)
    else:
        _bad_lanes(col, "invalid-view", span, lanes, np.asarray(known) != np.asarray(size),
                   lambda ln: f"expand shape product {_at(known, ln)} differs from the mode "
                              f"size {_at(size, ln)}")
    st = v.strides[mode]
    strides = []
    for n in new:
        strides.append(st)
        st = st * n
    return replace(v, shape=v.shape[:mode] + tuple(new) + v.shape[mode + 1:],
                   strides=v.strides[:mode] + tuple(strides) + v.strides[mode + 1:])


def fuse(v: View, first: int, last: int, lanes: Lanes, col: Collector, span) -> View:
    for k in range(first, last):
        bad = np.asarray(v.strides[k] * v.shape[k]) != np.asarray(v.strides[k + 1])
        _bad_lanes(col, "invalid-view", span, lanes, bad,
                   lambda ln, k=k: f"modes {k} and {k + 1} cannot be fused: stride "
                                   f"{_at(v.strides[k], ln)} x size {_at(v.shape[k], ln)} != "
                                   f"stride {_at(v.strides[k + 1], ln)}")
    size = 1
    for s in v.shape[first:last + 1]:
        size = size * s
    if is_var(size):
        size = uniform_or(size)
    return replace(v, shape=v.shape[:first] + (size,) + v.shape[last + 1:],
                   strides=v.strides[:first + 1] + v.strides[last + 1:])


@dataclass
class GroupValue:
    """A group argument: member i's view is (offsets[i], shapes[i], strides[i]) in `buf`."""

    buf: GroupBuffer
    type: GroupType
    offsets: np.ndarray  # (G,)
    shapes: np.ndarray  # (G, order)
    strides: np.ndarray  # (G, order)

    def select(self, sel):
        return self


def load_member(g: GroupValue, idx, lanes: Lanes, col: Collector, span, name: str) -> View:
    count = len(g.offsets)
    i = np.asarray(idx, np.int64)
    bad = (i < 0) | (i >= count)
    if bad.any():
        col.add_lanes("out-of-bounds", bad, lanes, span,
                      lambda lane, gg: ((_at(i, lane),), f"{groups_text([gg])} loads member "
                                        f"{_at(i, lane)} of {g.buf.name}, which has {count} "
                                        "members"), count_rest=False)
        i = np.where(bad, 0, i)
    if count == 0:
        i = None
    t: MemrefType = g.type.memref

    def pick(arr, k=None):
        if i is None:
            return 0
        col_ = arr if k is None else arr[:, k]
        x = col_[i]
        return int(x) if np.ndim(x) == 0 else uniform_or(x)

    off = pick(g.offsets)
    shape = tuple(t.shape[k] if t.shape[k] is not None else pick(g.shapes, k)
                  for k in range(t.order))
    strides = tuple(t.stride[k] if t.stride[k] is not None else pick(g.strides, k)
                    for k in range(t.order))
    return View(g.buf, t.element, off, shape, strides, (off, shape, strides), True, name)
