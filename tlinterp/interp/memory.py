"""Run-time memory: buffers with shadow state, strided views, and checked accesses.

A `View` is (buffer, offset, shape, strides) where each component is a Python int (uniform)
or an int64 array with one entry per lane (varying) -- the memref's dope vector, per lane. It
also remembers its *root*: the memref the kernel was given (argument, group member, alloca),
whose elements are the only ones it may touch.

A `Footprint` is the set of elements one access touches, (lanes, *shape) addresses, either a
strided batch (no index arrays: NumPy views straight on the buffer) or explicit addresses.

Shadow state per buffer element (allocated lazily, checking mode only) finds data races:
W/R/A hold the work-group that last wrote / read / atomically updated the element (-1 none,
-2 several); Wa/Ra/Aa hold the foreach actor (a (group, iteration) id), so two iterations of the
running foreach touching one element race while accesses ordered by program order do not.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, replace
from typing import Optional

import numpy as np

from tlinterp.interp.ub import Collector, groups_text
from tlinterp.interp.values import Lanes, is_var
from tlinterp.io.memlimit import check_allocation
from tlinterp.lang.diagnostics import ExecutionError
from tlinterp.lang.types import ScalarType

NONE, MANY = -1, -2

# Worst-case shadow bytes per element in checking mode: W/R/A (int32), Wa/Ra/Aa (int64) and an
# alloca's initialisation flag. The memory guard counts them with the data.
SHADOW_BYTES = 3 * 4 + 3 * 8 + 1


class Buffer:
    """A 1-D array of elements plus its shadow state; subclasses name elements for reports."""

    def __init__(self, data: np.ndarray, name: str):
        self.data = data
        self.name = name
        self.shadow: dict[str, np.ndarray] = {}
        # False when no instruction of the function can write this memory: its reads can
        # never race, so they need no shadow state (set from `effects.written_arguments`).
        self.may_be_written = True

    def get_shadow(self, key: str) -> np.ndarray:
        s = self.shadow.get(key)
        if s is None:
            dt = np.int32 if len(key) == 1 else np.int64
            check_allocation(len(self.data) * np.dtype(dt).itemsize,
                             f"undefined-behaviour tracking of {self.name}", ExecutionError)
            s = self.shadow[key] = np.full(len(self.data), NONE, dt)
        return s

    def describe(self, addr: int) -> tuple[str, Optional[tuple]]:
        return self.name, None


def decompose(rel: int, shape, strides) -> Optional[tuple]:
    """Indices of the element `rel` elements after a strided memref's start (None if none)."""
    idx = [0] * len(shape)
    for k in reversed(range(len(shape))):
        if strides[k] <= 0:
            return None
        idx[k], rel = divmod(rel, strides[k])
    if rel or any(not 0 <= i < s for i, s in zip(idx, shape)):
        return None
    return tuple(idx)


class ArgBuffer(Buffer):
    def __init__(self, data, name, offset, shape, strides):
        super().__init__(data, name)
        self.root = (offset, tuple(shape), tuple(strides))

    def describe(self, addr):
        off, shape, strides = self.root
        return self.name, decompose(addr - off, shape, strides)


class GroupBuffer(Buffer):
    def __init__(self, data, name, offsets, shapes, strides):
        super().__init__(data, name)
        self.offsets, self.shapes, self.strides = offsets, shapes, strides

    def describe(self, addr):
        m = int(np.searchsorted(self.offsets, addr, side="right")) - 1
        if m < 0:
            return self.name, None
        idx = decompose(addr - int(self.offsets[m]), tuple(int(x) for x in self.shapes[m]),
                        tuple(int(x) for x in self.strides[m]))
        return f"{self.name}[{m}]", idx


