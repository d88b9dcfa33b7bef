"""v0.4 cooperative matrices in OpenCL C, per sub-group, exactly as the interpreter computes
them (tlinterp/interp/coopmatrix.py, docs/semantics.md "v0.4 cooperative matrices").

A coopmatrix value is a struct of the work-item's V components (`ctype` names it
tl_cm_<T>_<M>x<N>_<use>; a kernel-scope typedef sized for the function's sub-group size), so
`if` and loops carry it like a scalar. Lane p = subgroup_local_id holds in component v the
entry (row, column) the layout gives (`Layout.position`, written out in C: `_position`);
columns N..J-1 are padding. Operations that need other lanes' entries (mul_add, reduce, a
cast that moves entries) write the sub-group's padded matrices to its part of local memory,
meet at a sub-group barrier (subgroups.subgroup_barrier: the device's, a warp barrier, or the
work-group barrier of a one-sub-group work-group) and read what they need; the rest is
component by component in registers.
"""

from __future__ import annotations

import itertools
from typing import Optional

import numpy as np

from tlgpu.lowering import scalar as S
from tlgpu.lowering.ctypes_map import ctype, literal
from tlgpu.lowering.memory import ALIGN
from tlgpu.lowering.v04 import atomics
from tlgpu.lowering.v04.spmd import LX, quot, rem, subgroup_size
from tlgpu.lowering.v04.subgroups import prologue, scratch, strategy, subgroup_barrier
from tlgpu.lowering.views import Scalar, View
from tlinterp.interp import coopmatrix as cm
from tlinterp.lang import effects, ir
from tlinterp.lang.diagnostics import NotExecutable, not_yet
from tlinterp.lang.types import INDEX, CoopMatrixType, ScalarType

# f32 mul_add from these sources: the interpreter's f32 product AB first, then + C
# (spmd_exec._F32_SOURCES, as its BLAS path computes it); padding columns C's on both paths
_F32_SOURCES = frozenset({"f16", "bf16", "f32"})


def _ty(t: ScalarType) -> str:
    return "i64" if t == INDEX else t.value


def layout(lw, t: CoopMatrixType, inst) -> cm.Layout:
    s = subgroup_size(lw, inst)
    try:
        return cm.Layout(t.rows, t.cols, _ty(t.component), t.use, s)
    except ValueError as e:
        raise lw.error(f"{t}: {e}", inst.span) from None


def declare(lw, t: CoopMatrixType, inst) -> cm.Layout:
    """The layout of t, with the kernel-scope typedef of its struct (and the lane id)."""
    lay = layout(lw, t, inst)
    prologue(lw, f"const int tl_sgp = (int){rem(LX, lay.S)};")
    prologue(lw, f"typedef struct {{ {ctype(t.component)} c[{lay.V}]; }} {ctype(t)};")
    return lay


def _position(lay: cm.Layout, v: str) -> tuple[str, str]:
    """C expressions of (row, column) of component v of lane tl_sgp (Layout.position)."""
    L = f"(tl_sgp + ({v}) * {lay.S})"  # >= 0; I and K1 are powers of two
    i, K1, J = lay.I, lay.K1, lay.J
    q = quot(L, i * K1)  # j + J k2
    k2 = f"({q} / {J})"
    row = f"{rem(L, i)} + {k2} * {i * K1}"
    if K1 > 1:
        row += f" + {rem(quot(L, i), K1)} * {i}"
    return f"({row})", f"({q} - {k2} * {J})"


def _comp(lw, v: ir.Value) -> str:
    return lw.env[v.name].expr


def _result(lw, w, inst, t: CoopMatrixType) -> tuple[str, cm.Layout]:
    lay = declare(lw, t, inst)
    r = f"v_{inst.result.name}"
    w.line(f"{ctype(t)} {r};")
    lw.env[inst.result.name] = Scalar(r, t)
    return r, lay


