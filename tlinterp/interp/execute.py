"""The region walker: runs a function body once for a whole set of lanes.

Mixed code runs with one lane per work-group; a divergent `if` splits the lanes, a `for` with
varying bounds masks finished lanes, a `foreach` expands each lane into its iterations. Every
instruction first collects its undefined-behaviour reports, raises them, and only then has
its memory effects.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Optional

import numpy as np

from tlinterp.interp import collectives, exec_v04, fastpath, scalar, spmd_exec
from tlinterp.interp import memory as mem
from tlinterp.interp import views as vw
from tlinterp.interp.memory import AllocaBuffer, View
from tlinterp.interp.ub import Collector, groups_text
from tlinterp.interp.values import Lanes, is_var, select
from tlinterp.io.memlimit import check_allocation
from tlinterp.lang import ir
from tlinterp.lang.diagnostics import Diagnostic, ExecutionError, not_yet
from tlinterp.lang.types import INDEX, CoopMatrixType, ScalarType

_PURE = (ir.Arith, ir.ArithUnary, ir.Cast, ir.Compare, ir.Yield, ir.GroupId, ir.GroupSize,
         ir.Size)

# Bytes of interpreter state per foreach lane (lane ids, actors, iteration, a few values).
_BYTES_PER_LANE = 96


def _index(x):
    """An index operand: an int when uniform, else the lane array itself (not a copy, so
    that the address cache recognises it)."""
    return int(x) if np.ndim(x) == 0 else x


class Env:
    """SSA values of a region; values of enclosing regions are restricted to these lanes lazily."""

    def __init__(self, parent: Optional[Env] = None, sel=None):
        self.parent, self.sel, self.vars = parent, sel, {}

    def get(self, name: str):
        v = self.vars.get(name)
        if v is None:
            if self.parent is None:
                raise KeyError(name)
            v = self.parent.get(name)
            if self.sel is not None:
                v = select(v, self.sel)
                self.vars[name] = v
        return v

    def set(self, name: str, v) -> None:
        self.vars[name] = v


class Executor:
    def __init__(self, program: ir.Program, n_groups: int, check: bool,
                 max_steps: Optional[int]):
        self.program, self.n_groups, self.check = program, n_groups, check
        self.grid = (n_groups, 1, 1)  # v0.4's 3-D grid (x, y, z); run_bound sets it
        self.max_steps, self.steps = max_steps, 0
        self.next_actor = n_groups + 1
        self._pure_cache: dict[int, bool] = {}
        self._addr_cache: dict[tuple, tuple] = {}  # load/store addresses, by view and indices
        self._fast_cache: dict[int, bool] = {}  # for loops the scalar fast path can run

    # --- plumbing ----------------------------------------------------------------------

    def collector(self) -> Collector:
        """An empty report collector for one instruction of this program."""
        return Collector(self.program.filename, self.program.source)

    def val(self, op: ir.Operand, t: ScalarType, env: Env):
        if isinstance(op, ir.Const):
            return scalar.const(op, t)
        return env.get(op.name)

    def faults(self, faults, lanes: Lanes, col: Collector, span) -> None:
        if not self.check:
            return
        for kind, mask, what in faults:
            detail = "" if what == kind.replace("-", " ") else f": {what}"
            col.add_lanes(kind, mask, lanes, span,
                          lambda lane, g, detail=detail: (None, groups_text([g]) + detail))

    def step_budget_exceeded(self, inst) -> None:
        raise ExecutionError([Diagnostic(
            f"step budget of {self.max_steps} instructions exceeded (raise it with "
            "--max-steps)", inst.span, self.program.filename)], self.program.source)

    def run_region(self, region: ir.Region, env: Env, lanes: Lanes):
        """Run a region; returns the values of its trailing yield (or None)."""
        allocas: list[AllocaBuffer] = []
        result = None
        try:
            for inst in region.instructions:
                is_yield = isinstance(inst, ir.Yield)
                if not is_yield:  # a yield only hands values over: no step
                    self.steps += 1
                if self.max_steps is not None and self.steps > self.max_steps:
                    self.step_budget_exceeded(inst)
                # Handlers raise their reports before their memory effects; what is left
                # here (scalar faults, view checks) only guards SSA values.
                try:
                    with self.collector().checks() as col:
                        out = self.dispatch(inst, env, lanes, col)
                except MemoryError:
                    raise self.out_of_memory(inst, lanes) from None
                if is_yield:
                    result = out
                    break
                if isinstance(inst, ir.Alloca):
                    allocas.append(out)
        finally:
            for buf in allocas:  # region end: allocas die
                buf.alive[:] = False
        return result

    def out_of_memory(self, inst, lanes: Lanes) -> ExecutionError:
        """A MemoryError of one instruction as a message that names it (an alloca: its type
        and bytes) and suggests fewer work-groups only when there are several."""
        per = "" if not self.check else (f", plus {mem.SHADOW_BYTES} bytes per element of "
                                         "checking state (--no-check drops it)")
        if isinstance(inst, ir.Alloca):
            t = inst.type
            nbytes = max(mem.extent(tuple(t.shape), tuple(t.stride)), 1) * t.element.dtype.itemsize
            what = (f"out of memory at alloca %{inst.result.name} ({t}: {nbytes} bytes for "
                    f"each of {lanes.n} work-group(s){per})")
        else:
            name = type(inst).__name__.lower()
            what = f"out of memory at this {name}, running {lanes.n} lane(s){per}"
        if self.n_groups > 1:
            what += f"; try fewer work-groups than {self.n_groups}"
        return ExecutionError([Diagnostic(what, inst.span, self.program.filename)],
                              self.program.source)

    def dispatch(self, inst, env: Env, lanes: Lanes, col: Collector):
        """Run one instruction with its handler (the fast path hands instructions back here)."""
        return DISPATCH[type(inst)](self, inst, env, lanes, col)

    def _yield(self, inst: ir.Yield, env, lanes, col):
        """The values the region hands to its if."""
        return [self.val(v, t, env) for v, t in zip(inst.values, inst.types)]

    # --- scalar instructions --------------------------------------------------------------

    def _arith(self, inst: ir.Arith, env, lanes, col):
        r, f = scalar.binary(inst.op, inst.type, self.val(inst.lhs, inst.type, env),
                             self.val(inst.rhs, inst.type, env))
        self.faults(f, lanes, col, inst.span)
        env.set(inst.result.name, r)

    def _unary(self, inst: ir.ArithUnary, env, lanes, col):
        r, f = scalar.unary(inst.op, inst.type, self.val(inst.operand, inst.type, env))
        self.faults(f, lanes, col, inst.span)
        env.set(inst.result.name, r)

    def _cast(self, inst: ir.Cast, env, lanes, col):
        r, f = scalar.cast(inst.from_type, inst.to_type, self.val(inst.operand, inst.from_type,
                                                                  env))
        self.faults(f, lanes, col, inst.span)
        env.set(inst.result.name, r)

    def _compare(self, inst: ir.Compare, env, lanes, col):
        r, _ = scalar.compare(inst.cond, inst.type, self.val(inst.lhs, inst.type, env),
                              self.val(inst.rhs, inst.type, env))
        env.set(inst.result.name, r)

    def _group_id(self, inst, env, lanes, col):  # group_id.x: x runs fastest in the grid
        x = self.grid[0]
        env.set(inst.result.name, lanes.gid if x == self.n_groups else lanes.gid % x)

    def _group_size(self, inst, env, lanes, col):
        env.set(inst.result.name, np.array(self.grid[0], np.int64))

    # --- memory ---------------------------------------------------------------------------

    def _element(self, inst, view: View, indices, env, lanes, col, what):
        """Address of the indexed element per lane (0-d when uniform), after the checks."""
        idx = [_index(self.val(i, INDEX, env)) for i in indices]
        n = lanes.n
        if self.check:
            bad = np.zeros(n, bool)
            for i, s in zip(idx, view.shape):
                bad |= np.broadcast_to((np.asarray(i) < 0) | (np.asarray(i) >= s), (n,))

            def oob(lane: int, g: int):
                el = tuple(int(i[lane]) if is_var(i) else int(i) for i in idx)
                shape = tuple(int(s[lane]) if is_var(s) else int(s) for s in view.shape)
                return el, (f"{mem.lane_text(lanes, int(lane))} {what} element {mem._fmt(el)} of %"
                            f"{inst.operand.name}, whose shape is {shape}")

            with col.checks():
                col.add_lanes("out-of-bounds", bad, lanes, inst.span, oob, count_rest=False)
        # Addresses depend on the offset, strides and indices only: views of equal layout
        # (e.g. a load from %x and a store to %y at the same indices) share them.
        parts = (view.off, *view.strides, *idx)
        key = (n,) + tuple((id(x), 0) if is_var(x) else (int(x), 1) for x in parts)
        hit = self._addr_cache.get(key)
        if hit is not None:
            addr, fp = hit[1], hit[2]
        else:
            addr = mem.element_addr(view, idx)
            fp = mem.lane_footprint(addr, n)
            if len(self._addr_cache) >= 8:
                self._addr_cache.pop(next(iter(self._addr_cache)))
            # the entry holds the arrays whose ids are in the key, so the ids stay theirs
            self._addr_cache[key] = (parts, addr, fp)
        if not mem.safe_bounds(view.buf, fp):
            with col.checks():  # memory safety: raises also with checks off
                if self.check:
                    mem.check_root(view, fp, lanes, col, inst.span, what, idx)
                if not col:  # the precise reports above say it better
                    col.add("out-of-bounds", inst.span, (int(lanes.gid[0]),), None,
                            f"%{inst.operand.name}: an element outside its memory is accessed")
        if self.check:
            with col.checks():
                mem.check_root(view, fp, lanes, col, inst.span, what, idx)
                mem.check_lifetime(view, lanes, col, inst.span)
        return addr, fp

    def _load(self, inst: ir.Load, env, lanes, col):
        src = env.get(inst.operand.name)
        if isinstance(src, vw.GroupValue):
            idx = self.val(inst.indices[0], INDEX, env)
            member = vw.load_member(src, idx, lanes, col, inst.span, "%" + inst.result.name)
            member.origin = ("load", inst.span)
            env.set(inst.result.name, member)
            return
        addr, fp = self._element(inst, src, inst.indices, env, lanes, col, "reads")
        if self.check:
            with col.checks():
                mem.check_init(src, fp, lanes, col, inst.span)
                mem.record(src, fp, lanes, "r", col, inst.span)
        if addr.ndim == 0:
            env.set(inst.result.name, src.buf.data[addr])
        else:
            env.set(inst.result.name, np.array(fp.take(src.buf.data)))

    def _store(self, inst: ir.Store, env, lanes, col):
        dst = env.get(inst.operand.name)
        value = self.val(inst.value, inst.type.element, env)
        addr, fp = self._element(inst, dst, inst.indices, env, lanes, col, "writes")
        if self.check:
            with col.checks():
                mem.record(dst, fp, lanes, "w", col, inst.span)
            mem.mark_init(dst, fp)
        if addr.ndim == 0:
            # lanes racing on one element (only reached with check=False): one value wins
            dst.buf.data[addr] = value[-1] if np.ndim(value) == 1 else value
        else:
            fp.put(dst.buf.data, value)

    def _size(self, inst: ir.Size, env, lanes, col):
        s = env.get(inst.operand.name).shape[inst.mode]
        env.set(inst.result.name, np.asarray(s, np.int64))

    def _subview(self, inst: ir.Subview, env, lanes, col):
        src = env.get(inst.operand.name)
        slices = []
        for sl in inst.slices:
            off = vw.meta(self.val(sl.offset, INDEX, env))
            size = None if sl.size is None else vw.meta(self.val(sl.size, INDEX, env))
            slices.append((off, size, sl.is_range))
        v = vw.subview(src, slices, lanes, col, inst.span)
        env.set(inst.result.name, self._named(v, inst))

    def _named(self, v: View, inst) -> View:
        v.name = "%" + inst.result.name
        v.origin = (type(inst).__name__.lower(), inst.span)  # blamed if it leaves its root
        return v

    def _expand(self, inst: ir.Expand, env, lanes, col):
        entries = [vw.meta(env.get(e.name)) if isinstance(e, ir.Value) else e
                   for e in inst.shape]
        v = vw.expand(env.get(inst.operand.name), inst.mode, entries, lanes, col, inst.span)
        env.set(inst.result.name, self._named(v, inst))

    def _fuse(self, inst: ir.Fuse, env, lanes, col):
        v = vw.fuse(env.get(inst.operand.name), inst.first, inst.last, lanes, col, inst.span)
        env.set(inst.result.name, self._named(v, inst))

    def _alloca(self, inst: ir.Alloca, env, lanes, col):
        t = inst.type
        shape, strides = tuple(t.shape), tuple(t.stride)
        ext = mem.extent(shape, strides)
        n = lanes.n
        per_element = t.element.dtype.itemsize + (mem.SHADOW_BYTES if self.check else 0)
        check_allocation(n * max(ext, 1) * per_element,
                         f"alloca {inst.result} for {n} work-groups", ExecutionError)
        buf = AllocaBuffer("%" + inst.result.name, t.element, shape, strides, ext,
                           lanes.gid.copy(), self.check)
        off = np.arange(n, dtype=np.int64) * max(ext, 1)
        env.set(inst.result.name, View(buf, t.element, off, shape, strides,
                                       (off, shape, strides), True, "%" + inst.result.name))
        return buf

    def _lifetime_stop(self, inst: ir.LifetimeStop, env, lanes, col):
        v = env.get(inst.operand.name)
        if not isinstance(v.buf, AllocaBuffer):
            return  # the checker only lets alloca results through; nothing to end otherwise
        if self.check:
            with col.checks():
                mem.check_lifetime(v, lanes, col, inst.span)
        slot = np.asarray(v.root[0], np.int64) // v.buf.extent
        v.buf.alive[slot] = False

    # --- control flow ---------------------------------------------------------------------

    def _if(self, inst: ir.If, env, lanes, col):
        cond = np.asarray(self.val(inst.cond, ScalarType.i1, env), bool)
        names = [r.name for r in inst.results]
        if cond.ndim == 0:
            region = inst.then if cond else inst.otherwise
            if region is not None:
                out = self.run_region(region, Env(env), lanes)
                for name, v in zip(names, out or []):
                    env.set(name, v)
            return
        if self._pure(inst.then) and (inst.otherwise is None or self._pure(inst.otherwise)) \
                and not any(isinstance(t, CoopMatrixType) for t in inst.result_types):
            # If-conversion: both branches run on all lanes, faults count only where taken.
            outs = [self.run_region(r, Env(env), lanes.masked(m)) if r is not None else None
                    for r, m in ((inst.then, cond), (inst.otherwise, ~cond))]
            for k, (name, t) in enumerate(zip(names, inst.result_types)):
                env.set(name, np.where(cond, outs[0][k], outs[1][k]).astype(t.dtype))
            return
        parts = []
        for region, mask in ((inst.then, cond), (inst.otherwise, ~cond)):
            if region is None or not mask.any():
                parts.append((mask, None))
                continue
            sel = None if mask.all() else np.flatnonzero(mask)
            sub = lanes if sel is None else lanes.select(sel)
            parts.append((mask, self.run_region(region, Env(env, sel), sub)))
        for k, (name, t) in enumerate(zip(names, inst.result_types)):
            taken = [(mask, out[k]) for mask, out in parts if out is not None]
            if taken and isinstance(taken[0][1], spmd_exec.CoopValue):
                # per-lane components of the branch each lane took, rows in lane order
                first = taken[0][1].components()
                comps = np.empty((lanes.n,) + first.shape[1:], first.dtype)
                for mask, v in taken:
                    comps[mask] = v.components()
                env.set(name, spmd_exec.CoopValue(taken[0][1].layout, comps=comps))
                continue
            merged = np.empty(lanes.n, t.dtype)
            for mask, v in taken:
                merged[mask] = v
            env.set(name, merged)

    def _pure(self, region: ir.Region) -> bool:
        """Only scalar instructions: safe to run on lanes that did not take the branch."""
        key = id(region)
        p = self._pure_cache.get(key)
        if p is None:
            p = self._pure_cache[key] = all(isinstance(i, _PURE) for i in region.instructions)
        return p

    def _for(self, inst: ir.For, env, lanes, col):
        # One lane that nothing can race with (one work-group, outside foreach): Python scalars
        if (lanes.n == 1 and lanes.live is None and not lanes.has_act
                and (self.n_groups == 1 or not self.check)
                and fastpath.eligible(inst, self._fast_cache)):
            fastpath.FastRunner(self, env, lanes).run_for(inst)
            return
        self.for_general(inst, env, lanes)

    def for_general(self, inst: ir.For, env, lanes) -> None:
        t = inst.type
        i = self.val(inst.start, t, env)
        stop = self.val(inst.stop, t, env)
        step = scalar.const(ir.Const(1), t) if inst.step is None else self.val(inst.step, t, env)
        nonempty = np.asarray(i < stop)
        if (nonempty & (np.asarray(step) <= 0)).any():
            raise ExecutionError([Diagnostic(
                "for loop with a step <= 0 over a non-empty range never terminates", inst.span,
                self.program.filename)], self.program.source)
        live = np.asarray(i < stop)
        # v0.4 loop-carried values: one array per value over these lanes (or uniform)
        carried = [self.val(x, rt, env) for (_, x), rt in zip(inst.inits, inst.result_types)]
        while True:
            if live.ndim == 0 or live.all():
                if not live.all():
                    break
                sub, sel, iv = lanes, None, i
            else:
                if not live.any():
                    break
                sel = np.flatnonzero(live)
                sub, iv = lanes.select(sel), (i[sel] if np.ndim(i) else i)
            body = Env(env, sel)
            body.set(inst.var.name, iv)
            for (v, _), c in zip(inst.inits, carried):
                # a coopmatrix is an object (np.ndim 0) that still has lanes to select
                body.set(v.name, c if sel is None or (np.ndim(c) == 0 and not
                                                      isinstance(c, spmd_exec.CoopValue))
                         else select(c, sel))
            out = self.run_region(inst.body, body, sub)
            if inst.inits:
                carried = [_merge(c, o, sel, lanes.n, rt)
                           for c, o, rt in zip(carried, out, inst.result_types)]
            nxt, faults = scalar.binary("add", t, i, step)
            if self.check:
                with self.collector().checks() as c:
                    self.faults([(k, np.asarray(m) & live, "the loop variable's increment: " + w)
                                 for k, m, w in faults], lanes, c, inst.span)
            i = np.where(live, nxt, i).astype(t.dtype) if np.ndim(i) else nxt
            live = live & np.asarray(i < stop)
        for r, c in zip(inst.results, carried):
            env.set(r.name, c)

    def _foreach(self, inst: ir.Foreach, env, lanes, col):
        t = inst.type
        start = self.val(inst.start, t, env)
        stop = self.val(inst.stop, t, env)
        n = lanes.n
        s64 = np.broadcast_to(np.asarray(start).astype(np.int64), (n,))
        count = np.maximum(np.broadcast_to(np.asarray(stop).astype(np.int64), (n,)) - s64, 0)
        # float sum: an int64 sum could wrap for absurd ranges and slip past the guard
        lanes_f = int(count.sum(dtype=np.float64))
        check_allocation(lanes_f * _BYTES_PER_LANE,
                         f"foreach over {lanes_f} (work-group, iteration) lanes", ExecutionError)
        total = int(count.sum())
        if total == 0:
            return
        if np.ndim(start) == 0 and np.ndim(stop) == 0:
            c = int(count[0]) if n else 0
            parent = np.repeat(np.arange(n), c)
            it = np.tile(np.arange(int(s64[0]), int(s64[0]) + c, dtype=np.int64), n)
        else:
            parent = np.repeat(np.arange(n), count)
            first = np.cumsum(count) - count
            it = s64[parent] + (np.arange(total, dtype=np.int64) - first[parent])
        marker = self.next_actor
        self.next_actor += total + 1
        act = marker + 1 + np.arange(total, dtype=np.int64) if self.check else None
        sub = Lanes(act=act, marker=marker, it=it, parent=lanes, sel=parent, n=total)
        body = Env(env, parent)
        body.set(inst.var.name, it.astype(t.dtype, copy=False))
        self.run_region(inst.body, body, sub)

    # --- collectives ----------------------------------------------------------------------

    def _blas(self, inst, env, lanes, col):
        in_names, out_name = collectives.operands(inst)
        views = {k: env.get(getattr(inst, k).name) for k in [*in_names, out_name]}
        alpha = self.val(inst.alpha, inst.alpha_type, env)
        beta = self.val(inst.beta, inst.beta_type, env)
        collectives.execute(inst, views, alpha, beta, lanes, self.check, col)


def _merge(old, new, sel, n: int, t):
    """A loop-carried value after an iteration that ran on the lanes `sel` (None: all)."""
    if sel is None:
        return new
    if isinstance(new, spmd_exec.CoopValue):  # per-lane components, rows in lane order
        full = old.components().copy()
        full[sel] = new.components()
        return spmd_exec.CoopValue(old.layout, comps=full)
    full = np.array(np.broadcast_to(old, (n,)), dtype=t.dtype)
    full[sel] = new
    return full


def _not_yet(ex, inst, env, lanes, col):
    """v0.4-only instructions: tlinterp/front/migrate.py rejects them before a run; this is the
    backstop for IR built by hand."""
    raise not_yet(inst)


# The one dispatch table of the interpreter: every instruction class to its handler
# (executor, instruction, env, lanes, collector) -> an alloca's buffer, a yield's values or None.
DISPATCH: dict[type, Callable[..., Any]] = {
    ir.Arith: Executor._arith, ir.ArithUnary: Executor._unary, ir.Cast: Executor._cast,
    ir.Compare: Executor._compare, ir.GroupId: Executor._group_id,
    ir.GroupSize: Executor._group_size, ir.Load: Executor._load, ir.Store: Executor._store,
    ir.Size: Executor._size, ir.Subview: Executor._subview, ir.Expand: Executor._expand,
    ir.Fuse: Executor._fuse, ir.Alloca: Executor._alloca,
    ir.LifetimeStop: Executor._lifetime_stop,
    ir.Barrier: spmd_exec.barrier,
    ir.If: Executor._if, ir.Yield: Executor._yield, ir.For: Executor._for,
    ir.Foreach: Executor._foreach,
    **{cls: Executor._blas for cls in ir.BLAS},
    **{cls: _not_yet for cls in ir.V04_INSTRUCTIONS},
    **exec_v04.HANDLERS,
    **spmd_exec.HANDLERS,  # v0.4's work-items, sub-groups, coopmatrices (after exec_v04)
}
for _cls in (ir.Arith, ir.ArithUnary, ir.Cast):  # component-wise on coopmatrices
    DISPATCH[_cls] = spmd_exec.componentwise(DISPATCH[_cls])