class AllocaBuffer(Buffer):
    """One slot of `extent` elements per work-group running the alloca."""

    def __init__(self, name, elem: ScalarType, shape, strides, extent, slot_gid, check):
        data = np.zeros(max(len(slot_gid) * extent, 1), elem.dtype)
        super().__init__(data, name)
        self.shape, self.strides, self.extent = shape, strides, max(extent, 1)
        self.slot_gid = slot_gid
        self.alive = np.ones(len(slot_gid), bool)
        self.init = np.zeros(len(data), bool) if check else None

    def describe(self, addr):
        slot, rel = divmod(addr, self.extent)
        return self.name, decompose(rel, self.shape, self.strides)


def extent(shape, strides) -> int:
    if any(s == 0 for s in shape):
        return 0
    return 1 + sum((s - 1) * st for s, st in zip(shape, strides))


@dataclass
class View:
    buf: Buffer
    elem: ScalarType
    off: object  # int or (n,) int64
    shape: tuple
    strides: tuple
    root: tuple  # (off, shape, strides) of the memref the kernel was given
    inside: bool  # every lane's view lies inside its root: accesses need no root check
    name: str
    origin: Optional[tuple] = None  # (instruction word, span) that made this view, for reports

    def select(self, sel) -> View:
        def s(x):
            return x[sel] if is_var(x) else x
        r_off, r_shape, r_strides = self.root
        return replace(self, off=s(self.off), shape=tuple(s(x) for x in self.shape),
                       strides=tuple(s(x) for x in self.strides),
                       root=(s(r_off), tuple(s(x) for x in r_shape),
                             tuple(s(x) for x in r_strides)))

    @property
    def uniform_shape(self) -> bool:
        return not any(is_var(s) for s in self.shape)


def _col(x, n: int, k: int):
    """A component broadcast against (n, *shape of order k)."""
    return x.reshape((n,) + (1,) * k) if is_var(x) else x


def _grid(shape) -> list[np.ndarray]:
    k = len(shape)
    return [np.arange(s, dtype=np.int64).reshape((1,) + (1,) * i + (s,) + (1,) * (k - i - 1))
            for i, s in enumerate(shape)]


class Footprint(ABC):
    """Addresses (n, *shape) one access touches in one buffer."""

    n: int
    shape: tuple
    disjoint: bool  # no element is touched twice (lanes never share elements)
    shared: bool = False  # every lane touches exactly the same elements

    @abstractmethod
    def take(self, arr):
        """See the concrete footprints."""

    @abstractmethod
    def put(self, arr, vals):
        """See the concrete footprints."""

    @abstractmethod
    def addr(self) -> np.ndarray:
        """See the concrete footprints."""

    @abstractmethod
    def bounds(self) -> tuple[int, int]:
        """See the concrete footprints."""


class StridedFP(Footprint):
    """Lane l touches o0 + l*d + sum(i_k * strides_k): NumPy strided views, no index arrays."""

    def __init__(self, n, o0, d, shape, strides):
        self.n, self.o0, self.d, self.shape, self.strides = n, o0, d, tuple(shape), tuple(strides)
        ext = extent(self.shape, self.strides)
        self.shared = d == 0 or n == 1
        self.disjoint = n == 1 or (d > 0 and d >= ext)
        self._ext = ext

    def _view(self, arr, n):
        it = arr.itemsize
        if self._ext == 0 or n == 0:
            return np.zeros((n,) + self.shape, arr.dtype)
        return np.lib.stride_tricks.as_strided(
            arr[self.o0:], (n,) + self.shape, (self.d * it,) + tuple(s * it for s in self.strides))

    def take(self, arr):
        return self._view(arr, self.n)

    def take1(self, arr):
        return self._view(arr, 1)[0, ...]

    def put(self, arr, vals):
        if self._ext and self.n:
            self._view(arr, self.n)[...] = vals

    def put1(self, arr, vals):
        if self._ext:
            self._view(arr, 1)[0, ...] = vals

    def addr(self):
        a = np.full((self.n,) + self.shape, self.o0, np.int64)
        lane = np.arange(self.n, dtype=np.int64) * self.d
        a += lane.reshape((self.n,) + (1,) * len(self.shape))
        for g, st in zip(_grid(self.shape), self.strides):
            a += g * st
        return a

    def bounds(self):
        if self._ext == 0 or self.n == 0:
            return 0, -1
        return self.o0, self.o0 + (self.n - 1) * self.d + self._ext - 1


