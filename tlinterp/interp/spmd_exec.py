"""Executors of v0.4's SPMD constructs: `parallel`, sub-group builtins and operations, barriers
inside parallel, and cooperative matrices.

Inside `parallel` a lane is a (work-group, work-item) pair, made the way a `foreach` expands
its lanes (execute.py), so every scalar instruction, load and store runs unchanged on the
(work-group x work-item) lane set, vectorised with NumPy. `lanes.it` holds each lane's position
in the parallel's full lane set (work-group-major, work-items in linear order, the layout of
spmd.py), which is how sub-group operations regather lanes after a divergent `if` split them.
A coopmatrix value is a `CoopValue`: per lane, its components (n, V), so that lane selection
works as for scalars; operations regather the (work-group, sub-group, S, V) array and use the
padded-matrix building blocks of coopmatrix.py. Semantics: docs/semantics.md ("v0.4 execution
model (interpreter)", "v0.4 cooperative matrices").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from tlinterp.interp import coopmatrix as cm
from tlinterp.interp import exec_v04, lowp, scalar, subgroups
from tlinterp.interp import memory as mem
from tlinterp.interp.spmd import UBFinding, WorkGroup, nonuniform
from tlinterp.interp.values import Lanes, is_var
from tlinterp.io.memlimit import check_allocation
from tlinterp.lang import ir
from tlinterp.lang.diagnostics import Diagnostic, ExecutionError, not_yet
from tlinterp.lang.types import INDEX, CoopMatrixType, ScalarType

_BYTES_PER_LANE = 96


# --- the work-group shape ------------------------------------------------------------------


def work_group(ex) -> WorkGroup:
    """The function's work-group: `subgroup_size` is required (tinytc chooses it per device),
    `work_group_size` defaults to one sub-group, [subgroup_size, 1] (docs/semantics.md)."""
    wg = getattr(ex, "_spmd_wg", None)
    if wg is not None:
        return wg
    fn = getattr(ex, "function", None)
    s = fn.subgroup_size if fn is not None else None
    if s is None:
        raise ExecutionError([Diagnostic(
            "this kernel uses work-items or sub-groups but its function gives no "
            "subgroup_size: add attributes{subgroup_size=S} (tinytc picks a device-dependent "
            "size; the interpreter does not guess)", fn.span if fn is not None else None,
            ex.program.filename)], ex.program.source)
    size = tuple(fn.work_group_size) if fn.work_group_size is not None else (s, 1)
    try:
        wg = WorkGroup(size, s)
    except ValueError as e:
        raise ExecutionError([Diagnostic(str(e), fn.span, ex.program.filename)],
                             ex.program.source) from None
    ex._spmd_wg = wg
    return wg


@dataclass
class Region:
    """The running parallel region: its work-group shape and its P (work-group) lanes."""

    wg: WorkGroup
    P: int
    root: Lanes


def _state(ex, inst) -> Region:
    st = getattr(ex, "spmd", None)
    if st is None:  # the v0.4 checker keeps these inside parallel; IR built by hand
        raise not_yet(inst, "executable outside a parallel region")
    return st


def _parallel(ex, inst: ir.Parallel, env, lanes, col):
    wg = work_group(ex)
    sub, parent = _item_lanes(ex, lanes, wg, "parallel")
    prev = getattr(ex, "spmd", None)
    ex.spmd = Region(wg, lanes.n, sub)
    try:
        ex.run_region(inst.body, type(env)(env, parent), sub)
    finally:
        ex.spmd = prev


def _item_lanes(ex, lanes, wg, what: str):
    """The (work-group, work-item) lanes of an SPMD region over `lanes`' work-groups, each
    with its own race-check actor, and each lane's work-group lane (`parent`)."""
    P, W = lanes.n, wg.n_items
    total = P * W
    check_allocation(total * _BYTES_PER_LANE,
                     f"{what} over {total} (work-group, work-item) lanes", ExecutionError)
    parent = np.repeat(np.arange(P), W)
    marker = ex.next_actor
    ex.next_actor += total + 1
    act = marker + 1 + np.arange(total, dtype=np.int64) if ex.check else None
    sub = Lanes(act=act, marker=marker, it=np.arange(total, dtype=np.int64), parent=lanes,
                sel=parent, n=total)
    sub.items = W
    return sub, parent