def _components(lw, w, lay: cm.Layout) -> tuple[str, str, str]:
    """Open a loop over the lane's components: (v, row, column) names."""
    v, r, c = lw.fresh("v"), lw.fresh("row"), lw.fresh("col")
    unroll(lw, w)
    w.open(f"for (int {v} = 0; {v} < {lay.V}; ++{v})")
    row, col = _position(lay, v)
    w.line(f"const int {r} = {row}, {c} = {col};")
    return v, r, c


def unroll(lw, w) -> None:
    """Before a loop over a lane's components (or a mul_add's K): on NVIDIA, unrolled, so that
    constant component indices keep the struct in registers (a loop over a struct's array with
    a variable index puts it in the stack). CPUs (pocl, Intel) keep the loops: their
    compilers vectorise them, and unrolling would only cost build time."""
    if strategy(lw) == "nvidia":
        w.line("#pragma unroll")


# --- values ---------------------------------------------------------------------------------


def lower_constant(lw, w, inst: ir.Constant) -> None:
    if not isinstance(inst.type, CoopMatrixType):
        raise not_yet(inst, "lowered")  # scalar constants are literals (tlinterp/front/migrate.py)
    t = inst.type
    _fill(lw, w, inst, t, literal(inst.value.value, inst.value.is_float, t.component))


def lower_construct(lw, w, inst: ir.CoopConstruct) -> None:
    t = inst.type
    _fill(lw, w, inst, t, lw.operand(inst.value, t.component))


def _fill(lw, w, inst, t: CoopMatrixType, x: str) -> None:
    r, lay = _result(lw, w, inst, t)
    v = lw.fresh("v")
    unroll(lw, w)
    w.line(f"for (int {v} = 0; {v} < {lay.V}; ++{v}) {r}.c[{v}] = {x};")


def lower_extract(lw, w, inst: ir.CoopExtract) -> None:
    lw.define(w, inst.result, inst.type, f"{_comp(lw, inst.operand)}.c[{inst.index}]")


def lower_insert(lw, w, inst: ir.CoopInsert) -> None:
    t = inst.type
    r, _ = _result(lw, w, inst, t)
    w.line(f"{r} = {_comp(lw, inst.operand)};")
    w.line(f"{r}.c[{inst.index}] = {lw.operand(inst.value, t.component)};")


def lower_scale(lw, w, inst: ir.CoopScale) -> None:
    t = inst.type
    r, lay = _result(lw, w, inst, t)
    a, m = lw.operand(inst.scalar, t.component), _comp(lw, inst.matrix)
    v = lw.fresh("v")
    unroll(lw, w)
    w.line(f"for (int {v} = 0; {v} < {lay.V}; ++{v}) "
           f"{r}.c[{v}] = {S.binary('mul', a, f'{m}.c[{v}]', t.component)};")


def lower_prefetch(lw, w, inst: ir.CoopPrefetch) -> None:
    w.line("/* cooperative_matrix_prefetch: a hint */")


def componentwise(rule):
    """Wrap the scalar rule of arith / unary / cast: on coopmatrices the scalar table's
    operation runs on every component (padding included, as the interpreter does)."""

    def lower(lw, w, inst):
        t = inst.to_type if isinstance(inst, ir.Cast) else inst.type
        if not isinstance(t, CoopMatrixType):
            return rule(lw, w, inst)
        if isinstance(inst, ir.Cast):
            return _cast(lw, w, inst)
        r, lay = _result(lw, w, inst, t)
        v = lw.fresh("v")
        if isinstance(inst, ir.Arith):
            a, b = _comp(lw, inst.lhs), _comp(lw, inst.rhs)
            e = S.binary(inst.op, f"{a}.c[{v}]", f"{b}.c[{v}]", t.component)
        else:
            e = S.unary(inst.op, f"{_comp(lw, inst.operand)}.c[{v}]", t.component)
        unroll(lw, w)
        w.line(f"for (int {v} = 0; {v} < {lay.V}; ++{v}) {r}.c[{v}] = {e};")

    return lower