class IndexedFP(Footprint):
    def __init__(self, addr: np.ndarray, shape):
        self.a, self.n, self.shape = addr, addr.shape[0], tuple(shape)
        self._disjoint = None

    @property
    def disjoint(self) -> bool:
        # Cheap test for the common case of ascending distinct addresses (foreach stores).
        if self._disjoint is None:
            flat = self.a.reshape(-1)
            self._disjoint = flat.size <= 1 or bool((flat[1:] > flat[:-1]).all())
        return self._disjoint

    def take(self, arr):
        return arr[self.a]

    def put(self, arr, vals):
        arr[self.a] = vals

    def addr(self):
        return self.a

    def bounds(self):
        if self.a.size == 0:
            return 0, -1
        return int(self.a.min()), int(self.a.max())


def footprint(v: View, n: int) -> Footprint:
    """All elements of `v` (uniform shape) for n lanes."""
    shape = tuple(int(s) for s in v.shape)
    if not any(is_var(s) for s in v.strides):
        strides = tuple(int(s) for s in v.strides)
        if not is_var(v.off):
            return StridedFP(n, int(v.off), 0, shape, strides)
        off = v.off
        if n == 1:
            return StridedFP(1, int(off[0]), 0, shape, strides)
        d = int(off[1] - off[0])
        if d >= 0 and (np.diff(off) == d).all():
            return StridedFP(n, int(off[0]), d, shape, strides)
    k = len(shape)
    a = np.broadcast_to(np.asarray(_col(v.off, n, k), np.int64), (n,) + (1,) * k).copy() \
        if k else np.array(np.broadcast_to(np.asarray(v.off, np.int64), (n,)))
    for g, st in zip(_grid(shape), v.strides):
        a = a + g * _col(st, n, k)
    return IndexedFP(np.broadcast_to(a, (n,) + shape).astype(np.int64, copy=False), shape)


def lane_footprint(addr: np.ndarray, n: int) -> Footprint:
    """The footprint of one element per lane; evenly spaced addresses (the usual foreach
    pattern) become a strided footprint, so accesses need no index arrays."""
    if addr.ndim == 0:
        return StridedFP(n, int(addr), 0, (), ())
    if n >= 2:
        d = int(addr[1] - addr[0])
        if d > 0 and ((addr[1:] - addr[:-1]) == d).all():
            return StridedFP(n, int(addr[0]), d, (), ())
    return IndexedFP(addr, ())


def element_addr(v: View, idx: list) -> np.ndarray:
    """Address of element idx (one index array or int per mode) for each lane."""
    a = None
    for i, st in zip(idx, v.strides):
        if not is_var(i) and not is_var(st):
            term = np.asarray(int(i) * int(st), np.int64)
        else:
            term = np.asarray(i, np.int64)
            term = term * st if (is_var(st) or st != 1) else term
        if a is None:
            a = term.copy() if term.ndim else term
        elif a.ndim >= term.ndim and a.ndim:
            a += term
        else:
            a = a + term
    off = np.asarray(v.off, np.int64)
    if a is None:
        return off.copy() if off.ndim else off
    if off.ndim or int(off) != 0:
        a = a + off if (off.ndim > a.ndim or not a.ndim) else np.add(a, off, out=a)
    return a


# --- checks -------------------------------------------------------------------------------


