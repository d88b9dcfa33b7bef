"""Whole generated functions: arguments (types and data), per-work-group views, the body."""

from __future__ import annotations

from typing import Optional

import numpy as np

from fuzz.gen.body import BodyGenerator, int_cap
from fuzz.gen.model import Buf, Scal, View
from fuzz.gen.ranges import FRange, IRange, int_edges
from tlinterp.lang import ir, typerules
from tlinterp.lang.ir import Const, Slice, Value
from tlinterp.lang.types import INDEX, GroupType, MemrefType, ScalarType


def _strides(shape: list[int], padded: bool, pad) -> list[int]:
    if not padded:
        out, acc = [], 1
        for s in shape:
            out.append(acc)
            acc *= s
        return out
    if not shape:
        return []
    out = [pad(1, 2)]
    for k in range(1, len(shape)):
        out.append(out[-1] * shape[k - 1] + pad(0, 2))
    return out


class FunctionGenerator(BodyGenerator):
    def build(self) -> tuple[ir.Function, dict, int]:
        """Draw one function; returns it, its arguments (.npz convention) and the group count."""
        p = self.p
        self.gen_grid()
        floats = [t for t in p.memref_types if t.is_float]
        ints = [t for t in p.memref_types if t.is_int]
        self.main = self.pick(floats if floats and (not ints or self.flip(50)) else ints)
        # integer functions keep float scalar code unrestricted more often (float->int casts)
        self.float_collectives = self.flip(p.float_collective_percent if self.main.is_float
                                           else p.float_collective_percent // 3)
        self.big = self.flip(p.f64_big_shape_percent if self.main is ScalarType.f64
                             else p.big_shape_percent)
        self.data_rng = np.random.default_rng(self.int(0, 2**32 - 1))
        self.arguments: list[ir.Argument] = []
        self.npz: dict[str, np.ndarray] = {}
        self.top: list = []  # per-argument setup emitted at the start of the body

        self.gen_group_index()
        for _ in range(self.int(1, p.max_inputs)):
            self.gen_input()
        for _ in range(self.int(1, p.max_outputs)):
            self.gen_output()
        if self.flip(35):
            self.gen_atomic_sink()
        for _ in range(self.int(0, 2)):
            self.gen_scalar_arg()
        self.gen_block(0, at_least=1)
        wgs = None
        if self.flip(p.f64_gemm_whole_warps_percent if self.f64_gemms
                     else p.whole_warps_percent):  # paths that need whole warps (tensor cores)
            wgs = self.pick([(32, 1), (32, 2), (64, 1)])
            self.stats["wg-whole-warps"] += 1
        elif self.flip(15):
            wgs = (self.pick([1, 2, 4, 8, 16, 32]), self.pick([1, 2, 4]))
        elif self.flip(p.wg_below_rows_percent):
            wgs = self.wg_below_rows()
        if wgs is not None and wgs[0] % p.work_group_size_multiple:
            wgs = None  # the target's sub-groups must tile the first mode: no attribute
        self.finish_witnesses()
        body = ir.Region(self.scopes[0].insts)
        return self.finish(ir.Function(self.fname, tuple(self.arguments), body, wgs))

    def gen_grid(self) -> None:
        """The number of work-groups (`self.groups`)."""
        self.groups = self.int(1, self.p.max_groups)

    def gen_group_index(self) -> None:
        """`self.gid`: the work-group's index in [0, groups), which selects its own slices."""
        gid = self.fresh("gid")
        self.emit(ir.GroupId(gid))
        self.gid = self.add_scalar(Scal(gid, INDEX, IRange(0, self.groups - 1)))
        self.after_gid = len(self.scopes[0].insts)  # where the witness views are cut

    def finish(self, fn: ir.Function) -> tuple[ir.Function, dict, object]:
        """The function, its arguments and what to launch it with (the group count)."""
        return fn, self.npz, self.groups

    def wg_below_rows(self) -> Optional[tuple[int, int]]:
        """A work-group size whose first mode is below a collective's static row count and
        does not divide it (the default geometry covers the rows in one pass): the last
        pass of the work-items and of their register tiles is partial. The rows of a gemm
        when there is one (its register tiles make the coverage a multiple of the
        work-group rows times the tile rows). None when no collective has 3 rows or more."""
        rows = [r for k, r in self.rows if r >= 3]
        gemm = [r for k, r in self.rows if r >= 3 and k == "gemm"]
        if not rows:
            return None
        m = self.pick(gemm or rows)
        self.stats["wg-below-rows"] += 1
        return self.pick([d for d in range(2, m) if m % d]), self.pick([1, 2, 4])

    def finish_witnesses(self) -> None:
        """Declare the witness outputs (memref<T x slots x columns x groups>) now that their
        sizes are known, and cut each work-group's part right after group_id."""
        for kind, (arg, view, slots) in self.witnesses.items():
            wt = self.witness_type(kind)
            t = MemrefType.make(wt, (None, None, None))
            self.arguments.append(ir.Argument(arg, t))
            self.npz[arg.name] = self.data(wt, [slots, self.witness_cols, self.groups])
            whole = Slice(Const(0), None, True)
            inst = ir.Subview(view, arg, (whole, whole, Slice(self.gid.op)), t)
            self.scopes[0].insts.insert(self.after_gid, inst)  # after group_id, before any use
        for arg, sub in self.dumps:  # memref<T x rows [x cols] x groups>, copied over whole
            self.arguments.append(arg)
            self.npz[arg.value.name] = self.data(arg.type.element,
                                                 [*arg.type.shape[:-1], self.groups])
            self.scopes[0].insts.insert(self.after_gid, sub)

    # --- data ---------------------------------------------------------------------------------

    def elem_type(self) -> ScalarType:
        return self.main if self.flip(85) else self.pick(self.p.memref_types)

    def data(self, t: ScalarType, shape, nonfinite: bool = False,
             edge: bool = False) -> np.ndarray:
        """Random argument data; `edge` mixes in the type's edge values (integers) or signed
        zeros and subnormals (floats of functions without float collectives)."""
        r = self.data_rng
        if t.is_float:
            a = r.uniform(-self.p.float_data_max, self.p.float_data_max, shape)
            if r.integers(0, 2):  # short mantissas half of the time: exact products
                a = np.round(a * 8) / 8
            if edge and a.size:
                tiny = float(np.finfo(t.dtype).smallest_subnormal)
                flat = a.reshape(-1)
                pick = r.random(flat.size) < 0.3
                flat[pick] = r.choice([0.0, -0.0, tiny, -tiny, 4 * tiny], int(pick.sum()))
            if nonfinite:
                flat = a.reshape(-1)
                for _ in range(max(1, flat.size // 8)):
                    flat[r.integers(0, flat.size)] = r.choice([np.nan, np.inf, -np.inf])
            return a.astype(t.dtype)
        m = self.p.int_data_max
        lo = -m if t.is_signed else 0
        a = r.integers(lo, m + 1, shape).astype(t.dtype)
        if edge and a.size:
            flat = a.reshape(-1)
            pick = r.random(flat.size) < 0.4
            flat[pick] = r.choice(np.array(int_edges(t), dtype=object), int(pick.sum()))
        return a

    def layout(self, shape: list[int], dyn: list[bool]) -> tuple:
        """(type shape, type strides or None for canonical, concrete strides, strides to
        pass as NAME.strides or None)."""
        kind = self.weighted({"canonical": 5, "static": 2, "dynamic": 2})
        strides = _strides(shape, kind != "canonical", self.int)
        tshape = tuple(None if d else s for s, d in zip(shape, dyn))
        if kind == "canonical":
            return tshape, None, strides, None
        if kind == "static":
            return tshape, tuple(strides), strides, None
        return tshape, tuple(None for _ in shape), strides, strides

    # --- arguments ------------------------------------------------------------------------------

    def arg(self, t) -> ir.Value:
        v = self.fresh("a")
        self.arguments.append(ir.Argument(v, t))
        return v

    def gen_input(self) -> None:
        elem = self.elem_type()
        order = self.int(1, self.p.max_order) if self.flip(95) else 0
        # inputs only need to be large enough for the views cut from them
        # half of them large: gemm and gemv cut two modes of at least M, N or K from one input
        small = self.flip(50)
        shape = [self.pick(self.big_sizes()[-3:]) if self.big else
                 self.int(1 if small else self.p.max_size, self.p.max_size + 2)
                 for _ in range(order)]
        dyn = [self.flip(30) for _ in range(order)]
        nonfinite = elem.is_float and not self.float_collectives and self.flip(
            self.p.nonfinite_percent)
        buf = Buf("", "input", elem, cap=self.p.int_data_max, finite=not nonfinite)
        if elem.is_int and self.flip(self.p.edge_input_percent):
            # any value of the type: integer collectives (which need small data) avoid it
            buf.edge, buf.cap = True, max(abs(x) for x in int_edges(elem))
        elif elem.is_float and not self.float_collectives and self.flip(30):
            buf.edge = True  # signed zeros and subnormals; loads keep the finite range
        self.bufs.append(buf)
        if order and self.flip(25):
            self.gen_group(buf, shape, dyn, nonfinite)
            return
        tshape, tstride, strides, given = self.layout(shape, dyn)
        t = MemrefType.make(elem, tshape, tstride)
        v = self.arg(t)
        buf.name = v.name
        self.npz[v.name] = self.data(elem, shape, nonfinite, buf.edge)
        if given is not None:
            self.npz[f"{v.name}.strides"] = np.array(given, np.int64)
        self.add_view(View(v, t, tuple((s, s) for s in shape), tuple(strides), buf))

    def gen_group(self, buf: Buf, shape, dyn, nonfinite: bool = False,
                  own: bool = False) -> None:
        """A group argument with one member per work-group; dynamic modes may differ in size
        between members. Loads member %gid (outputs) or some member (inputs)."""
        g = self.groups
        sizes = [[self.dim(self.p.max_size) if d else s for s, d in zip(shape, dyn)]
                 for _ in range(g)]
        dyn_modes = [k for k, d in enumerate(dyn) if d]
        if g >= 2 and dyn_modes and all(m == sizes[0] for m in sizes[1:]):
            # members that differ where the type says `?`: code that takes every member's
            # sizes from one member (or from the type) reads or writes the wrong elements
            k = self.pick(dyn_modes)
            top = max(self.p.max_size, sizes[0][k] + 1)
            sizes[0][k] = self.pick([n for n in range(1, top + 1) if n != sizes[1][k]])
            self.stats["mixed-group"] += 1
        big = [max(col) for col in zip(*sizes)]
        mixed = any(len({m[k] for m in sizes}) > 1 for k in range(len(shape)))
        tshape, tstride, strides, given = self.layout(big, dyn)
        concrete = list(strides)
        if mixed and given is None and tstride is None:
            # canonical strides after a varying mode differ between members
            concrete = [s if all(not dyn[j] for j in range(k)) else None
                        for k, s in enumerate(strides)]
        off_dyn = self.flip(40)
        offset = self.int(0, 3)
        if self.excludes("group-offsets"):
            off_dyn, offset = False, 0  # the draws above keep the other choices' sequence
        mt = MemrefType.make(buf.elem, tshape, tstride)
        gt = GroupType(mt, None if off_dyn else offset)
        v = self.arg(gt)
        buf.name = v.name
        datas = [self.data(buf.elem, s, nonfinite, buf.edge) for s in sizes]
        if mixed:
            for i, d in enumerate(datas):
                self.npz[f"{v.name}.{i}"] = d
        else:
            self.npz[v.name] = np.stack(datas)
        if off_dyn:
            self.npz[f"{v.name}.offset"] = np.array(offset, np.int64)
        if given is not None:
            self.npz[f"{v.name}.strides"] = np.array(given, np.int64)
        if own:
            idx = self.gid
        else:
            idx = self.pick([self.gid, self.const(INDEX, 0), "other"])
            if idx == "other":
                idx = self.special_index_other()
        lo_hi = [(min(col), max(col)) for col in zip(*sizes)]  # over all members
        r = self.fresh()
        self.emit(ir.Load(r, v, (idx.op,), gt))
        view = self.add_view(View(r, mt, tuple(lo_hi), tuple(concrete), buf))
        if own:
            self.roots[id(buf)] = view

    def special_index_other(self) -> Scal:
        count = self.group_count()
        s = self.binary("add", self.gid, self.const(INDEX, 1))
        return self.binary("rem", s, count)

    def gen_output(self, elem: Optional[ScalarType] = None, readable: Optional[bool] = None
                   ) -> None:
        """A per-work-group output slice (of `elem`, else mostly the main type; `readable`
        None: floats are, integers mostly)."""
        elem = elem or (self.main if self.flip(80) else self.pick(self.p.memref_types))
        if readable is None:
            readable = elem.is_float or self.flip(60)
        buf = Buf("", "own", elem, cap=int_cap(elem) if elem.is_int else 0,
                  readable=readable, acc=self.p.int_data_max)
        self.bufs.append(buf)
        order = 2 if self.p.max_order >= 2 and self.flip(65) else 1
        shape = [self.dim(self.p.max_size) for _ in range(order)]
        if order == 2 and not self.big and self.p.max_size >= 3 \
                and self.flip(self.p.matrix_output_percent):
            # a real matrix (rows >= 3, columns >= 2): room for collective outputs whose
            # register tiles overrun both modes, with rows and columns left after them
            shape = [self.int(3, self.p.max_size), self.int(2, self.p.max_size)]
            self.stats["matrix-output"] += 1
        dyn = [self.flip(30) for _ in range(order)]
        form = self.weighted({"batched": 4, "group": 3, "flat": 2})
        g = self.groups
        if form == "group":
            self.gen_group(buf, shape, dyn, own=True)
            return
        if form == "flat":
            n = shape[0]
            t = MemrefType.make(elem, (None if dyn[0] else n * g,))
            v = self.arg(t)
            self.npz[v.name] = self.data(elem, [n * g])
            off = self.binary("mul", self.gid, self.const(INDEX, n))
            r = self.fresh()
            inst = ir.Subview(r, v, (Slice(off.op, self.size_operand(n), True),), t)
            vt = typerules.subview_type(inst)
            self.emit(inst)
            view = View(r, vt, ((n, n),), (1,), buf)
        else:
            full = shape + [g]
            tshape, tstride, strides, given = self.layout(full, dyn + [self.flip(50)])
            t = MemrefType.make(elem, tshape, tstride)
            v = self.arg(t)
            self.npz[v.name] = self.data(elem, full)
            if given is not None:
                self.npz[f"{v.name}.strides"] = np.array(given, np.int64)
            slices = [Slice(Const(0), None, True) for _ in shape] + [Slice(self.gid.op)]
            r = self.fresh()
            inst = ir.Subview(r, v, tuple(slices), t)
            vt = typerules.subview_type(inst)
            self.emit(inst)
            view = View(r, vt, tuple((s, s) for s in shape), tuple(strides[:-1]), buf)
        buf.name = v.name
        self.roots[id(buf)] = self.add_view(view)

    def streamed_operand(self, rows: int, cols: int) -> View:
        """An f64 gemm operand of `rows` x `cols` cut from an input argument of its own, as
        application kernels stream theirs: one matrix per work-group (ADER's dQ[:, :, e]) or
        one shared by all (its K[0:r, 0:c]). Mostly its columns have an even static stride and
        its first element an even offset: 16-byte aligned, so a lowering may load two
        consecutive rows at once (tlgpu's `k_pairs` when the rows run along K). Sometimes
        (a near miss it must not take) the stride, the offset or the batch stride is odd."""
        near = self.flip(self.p.streamed_near_miss_percent)
        miss = self.pick(["ld", "offset", "batch"]) if near else None
        off = 1 if miss == "offset" else self.pick([0, 0, 2])
        ld = rows + off + self.int(0, 2)
        if (ld % 2 == 1) != (miss in ("ld", "batch")):
            ld += 1
        width = cols + self.int(0, 1)
        if miss == "batch" and width % 2 == 0:
            width += 1  # odd ld x odd width: every other work-group's matrix is misaligned
        batched = miss == "batch" or self.flip(60)
        shape = [ld, width] + ([self.groups] if batched else [])
        buf = Buf("", "input", ScalarType.f64, cap=self.p.int_data_max)
        self.bufs.append(buf)
        tshape = (ld, width) + ((None if self.flip(50) else self.groups,) if batched else ())
        t = MemrefType.make(ScalarType.f64, tshape)
        # a name of its own: closing regions hand the counter's names out again
        v = Value(f"st{self.stats['streamed-operand'] + self.stats['streamed-operand-near-miss']}")
        self.arguments.append(ir.Argument(v, t))
        buf.name = v.name
        self.npz[v.name] = self.data(ScalarType.f64, shape)
        strides = [1, ld, ld * width][:len(shape)]
        root = self.add_view(View(v, t, tuple((s, s) for s in shape), tuple(strides), buf))
        slices = [Slice(Const(off), Const(rows), True), Slice(Const(0), Const(cols), True)]
        if batched:
            slices.append(Slice(self.gid.op))
        self.stats["streamed-operand-near-miss" if near else "streamed-operand"] += 1
        return self.subview(root, slices, [(rows, rows), (cols, cols)], strides[:2])

    def gen_atomic_sink(self) -> None:
        elem = self.main
        if elem.is_float and not self.float_collectives:
            return
        shape = [self.dim(self.p.max_size) for _ in range(self.int(1, 2))]
        t = MemrefType.make(elem, tuple(shape))
        v = self.arg(t)
        self.npz[v.name] = self.data(elem, shape)
        buf = Buf(v.name, "atomic", elem, readable=False, acc=self.p.int_data_max)
        self.bufs.append(buf)
        view = View(v, t, tuple((s, s) for s in shape), tuple(t.stride), buf)
        self.roots[id(buf)] = self.add_view(view)

    def gen_scalar_arg(self) -> None:
        if self.flip(50):
            n = self.int(1, 6)
            v = self.arg(INDEX)
            self.npz[v.name] = np.array(n, np.int64)
            self.add_scalar(Scal(v, INDEX, IRange(n, n)))
            return
        t = self.pick([s for s in self.p.scalar_types if not s.is_bool])
        x = self.data(t, ())
        if t.is_int and self.flip(self.p.edge_percent):
            x = np.array(self.pick(int_edges(t)), dtype=object).astype(t.dtype)
        v = self.arg(t)
        self.npz[v.name] = np.array(x, t.dtype)
        rng = FRange(float(x), float(x)) if t.is_float else IRange(int(x), int(x))
        self.add_scalar(Scal(v, t, rng))