def _cast(lw, w, inst: ir.Cast) -> None:
    src_t, t = inst.from_type, inst.to_type
    src = declare(lw, src_t, inst)
    m = _comp(lw, inst.operand)
    r, lay = _result(lw, w, inst, t)
    conv = lambda e: S.cast(e, src_t.component, t.component)  # noqa: E731
    if all(np.array_equal(a, b) for a, b in zip(src.positions, lay.positions)):
        v = lw.fresh("v")
        unroll(lw, w)
        w.line(f"for (int {v} = 0; {v} < {lay.V}; ++{v}) {r}.c[{v}] = {conv(f'{m}.c[{v}]')};")
        return
    # another use places entries elsewhere (i8 matrix_b): through the sub-group's memory
    T = ctype(src_t.component)
    base = _write_padded(lw, w, inst, [(m, src, T)])[0]
    v, row, col = _components(lw, w, lay)
    w.line(f"{r}.c[{v}] = {conv(f'{base}[{row} * {src.J} + {col}]')};")
    w.close()
    subgroup_barrier(lw, w, inst)


def _write_padded(lw, w, inst, mats) -> list[str]:
    """Write each (value, layout, C type) as its padded M x J matrix (row-major) into the
    sub-group's local memory, then meet at a sub-group barrier: the local pointers. The
    caller reads, then ends with another sub-group barrier (the memory is reused)."""
    offs, total = [], 0
    for _, lay, _ in mats:
        offs.append(total)
        total += -(-lay.M * lay.J * np.dtype(lay_dtype(lay)).itemsize // ALIGN) * ALIGN
    base = scratch(lw, total)
    ptrs = []
    for (m, lay, T), off in zip(mats, offs):
        p = lw.fresh("cm")
        w.line(f"local {T}* {p} = (local {T}*)({base} + {off});")
        ptrs.append(p)
        v, row, col = _components(lw, w, lay)
        w.line(f"{p}[{row} * {lay.J} + {col}] = {m}.c[{v}];")
        w.close()
    subgroup_barrier(lw, w, inst)
    return ptrs


def lay_dtype(lay: cm.Layout):
    from tlinterp.interp import lowp

    return lowp.dtype(lay.ty)


# --- memory -----------------------------------------------------------------------------------


def _entry(lw, inst, lay: cm.Layout, view: View, row: str, col: str) -> tuple[str, str]:
    """(the C condition that entry (row, col) is taken, the element's index list as text):
    not padding, and inside the memref on each checked side (Access in coopmatrix.py)."""
    x, y = lw.index(inst.x), lw.index(inst.y)
    if inst.trans:
        i0, i1 = f"({x} + {col})", f"({y} + {row})"
    else:
        i0, i1 = f"({x} + {row})", f"({y} + {col})"
    in0 = f"({i0} >= 0 && {i0} < {view.shape[0]})"
    in1 = f"({i1} >= 0 && {i1} < {view.shape[1]})"
    row_ok, col_ok = (in1, in0) if inst.trans else (in0, in1)
    cond = [f"{col} < {lay.N}"]
    if inst.checked in ("rows", "both"):
        cond.append(row_ok)
    if inst.checked in ("cols", "both"):
        cond.append(col_ok)
    return " && ".join(cond), view.offset([i0, i1])


def lower_load(lw, w, inst: ir.CoopLoad) -> None:
    lw.coop_loaded[inst.result.name] = inst  # as lowered: a mul_add reading B reads it so
    t = inst.type
    view = lw.view(inst.operand)
    lw.access(w, {view.root}, set())
    r, lay = _result(lw, w, inst, t)
    v, row, col = _components(lw, w, lay)
    cond, off = _entry(lw, inst, lay, view, row, col)
    zero = literal(0, False, t.component)
    w.line(f"{r}.c[{v}] = ({cond}) ? ({ctype(t.component)}){view.ptr}[{off}] : {zero};")
    w.close()


def lower_store(lw, w, inst: ir.CoopStore) -> None:
    view = lw.view(inst.operand)
    lw.access(w, set(), {view.root})
    m = lw.env[inst.value.name]
    lay = layout(lw, m.type, inst)
    v, row, col = _components(lw, w, lay)
    cond, off = _entry(lw, inst, lay, view, row, col)
    w.line(f"if ({cond}) {view.ptr}[{off}] = {m.expr}.c[{v}];")
    w.close()


def lower_atomic_update(lw, w, inst: ir.CoopAtomicUpdate) -> None:
    """Each taken component an atomic read-modify-write of its element, returning the old
    value; 0 in components not taken (spmd_exec._atomic_update)."""
    t = inst.type
    view = lw.view(inst.operand)
    lw.access(w, {view.root}, {view.root})
    el = view.elem
    if el.is_complex and (inst.op in ("max", "min") or el is ScalarType.c64):
        what = ("of complex elements (no order on complex numbers)" if inst.op in ("max", "min")
                else "on c64 elements (no 16-byte compare-and-swap)")
        raise lw.error(f"not yet lowered: cooperative_matrix_atomic_{inst.op} {what}", inst.span)
    # the atomics of atomic_add|max|min (every element type they take, the instruction's
    # order and scope, fences on OpenCL C 1.2 devices)
    h, order, scope = atomics.setup(lw, inst, "update")
    name = h.update(inst.op, view.space, el, order, scope)
    m = _comp(lw, inst.value)
    atomics.fence_before(lw, w, inst)
    r, lay = _result(lw, w, inst, t)
    v, row, col = _components(lw, w, lay)
    cond, off = _entry(lw, inst, lay, view, row, col)
    zero = literal(0, False, t.component)
    w.line(f"{r}.c[{v}] = ({cond}) ? {name}({view.ptr} + {off}, {m}.c[{v}]) : {zero};")
    w.close()
    atomics.fence_after(lw, w, inst)


# --- across the sub-group ---------------------------------------------------------------------


def _owns_rows(lay: cm.Layout) -> bool:
    """Lane p holds rows p, p + S, ... whole and nothing else: component k2 J + n is entry
    (p + k2 S, n), and J = N (no padding). True for every matrix_a and matrix_acc whose rows
    are a multiple of S."""
    return lay.M % lay.S == 0 and lay.K1 == 1


def _region_of(body: ir.Region, inst) -> Optional[ir.Region]:
    todo = [body]
    while todo:
        region = todo.pop()
        if any(i is inst for i in region.instructions):
            return region
        for i in region.instructions:
            todo.extend(ir.regions_of(i))
    return None


def _quiet(inst) -> bool:
    """inst (nested regions included) writes no memory (tlinterp.lang.effects: stores and
    atomic updates) and synchronises with no other work-item (barriers, atomic loads): memory
    read before it reads the same after it."""
    for i in itertools.chain([inst], *(ir.walk(r) for r in ir.regions_of(inst))):
        if isinstance(i, (ir.Barrier, ir.AtomicLoad)) or (isinstance(i, ir.CoopLoad)
                                                           and i.atomic):
            return False
        try:
            if effects.effect(i).writes is not None:
                return False
        except NotExecutable:  # an instruction the effects table does not analyse: it may
            return False
    return True


def _source_load(lw, inst: ir.CoopMulAdd) -> Optional[ir.CoopLoad]:
    """B's cooperative_matrix_load when it sits in the mul_add's own region with only quiet
    instructions between: then B's entries can be read from memory where the mul_add needs
    them (the same values), instead of moving the loaded matrix between lanes."""
    region = _region_of(lw.fn.body, inst)
    if region is None:
        return None
    insts = region.instructions
    k = next(j for j, i in enumerate(insts) if i is inst)
    for i in reversed(insts[:k]):
        if isinstance(i, ir.CoopLoad) and i.result.name == inst.b.name:
            return None if i.atomic else i
        if inst.b.name in {v.name for v in ir.results_of(i)} or not _quiet(i):
            return None
    return None


def _mul_add_rows(lw, w, inst: ir.CoopMulAdd, fast: bool, operands, layouts) -> bool:
    """mul_add when A, C and D own their rows (_owns_rows): lane p computes its rows from its
    own A components and B's entries, read from memory (_source_load) or from B written once
    to the sub-group's local memory, k outer and n inner (each entry's sum still in k order,
    the reference's rounding), no other lane's A. False when the layouts do not fit.
    `operands`, `layouts`: A, B, C's values and their declared layouts."""
    (a, b, c), (la, lb, lc) = operands, layouts
    t = inst.type
    if not all(_owns_rows(x) for x in (la, lc, layout(lw, t, inst))):
        return False
    ta, tb, tc, td = a.type.component, b.type.component, c.type.component, t.component
    Tc, K, N = ctype(tc), la.N, lc.N
    load = _source_load(lw, inst)
    if load is not None:
        load = lw.coop_loaded.get(load.result.name, load)
        view = lw.view(load.operand)
        zero = literal(0, False, tb)

        def entry(k: str, n: str) -> str:  # in C's type
            cond, off = _entry(lw, load, lb, view, k, n)
            if tb == ScalarType.f16 and tc == ScalarType.f32 and view.space == "global":
                # the device's conversion (exact; OpenCL 1.2 core, no cl_khr_fp16): the
                # value only enters a product, where a NaN's payload is not kept anyway
                return (f"(({cond}) ? vload_half({off}, (const global half*){view.ptr}) "
                        f": {literal(0, True, tc)})")
            return S.cast(f"(({cond}) ? ({ctype(tb)}){view.ptr}[{off}] : {zero})", tb, tc)
    else:
        (pb,) = _write_padded(lw, w, inst, [(b.expr, lb, ctype(tb))])

        def entry(k: str, n: str) -> str:
            return S.cast(f"{pb}[{k} * {lb.J} + {n}]", tb, tc)
    r, lay = _result(lw, w, inst, t)
    k2, k, n, ak, acc = (lw.fresh(x) for x in ("k2", "k", "n", "ak", "acc"))
    unroll(lw, w)
    w.open(f"for (int {k2} = 0; {k2} < {lay.K}; ++{k2})")
    w.line(f"{Tc} {ak}[{K}], {acc}[{N}];")
    unroll(lw, w)
    w.line(f"for (int {k} = 0; {k} < {K}; ++{k}) "
           f"{ak}[{k}] = {S.cast(f'{a.expr}.c[{k2} * {K} + {k}]', ta, tc)};")
    unroll(lw, w)
    start = literal(0, True, tc) if fast else f"{c.expr}.c[{k2} * {N} + {n}]"
    w.line(f"for (int {n} = 0; {n} < {N}; ++{n}) {acc}[{n}] = {start};")
    # K stays a loop: unrolled with the n loop inside, NVIDIA's build of the attention kernel
    # took over 100 s; with only n unrolled it builds in 3 s and runs in 4.2 ms (5.2 with
    # nothing unrolled; H200, T = 2048)
    w.open(f"for (int {k} = 0; {k} < {K}; ++{k})")
    prod = S.binary("mul", f"{ak}[{k}]", entry(k, n), tc)
    sum_ = (S.binary("add", f"{acc}[{n}]", prod, tc) if fast
            else S.binary("add", prod, f"{acc}[{n}]", tc))
    unroll(lw, w)
    w.line(f"for (int {n} = 0; {n} < {N}; ++{n}) {acc}[{n}] = {sum_};")
    w.close()
    unroll(lw, w)
    cn = f"{c.expr}.c[{k2} * {N} + {n}]"
    out = S.binary("add", f"{acc}[{n}]", cn, tc) if fast else \
        (S.cast(f"{acc}[{n}]", tc, td) if td != tc else f"{acc}[{n}]")
    w.line(f"for (int {n} = 0; {n} < {N}; ++{n}) {r}.c[{k2} * {N} + {n}] = {out};")
    w.close()
    if load is None:
        subgroup_barrier(lw, w, inst)
    return True


def lower_mul_add(lw, w, inst: ir.CoopMulAdd) -> None:
    """D = AB + C with the interpreter's order: per entry, from C, k = 0, 1, ... in C's type
    (products and sums rounded); f32 from f16/bf16/f32 sources as AB, then + C."""
    a, b, c = (lw.env[x.name] for x in (inst.a, inst.b, inst.c))
    la, lb, lc = (declare(lw, x.type, inst) for x in (a, b, c))
    ta, tb, tc = (x.type.component for x in (a, b, c))
    t = inst.type
    td = t.component
    fast = lc.ty == td.value == "f32" and la.ty in _F32_SOURCES and lb.ty in _F32_SOURCES
    if lw.config.coop_rows and _mul_add_rows(lw, w, inst, fast, (a, b, c), (la, lb, lc)):
        return
    pa, pb = _write_padded(lw, w, inst, [(a.expr, la, ctype(ta)), (b.expr, lb, ctype(tb))])
    r, lay = _result(lw, w, inst, t)
    K, N = la.N, lc.N
    v, row, col = _components(lw, w, lay)
    acc, k = lw.fresh("acc"), lw.fresh("k")
    Tc = ctype(tc)
    ak = S.cast(f"{pa}[{row} * {la.J} + {k}]", ta, tc)
    bk = S.cast(f"{pb}[{k} * {lb.J} + {col}]", tb, tc)
    prod = S.binary("mul", ak, bk, tc)
    if fast:
        w.open(f"if ({col} < {N})")
        w.line(f"{Tc} {acc} = 0.0f;")
        w.line(f"for (int {k} = 0; {k} < {K}; ++{k}) {acc} = {S.binary('add', acc, prod, tc)};")
        w.line(f"{r}.c[{v}] = {S.binary('add', acc, f'{c.expr}.c[{v}]', tc)};")
        w.close("} else {")
        w.depth += 1
        w.line(f"{r}.c[{v}] = {c.expr}.c[{v}];")
        w.close()
    else:
        w.line(f"{Tc} {acc} = {c.expr}.c[{v}];")
        # padding columns keep C's value (coopmatrix.mul_add's rule)
        w.line(f"if ({col} < {N}) for (int {k} = 0; {k} < {K}; ++{k}) "
               f"{acc} = {S.binary('add', prod, acc, tc)};")
        w.line(f"{r}.c[{v}] = {S.cast(acc, tc, td) if td != tc else acc};")
    w.close()
    subgroup_barrier(lw, w, inst)


def lower_reduce(lw, w, inst: ir.CoopReduce) -> None:
    """`.row`: each row a left fold over its columns; `.column`: lane p folds rows p, p+S,
    ... and the S partials meet in a pairwise tree (coopmatrix.reduce)."""
    m = lw.env[inst.operand.name]
    src = declare(lw, m.type, inst)
    t = inst.type
    T = ctype(t.component)
    f = lambda a, b: S.binary(inst.op, a, b, t.component)  # noqa: E731
    if inst.mode == "row" and lw.config.coop_rows and _owns_rows(src) \
            and _owns_rows(layout(lw, t, inst)):
        # the lane holds its rows whole: the same left fold, in registers
        r, lay = _result(lw, w, inst, t)
        k2, n, acc = lw.fresh("k2"), lw.fresh("n"), lw.fresh("acc")
        unroll(lw, w)
        w.open(f"for (int {k2} = 0; {k2} < {src.K}; ++{k2})")
        w.line(f"{T} {acc} = {m.expr}.c[{k2} * {src.N}];")
        unroll(lw, w)
        w.line(f"for (int {n} = 1; {n} < {src.N}; ++{n}) "
               f"{acc} = {f(acc, f'{m.expr}.c[{k2} * {src.N} + {n}]')};")
        w.line(f"{r}.c[{k2}] = {acc};")
        w.close()
        return
    (p,) = _write_padded(lw, w, inst, [(m.expr, src, ctype(m.type.component))])
    r, lay = _result(lw, w, inst, t)
    zero = literal(0, False, t.component)
    v, row, col = _components(lw, w, lay)
    acc = lw.fresh("acc")
    if inst.mode == "row":
        n = lw.fresh("n")
        w.open(f"if ({col} < {lay.N})")
        w.line(f"{T} {acc} = {p}[{row} * {src.J}];")
        w.line(f"for (int {n} = 1; {n} < {src.N}; ++{n}) "
               f"{acc} = {f(acc, f'{p}[{row} * {src.J} + {n}]')};")
    else:
        Sg, s, b, step, q = src.S, lw.fresh("s"), lw.fresh("b"), lw.fresh("w"), lw.fresh("q")
        w.open(f"if ({col} < {lay.N})")
        w.line(f"{T} {acc}[{Sg}];")
        w.open(f"for (int {s} = 0; {s} < {Sg}; ++{s})")
        w.line(f"{acc}[{s}] = {p}[{s} * {src.J} + {col}];")
        w.line(f"for (int {b} = 1; {b} < {src.M // Sg}; ++{b}) {acc}[{s}] = "
               f"{f(f'{acc}[{s}]', f'{p}[({b} * {Sg} + {s}) * {src.J} + {col}]')};")
        w.close()
        w.line(f"for (int {step} = 1; {step} < {Sg}; {step} *= 2)")
        w.line(f"    for (int {q} = 0; {q} < {Sg}; {q} += 2 * {step}) "
               f"{acc}[{q}] = {f(f'{acc}[{q}]', f'{acc}[{q} + {step}]')};")
        acc = f"{acc}[0]"
    w.line(f"{r}.c[{v}] = {acc};")
    w.close("} else {")
    w.depth += 1
    w.line(f"{r}.c[{v}] = {zero};")
    w.close()
    w.close()
    subgroup_barrier(lw, w, inst)


def lower_apply(lw, w, inst: ir.CoopApply) -> None:
    """The region once per matrix entry the lane holds, with (%i, %j) its position and %val
    its value; padding components become 0 (coopmatrix.apply_result)."""
    t = inst.type
    m = _comp(lw, inst.operand)
    r, lay = _result(lw, w, inst, t)
    v, row, col = _components(lw, w, lay)
    w.open(f"if ({col} < {lay.N})")
    out = ir.Value(lw.fresh("applied"))
    w.line(f"{ctype(t.component)} v_{out.name};")
    for var_, e, vt in ((inst.row, row, ScalarType.i32), (inst.col, col, ScalarType.i32),
                        (inst.val, f"{m}.c[{v}]", t.component)):
        w.line(f"const {ctype(vt)} v_{var_.name} = {e};")
        lw.env[var_.name] = Scalar(f"v_{var_.name}", vt)
    lw.branch(w, inst.body, (out,))
    w.line(f"{r}.c[{v}] = v_{out.name};")
    w.close("} else {")
    w.depth += 1
    w.line(f"{r}.c[{v}] = {literal(0, False, t.component)};")
    w.close()
    w.close()


RULES = {
    ir.CoopLoad: lower_load, ir.CoopStore: lower_store,
    ir.CoopAtomicUpdate: lower_atomic_update, ir.CoopConstruct: lower_construct,
    ir.CoopExtract: lower_extract, ir.CoopInsert: lower_insert, ir.CoopMulAdd: lower_mul_add,
    ir.CoopPrefetch: lower_prefetch, ir.CoopReduce: lower_reduce, ir.CoopScale: lower_scale,
    ir.CoopApply: lower_apply, ir.Constant: lower_constant,
}

__all__ = ["RULES", "componentwise", "layout", "declare"]