def outside_root(v: View, addr: np.ndarray, n: int) -> np.ndarray:
    """Mask of addresses (n, ...) that are not elements of the lane's root memref."""
    off, shape, strides = v.root
    k = addr.ndim - 1
    rel = addr - _col(off, n, k)
    bad = np.zeros(addr.shape, bool)
    for j in reversed(range(len(shape))):
        st = _col(strides[j], n, k)
        q, rel = np.divmod(rel, st)
        bad |= (q < 0) | (q >= _col(shape[j], n, k))
    return bad | (rel != 0)


def check_root(v: View, fp: Footprint, lanes: Lanes, col: Collector, span, what: str,
               idx=None) -> None:
    """Report accesses outside the memref the view comes from. `idx`: the per-lane indices
    of a load or store (the element named in the report); else the footprint position."""
    if v.inside:
        return
    addr = fp.addr()
    bad = outside_root(v, addr, lanes.n)
    if not bad.any():
        return
    root = root_name(v)
    made = ""
    if v.origin is not None and v.name != root:
        word, where = v.origin
        made = f", made by the {word} at {where},"

    def msg(p) -> str:
        lane = int(p[0])
        el = tuple(int(np.asarray(i).reshape(-1)[lane]) if is_var(i) else int(i)
                   for i in idx) if idx is not None else tuple(int(x) for x in p[1:])
        return (f"{lane_text(lanes, lane)}: {what} element {_fmt(el)} of {v.name}{made} "
                f"which lies outside {root}")
    _report_lanes(col, "out-of-bounds", span, lanes, bad, msg)


def root_name(v: View) -> str:
    """The argument, group member or alloca a view's elements belong to."""
    name, _ = v.buf.describe(int(np.asarray(v.root[0]).reshape(-1)[0]))
    return name


def lane_text(lanes: Lanes, lane: int) -> str:
    """"work-group G" or "work-group G, iteration I" (inside a foreach) for one lane."""
    text = groups_text([int(lanes.gid[lane])])
    it = lanes.it
    if it is not None and lanes.items:
        return f"{text}, work-item {int(it[lane]) % lanes.items}"
    return text if it is None else f"{text}, iteration {int(it[lane])}"


def _units(lanes: Lanes) -> str:
    """What the racing lanes of one work-group are (v0.4 parallel: work-items)."""
    return "work-items" if lanes.items else "iterations of a foreach"


def _report_lanes(col, kind, span, lanes, bad, msg, limit=4):
    """One report per offending position (up to `limit` distinct messages), the rest counted."""
    pos = np.argwhere(bad)[:limit * 4]
    shown = 0
    for p in pos:
        if shown == limit:
            break
        before = len(col.reports)
        col.add(kind, span, (lanes.gid[int(p[0])],), None, msg(p))
        shown += len(col.reports) > before
    extra = int(bad.sum()) - len(pos)
    if extra > 0:
        col.drop(kind, extra)


def safe_bounds(buf: Buffer, fp: Footprint) -> bool:
    """Memory safety (always checked, even with check=False): addresses inside the buffer."""
    lo, hi = fp.bounds()
    return hi < lo or (lo >= 0 and hi < len(buf.data))


def _fmt(el) -> str:
    if el is None:
        return "(outside the memref)"
    return "(" + ", ".join(str(i) for i in el) + ")"


def _report_positions(col, kind, span, v, lanes, addr, bad, msg):
    def one(p: tuple):
        g = int(lanes.gid[p[0]])
        name, el = v.buf.describe(int(addr[p]))
        return (g,), el, f"{groups_text([g])}: " + msg(name, el)

    col.add_first(kind, bad, span, one)


def check_lifetime(v: View, lanes: Lanes, col: Collector, span) -> None:
    buf = v.buf
    if not isinstance(buf, AllocaBuffer):
        return
    slot = np.asarray(v.root[0], np.int64) // buf.extent
    dead = ~np.broadcast_to(buf.alive[slot], (lanes.n,))
    col.add_lanes("use-after-lifetime", dead, lanes, span,
                  lambda lane, g: (None, f"{groups_text([g])} uses {buf.name} after its "
                                         "lifetime ended"), count_rest=False)


