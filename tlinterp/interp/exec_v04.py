"""Handlers of v0.4's scalar and collective (non-SPMD) instructions: the grid builtins,
multi-dimensional `foreach`, `associated`, atomics and `cumsum`. execute.py's DISPATCH takes
them from HANDLERS; their rules are in docs/semantics.md ("v0.4 instructions").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Optional

import numpy as np

from tlinterp.interp import collectives, scalar
from tlinterp.interp import memory as mem
from tlinterp.interp.values import Lanes
from tlinterp.io.memlimit import check_allocation
from tlinterp.lang import ir
from tlinterp.lang.diagnostics import Diagnostic, ExecutionError, not_yet
from tlinterp.lang.types import ScalarType
from tlinterp.lang.v04.names import GRID_BUILTINS

_BYTES_PER_LANE = 96  # as execute.py's foreach


def grid_ids(gid: np.ndarray, grid: tuple[int, int, int]) -> dict[str, np.ndarray]:
    """(x, y, z) of linear work-group ids: x fastest (docs/language.md "Work-groups")."""
    x, y = grid[0], grid[1]
    return {"x": gid % x, "y": (gid // x) % y, "z": gid // (x * y)}


def _builtin(ex, inst: ir.Builtin, env, lanes: Lanes, col) -> None:
    if inst.name not in GRID_BUILTINS:  # sub-group builtins need the SPMD lane model
        raise not_yet(inst)
    comp = inst.comp or "x"
    if inst.name == "group_id":
        v = grid_ids(lanes.gid, ex.grid)[comp]
    else:  # num_groups
        v = np.array(ex.grid["xyz".index(comp)], np.int64)
    env.set(inst.result.name, np.asarray(v, np.int64))


def _foreach_nd(ex, inst: ir.ForeachNd, env, lanes: Lanes, col) -> None:
    """Every point of the box (from...) to (to...) for every lane; the first variable runs
    fastest. One lane per (lane, point), as a one-variable foreach."""
    t, n, d = inst.type, lanes.n, len(inst.vars)
    starts = np.stack([np.broadcast_to(np.asarray(ex.val(s, t, env)).astype(np.int64), (n,))
                       for s in inst.starts], axis=1)
    stops = np.stack([np.broadcast_to(np.asarray(ex.val(s, t, env)).astype(np.int64), (n,))
                      for s in inst.stops], axis=1)
    counts = np.maximum(stops - starts, 0)
    lanes_f = float(np.prod(counts.astype(np.float64), axis=1).sum())
    check_allocation(int(lanes_f) * _BYTES_PER_LANE,
                     f"foreach over {int(lanes_f)} (work-group, iteration) lanes", ExecutionError)
    per = np.prod(counts, axis=1)
    total = int(per.sum())
    if total == 0:
        return
    parent = np.repeat(np.arange(n), per)
    local = np.arange(total, dtype=np.int64) - (np.cumsum(per) - per)[parent]
    its = []
    radix = np.ones(total, np.int64)
    for k in range(d):
        c = counts[parent, k]
        its.append(starts[parent, k] + (local // radix) % c)
        radix = radix * c
    marker = ex.next_actor
    ex.next_actor += total + 1
    act = marker + 1 + np.arange(total, dtype=np.int64) if ex.check else None
    sub = Lanes(act=act, marker=marker, it=local, parent=lanes, sel=parent, n=total)
    body = type(env)(env, parent)  # the walker's Env (execute.py imports this module)
    for v, it in zip(inst.vars, its):
        body.set(v.name, it.astype(t.dtype, copy=False))
    ex.run_region(inst.body, body, sub)


def _associated(ex, inst: ir.Associated, env, lanes, col) -> None:
    # Every memref or group the interpreter holds has memory (arguments come from arrays,
    # allocas are allocated): all are associated.
    env.set(inst.result.name, np.array(True))


# --- atomics -----------------------------------------------------------------------------------


def _atomic_addr(ex, inst, env, lanes, col):
    """The element per lane, after the bounds and lifetime checks; the access is recorded as
    atomic: atomics never race with each other, but with plain reads and writes of other
    lanes they do (docs/semantics.md "Atomics")."""
    view = env.get(inst.operand.name)
    addr, fp = ex._element(inst, view, inst.indices, env, lanes, col, "touches atomically")
    if ex.check:
        with col.checks():
            mem.record(view, fp, lanes, "a", col, inst.span)
    return view, np.broadcast_to(np.asarray(addr, np.int64), (lanes.n,)), fp


def _atomic_load(ex, inst: ir.AtomicLoad, env, lanes, col) -> None:
    view, addr, fp = _atomic_addr(ex, inst, env, lanes, col)
    if ex.check:
        with col.checks():
            mem.check_init(view, fp, lanes, col, inst.span)
    r = view.buf.data[addr]
    env.set(inst.result.name, r if np.ndim(r) == 0 or lanes.n > 1 else np.array(r[0]))


def _atomic_store(ex, inst: ir.AtomicStore, env, lanes, col) -> None:
    view, addr, fp = _atomic_addr(ex, inst, env, lanes, col)
    value = np.broadcast_to(ex.val(inst.value, view.elem, env), (lanes.n,))
    view.buf.data[addr] = value  # several lanes on one element: the last lane's value stays
    if ex.check:
        mem.mark_init(view, fp)


def _atomic_update(ex, inst: ir.AtomicUpdate, env, lanes, col) -> None:
    """Lanes update in lane order (ascending work-group, then iteration); each gets the value
    the element held just before its own update."""
    view, addr, fp = _atomic_addr(ex, inst, env, lanes, col)
    t = view.elem
    if ex.check:
        with col.checks():
            mem.check_init(view, fp, lanes, col, inst.span)
    value = np.broadcast_to(ex.val(inst.value, t, env), (lanes.n,))
    repeat = 1 if inst.op != "add" or _in_spmd(lanes) else _items(ex, inst)
    data = view.buf.data
    old = np.empty(lanes.n, t.dtype)
    uniq, first, counts = np.unique(addr, return_index=True, return_counts=True)
    if (counts == 1).all():  # distinct elements: one vectorised update
        old[:] = data[addr]
        new = old
        for _ in range(repeat):
            new = atomic_combine(inst.op, t, new, value)
        data[addr] = new
    else:
        for lane in range(lanes.n):  # shared elements: in lane order
            a = addr[lane]
            old[lane] = data[a]
            for _ in range(repeat):
                data[a] = atomic_combine(inst.op, t, np.asarray(data[a]), np.asarray(value[lane]))
    env.set(inst.result.name, old if lanes.n > 1 else np.array(old[0]))


def _in_spmd(lanes: Lanes) -> bool:
    """Inside an SPMD region (a foreach iteration, or a region whose lanes are work-items).
    Iteration numbers say so whether or not the run checks for races (actor ids exist only
    then: a run with check=False applied a foreach's atomic_add once per work-item)."""
    return lanes.has_act or lanes.it is not None or bool(getattr(lanes, "spmd", False))


def _items(ex, inst) -> int:
    """Work-items per work-group: an atomic_add in a collective region runs on every one of
    them (as v0.4's mixed instructions do; tinytc v0.4.0 adds the value that many times)."""
    wgs = getattr(getattr(ex, "function", None), "work_group_size", None)
    if wgs is None:
        raise ExecutionError([Diagnostic(
            "atomic_add outside an SPMD region runs once per work-item: the function needs a "
            "work_group_size attribute to say how many", inst.span, ex.program.filename)],
            ex.program.source)
    return int(np.prod(wgs))


def atomic_combine(op: str, t: ScalarType, a, b):
    """The new value of an atomic add|max|min: the scalar table's operation (max/min as the
    scalar instructions compute them, ties and signed zeros included; integer add wraps).
    Both atomic_* and cooperative_matrix_atomic_* use it."""
    if op == "add" and t.is_int:  # atomic integer addition wraps (two's complement): no UB
        with np.errstate(all="ignore"):
            return (np.asarray(a, t.dtype) + np.asarray(b, t.dtype)).astype(t.dtype)
    return scalar.binary(op, t, a, b)[0]


# --- cumsum: a collective through collectives.py, as a BLAS shape ------------------------------


def _cumsum_product(inst, ins, ct):
    # inclusive, sequential along the mode (NumPy's cumsum adds left to right); axis 0: lanes
    return np.cumsum(ins[0], axis=inst.mode + 1, dtype=ct)


@dataclass
class _CumsumOp:
    """`cumsum` in the form collectives.execute runs: input A, output B of A's shape."""

    MNEMONIC: ClassVar[str] = "cumsum"
    ROLES: ClassVar[tuple] = (ir.MemrefRole("a", "A", ()), ir.MemrefRole("b", "B", ()))
    a: ir.Value
    b: ir.Value
    mode: int
    atomic: bool
    alpha_type: ScalarType
    beta_type: ScalarType
    order: int
    span: Optional[ir.Span]

    def inputs(self) -> tuple[str, ...]:
        return ("a",)

    def output(self) -> str:
        return "b"

    def transposed(self, field: str) -> bool:
        return False

    def size_relations(self):
        return [(f"mode {k}", ("a", k), ("b", k)) for k in range(self.order)]


collectives._PRODUCTS[_CumsumOp] = _cumsum_product


def _scalar_type(ex, op, env, fallback: ScalarType) -> ScalarType:
    if isinstance(op, ir.Const):
        return fallback
    v = np.asarray(env.get(op.name))
    for t in ScalarType:
        if t.dtype == v.dtype and not t.is_bool and t is not ScalarType.index:
            return t
    return fallback


def _cumsum(ex, inst: ir.Cumsum, env, lanes, col) -> None:
    a, b = env.get(inst.a.name), env.get(inst.b.name)
    elem = b.elem
    alpha_t = _scalar_type(ex, inst.alpha, env, elem)
    beta_t = _scalar_type(ex, inst.beta, env, elem)
    op = _CumsumOp(inst.a, inst.b, inst.mode, inst.atomic, alpha_t, beta_t, len(a.shape),
                   inst.span)
    alpha, beta = ex.val(inst.alpha, alpha_t, env), ex.val(inst.beta, beta_t, env)
    if ex.check and elem.is_int:
        for sel in collectives._partition([a, b], lanes.n):  # lanes of one shape each
            part = (a, lanes) if sel is None else (
                collectives._fixed_shape(a.select(sel)), lanes.select(sel))
            _cumsum_overflow(ex, inst, *part, col)
    collectives.execute(op, {"a": a, "b": b}, alpha, beta, lanes, ex.check, col)


def _cumsum_overflow(ex, inst: ir.Cumsum, a, lanes, col) -> None:
    """A partial sum outside the compute type is signed overflow (docs/semantics.md)."""
    fp = mem.footprint(a, lanes.n)
    if not mem.safe_bounds(a.buf, fp):
        return  # collectives.execute reports the access
    vals = fp.take(a.buf.data)
    ct = scalar.usual_type(a.elem, a.elem)
    info = np.iinfo(ct.dtype)
    if vals.size == 0:
        return
    exact = np.cumsum(vals.astype(object) if ct.bits >= 64 else vals.astype(np.int64),
                      axis=inst.mode + 1)
    bad = ((exact < info.min) | (exact > info.max)).reshape(lanes.n, -1).any(axis=1)
    bad = np.asarray(bad, bool)
    col.add_lanes("signed-overflow", bad, lanes, inst.span,
                  lambda lane, g: (None, f"work-group {g}: a partial sum of cumsum overflows "
                                         f"{ct}"), count_rest=False)


HANDLERS: dict[type, Callable[..., Any]] = {
    ir.Builtin: _builtin, ir.ForeachNd: _foreach_nd, ir.Associated: _associated,
    ir.AtomicLoad: _atomic_load, ir.AtomicStore: _atomic_store,
    ir.AtomicUpdate: _atomic_update, ir.Cumsum: _cumsum,
}

__all__ = ["HANDLERS", "grid_ids"]
