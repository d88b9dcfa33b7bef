"""Lane sets and lane values.

A lane is a work-group, or inside a foreach a (work-group, iteration) pair. A run-time value
is uniform (a 0-d array, or a Python int for view metadata) or varying (a 1-d array with one
entry per lane). Restricting a lane set (if, for) or expanding it (foreach) maps every varying
value through the same selection.
"""

from __future__ import annotations

from typing import Optional

import numpy as np


class Lanes:
    """The active lanes: work-group ids, and inside a foreach actor ids and iteration numbers.
    Restricted lane sets compute their arrays on first use (most instructions need none)."""

    def __init__(self, gid=None, act=None, marker: int = 1 << 62, it=None, live=None,
                 parent: Optional[Lanes] = None, sel=None, n: Optional[int] = None):
        self._gid, self._act, self._it = gid, act, it
        self.marker = marker  # actors >= marker belong to the running foreach (marker: several)
        self.live = live  # bool mask of lanes really running (if-converted regions), or None
        self._parent, self._sel = parent, sel
        self.n = len(gid) if gid is not None else int(n)
        self.has_act = act is not None or (parent is not None and parent.has_act)
        # > 0 inside a v0.4 parallel region: lanes are work-items of groups of this many, and
        # `it` is the position in the region's (work-group-major) lane set
        self.items = parent.items if parent is not None else 0

    def _from_parent(self, name: str):
        v = getattr(self._parent, name)
        return None if v is None else v[self._sel]

    @property
    def gid(self) -> np.ndarray:
        if self._gid is None:
            self._gid = self._from_parent("gid")
        return self._gid

    @property
    def gid32(self) -> np.ndarray:
        """The group ids as int32, the shadow memory's type (computed once per lane set)."""
        if getattr(self, "_gid32", None) is None:
            self._gid32 = self.gid.astype(np.int32)
        return self._gid32

    @property
    def act(self) -> Optional[np.ndarray]:
        if self._act is None and self.has_act and self._parent is not None:
            self._act = self._from_parent("act")
        return self._act

    @property
    def it(self) -> Optional[np.ndarray]:
        if self._it is None and self._parent is not None:
            self._it = self._from_parent("it")
        return self._it

    def select(self, sel) -> Lanes:
        n = int(sel.sum()) if sel.dtype == bool else len(sel)
        return Lanes(marker=self.marker, parent=self, sel=sel, n=n,
                     live=None if self.live is None else self.live[sel])

    def masked(self, live: np.ndarray) -> Lanes:
        """The same lanes, of which only `live` ones really run (faults elsewhere ignored)."""
        both = live if self.live is None else (self.live & live)
        return Lanes(marker=self.marker, parent=self, sel=slice(None), n=self.n, live=both)


def is_var(x) -> bool:
    return isinstance(x, np.ndarray) and x.ndim == 1


def select(x, sel):
    """Restrict a scalar value or view metadata component to the selected lanes."""
    if is_var(x):
        return x[sel]
    if hasattr(x, "select"):
        return x.select(sel)
    return x


def uniform_or(x):
    """A varying integer array whose entries are all equal becomes a Python int (cheap test)."""
    if is_var(x) and len(x) and (x == x[0]).all():
        return int(x[0])
    if is_var(x) and not len(x):
        return 0
    return x


def lanes_of(x, n: int) -> np.ndarray:
    """The value for each of n lanes as a 1-d array."""
    a = np.asarray(x)
    return a if a.ndim == 1 else np.broadcast_to(a, (n,))