def check_init(v: View, fp: Footprint, lanes: Lanes, col: Collector, span) -> None:
    buf = v.buf
    if not isinstance(buf, AllocaBuffer) or buf.init is None:
        return
    ok = fp.take(buf.init)
    if not ok.all():
        addr = fp.addr()
        _report_positions(col, "uninitialised-read", span, v, lanes, addr, ~ok,
                          lambda name, el: f"reads element {_fmt(el)} of {name} before any "
                                           "write")


def mark_init(v: View, fp: Footprint) -> None:
    if isinstance(v.buf, AllocaBuffer) and v.buf.init is not None:
        fp.put(v.buf.init, True)


# --- races ---------------------------------------------------------------------------------


class _Access:
    """The distinct elements of one access with the group (or MANY) and actor touching each."""

    def __init__(self, fp: Footprint, lanes: Lanes):
        n, k = lanes.n, len(fp.shape)
        self.pair = None  # (group a, group b) arrays for elements touched by several lanes
        if fp.disjoint:
            self.take, self.put = fp.take, fp.put
            self.grp = lanes.gid32.reshape((n,) + (1,) * k)
            self.act = None if lanes.act is None else lanes.act.reshape((n,) + (1,) * k)
            self.addr = fp.addr
            self.lane_of = lambda pos: int(pos[0])
            self.shape = (n,) + fp.shape
            return
        if isinstance(fp, StridedFP) and fp.shared:
            self.take, self.put = fp.take1, fp.put1
            g0, g1 = int(lanes.gid.min()), int(lanes.gid.max())
            self.grp = np.int32(g0 if g0 == g1 else MANY)
            if lanes.act is None:
                self.act = None
            else:
                a0, a1 = int(lanes.act.min()), int(lanes.act.max())
                self.act = np.int64(a0 if a0 == a1 else lanes.marker)
            self.pair = (np.full(fp.shape, g0), np.full(fp.shape, g1))
            self.addr = lambda: fp.addr()[0]
            self.lane_of = lambda pos: 0
            self.shape = fp.shape
            return
        addr = fp.addr().reshape(-1)
        reps = int(np.prod(fp.shape, dtype=np.int64))
        g = np.repeat(lanes.gid, reps)
        order = np.lexsort((g, addr))
        a, gs = addr[order], g[order]
        start = np.flatnonzero(np.r_[True, a[1:] != a[:-1]])
        end = np.r_[start[1:], len(a)] - 1
        ua = a[start]
        g0, g1 = gs[start], gs[end]
        self.grp = np.where(g0 == g1, g0, MANY).astype(np.int32)
        self.pair = (g0, g1)
        if lanes.act is None:
            self.act = None
        else:
            act = np.repeat(lanes.act, reps)
            o2 = np.lexsort((act, addr))
            acts = act[o2]
            a0, a1 = acts[start], acts[end]
            self.act = np.where(a0 == a1, a0, lanes.marker)
        lane_sorted = np.repeat(np.arange(lanes.n), reps)[order][start]
        self.take = lambda arr: arr[ua]
        self.put = lambda arr, v: arr.__setitem__(ua, v)
        self.addr = lambda: ua
        self.lane_of = lambda pos: int(lane_sorted[pos[0]])
        self.shape = ua.shape


_VERB = {"r": "reads", "w": "writes", "a": "atomically updates"}


