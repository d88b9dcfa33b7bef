"""v0.4 sub-group operations over the lane axis, vectorised over work-groups and sub-groups.

Values are (G, W) arrays in the lane model of `spmd.py`. The reference folds in lane order,
left to right, rounding every step to the operand's type (f16/bf16 through `lowp.arith`):
reduce = x0 ⋄ x1 ⋄ … ⋄ x(S-1), inclusive scan = the prefixes of that fold, exclusive scan =
[I, prefixes…]. Integers wrap (two's complement), as SPIR-V's group operations do. Floats: a
conforming implementation may associate differently; docs/semantics.md states the bound
(`add_bound`). max/min follow IEEE maxNum/minNum (a NaN operand is ignored unless all are NaN).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tlinterp.interp import lowp
from tlinterp.interp.spmd import UBFinding, WorkGroup, nonuniform

OPS = ("add", "max", "min")


def _combine(op: str, ty: str) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    if op == "add":
        if ty in ("f16", "bf16"):
            return lambda a, b: lowp.arith("add", a, b, ty)
        return np.add
    if ty in lowp.COMPLEX:
        raise ValueError(f"subgroup {op} is forbidden on complex type {ty}")
    if ty in lowp.INTEGER:
        return np.maximum if op == "max" else np.minimum
    return np.fmax if op == "max" else np.fmin


def _lanes(wg: WorkGroup, x, ty: str) -> np.ndarray:
    return wg.as_subgroups(np.asarray(x, dtype=lowp.dtype(ty)))


def inclusive_scan(wg: WorkGroup, x, op: str, ty: str) -> np.ndarray:
    """subgroup_inclusive_scan_<op>: lane i gets x0 ⋄ … ⋄ xi, folded left to right."""
    sg = _lanes(wg, x, ty)
    f = _combine(op, ty)
    out = np.empty_like(sg)
    acc = sg[:, :, 0]
    out[:, :, 0] = acc
    with np.errstate(all="ignore"):
        for i in range(1, wg.subgroup_size):
            acc = f(acc, sg[:, :, i])
            out[:, :, i] = acc
    return wg.as_items(out)


def exclusive_scan(wg: WorkGroup, x, op: str, ty: str) -> np.ndarray:
    """subgroup_exclusive_scan_<op>: lane 0 gets the identity, lane i > 0 x0 ⋄ … ⋄ x(i-1)."""
    inc = wg.as_subgroups(inclusive_scan(wg, x, op, ty))
    out = np.empty_like(inc)
    out[:, :, 0] = lowp.identity(op, ty)
    out[:, :, 1:] = inc[:, :, :-1]
    return wg.as_items(out)


def reduce(wg: WorkGroup, x, op: str, ty: str) -> np.ndarray:
    """subgroup_reduce_<op>: every lane gets the left fold of its sub-group's values."""
    inc = wg.as_subgroups(inclusive_scan(wg, x, op, ty))
    s = inc[:, :, -1:]
    return wg.as_items(np.broadcast_to(s, inc.shape).copy())


def broadcast(wg: WorkGroup, x, index, ty: str,
              groups=None) -> tuple[np.ndarray | None, list[UBFinding]]:
    """subgroup_broadcast x, index: (values, []) with every lane getting x of lane `index`, or
    (None, findings) when the index is not dynamically uniform in a sub-group ("non-uniform")
    or outside [0, S) ("out-of-bounds"): the instruction is then undefined."""
    idx = np.asarray(index)
    bad = nonuniform(wg, idx, "the subgroup_broadcast index", groups)
    isg = wg.as_subgroups(idx)
    s = wg.subgroup_size
    out_of = (isg[:, :, 0] < 0) | (isg[:, :, 0] >= s)
    for g, k in np.argwhere(out_of):
        if not (isg[g, k] == isg[g, k, 0]).all():
            continue  # already reported as non-uniform
        gid = int(g if groups is None else groups[g])
        bad.append(UBFinding("out-of-bounds", (gid,), (int(k),),
                             f"subgroup_broadcast index {int(isg[g, k, 0])} is outside the "
                             f"sub-group (lanes 0..{s - 1}) in sub-group {int(k)}"))
    if bad:
        return None, bad
    sg = _lanes(wg, x, ty)
    pick = np.take_along_axis(sg, isg[:, :, :1].astype(np.intp), axis=2)
    return wg.as_items(np.broadcast_to(pick, sg.shape).copy()), []


def add_bound(x, ty: str, n: int | None = None) -> np.ndarray:
    """How far a conforming sub-group add (reduce, or a scan prefix of n terms) may be from the
    exact sum of x: γ(n-1) · Σ|x_i| with γ(k) = k·u / (1 - k·u), u the type's unit roundoff.
    The reference is within the same bound, so two conforming results differ by at most twice
    this. x: the n terms (last axis)."""
    a = np.abs(np.asarray(x, dtype=np.float64 if ty not in lowp.COMPLEX else np.complex128))
    k = (a.shape[-1] if n is None else n) - 1
    u = lowp.UNIT_ROUNDOFF[ty]
    gamma = k * u / (1 - k * u) if k > 0 else 0.0
    return gamma * a.sum(axis=-1)
