"""Statements of generated kernels: stores, collectives, foreach, for, if, alloca, barrier.

Each statement either emits well-defined code or raises `Unavailable` before emitting the
instruction that would make it undefined (views and scalars emitted on the way are harmless).
"""

from __future__ import annotations

from typing import Optional

from fuzz.gen.core import CoreGenerator, exact_dim, size_bound
from fuzz.gen.model import Buf, Scal, Unavailable, View
from fuzz.gen.params import COLLECTIVE_KINDS
from fuzz.gen.ranges import IRange
from fuzz.profiles.check import instruction_violations, integer_product, mixed_sizes
from tlinterp.lang import ir, ops, typerules
from tlinterp.lang.ir import Const, Slice, Value
from tlinterp.lang.types import INDEX, MemrefType, ScalarType


class _MixedSizes(Unavailable):
    """A collective relating a `?` size to a static one, which the profile leaves out."""

    def __init__(self, kind: str):
        super().__init__("a ? size related to a static one")
        self.kind = kind

# K of streamed gemms (`streamed_gemm`): one or more blocks of 8, then a step of 4 and/or a
# partial step
STREAMED_K = (8, 9, 12, 13, 16, 19, 20, 24)
EMPTY_ARROW_PERCENT = 60  # an if without results is written `-> ()` (the original compiler's)

# kind (the class name in lower case, as in GenParams.collective_weights) -> possible orders
# of the output, as the instruction class declares them
COLLECTIVE_ORDERS = {kind: cls.role(cls.output()).orders for kind, cls in COLLECTIVE_KINDS.items()}


def int_cap(t: ScalarType) -> int:
    """Magnitude cap for integer buffers that are read back."""
    return {8: 40, 16: 1000}.get(t.bits, 100000)


def int_limit(t: ScalarType) -> int:
    """Largest magnitude an integer sink may reach: the signed maximum of the width, also for
    unsigned types (their collectives may compute in a promoted signed type)."""
    return (1 << (t.bits - 1)) - 1


def _op_dims(x, y, transposed: bool) -> list:
    """Modes of X such that op(X) has modes (x, y)."""
    return [y, x] if transposed else [x, y]