def record(v: View, fp: Footprint, lanes: Lanes, kind: str, col: Collector, span) -> None:
    """Check one access ('r', 'w' or 'a') for data races and record it in the shadow state."""
    buf = v.buf
    if kind == "r" and not buf.may_be_written:
        return
    if isinstance(buf, AllocaBuffer) and lanes.act is None:
        return  # a work-group's own memory in its program order: only foreach lanes can race
    acc = _Access(fp, lanes)
    grp, act, marker = acc.grp, acc.act, lanes.marker

    def conflicts(key):
        s = buf.shadow.get(key)
        if s is None:
            return None, None
        prev = acc.take(s)
        bad = (prev != NONE) & ((prev != grp) | (grp == MANY))
        if act is not None and key + "a" in buf.shadow:
            pa = acc.take(buf.shadow[key + "a"])
            bad = bad | ((prev == grp) & (pa >= marker) & (pa != act))
        return bad, prev

    checks = {"r": ("W", "A"), "w": ("W", "R", "A"), "a": ("W", "R")}[kind]
    for key in checks:
        bad, prev = conflicts(key)
        if bad is not None and bad.any():
            _race_reports(col, span, v, acc, bad, prev, {"W": "w", "R": "r", "A": "a"}[key],
                          kind, lanes)
    if kind == "w" and not fp.disjoint:  # a disjoint access touches no element twice
        cur_many = grp == MANY
        if act is not None:
            cur_many = cur_many | (act == marker)
        dup = np.broadcast_to(cur_many, acc.shape)
        if dup.any():
            _race_reports(col, span, v, acc, dup, None, "w", "w", lanes)
    # record
    key = {"r": "R", "w": "W", "a": "A"}[kind]
    s = buf.get_shadow(key)
    if kind == "w":
        acc.put(s, grp)
        if act is not None:
            acc.put(buf.get_shadow("Wa"), act)
        return
    prev = np.array(acc.take(s))
    other = (prev != NONE) & (prev != grp)
    acc.put(s, np.where(other, MANY, grp).astype(np.int32) if other.any() else grp)
    if act is not None:  # several iterations of the running foreach: the marker
        fresh = key + "a" not in buf.shadow
        sa = buf.get_shadow(key + "a")
        if fresh:
            acc.put(sa, act)
        else:
            pa = acc.take(sa)
            acc.put(sa, np.where((prev == grp) & (pa >= marker) & (pa != act), marker, act))


def _race_reports(col, span, v, acc, bad, prev, prev_kind, kind, lanes):
    addr = []  # computed on the first report only

    def one(p: tuple):
        if not addr:
            addr.append(acc.addr())
        a = int(addr[0][p] if np.ndim(addr[0]) else addr[0])
        name, el = v.buf.describe(a)
        lane = acc.lane_of(p)
        cur_g = int(lanes.gid[lane])
        if prev is None:  # several lanes of this very access
            g0 = int(np.broadcast_to(acc.pair[0], acc.shape)[p]) if acc.pair else cur_g
            g1 = int(np.broadcast_to(acc.pair[1], acc.shape)[p]) if acc.pair else cur_g
            if g0 != g1:
                groups, who = (g0, g1), f"{groups_text((g0, g1))} both {_plural(kind)}"
            else:
                groups, who = (g0,), (f"two {_units(lanes)} in work-group {g0} both "
                                      f"{_plural(kind)}")
        else:
            pg = int(np.broadcast_to(prev, acc.shape)[p])
            if pg == MANY:
                groups = (cur_g,)
                who = (f"work-group {cur_g} {_VERB[kind]} and several work-groups "
                       f"{_plural(prev_kind)}")
            elif pg == cur_g:
                groups, who = (cur_g,), (f"two {_units(lanes)} in work-group {cur_g}: "
                                         f"one {_VERB[prev_kind]}, one {_VERB[kind]}")
            elif prev_kind == kind:
                groups, who = (pg, cur_g), f"{groups_text((pg, cur_g))} both {_plural(kind)}"
            else:
                groups, who = (pg, cur_g), (f"work-group {pg} {_VERB[prev_kind]} and work-group "
                                            f"{cur_g} {_VERB[kind]}")
        return groups, el, f"{who} element {_fmt(el)} of {name}"

    col.add_first("data-race", np.broadcast_to(bad, acc.shape), span, one)


def _plural(k):
    return {"r": "read", "w": "write", "a": "atomically update"}[k]
