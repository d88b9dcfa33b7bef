"""The v0.4 lane model: work-items of a work-group, their sub-groups, and uniformity checks.

A value of a v0.4 SPMD region is an array of shape (G, W, ...): G work-groups (the batch the
interpreter vectorises over) by W = wx * wy work-items in linear order l = lx + wx * ly.
Because wx is a multiple of the sub-group size S, a sub-group never straddles two rows, so the
same array reshaped to (G, W // S, S, ...) is (work-group, subgroup_linear_id,
subgroup_local_id): l = subgroup_linear_id * S + subgroup_local_id (docs/semantics.md,
"v0.4 execution model (interpreter)").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class UBFinding:
    """One undefined behaviour found by a v0.4 building block, before it has a place in the
    source: the caller hands it to `ub.Collector.add(kind, span, groups, element, message)`."""

    kind: str
    groups: tuple[int, ...]
    element: tuple[int, ...] | None
    message: str


@dataclass(frozen=True)
class WorkGroup:
    """A v0.4 work-group shape: `size` = (wx, wy) work-items (v0.4 work-groups are
    two-dimensional), `subgroup_size` = S, with wx a multiple of S (so no partial sub-groups)."""

    size: tuple[int, int]
    subgroup_size: int

    def __post_init__(self) -> None:
        wx, wy = self.size
        s = self.subgroup_size
        if s < 1 or wx < 1 or wy < 1:
            raise ValueError(f"work-group size {wx}x{wy} and sub-group size {s} must be "
                             "positive")
        if wx % s:
            raise ValueError(f"the first work-group size mode {wx} is not a multiple of the "
                             f"sub-group size {s}")

    @property
    def n_items(self) -> int:
        return self.size[0] * self.size[1]

    @property
    def num_subgroups(self) -> tuple[int, int, int]:
        """num_subgroups.x, .y, .z = wx / S, wy, 1."""
        return (self.size[0] // self.subgroup_size, self.size[1], 1)

    @property
    def n_subgroups(self) -> int:
        return self.n_items // self.subgroup_size

    def local_id(self) -> tuple[np.ndarray, np.ndarray]:
        """(lx, ly) of every work-item, in linear order."""
        lin = np.arange(self.n_items)
        return lin % self.size[0], lin // self.size[0]

    def subgroup_id(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """subgroup_id.x, .y, .z of every work-item: (lx / S, ly, 0)."""
        lx, ly = self.local_id()
        return lx // self.subgroup_size, ly, np.zeros_like(lx)

    def subgroup_linear_id(self) -> np.ndarray:
        """subgroup_id.x + subgroup_id.y * num_subgroups.x of every work-item."""
        sx, sy, _ = self.subgroup_id()
        return sx + sy * self.num_subgroups[0]

    def subgroup_local_id(self) -> np.ndarray:
        """lx mod S of every work-item."""
        return self.local_id()[0] % self.subgroup_size

    def item(self, subgroup_linear_id, subgroup_local_id) -> np.ndarray:
        """The linear work-item id of (sub-group, lane)."""
        return (np.asarray(subgroup_linear_id) * self.subgroup_size
                + np.asarray(subgroup_local_id))

    def as_subgroups(self, x: np.ndarray) -> np.ndarray:
        """(G, W, ...) -> (G, W / S, S, ...), a view."""
        x = np.asarray(x)
        return x.reshape(x.shape[0], self.n_subgroups, self.subgroup_size, *x.shape[2:])

    def as_items(self, x: np.ndarray) -> np.ndarray:
        """(G, W / S, S, ...) -> (G, W, ...), a view."""
        x = np.asarray(x)
        return x.reshape(x.shape[0], self.n_items, *x.shape[3:])


def nonuniform(wg: WorkGroup, x: np.ndarray, what: str, groups=None) -> list[UBFinding]:
    """Findings for the sub-groups in which the per-work-item value x (G, W) is not dynamically
    uniform (NaN counts as equal to NaN: a value, not a mismatch). `groups` gives the
    work-group ids of the G rows (default 0..G-1)."""
    sg = wg.as_subgroups(np.asarray(x))
    first = sg[:, :, :1]
    same = (sg == first) | (_isnan(sg) & _isnan(first))
    bad = ~same.all(axis=2)
    out = []
    for g, s in np.argwhere(bad):
        gid = int(g if groups is None else groups[g])
        vals = sg[g, s]
        lane = int(np.argmin(same[g, s]))
        out.append(UBFinding("non-uniform", (gid,), (int(s),),
                             f"{what} is not dynamically uniform in sub-group {int(s)}: lane 0 "
                             f"has {_text(vals[0])}, lane {lane} has {_text(vals[lane])}"))
    return out


def _text(v) -> str:
    """A lane's value as the message shows it (a plain number, not NumPy's repr)."""
    return str(v.item()) if hasattr(v, "item") else str(v)


def _isnan(a: np.ndarray) -> np.ndarray:
    return np.isnan(a) if a.dtype.kind in "fc" or a.dtype.name == "bfloat16" else \
        np.zeros(a.shape, bool)