def _foreach_tile(ex, inst: ir.ForeachTile, env, lanes, col):
    """Tiles in linear order (the first mode fastest) go round-robin to the sub-groups: tile
    t to sub-group t mod n_subgroups, each sub-group running its tiles in order. Every
    work-item of the sub-group runs the region (an SPMD region), with the tile's offsets and
    sizes. The offsets must be dynamically uniform: ranges given per work-group are fine."""
    if getattr(ex, "spmd", None) is not None:
        raise not_yet(inst, "executable inside a parallel region")
    wg = work_group(ex)
    t = inst.type
    starts = [np.broadcast_to(np.asarray(ex.val(v, t, env), np.int64), (lanes.n,))
              for v in inst.starts]
    stops = [np.broadcast_to(np.asarray(ex.val(v, t, env), np.int64), (lanes.n,))
             for v in inst.stops]
    shape = inst.tile_shape
    counts = [np.maximum(-(-(b - a) // k), 0) for a, b, k in zip(starts, stops, shape)]
    n_tiles = np.prod(np.stack(counts), axis=0) if counts else np.ones(lanes.n, np.int64)
    P, W, S = lanes.n, wg.n_items, wg.subgroup_size
    nsg = wg.n_subgroups
    rounds = int(-(-int(n_tiles.max(initial=0)) // nsg))
    if rounds == 0:
        return
    total = P * W
    root, parent = _item_lanes(ex, lanes, wg, "foreach_tile")
    sg_of = (np.arange(total) % W) // S  # each lane's sub-group (linear id)
    prev = getattr(ex, "spmd", None)
    ex.spmd = Region(wg, P, root)
    try:
        for r in range(rounds):
            tile = r * nsg + sg_of  # per lane
            live = tile < n_tiles[parent]
            sel = None if live.all() else np.flatnonzero(live)
            sub = root if sel is None else root.select(sel)
            idx = parent if sel is None else parent[sel]
            tl = tile if sel is None else tile[sel]
            body = type(env)(env, idx)
            rest = tl
            for var, size_var, a, b, k, c in zip(inst.vars, inst.sizes, starts, stops, shape,
                                                 counts):
                kk = rest % c[idx]
                rest = rest // c[idx]
                off = a[idx] + kk * k
                body.set(var.name, off.astype(t.dtype))
                body.set(size_var.name, np.minimum(k, b[idx] - off).astype(t.dtype))
            ex.run_region(inst.body, body, sub)
    finally:
        ex.spmd = prev


# --- gathering lanes into sub-groups --------------------------------------------------------


def _full(st: Region, lanes: Lanes, x, fill=0) -> tuple[np.ndarray, Optional[np.ndarray]]:
    """Per-lane values x ((n, ...) or uniform) as the parallel's full (P*W, ...) array, and the
    mask of lanes present (None: all)."""
    N = st.P * st.wg.n_items
    a = np.asarray(x)
    if lanes.n == N:  # lanes keep their order under selection: all present = identity
        return (np.broadcast_to(a, (N,)) if a.ndim == 0 else a), None
    r = lanes.it
    shape = (N,) + (a.shape[1:] if a.ndim else ())
    out = np.full(shape, fill, a.dtype)
    out[r] = a
    present = np.zeros(N, bool)
    present[r] = True
    return out, present


def _subgroups_present(ex, st: Region, lanes: Lanes, present, inst, col, what: str):
    """(P, n_subgroups) bool: the sub-groups running; a sub-group of which only some
    work-items reach a sub-group instruction is undefined behaviour ("non-uniform")."""
    wg = st.wg
    shape = (st.P, wg.n_subgroups)
    if present is None:
        return np.ones(shape, bool)
    sg = present.reshape(shape + (wg.subgroup_size,))
    some, all_ = sg.any(axis=2), sg.all(axis=2)
    if ex.check:
        gids = _root_gids(st)
        with col.checks():
            for g, s in np.argwhere(some & ~all_):
                col.add("non-uniform", inst.span, (int(gids[g]),), (int(s),),
                        f"{what} is reached by only some work-items of sub-group {int(s)} "
                        "(sub-group instructions need dynamically uniform control flow)")
    return all_


def _root_gids(st: Region) -> np.ndarray:
    return st.root.gid[:: st.wg.n_items]


def _report(ex, findings: list[UBFinding], inst, col) -> None:
    with col.checks():
        for f in findings:
            col.add(f.kind, inst.span, f.groups, f.element, f.message)


def _back(st: Region, lanes: Lanes, full: np.ndarray) -> np.ndarray:
    """The (P*W, ...) array restricted to the running lanes."""
    N = st.P * st.wg.n_items
    return full if lanes.n == N else full[lanes.it]


# --- builtins, sub-group operations, barriers ------------------------------------------------


def _builtin(ex, inst: ir.Builtin, env, lanes, col):
    name, comp = inst.name, inst.comp
    t = inst.type.dtype
    if name in ("subgroup_size", "num_subgroups"):
        wg = work_group(ex)
        v = wg.subgroup_size if name == "subgroup_size" else \
            wg.num_subgroups["xyz".index(comp or "x")]
        env.set(inst.result.name, np.array(v, t))
        return
    if name not in ("subgroup_id", "subgroup_linear_id", "subgroup_local_id"):
        # group_id / num_groups: the collective side's executors
        return exec_v04.HANDLERS[ir.Builtin](ex, inst, env, lanes, col)
    st = _state(ex, inst)
    wg = st.wg
    if name == "subgroup_local_id":
        per_item = wg.subgroup_local_id()
    elif name == "subgroup_linear_id":
        per_item = wg.subgroup_linear_id()
    else:
        per_item = wg.subgroup_id()["xyz".index(comp or "x")]
    env.set(inst.result.name, per_item[lanes.it % wg.n_items].astype(t))


def _ty(t) -> str:
    return "i64" if t == INDEX else t.value


def _subgroup_op(ex, inst: ir.SubgroupOp, env, lanes, col):
    st = _state(ex, inst)
    x = ex.val(inst.operand, inst.type, env)
    full, present = _full(st, lanes, x)
    _subgroups_present(ex, st, lanes, present, inst, col, "subgroup_" + inst.op)
    kind, op = inst.op.rsplit("_", 1)
    fn = {"reduce": subgroups.reduce, "inclusive_scan": subgroups.inclusive_scan,
          "exclusive_scan": subgroups.exclusive_scan}[kind]
    ty = _ty(inst.type)
    out = fn(st.wg, full.reshape(st.P, -1), op, ty).reshape(-1)
    env.set(inst.result.name, _back(st, lanes, out).astype(inst.type.dtype, copy=False))


def _broadcast(ex, inst: ir.SubgroupBroadcast, env, lanes, col):
    st = _state(ex, inst)
    x = ex.val(inst.value, inst.type, env)
    idx = ex.val(inst.index, ScalarType.i32, env)
    full, present = _full(st, lanes, x)
    ifull, _ = _full(st, lanes, idx)
    ok = _subgroups_present(ex, st, lanes, present, inst, col, "subgroup_broadcast")
    W = st.wg.n_items
    # lanes of absent sub-groups take index 0: they neither run nor report
    ifull = np.where(np.repeat(ok.reshape(-1), st.wg.subgroup_size), ifull, 0)
    out, findings = subgroups.broadcast(st.wg, full.reshape(st.P, W), ifull.reshape(st.P, W),
                                        _ty(inst.type), _root_gids(st))
    if findings:
        _report(ex, findings, inst, col)
    env.set(inst.result.name, _back(st, lanes, out.reshape(-1)))


def barrier(ex, inst: ir.Barrier, env, lanes, col):
    """Outside parallel a no-op (a work-group runs in program order). Inside: every work-item of
    the group must reach it, and it orders accesses before it before those after it: the
    lanes get fresh actor ids, so the race check sees the two sides as ordered."""
    st = getattr(ex, "spmd", None)
    if st is None:
        return
    W = st.wg.n_items
    if lanes.n != st.P * W:
        counts = np.bincount(lanes.it // W, minlength=st.P)
        bad = (counts > 0) & (counts < W)
        if bad.any():
            gids = _root_gids(st)
            with col.checks():
                for g in np.flatnonzero(bad)[:4]:
                    col.add("barrier-divergence", inst.span, (int(gids[g]),), None,
                            f"only {int(counts[g])} of the {W} work-items of work-group "
                            f"{int(gids[g])} reach this barrier")
    if not ex.check or lanes.act is None:
        return
    # a new epoch: accesses after the barrier are ordered after those before it
    marker = ex.next_actor
    ex.next_actor += st.P * W + 1
    lanes.marker = marker
    lanes._act = marker + 1 + lanes.it
    st.root.marker = marker
    st.root._act = marker + 1 + st.root.it


# --- cooperative matrices ----------------------------------------------------------------------


class CoopValue:
    """A coopmatrix value in one of two forms: `padded`, (P, n_subgroups, M, J), for the
    parallel region's full lane set (the common case: operations need no data movement), or
    `comps`, (n, V) components per running lane (once a divergent branch selected lanes)."""

    def __init__(self, layout: cm.Layout, comps=None, padded=None, shared=None):
        self.layout, self.comps, self._padded = layout, comps, padded
        # a load's compact form: (blocks (U, M, J), which (P, n_subgroups)): sub-group s of
        # work-group g holds blocks[which[g, s]] (few distinct blocks, e.g. one key block
        # per head); `padded` materialises it
        self.shared = shared

    @property
    def padded(self):
        if self._padded is None and self.shared is not None:
            blocks, which = self.shared
            self._padded = blocks[which]
        return self._padded

    def components(self) -> np.ndarray:
        if self.comps is None:
            self.comps = cm.to_components(self.layout, self.padded).reshape(-1, self.layout.V)
        return self.comps

    def select(self, sel) -> CoopValue:
        return CoopValue(self.layout, comps=self.components()[sel])


def _is_full(st: Region, lanes: Lanes) -> bool:
    return lanes.n == st.P * st.wg.n_items


def _layout(st: Region, t: CoopMatrixType, ex=None, inst=None) -> cm.Layout:
    try:
        layout = cm.Layout(t.rows, t.cols, _ty(t.component), t.use, st.wg.subgroup_size)
    except ValueError as e:  # a shape the layout document does not define
        raise ExecutionError([Diagnostic(f"{t}: {e}", getattr(inst, "span", None))]) from None
    # The padded matrices of every sub-group, checked before NumPy sizes them: past 2^63
    # elements NumPy raises ValueError, not MemoryError. As a MemoryError the instruction is
    # named (Executor.out_of_memory) as for any allocation that fails.
    check_allocation(st.P * st.wg.n_subgroups * layout.M * layout.J * lowp.SIZE[layout.ty],
                     f"{t}", MemoryError)
    return layout


def _padded(ex, st, lanes, v: CoopValue, inst, col):
    """(P, n_subgroups, M, J) padded matrices and the (P, n_subgroups) running mask."""
    if v.padded is not None and _is_full(st, lanes):
        return v.padded, np.ones((st.P, st.wg.n_subgroups), bool)
    full, present = _full(st, lanes, v.components())
    ok = _subgroups_present(ex, st, lanes, present, inst, col, _name(inst))
    comps = full.reshape(st.P, st.wg.n_subgroups, st.wg.subgroup_size, -1)
    return cm.from_components(v.layout, comps), ok


def _coop_out(st, lanes, layout: cm.Layout, padded) -> CoopValue:
    if _is_full(st, lanes):
        return CoopValue(layout, padded=padded)
    comps = cm.to_components(layout, padded).reshape(st.P * st.wg.n_items, layout.V)
    return CoopValue(layout, comps=comps[lanes.it])


def _name(inst) -> str:
    from tlinterp.lang.v04.names import construct
    return construct(inst).split(" at ")[0]


def _uniform(ex, st, lanes, x, inst, col, what: str, ok) -> np.ndarray:
    """A value that must be dynamically uniform per sub-group: (P, n_subgroups), lane 0's."""
    full, _ = _full(st, lanes, x)
    a = full.reshape(st.P, st.wg.n_items)
    if ex.check and np.ndim(x):
        findings = nonuniform(st.wg, np.where(np.repeat(ok, st.wg.subgroup_size, axis=1),
                                              a, a.reshape(st.P, -1, st.wg.subgroup_size)[
                                                  :, :, :1].repeat(st.wg.subgroup_size, 2)
                                              .reshape(st.P, -1)), what, _root_gids(st))
        if findings:
            _report(ex, findings, inst, col)
    return st.wg.as_subgroups(a)[:, :, 0]


def _constant(ex, inst: ir.Constant, env, lanes, col):
    if not isinstance(inst.type, CoopMatrixType):
        raise not_yet(inst)  # scalar constants become literals (tlinterp/front/migrate.py)
    st = _state(ex, inst)
    layout = _layout(st, inst.type)
    padded = cm.construct(layout, scalar.const(inst.value, inst.type.component))
    env.set(inst.result.name, _coop_out(st, lanes, layout, np.broadcast_to(
        padded, (st.P, st.wg.n_subgroups) + padded.shape)))


def _construct(ex, inst: ir.CoopConstruct, env, lanes, col):
    st = _state(ex, inst)
    layout = _layout(st, inst.type)
    x = ex.val(inst.value, inst.type.component, env)
    shape = (st.P, st.wg.n_subgroups, layout.M, layout.J)
    if np.ndim(x) == 0:
        padded = np.broadcast_to(cm.construct(layout, x), shape)
    else:  # must be uniform per sub-group (reported otherwise)
        _, present = _full(st, lanes, x)
        ok = _subgroups_present(ex, st, lanes, present, inst, col, _name(inst))
        u = _uniform(ex, st, lanes, x, inst, col, "the cooperative_matrix_construct value", ok)
        padded = np.broadcast_to(u[:, :, None, None].astype(x.dtype), shape)
    env.set(inst.result.name, _coop_out(st, lanes, layout, padded))


def _view_meta(ex, st, lanes, view, inst, col, ok):
    """Per sub-group (P, nsg): the view's offset, shape and strides (uniform per sub-group)."""
    def u(a, what):
        return _uniform(ex, st, lanes, a, inst, col, what, ok) if is_var(a) else \
            np.full((st.P, st.wg.n_subgroups), int(a), np.int64)
    off = u(view.off, f"the offset of {view.name}")
    shape = tuple(u(s, f"the shape of {view.name}") for s in view.shape)
    strides = tuple(u(s, f"the strides of {view.name}") for s in view.strides)
    return off, shape, strides


def _access(ex, inst, env, lanes, col, layout, trans, checked, fast: bool = True):
    """(view, good, addr, ok): the entries of a coopmatrix load/store that really touch memory
    ((P, nsg, M, J) bool, and their element addresses; or None: all matrix entries, columns
    < N, at addresses base[g, s] + pattern[i, j], addr = (base, pattern)), and the running
    sub-groups; out-of-bounds entries are reported first."""
    st = ex.spmd
    view = env.get(inst.operand.name)
    full = _is_full(st, lanes)
    ok = np.ones((st.P, st.wg.n_subgroups), bool)
    if not full:
        _, present = _full(st, lanes, np.zeros(lanes.n))
        ok = _subgroups_present(ex, st, lanes, present, inst, col, _name(inst))
    x = _uniform(ex, st, lanes, ex.val(inst.x, INDEX, env), inst, col,
                 "the row offset of " + _name(inst), ok)
    y = _uniform(ex, st, lanes, ex.val(inst.y, INDEX, env), inst, col,
                 "the column offset of " + _name(inst), ok)
    off, shape, strides = _view_meta(ex, st, lanes, view, inst, col, ok)
    base = off + x * strides[0] + y * strides[1]
    M, N = layout.M, layout.N
    n0, n1 = (N, M) if trans else (M, N)  # extents in memref modes 0 and 1
    inside = (x >= 0) & (x + n0 <= shape[0]) & (y >= 0) & (y + n1 <= shape[1])
    uniform_strides = all((s == s.flat[0]).all() for s in strides)
    if fast and full and uniform_strides and inside.all():
        # the common case: one address pattern, shifted per sub-group, nothing masked
        s0, s1 = int(strides[0].flat[0]), int(strides[1].flat[0])
        i = np.arange(M)[:, None]
        j = np.arange(N)[None, :]
        pattern = j * s0 + i * s1 if trans else i * s0 + j * s1
        return view, None, (base, pattern), ok  # addresses base[g, s] + pattern
    acc = cm.access(layout, x, y, shape, trans, checked or "")
    take = acc.take & ok[:, :, None, None]
    oob = acc.oob & ok[:, :, None, None]
    if oob.any():  # memory safety: reported with checks off too
        gids = _root_gids(st)
        findings = cm.oob_findings(cm.Access(acc.i0, acc.i1, take, oob), _name(inst), gids)
        _report(ex, findings, inst, col)
    good = take & ~oob
    addr = (off[:, :, None, None] + acc.i0 * strides[0][:, :, None, None]
            + acc.i1 * strides[1][:, :, None, None])
    return view, good, np.where(good, addr, 0), ok


def _footprint(st: Region, lanes: Lanes, layout: cm.Layout, good, addr):
    """The elements a coopmatrix access touches as a per-work-item footprint (every running
    lane's components; entries not taken repeat one the lane takes, which changes nothing),
    and the lanes taking at least one; None when no lane takes any."""
    if good is None:
        base, pattern = addr
        full = base[:, :, None, None] + pattern
        if layout.J > layout.N:  # padding columns: repeat column 0
            full = np.concatenate([full, np.repeat(full[..., :1], layout.J - layout.N, -1)],
                                  axis=-1)
        valid = np.broadcast_to(layout.logical(), full.shape)
    else:
        full, valid = addr, good
    a = cm.to_components(layout, full).reshape(st.P * st.wg.n_items, layout.V)
    ok = cm.to_components(layout, valid).reshape(a.shape)
    if not _is_full(st, lanes):
        a, ok = a[lanes.it], ok[lanes.it]
    has = ok.any(axis=1)
    if not has.any():
        return None, None
    first = a[np.arange(len(a)), np.argmax(ok, axis=1)]
    a = np.where(ok, a, first[:, None])
    sub = lanes
    if not has.all():
        sel = np.flatnonzero(has)
        sub, a = lanes.select(sel), a[sel]
    return mem.IndexedFP(np.ascontiguousarray(a), (layout.V,)), sub


def _checks(ex, st, lanes, inst, col, view, layout, good, addr, kind: str) -> None:
    """Races between work-items (and work-groups), uninitialised reads and lifetimes of a
    coopmatrix access (kind "r", "w", or "a": an atomic update), as for scalar loads and
    stores (memory.py). Atomic accesses take no part in the race check (v0.4: atomics are
    exempt), as the scalar atomics do."""
    if not ex.check:
        return
    local = isinstance(view.buf, mem.AllocaBuffer)
    if local:
        with col.checks():
            mem.check_lifetime(view, lanes, col, inst.span)
    if kind == "r" and not local and not view.buf.may_be_written:
        return  # memory nothing writes: no race, always initialised (memory.record's rule)
    fp, sub = _footprint(st, lanes, layout, good, addr)
    if fp is None:
        return
    with col.checks():
        if kind in "ra":
            mem.check_init(view, fp, sub, col, inst.span)
        if kind != "a" and not getattr(inst, "atomic", False):  # atomics are exempt
            mem.record(view, fp, sub, kind, col, inst.span)
    if kind != "r":
        mem.mark_init(view, fp)


def _coop_load(ex, inst: ir.CoopLoad, env, lanes, col):
    st = _state(ex, inst)
    layout = _layout(st, inst.type)
    view, good, addr, ok = _access(ex, inst, env, lanes, col, layout, inst.trans,
                                   inst.checked)
    _checks(ex, st, lanes, inst, col, view, layout, good, addr, "r")
    data = view.buf.data
    if good is None:
        # sub-groups loading the same block (e.g. every query block of one head loading one
        # key block) share one gather
        base, pattern = addr
        ub, inv = np.unique(base.reshape(-1), return_inverse=True)
        blocks = data[ub[:, None, None] + pattern]
        if layout.J > layout.N:
            blocks = np.concatenate([blocks, np.zeros(blocks.shape[:-1] + (
                layout.J - layout.N,), blocks.dtype)], axis=-1)
        inv = inv.reshape(base.shape)
        if 2 * len(ub) <= inv.size:
            env.set(inst.result.name, CoopValue(layout, shared=(blocks, inv)))
            return
        vals = blocks[inv]
    else:
        vals = np.where(good, data[addr], 0).astype(data.dtype, copy=False)
    env.set(inst.result.name, _coop_out(st, lanes, layout, vals))


def _coop_store(ex, inst: ir.CoopStore, env, lanes, col):
    st = _state(ex, inst)
    v = env.get(inst.value.name)
    padded, _ = _padded(ex, st, lanes, v, inst, col)
    view, good, addr, ok = _access(ex, inst, env, lanes, col, v.layout, inst.trans,
                                   inst.checked)
    _checks(ex, st, lanes, inst, col, view, v.layout, good, addr, "w")
    data = view.buf.data
    if good is None:
        base, pattern = addr
        addr = (base[:, :, None, None] + pattern).reshape(-1)
        vals = padded[..., :v.layout.N].reshape(-1)
    else:
        addr, vals = addr[good], padded[good]
    # sub-groups in work-group-major order: the last writer of an element wins
    data[addr] = vals.astype(data.dtype, copy=False)


def _prefetch(ex, inst, env, lanes, col):
    _state(ex, inst)  # a hint: no effect on the result


# mul_add accumulating in f32 from these types (converted to f32 exactly) runs as one f32 BLAS
# product plus C, like v0.3's gemm (collectives.py): a reassociated sum within the bound of
# coopmatrix.mul_add's sequential order (docs/semantics.md), instead of K NumPy steps
_F32_SOURCES = frozenset({"f16", "bf16", "f32"})


def _shared_product(pa, b: CoopValue, K: int, N: int) -> np.ndarray:
    """A B for a B of few distinct blocks: one f32 BLAS product per block, over all the
    sub-groups using it (their A rows stacked), instead of one small product per sub-group."""
    blocks, which = b.shared
    M = pa.shape[-2]
    a2 = pa[..., :K].astype(np.float32, copy=False).reshape(-1, M, K)
    w = which.reshape(-1)
    out = np.empty((len(w), M, N), np.float32)
    for u in range(len(blocks)):
        sel = np.flatnonzero(w == u)
        bu = blocks[u, :K, :N].astype(np.float32, copy=False)
        out[sel] = (a2[sel].reshape(-1, K) @ bu).reshape(len(sel), M, N)
    return out.reshape(pa.shape[:-2] + (M, N))


def _mul_add(ex, inst: ir.CoopMulAdd, env, lanes, col):
    st = _state(ex, inst)
    a, b, c = (env.get(v.name) for v in (inst.a, inst.b, inst.c))
    layout = _layout(st, inst.type)
    K = a.layout.N
    ta, tb, tc = a.layout.ty, b.layout.ty, c.layout.ty
    fast = tc == layout.ty == "f32" and ta in _F32_SOURCES and tb in _F32_SOURCES
    pa, _ = _padded(ex, st, lanes, a, inst, col)
    if fast and b.shared is not None and _is_full(st, lanes):
        pb = None
    else:
        pb, _ = _padded(ex, st, lanes, b, inst, col)
    pc, _ = _padded(ex, st, lanes, c, inst, col)
    N = c.layout.N
    product = None
    if fast:
        if pb is None:
            product = _shared_product(pa, b, K, N)
        else:
            product = np.matmul(pa[..., :K].astype(np.float32, copy=False),
                                pb[..., :K, :N].astype(np.float32, copy=False))
        product += pc[..., :N]
    # one rule for D's padding columns (C's) on both paths: coopmatrix.mul_add's
    d = cm.mul_add(pa[..., :K], None if pb is None else pb[..., :K, :], pc, ta, tb, tc,
                   layout.ty, n=N, product=product)
    env.set(inst.result.name, _coop_out(st, lanes, layout, d))


def _scale(ex, inst: ir.CoopScale, env, lanes, col):
    st = _state(ex, inst)
    m = env.get(inst.matrix.name)
    p, ok = _padded(ex, st, lanes, m, inst, col)
    alpha = _uniform(ex, st, lanes, ex.val(inst.scalar, inst.type.component, env), inst, col,
                     "the scale factor", ok)
    env.set(inst.result.name, _coop_out(st, lanes, m.layout,
                                        cm.scale(alpha, p, m.layout.ty)))


def _reduce(ex, inst: ir.CoopReduce, env, lanes, col):
    st = _state(ex, inst)
    m = env.get(inst.operand.name)
    p, _ = _padded(ex, st, lanes, m, inst, col)
    layout = _layout(st, inst.type)
    r = cm.reduce(m.layout, p, inst.op, inst.mode)
    env.set(inst.result.name, _coop_out(st, lanes, layout, r))


def _extract(ex, inst: ir.CoopExtract, env, lanes, col):
    st = _state(ex, inst)
    m = env.get(inst.operand.name)
    if m.padded is not None and _is_full(st, lanes):
        rows, cols = m.layout.positions
        v = m.padded[..., rows[:, inst.index], cols[:, inst.index]]  # (P, nsg, S)
        env.set(inst.result.name, v.reshape(-1))
        return
    env.set(inst.result.name, np.array(m.components()[:, inst.index]))


def _insert(ex, inst: ir.CoopInsert, env, lanes, col):
    st = _state(ex, inst)
    m = env.get(inst.operand.name)
    x = ex.val(inst.value, inst.type.component, env)
    if m.padded is not None and _is_full(st, lanes):
        rows, cols = m.layout.positions
        p = m.padded.copy()
        p[..., rows[:, inst.index], cols[:, inst.index]] = np.broadcast_to(
            x, (lanes.n,)).reshape(p.shape[:2] + (-1,))
        env.set(inst.result.name, CoopValue(m.layout, padded=p))
        return
    comps = m.components().copy()
    comps[:, inst.index] = x
    env.set(inst.result.name, CoopValue(m.layout, comps=comps))


def _entry_lanes(ex, layout: cm.Layout, G: int):
    """For the matrix entries (padding excluded) of G sub-groups, in padded-matrix order: the
    lane holding each (its work-item in the full lane set) and the entry's (i, j) as i32.
    Cached per layout and G: loops apply the same shapes every iteration."""
    cache = ex.__dict__.setdefault("_entry_lanes", {})
    key = (layout, G)
    hit = cache.get(key)
    if hit is None:
        M, N, S = layout.M, layout.N, layout.S
        rows, cols = layout.positions
        owner = np.zeros((M, layout.J), np.int64)
        owner[rows, cols] = np.arange(S)[:, None]
        parent = (np.arange(G)[:, None, None] * S + owner[None, :, :N]).reshape(-1)
        i = np.broadcast_to(np.arange(M, dtype=np.int32)[:, None], (G, M, N)).reshape(-1)
        j = np.broadcast_to(np.arange(N, dtype=np.int32)[None, :], (G, M, N)).reshape(-1)
        if len(cache) >= 8:
            cache.pop(next(iter(cache)))
        hit = cache[key] = (parent, i, j)
    return hit


def _apply(ex, inst: ir.CoopApply, env, lanes, col):
    """The region runs once per matrix entry (padding excluded), as lanes of their own (a
    foreach-like expansion of the work-item holding the entry), with (%i, %j) its position;
    padding comes out 0 (coopmatrix.apply_result)."""
    st = _state(ex, inst)
    m = env.get(inst.operand.name)
    layout = _layout(st, inst.type)
    src = m.layout
    M, N, S = src.M, src.N, src.S
    if _is_full(st, lanes):
        p, _ = _padded(ex, st, lanes, m, inst, col)
        G = st.P * st.wg.n_subgroups
        parent, i, j = _entry_lanes(ex, src, G)
        vals = p[..., :N].reshape(-1)
        real = None
    else:
        n, V = lanes.n, src.V
        q = lanes.it % st.wg.n_items % S
        rows, cols = src.positions  # (S, V)
        parent = np.repeat(np.arange(n), V)
        i = rows[q].reshape(-1).astype(np.int32)
        j = cols[q].reshape(-1).astype(np.int32)
        vals = m.components().reshape(-1)
        real = j < N
    sub = Lanes(marker=lanes.marker, parent=lanes, sel=parent, n=len(parent),
                live=None if real is None or real.all() else real)
    body = type(env)(env, parent)
    body.set(inst.row.name, i)
    body.set(inst.col.name, j)
    body.set(inst.val.name, vals)
    out = ex.run_region(inst.body, body, sub)
    v = np.broadcast_to(np.asarray(out[0]), (len(parent),)).astype(inst.type.component.dtype)
    if real is not None:
        v = np.where(real, v, v.dtype.type(0))
        env.set(inst.result.name, CoopValue(layout, comps=v.reshape(lanes.n, -1)))
        return
    res = np.zeros((st.P, st.wg.n_subgroups, M, layout.J), v.dtype)
    res[..., :N] = v.reshape(st.P, st.wg.n_subgroups, M, N)
    env.set(inst.result.name, CoopValue(layout, padded=res))


def _atomic_update(ex, inst: ir.CoopAtomicUpdate, env, lanes, col):
    """Per component a read-modify-write, sub-groups in work-group-major order and entries in
    row-major order, each seeing the previous one's result; returns the old values (0 in
    components not taken: padding, masked)."""
    st = _state(ex, inst)
    v = env.get(inst.value.name)
    padded, _ = _padded(ex, st, lanes, v, inst, col)
    view, good, addr, ok = _access(ex, inst, env, lanes, col, v.layout, inst.trans,
                                   inst.checked, fast=False)
    _checks(ex, st, lanes, inst, col, view, v.layout, good, addr, "a")
    data = view.buf.data
    a = addr[good]
    x = padded[good].astype(data.dtype, copy=False)
    # atomic_add|max|min's combination (max/min: the scalar instructions' ties and signed
    # zeros; np.fmax took the new value on a tie, atomic_max the old one)
    def f(o, n):
        return exec_v04.atomic_combine(inst.op, view.elem, o, n)
    with np.errstate(all="ignore"):
        if len(np.unique(a)) == len(a):
            old = data[a].copy()
            data[a] = f(old, x)
        else:  # several components update one element: one after the other
            old = np.empty(len(a), data.dtype)
            for k in range(len(a)):
                old[k] = data[a[k]]
                data[a[k]] = f(data[a[k]], x[k])
    res = np.zeros(padded.shape, data.dtype)
    res[good] = old
    env.set(inst.result.name, _coop_out(st, lanes, v.layout, res))


def componentwise(handler):
    """Wrap execute.py's arith/unary/cast handler: on coopmatrix operands, the scalar table's
    operation runs on every component (faults count on matrix entries only, not padding)."""

    def run(ex, inst, env, lanes, col):
        t = inst.to_type if isinstance(inst, ir.Cast) else inst.type
        if not isinstance(t, CoopMatrixType):
            return handler(ex, inst, env, lanes, col)
        st = _state(ex, inst)
        layout = _layout(st, t)
        names = [inst.lhs.name, inst.rhs.name] if isinstance(inst, ir.Arith) else \
            [inst.operand.name]
        ops = [env.get(n) for n in names]
        padded = _is_full(st, lanes) and all(o.padded is not None for o in ops)
        xs = [o.padded if padded else o.components() for o in ops]
        if isinstance(inst, ir.Arith):
            r, faults = scalar.binary(inst.op, t.component, *xs)
        elif isinstance(inst, ir.ArithUnary):
            r, faults = scalar.unary(inst.op, t.component, *xs)
        else:
            cm.cast_use(ops[0].layout.use, t.use)
            r, faults = scalar.cast(inst.from_type.component, t.component, *xs)
        if faults:
            entry = layout.positions[1] < layout.N  # (S, V): which components are entries
            real = entry[lanes.it % st.wg.n_items % layout.S]
            per_lane = []
            for k, m, w in faults:
                m = np.broadcast_to(np.asarray(m, bool), np.shape(xs[0]))
                if padded:
                    m = cm.to_components(layout, m).reshape(lanes.n, -1)
                per_lane.append((k, (m & real).any(axis=1), w))
            ex.faults(per_lane, lanes, col, inst.span)
        r = np.asarray(r)
        env.set(inst.result.name, CoopValue(layout, padded=r) if padded else
                CoopValue(layout, comps=r))

    return run


HANDLERS = {
    ir.Parallel: _parallel, ir.Builtin: _builtin, ir.SubgroupOp: _subgroup_op,
    ir.SubgroupBroadcast: _broadcast, ir.Constant: _constant, ir.CoopConstruct: _construct,
    ir.CoopLoad: _coop_load, ir.CoopStore: _coop_store, ir.CoopPrefetch: _prefetch,
    ir.CoopMulAdd: _mul_add, ir.CoopScale: _scale, ir.CoopReduce: _reduce,
    ir.CoopExtract: _extract, ir.CoopInsert: _insert, ir.CoopApply: _apply,
    ir.CoopAtomicUpdate: _atomic_update, ir.ForeachTile: _foreach_tile,
}

__all__ = ["HANDLERS", "barrier", "componentwise", "work_group", "CoopValue"]