class BodyGenerator(CoreGenerator):
    # the statements allowed in an SPMD region (a foreach body): no collectives
    SPMD_STATEMENTS: tuple[str, ...] = ("store", "for_", "if_", "scalar")

    # --- regions ----------------------------------------------------------------------------

    def gen_block(self, depth: int, at_least: int = 0) -> None:
        level = len(self.scopes)
        for _ in range(self.int(at_least, self.p.max_statements)):
            self.gen_statement(depth)
        ending = [b for b in self.bufs if b.kind == "alloca" and b.level == level and b.alive]
        for b in ending:  # read back after everything else in the region wrote local memory
            if b.initialised and self.flip(self.p.dump_percent):
                self.dump(self.roots[id(b)])
        for b in ending:
            b.alive = False
            if self.flip(self.p.lifetime_stop_percent):
                self.emit(ir.LifetimeStop(self.roots[id(b)].value))

    def gen_statement(self, depth: int) -> None:
        w = dict(self.p.statement_weights)
        if self.spmd:
            w = {k: v for k, v in w.items() if k in self.SPMD_STATEMENTS}
        if depth >= self.p.max_depth:
            for k in ("for_", "if_", "foreach"):
                w.pop(k, None)
        kind = self.weighted(w)
        try:
            self.statements()[kind](depth)
        except Unavailable:
            pass

    def statements(self) -> dict:
        """statement_weights key -> the method that generates that statement."""
        return {"store": self.gen_store, "collective": self.gen_collective,
                "foreach": self.gen_foreach, "for_": self.gen_for, "if_": self.gen_if,
                "alloca": self.gen_alloca, "barrier": self.gen_barrier,
                "scalar": self.gen_scalar_statement}

    def gen_scalar_statement(self, depth: int) -> None:
        t = ScalarType.i1 if self.flip(40) else self.pick(self.scalar_types())
        if t.is_bool and self.flip(70):
            v = self.gen_cmp(2)  # a compare of any type, observed directly
        elif t.is_int and not t.is_bool and self.flip(60):
            # one operation of any kind on edge-rich operands, observed directly
            v = self.gen_binary(t, 2, self.pick(self.op_names(ops.BINARY, t)))
        else:
            v = self.gen_scalar(t, 3)
        self.witness(v)

    def gen_barrier(self, depth: int) -> None:
        self.emit(ir.Barrier())

    def dump(self, v: View) -> None:
        """Copy a whole static view of order 1 or 2 into an output of its own (declared by
        `finish_witnesses`), so every element is observable: those no other read reaches,
        and those that a wrong write from elsewhere clobbered (allocas placed on top of each
        other, a collective writing past its view). The copy is a foreach over one mode
        with a for loop over the other, or an axpby (alpha 1, beta 0), either of them
        transposed half of the time: both indices of the view matter."""
        order = v.type.order
        if self.spmd or order not in (1, 2) or any(lo != hi or lo < 1 for lo, hi in v.dims):
            return
        elem = v.type.element
        shape = [lo for lo, _ in v.dims]
        how = self.weighted({"loop": 3, "collective": 2})
        if how == "collective" and (elem.is_float and not self.float_collectives
                                    or not self.p.collective_weights.get("axpby")):
            how = "loop"  # float collectives only where the oracle bounds them; no axpby
        trans = order == 2 and self.flip(50)
        out_shape = shape[::-1] if trans else shape
        k = len(self.dumps)  # own names: closing regions hand the counter's names out again
        at = MemrefType.make(elem, tuple(out_shape) + (None,))
        whole = Slice(Const(0), None, True)
        sub = ir.Subview(Value(f"wdv{k}"), Value(f"wd{k}"), (whole,) * order +
                         (Slice(self.gid.op),), at)
        dt = typerules.subview_type(sub)
        self.dumps.append((ir.Argument(sub.operand, at), sub))
        self.stats["dump"] += 1
        if how == "collective":
            one, zero = self.const(elem, 1), self.const(elem, 0)
            self.emit(ir.Axpby(trans=trans, atomic=False, alpha=one.op, beta=zero.op,
                               alpha_type=elem, beta_type=elem, a=v.value, b=sub.result,
                               a_type=v.type, b_type=dt))
            return
        d = self.int(0, order - 1)  # the mode the foreach runs over
        iv = self.fresh("i")
        jv = self.fresh("j") if order == 2 else None
        src = (iv,) if order == 1 else ((iv, jv) if d == 0 else (jv, iv))
        x = self.fresh()
        body: list = [ir.Load(x, v.value, src, v.type),
                      ir.Store(x, sub.result, src[::-1] if trans else src, dt)]
        if jv is not None:
            body = [ir.For(jv, Const(0), Const(shape[1 - d]), None, INDEX, ir.Region(body))]
        if self.p.statement_weights.get("foreach"):
            self.emit(ir.Foreach(iv, Const(0), Const(shape[d]), INDEX, ir.Region(body)))
        else:  # the caller left foreach out
            self.emit(ir.For(iv, Const(0), Const(shape[d]), None, INDEX, ir.Region(body)))

    # --- stores ---------------------------------------------------------------------------

    def store_value(self, buf: Buf) -> Scal:
        v = self.gen_scalar(buf.elem, 2)
        if buf.elem.is_int:
            if buf.readable:
                v = self.clamp(v, buf.cap)
            else:
                buf.acc = max(buf.acc, v.rng.mag)
        return v

    def writable_views(self) -> list[View]:
        return [v for v in self.visible_views()
                if v.buf.kind in ("own", "alloca") and v.buf.alive]

    def gen_store(self, depth: int) -> None:
        if self.spmd:
            if self.foreach_target is None:
                raise Unavailable("no foreach target")
            w, d, ivar = self.foreach_target
            idx = [self.index_in(lo).op if m != d else ivar.op for m, (lo, _) in enumerate(w.dims)]
        else:
            views = [v for v in self.writable_views() if all(lo >= 1 for lo, _ in v.dims)]
            last = self.last_parallel
            if last is not None and any(v is last for v in views) and \
                    self.flip(self.p.store_after_parallel_percent):
                # right after the step that wrote it across work-items: the store must wait
                # for all of them (barrier placement)
                w = last
                self.stats["store-after-parallel"] += 1
            else:
                w = self.pick(views)
            if self.flip(30) and w.type.order:
                w = self.derive_view(w, self.int(0, w.type.order))
            idx = [self.index_in(lo).op for lo, _ in w.dims]
        val = self.store_value(w.buf)
        self.emit(ir.Store(val.op, w.value, tuple(idx), w.type))

    # --- control flow -----------------------------------------------------------------------

    def gen_for(self, depth: int) -> None:
        t = INDEX if self.flip(60) else self.pick([
            t for t in (ScalarType.i32, ScalarType.i64, ScalarType.i16, ScalarType.u32)
            if t in self.p.scalar_types])
        step = 1 if self.flip(40) else self.int(2, max(2, self.p.max_step))
        start_op, start_rng = self.loop_bound(t, IRange(0, 3))
        lo = start_rng.lo
        trips = self.int(0, self.p.max_trips)
        if trips:  # the last step may be partial: the range need not be a multiple of it
            stop = start_rng.hi + (trips - 1) * step + self.int(1, step)
        else:  # zero-trip: stop at or below the start
            stop = max(lo - self.int(0, 2), 0 if not t.is_signed else -2)
        stop_op, stop_rng = self.loop_bound(t, IRange(max(stop - step, 0), stop), exact=stop)
        most = max(0, -(-(stop_rng.hi - lo) // step))  # most trips over the bounds' ranges
        var = self.fresh("i")
        carried = self.loop_carried()  # v0.4: (result, body value, init Scal, range) each
        saved = self.mult
        self.push()
        try:
            self.mult *= max(most, 1)
            s = self.add_scalar(Scal(var, t, IRange(lo, max(lo, stop_rng.hi - 1))))
            for _, c, init, rng in carried:
                self.add_scalar(Scal(c, init.type, rng))
            if t is not INDEX and most:
                self.cast(s, INDEX)
            self.witness(s)  # the last iteration's value shows the step and trip count
            self.gen_block(depth + 1, at_least=1)
            self.yield_carried(carried)
        finally:
            body = self.pop()
            self.mult = saved
        step_op = None if step == 1 and self.flip(50) else Const(step)
        self.emit(self.for_inst(var, start_op, stop_op, step_op, t, body, carried))
        self.after_loop(carried)

    def loop_carried(self) -> list:
        """The loop-carried values of a `for` (v0.4), none here."""
        return []

    def yield_carried(self, carried: list) -> None:
        """The body's `yield` of its loop-carried values (v0.4)."""

    def after_loop(self, carried: list) -> None:
        """The loop's results are visible after it (v0.4)."""

    def for_inst(self, var, start, stop, step, t, body, carried: list) -> ir.For:
        return ir.For(var, start, stop, step, t, body)

    def loop_bound(self, t: ScalarType, within: IRange, exact: Optional[int] = None):
        """A loop bound of type t: a visible value whose range lies in `within` (dynamic
        bounds: arguments, earlier results), else the constant `exact` (default within.lo)."""
        if self.flip(self.p.dynamic_bound_percent):
            ok = [s for s in self.visible_scalars(t) if s.rng.within(within)]
            if ok:
                s = self.pick(ok)
                return s.op, s.rng
        v = within.lo if exact is None else exact
        return Const(v), IRange(v, v)

    def gen_if(self, depth: int) -> None:
        cond = self.gen_scalar(ScalarType.i1, 1)
        n = self.int(0, 2)
        types = tuple(self.pick(self.scalar_types()) for _ in range(n))
        regions, ranges = [], []
        with_else = n > 0 or self.flip(50)
        # named before the regions: their names are taken inside them, where names reuse
        results = tuple(self.fresh() for _ in types)
        for _ in range(2 if with_else else 1):
            self.push()
            self.if_depth += 1
            try:
                self.gen_block(depth + 1)
                vals = [self.gen_scalar(t, 1) for t in types]
                if types or self.flip(20):
                    self.emit(ir.Yield(tuple(v.op for v in vals), types))
                ranges.append([v.rng for v in vals])
            finally:
                self.if_depth -= 1
                regions.append(self.pop())
        self.emit(ir.If(results, cond.op, types, regions[0],
                        regions[1] if with_else else None,
                        empty_arrow=not types and self.flip(EMPTY_ARROW_PERCENT)))
        for k, (r, t) in enumerate(zip(results, types)):
            s = self.add_scalar(Scal(r, t, ranges[0][k].union(ranges[1][k])))
            if self.flip(50):
                self.witness(s)

    def gen_foreach(self, depth: int) -> None:
        w = self.pick([v for v in self.writable_views() if v.type.order >= 1
                       and all(lo >= 1 for lo, _ in v.dims)])
        w = self.derive_view(w, self.int(1, min(2, w.type.order)))
        self.foreach_over(w, depth, fill=False)
        self.last_parallel = w

    def foreach_over(self, w: View, depth: int, fill: bool) -> None:
        """foreach over one mode of w; the body stores to w at that mode's loop index. With
        `fill`, every element of w is written exactly once (initialises an alloca)."""
        d = 0 if fill else self.int(0, w.type.order - 1)
        lo, hi = w.dims[d]
        start = 0 if fill else self.int(0, lo - 1)
        const_stop = lo == hi and (fill or self.flip(60))
        t = self.pick([INDEX, ScalarType.i32, ScalarType.i64]) if const_stop else INDEX
        stop: ir.Operand = Const(lo) if const_stop else self.size_of(w, d).op
        start_op, start_rng = Const(start), IRange(start, start)
        if not fill and start:  # a dynamic lower bound below the smallest size
            start_op, start_rng = self.loop_bound(t, IRange(0, lo - 1), exact=start)
        var = self.fresh("i")
        saved = (self.spmd, self.foreach_buf, self.foreach_target)
        self.push()
        try:
            self.spmd, self.foreach_buf = True, w.buf
            s = self.add_scalar(Scal(var, t, IRange(start_rng.lo, hi - 1)))
            ivar = self.cast(s, INDEX)
            self.foreach_target = (w, d, ivar)
            if fill:
                self.fill_rest(w, d, ivar)
            else:
                self.gen_block(depth + 1)
                self.gen_store(depth + 1)
        finally:
            body = self.pop()
            self.spmd, self.foreach_buf, self.foreach_target = saved
        self.emit(ir.Foreach(var, start_op, stop, t, body))

    def position_value(self, buf: Buf, pos: Scal) -> Scal:
        """pos * m + c with m and c drawn per fill, in buf's element type: contents that
        depend on the position (layout bugs show) and differ between allocas (so do
        allocas that share memory by mistake)."""
        t = buf.elem
        signed = t.is_float or t.is_signed
        m = self.pick([1, 2, 3, -1, -2] if signed else [1, 2, 3])
        c = self.int(-4 if signed else 0, 7)
        val = self.binary("add", self.binary("mul", pos, self.index_const(m)),
                          self.index_const(c))
        val = self.cast(val, t)
        if t.is_int and buf.readable:
            val = self.clamp(val, buf.cap)
        self.stats["position-fill"] += 1
        return val

    def fill_rest(self, w: View, d: int, ivar: Scal) -> None:
        """Store to w[ivar, j] for every j of the other mode (order <= 2)."""
        by_position = self.flip(self.p.position_fill_percent)
        if w.type.order == 1:
            val = self.position_value(w.buf, ivar) if by_position else self.store_value(w.buf)
            self.emit(ir.Store(val.op, w.value, (ivar.op,), w.type))
            return
        n = w.dims[1][0]
        var = self.fresh("j")
        self.push()
        try:
            j = self.add_scalar(Scal(var, INDEX, IRange(0, n - 1)))
            if by_position:  # i + j * rows: every element differs (swapped indices show)
                pos = self.binary("add", ivar, self.binary("mul", j, self.index_const(
                    w.dims[0][1])))
                val = self.position_value(w.buf, pos)
            else:
                val = self.store_value(w.buf)
            self.emit(ir.Store(val.op, w.value, (ivar.op, j.op), w.type))
        finally:
            body = self.pop()
        self.emit(ir.For(var, Const(0), Const(n), None, INDEX, body))

    # --- alloca ---------------------------------------------------------------------------

    def gen_alloca(self, depth: int, pair: bool = True) -> None:
        elem = self.pick(self.p.memref_types) if self.flip(30) else self.main
        if elem.is_float and self.float_forbidden:
            elem = self.main
        order = self.int(1, 2)
        view = self.new_alloca(elem, tuple(self.dim(self.p.max_size) for _ in range(order)))
        buf = view.buf
        how = self.weighted({"fill": 4, "collective": 3, "none": 1})
        try:
            if how == "fill":
                self.foreach_over(view, depth, fill=True)
                buf.initialised = True
            elif how == "collective":
                gemm = order == 2 and self.flip(self.p.alloca_gemm_percent) \
                    and self.p.collective_weights.get("gemm", 0) > 0
                self.gen_collective(depth, dest=view, kind="gemm" if gemm else None)
        except Unavailable:
            pass
        if pair and self.flip(self.p.alloca_pair_percent):
            self.gen_alloca(depth, pair=False)  # two allocas live at once

    def new_alloca(self, elem: ScalarType, shape: tuple[int, ...]) -> View:
        """An uninitialised alloca of this shape (strides packed or padded): its whole view."""
        if self.if_depth and self.excludes("alloca-in-if"):
            raise Unavailable("the target allocates nothing inside an if")
        strides = [self.int(1, 2)]
        for k in range(1, len(shape)):
            strides.append(strides[-1] * shape[k - 1] + self.int(0, 2) * int(self.flip(30)))
        t = MemrefType.make(elem, shape, None if self.flip(60) else strides)
        r = self.fresh("t")
        self.emit(ir.Alloca(r, t))
        buf = Buf(r.name, "alloca", elem, cap=int_cap(elem) if elem.is_int else 0,
                  initialised=False)
        buf.level, buf.alive = len(self.scopes), True
        self.bufs.append(buf)
        view = self.add_view(View(r, t, tuple((n, n) for n in shape), tuple(t.stride), buf,
                                  full=True))
        self.roots[id(buf)] = view
        return view

    # --- collectives ------------------------------------------------------------------------

    def output_roots(self) -> list[View]:
        """The whole views of the live, initialised buffers a collective may write."""
        return [v for v in self.visible_views()
                if v.buf.kind in ("own", "atomic", "alloca") and v.buf.alive
                and self.roots.get(id(v.buf)) is v and v.buf.initialised]

    def input_view(self, elem: ScalarType, dims: list, *exclude: Buf) -> View:
        def ok(v: View) -> bool:
            e = v.type.element
            same = e is elem or (elem.is_float and e.is_float and self.p_mixed)
            return same and all(v.buf is not x for x in exclude) and v.type.order >= len(dims)

        cands = [v for v in self.readable_views() if ok(v)]
        for _ in range(2):  # a view too small for these sizes: another one
            try:
                return self.derive_view(self.pick(cands), len(dims), exact=dims)
            except Unavailable:
                pass
        return self.derive_view(self.pick(cands), len(dims), exact=dims)

    def scale(self, t: ScalarType, role: str, atomic_shared: bool) -> Scal:
        if role == "beta" and atomic_shared:
            return self.const(t, 1)
        if t.is_float:
            if self.flip(25):
                vals = [s for s in self.visible_scalars(t)]
                if vals:
                    return self.pick(vals)
            return self.const(t, self.pick([1.0, 0.0, -1.0, 0.5, 2.0, -1.5])
                              if role == "beta" else self.pick([1.0, -1.0, 0.5, 2.0, 0.0]))
        if self.flip(20):
            vals = [s for s in self.visible_scalars(t) if s.rng.mag <= 2]
            if vals and role == "alpha":
                return self.pick(vals)
        if role == "beta":
            return self.const(t, self.pick([0, 1, 2] if not t.is_signed else [0, 1, -1, 2]))
        return self.const(t, self.pick([1, 2, 0] if not t.is_signed else [1, -1, 2, 0]))

    def gen_collective(self, depth: int, dest: Optional[View] = None,
                       kind: Optional[str] = None) -> None:
        for attempt in range(3):  # shapes may not fit: try another kind/output
            try:
                return self.try_collective(dest, kind)
            except _MixedSizes as e:
                if attempt == 2:
                    raise
                # the same kind again: a profile without mixed sizes (the tinytc ones, where
                # most gemms and gemvs meet it) would otherwise draw the kinds far from their
                # weights, gemm.atomic almost never
                kind = kind or e.kind
            except Unavailable:
                if attempt == 2:
                    raise

    def try_collective(self, dest: Optional[View], kind: Optional[str] = None) -> None:
        kind = kind or self.weighted(self.p.collective_weights)
        if dest is not None:  # initialise an alloca: the whole view, beta = 0
            c = dest
            if c.type.order not in self.orders(kind):
                fits = {k: w for k, w in self.p.collective_weights.items()
                        if c.type.order in self.orders(k)}
                kind = self.weighted(fits)  # Unavailable when none is enabled
            shared = False
        else:
            roots = self.output_roots()
            order = self.pick(self.orders(kind))
            root = self.pick([r for r in roots if r.type.order >= order] or roots)
            exact = None
            top = max((lo for lo, _ in root.dims), default=0)
            if order and top >= 3 and self.flip(self.p.wide_rows_percent):
                # 3 rows or more: past the work-group and register-tile sizes the lowering
                # picks for them (see wg_below_rows), from any offset of the root; mostly
                # with rows of the root left after them, so a write past the last row lands
                # on an element that is compared
                rows = self.int(3, top - 1 if top >= 4 and self.flip(75) else top)
                exact = [rows] + [None] * (order - 1)
            c = None
            if exact is not None and order == 2 and self.flip(self.p.wide_cols_percent):
                # several columns too, mostly with columns of the root left after them: the
                # register tiles of a gemm overrun C in both modes (both store guards), and
                # a write past the last row or column lands on an element that is compared
                lows = sorted(lo for lo, _ in root.dims)
                ctop = lows[-2] if len(lows) >= 2 else 0
                if ctop >= 2:
                    cols = self.int(2, ctop - 1 if ctop >= 3 and self.flip(60) else ctop)
                    try:
                        c = self.derive_view(root, order, [exact[0], cols])
                        self.stats["wide-cols"] += 1
                    except Unavailable:
                        pass  # the two sizes fit no pair of modes in order: rows only
            if c is None:
                c = self.derive_view(root, order, exact)
            shared = root.buf.kind == "atomic"
        if any(lo < 1 for lo, _ in c.dims):
            raise Unavailable("empty output")
        elem = c.type.element
        if elem.is_float and not self.float_collectives:
            raise Unavailable("float collectives are off in this function")
        self.p_mixed = elem.is_float and self.flip(20)
        dims = [exact_dim(self, c, m) for m in range(c.type.order)]
        k = self.pick(self.big_sizes()) if self.big else self.int(1, self.p.max_k)
        trans_a, trans_b = self.flip(40), self.flip(40)
        if kind == "gemm" and elem is ScalarType.f64 and not self.p_mixed \
                and all(isinstance(d, int) for d in dims) \
                and self.flip(self.p.streamed_gemm_percent):
            k, trans_a, trans_b, a, b = self.streamed_gemm(dims[0], dims[1], c.buf)
        else:  # the inputs' shapes as the class declares them (RELATIONS, REDUCED)
            cls = COLLECTIVE_KINDS[kind]
            k = k if cls.REDUCED else 1
            transposed = dict(zip(cls.flags(), (trans_a, trans_b)))
            views = []
            for f, shape in cls.input_shapes(tuple(dims), k).items():
                t = transposed.get(cls.role(f).trans, False) and len(shape) == 2
                views.append(self.input_view(elem, _op_dims(*shape, t) if t else list(shape),
                                             c.buf))
            a, b = (*views, None)[:2]
        floats = [t for t in (ScalarType.f32, ScalarType.f64) if t in self.p.scalar_types]
        alpha_t = elem if not (elem.is_float and self.flip(20)) else self.pick(floats)
        beta_t = elem if not (elem.is_float and self.flip(20)) else self.pick(floats)
        alpha = self.scale(alpha_t, "alpha", shared)
        # a chain needs C written whole: beta 0, not atomic
        chain = kind == "gemm" and not shared and c.buf.readable \
            and self.flip(self.p.gemm_chain_percent)
        beta = self.const(beta_t, 0) if dest is not None or chain \
            else self.scale(beta_t, "beta", shared)
        atomic = shared or (c.buf.kind == "own" and not chain and self.flip(20))
        if elem.is_int:
            self.account(c.buf, kind, k, alpha, beta, a, b, shared)
        inst = self.collective_inst(kind, atomic, trans_a, trans_b, alpha, a, b, beta, c)
        self.emit(inst)
        self.last_parallel = c
        self.note_rows(kind, c)
        if dest is not None and len(self.scopes) == c.buf.level:
            c.buf.initialised = True
        if chain and c.buf.initialised:
            try:
                self.gen_chain(c, (a.buf, b.buf))
            except Unavailable:
                pass

    def streamed_gemm(self, m: int, n: int, out: Buf) -> tuple:
        """(K, trans_a, trans_b, A, B) of an f64 gemm of static shape with K >= 8 whose op(A)
        (A transposed), op(B) (B itself) or both are streamed operands contiguous along K
        (`streamed_operand`): the shape of application kernels, which tensor-core lowerings
        load two K steps at a time. K covers whole blocks of 8, a step of 4 after them and a
        partial step. The other operand comes from the visible inputs when one is large
        enough, else it is streamed too, in its own orientation."""
        k = self.pick(STREAMED_K)
        which = self.pick(["a", "b", "both"])
        trans_a = True if which != "b" else self.flip(40)
        trans_b = False if which != "a" else self.flip(40)
        operands = []
        for name, (r, c) in (("a", _op_dims(m, k, trans_a)), ("b", _op_dims(k, n, trans_b))):
            if which in (name, "both"):
                operands.append(self.streamed_operand(r, c))
                continue
            try:
                operands.append(self.input_view(ScalarType.f64, [r, c], out))
            except Unavailable:
                operands.append(self.streamed_operand(r, c))
        return (k, trans_a, trans_b, *operands)

    def note_rows(self, kind: str, c: View) -> None:
        if c.type.order and c.type.shape[0] is not None:
            self.rows.append((kind, c.type.shape[0]))  # for the work-group size attribute
        if kind == "gemm" and c.type.element is ScalarType.f64:
            self.f64_gemms += 1  # whole-warp groups more often (tensor-core paths)

    def gen_chain(self, t: View, first_reads: tuple) -> None:
        """A gemm reading `t` as its A right after the gemm that wrote all of `t` with beta 0.
        Compilers that keep such an intermediate in registers instead of memory (tlgpu's
        gemm pairs, chains.py) run different code for the pair, checked only when kernels
        hold it. Its output and B avoid t's memory and its output avoids what the first
        gemm read, as fusion needs; sometimes A is t transposed (a near miss)."""
        elem = t.type.element
        trans_a = self.flip(15)
        m, k = (exact_dim(self, t, 1), exact_dim(self, t, 0)) if trans_a else \
            (exact_dim(self, t, 0), exact_dim(self, t, 1))
        roots = [v for v in self.output_roots() if v.buf is not t.buf
                 and (v.type.element is elem or v.type.element.is_float and elem.is_float)]
        roots = [v for v in roots if all(v.buf is not r for r in first_reads)] or roots
        c = None
        if roots and self.flip(70):
            try:
                c = self.derive_view(self.pick(roots), 2, [m, None])
            except Unavailable:
                pass  # no root has m rows
        if c is None:  # into an alloca of its own, read back at the end of its region
            if not isinstance(m, int):
                raise Unavailable("dynamic rows")
            c = self.new_alloca(elem, (m, self.dim(self.p.max_size)))
        if any(lo < 1 for lo, _ in c.dims):
            raise Unavailable("empty output")
        n = exact_dim(self, c, 1)
        trans_b = self.flip(40)
        self.p_mixed = c.type.element is not elem  # floats of two precisions
        elem = c.type.element
        b = self.input_view(elem, _op_dims(k, n, trans_b), c.buf, t.buf)
        shared = c.buf.kind == "atomic"
        alpha = self.scale(elem, "alpha", shared)
        fresh = not c.buf.initialised
        beta = self.const(elem, 0) if fresh else self.scale(elem, "beta", shared)
        atomic = shared or (c.buf.kind == "own" and self.flip(20))
        if elem.is_int:
            self.account(c.buf, "gemm", size_bound(k), alpha, beta, t, b, shared)
        self.emit(self.collective_inst("gemm", atomic, trans_a, trans_b, alpha, t, b, beta, c))
        self.stats["gemm-chain"] += 1
        self.last_parallel = c
        self.note_rows("gemm", c)
        if fresh:
            c.buf.initialised = True

    def account(self, out: Buf, kind: str, k: int, alpha: Scal, beta: Scal, a: View,
                b: Optional[View], shared: bool) -> None:
        """Integer collectives: prove the result fits, update the sink bound."""
        cap_a = a.buf.cap
        cap_b = 1 if b is None else b.buf.cap
        contrib = alpha.rng.mag * k * cap_a * cap_b
        bm = beta.rng.mag
        if out.readable:
            if bm != 0 or contrib > out.cap:
                raise Unavailable("integer result could exceed the cap")
            return
        acc = out.acc
        reps = self.mult * (self.groups if shared else 1)
        for _ in range(reps):
            acc = max(acc, contrib) if bm == 0 else bm * acc + contrib
            if acc > int_limit(out.elem):
                raise Unavailable("integer sink could overflow")
        out.acc = acc

    def orders(self, kind: str) -> tuple[int, ...]:
        """The output orders a collective may have here (the target's profile may narrow
        them: hadamard on vectors only)."""
        if kind == "hadamard" and self.excludes("hadamard-matrix"):
            return (1,)
        return COLLECTIVE_ORDERS[kind]

    def collective_inst(self, kind, atomic, ta, tb, alpha, a, b, beta, c):
        inst = self._collective_inst(kind, atomic, ta, tb, alpha, a, b, beta, c)
        if self.excludes("mixed-static-dynamic-sizes") and mixed_sizes(inst):
            raise _MixedSizes(kind)  # the caller tries again
        if self.excludes("integer-products") and integer_product(inst):
            raise Unavailable("an integer gemm or gemv")
        if (self.excludes("order0-axpby") or self.excludes("transposed-sum")) and any(
                f.construct in ("order0-axpby", "transposed-sum")
                for f in instruction_violations(inst, self.p.profile)):
            raise Unavailable("an update form the profile leaves out")
        return inst

    def _collective_inst(self, kind, atomic, ta, tb, alpha, a, b, beta, c):
        """The instruction of `kind` from its declared operands: the inputs a (and b), the
        output c, the i-th '.t' flag from (ta, tb)[i], set only on a matrix."""
        cls = COLLECTIVE_KINDS[kind]
        kw = dict(atomic=atomic, alpha=alpha.op, beta=beta.op, alpha_type=alpha.type,
                  beta_type=beta.type)
        fields = (*cls.inputs(), cls.output())
        for f, view in zip(fields, (a, b)[:len(fields) - 1] + (c,)):
            kw[f], kw[f + "_type"] = view.value, view.type
        for r in cls.ROLES:
            if r.trans:
                kw[r.trans] = (ta, tb)[cls.flags().index(r.trans)] and \
                    kw[r.field + "_type"].order == 2
        return cls(**kw)


__all__ = ["BodyGenerator", "int_cap", "int_limit"]
