"""The cooperative-matrix steps and the `foreach_tile` of the SPMD kernel builder
(`fuzz.gen.spmd`): each function takes the builder and emits into its current region.

Coopmatrix rules kept here (docs/semantics.md "v0.4 cooperative matrices"): rows are powers of
two (multiples of the sub-group size for mul_add's A and C and for reduce); positions and
scalars are uniform per sub-group; loads are in bounds except along a checked direction;
stores write a block of their own per (work-group, sub-group), truncated only along a checked
direction at the memref's end; mul_add promotes A x B to C (v0.4's partial order) and keeps
K * |A| |B| + |C| exact in C's type (the model of fuzz/gen/spmd_model.py).
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

from fuzz.gen.spmd_base import BuilderBase
from fuzz.gen.spmd_model import (
    LANE,
    PRECISION,
    SG,
    CVal,
    Val,
    fits,
    literal,
    value_grain,
    value_mag,
)
from fuzz.profiles import BF16_CONVERSIONS
from tlinterp.checker.v04 import promotable, promote
from tlinterp.interp.coopmatrix import Layout
from tlinterp.lang import ir
from tlinterp.lang.ir import Region, Value
from tlinterp.lang.types import INDEX, CoopMatrixType, MemrefType, ScalarType

# the builder's shared part (fuzz.gen.spmd, which builds on it, imports this module)
_Builder = BuilderBase


I32 = ScalarType.i32
K_SIZES = (1, 2, 4, 8, 16)


_NARROW = (ScalarType.f16, ScalarType.bf16)  # A's and B's types a wide accumulator tests


def _rows(b: _Builder) -> int:
    return b.pick([1 << k for k in range(0, (2 * b.S).bit_length())])


def _cols(b: _Builder) -> int:
    return b.int(1, b.p.coop_max_cols)


def _add(b: _Builder, c: CVal) -> CVal:
    b.cscopes[-1].append(c)
    return c


def _position(b: _Builder) -> tuple[Value, int]:
    """A sub-group-uniform index and its largest value: a constant or the sub-group id."""
    if b.flip(30):
        return b.sidi.op, b.nsg - 1
    c = b.int(0, 2)
    return b.const(c, INDEX).op, c


def load(b: _Builder, ct: CoopMatrixType, mag: Optional[float] = None,
         grain: int = 0, at: Optional[tuple[Value, int]] = None) -> CVal:
    """A new input memref and a load of ct from it, `.t` and checked flags drawn; along a
    checked direction the memref may end inside the matrix. `at`: the first position (a
    sub-group-uniform index and its largest value) instead of a drawn one."""
    t = ct.component
    if mag is None:
        mag, grain = b.data_model(t)
    trans = b.flip(30)
    checked = b.pick((None, None, "rows", "cols", "both"))
    (x, xmax), (y, ymax) = at or _position(b), _position(b)
    ext = (ct.rows, ct.cols) if not trans else (ct.cols, ct.rows)
    dirs = ("rows", "cols") if not trans else ("cols", "rows")
    shape = []
    for k, top in enumerate((xmax, ymax)):
        if checked in (dirs[k], "both") and b.flip(60):
            shape.append(b.int(1, top + ext[k]))
        else:
            shape.append(top + ext[k] + b.int(0, 2))
    mt = b.strided(t, tuple(shape))
    arg = b.new_arg("B", mt, b.data(t, tuple(shape), mag, grain))
    r = b.fresh("M")
    b.emit(ir.CoopLoad(r, arg, x, y, ct, trans, checked))
    b.stats["coop.load." + ct.use] += 1
    b.stats["coop.load" + (".t" if trans else ".n") + (f".{checked}" if checked else "")] += 1
    if b.flip(15):
        b.emit(ir.CoopPrefetch(b.int(0, 2), arg, x, y, ct.rows, ct.cols))
        b.stats["coop.prefetch"] += 1
    return _add(b, CVal(r, ct, mag, grain))


def construct(b: _Builder, ct: CoopMatrixType) -> CVal:
    t = ct.component
    v = b.pick_val(lambda v: v.type is t and v.uni <= SG and math.isfinite(v.mag))
    r = b.fresh("M")
    if v is None or b.flip(40):
        value = b.random_value(t, b.int(1, b.p.data_max))
        if b.flip(50) and (t is not ScalarType.bf16 or b.p.bf16_constants):
            # a coopmatrix constant
            b.emit(ir.Constant(r, literal(value, t), ct))
            b.stats["coop.constant"] += 1
            return _add(b, CVal(r, ct, value_mag(value), value_grain(value)))
        v = b.const(value, t)
    b.emit(ir.CoopConstruct(r, v.op, ct))
    b.stats["coop.construct"] += 1
    return _add(b, CVal(r, ct, v.mag, v.grain))


def matrix(b: _Builder, ct: CoopMatrixType, small: bool = False) -> CVal:
    """A matrix of type ct: a visible one, a new load or a constructed one (`small`: data of
    magnitude 1 and grain 0, so products fit)."""
    old = [c for c in b.cvisible() if c.type == ct and (not small or (c.mag <= 1 and
                                                                     c.grain == 0))]
    if old and b.flip(50):
        return b.pick(old)
    if small:
        return load(b, ct, 1, 0)
    return load(b, ct) if b.flip(75) else construct(b, ct)


def mul_add(b: _Builder) -> None:
    S, types = b.S, b.p.types
    M, K, N = b.pick((S, 2 * S)), b.pick(K_SIZES), _cols(b)
    narrow = [t for t in _NARROW if t in types]
    wide = [t for t in (ScalarType.f32, ScalarType.f64) if t in types]
    if narrow and wide and b.flip(20):  # the mixed precision a matrix engine is made for
        ta = tb = pr = b.pick(narrow)
        tc = b.pick(wide)
    else:
        for _ in range(5):
            ta = b.pick(types)
            tb = ta if b.flip(40) else b.pick(types)
            pr = promote(ta, tb)
            tcs = [t for t in types if pr is not None and promotable(pr, t)]
            if tcs:
                break
        else:
            return
        tc = pr if pr in tcs and b.flip(40) else b.pick(tcs)
    for small in (False, True):
        A = matrix(b, CoopMatrixType(ta, M, K, "matrix_a"), small)
        B = matrix(b, CoopMatrixType(tb, K, N, "matrix_b"), small)
        C = matrix(b, CoopMatrixType(tc, M, N, "matrix_acc"), small)
        both = ta.is_complex and tb.is_complex
        mag = K * A.mag * B.mag * (2 if both else 1) + C.mag
        grain = max(A.grain + B.grain, C.grain)
        if fits(tc, mag, grain):
            break
    else:
        return
    if pr in _NARROW and tc in (ScalarType.f32, ScalarType.f64) and b.flip(50):
        # C's entries need more bits than A's and B's type has, while D stays exact in C's
        # type: an implementation that accumulates in the narrow type shows (D is compared
        # bit for bit; every correct order of the exact sum gives the same D)
        wide = _wide_acc(b, CoopMatrixType(tc, M, N, "matrix_acc"), pr)
        wmag = K * A.mag * B.mag * (2 if ta.is_complex and tb.is_complex else 1) + wide.mag
        wgrain = max(A.grain + B.grain, wide.grain)
        if fits(tc, wmag, wgrain):
            C, mag, grain = wide, wmag, wgrain
            b.stats["coop.mul_add.wide_acc"] += 1
    td = tc
    wider = [t for t in types if t is not tc and promotable(tc, t) and fits(t, mag, grain)]
    if wider and b.flip(20):
        td = b.pick(wider)
    if not mul_add_allowed(b, ta, tb, td):
        return
    r = b.fresh("M")
    b.emit(ir.CoopMulAdd(r, A.op, B.op, C.op, CoopMatrixType(td, M, N, "matrix_acc")))
    b.stats["coop.mul_add"] += 1
    b.stats["coop.mul_add." + ("same" if ta is tb is tc is td else "mixed")] += 1
    _add(b, CVal(r, CoopMatrixType(td, M, N, "matrix_acc"), mag, grain))


def mul_add_allowed(b: _Builder, ta: ScalarType, tb: ScalarType, td: ScalarType) -> bool:
    """Whether a mul_add of A's type ta and B's tb into td may be drawn: not one that converts
    bf16 operands when the profile leaves those out (knob bf16_conversions)."""
    return b.p.bf16_conversions or ScalarType.bf16 not in (ta, tb) or td is ScalarType.bf16


def _wide_acc(b: _Builder, ct: CoopMatrixType, narrow: ScalarType) -> CVal:
    """A loaded accumulator whose entries are quarters of magnitude up to 2^(p-1), p the
    significant bits of `narrow`: most of them are not representable in `narrow`."""
    return load(b, ct, 2.0 ** (PRECISION[narrow] - 1), 2)


def _scalar(b: _Builder, t: ScalarType) -> Val:
    """A sub-group-uniform scalar of type t (a visible one or a small constant)."""
    v = b.pick_val(lambda v: v.type is t and v.uni <= SG and math.isfinite(v.mag))
    if v is None or b.flip(50):
        v = b.random_const(t, mag=2)
    return v


def scale(b: _Builder, m: CVal) -> None:
    t = m.type.component
    for _ in range(2):
        a = _scalar(b, t)
        mag = a.mag * m.mag * (2 if t.is_complex else 1)
        if fits(t, mag, a.grain + m.grain):
            r = b.fresh("M")
            b.emit(ir.CoopScale(r, a.op, m.op, m.type))
            b.stats["coop.scale"] += 1
            _add(b, CVal(r, m.type, mag, a.grain + m.grain))
            return


def arith(b: _Builder, m: CVal) -> None:
    t = m.type.component
    if b.flip(20):
        r = b.fresh("M")
        b.emit(ir.ArithUnary(r, "neg", m.op, m.type))
        b.stats["coop.neg"] += 1
        _add(b, CVal(r, m.type, m.mag, m.grain))
        return
    o = matrix(b, m.type)
    ops = ["add", "sub", "mul"] + ([] if t.is_complex else ["min", "max"])
    op = b.pick(ops)
    a, c = Val(m.op, t, m.mag, m.grain, SG), Val(o.op, t, o.mag, o.grain, SG)
    model = b.binary_model(op, a, c)
    if model is None:
        return
    r = b.fresh("M")
    b.emit(ir.Arith(r, op, m.op, o.op, m.type))
    b.stats["coop.arith." + op] += 1
    _add(b, CVal(r, m.type, *model))


def cast(b: _Builder, m: CVal) -> None:
    src = m.type.component
    mag = m.mag
    choices = [t for t in b.p.types if not (src.is_complex and not t.is_complex) and
               fits(t, math.floor(mag) if t.is_int else mag, 0 if t.is_int else m.grain)
               and (b.p.bf16_conversions or (src, t) not in BF16_CONVERSIONS)]
    if not choices:
        return
    t = b.pick(choices)
    use = m.type.use
    if use == "matrix_acc" and b.flip(50):
        use = b.pick(("matrix_a", "matrix_b"))
    if t is src and use == m.type.use:
        return
    ct = CoopMatrixType(t, m.type.rows, m.type.cols, use)
    r = b.fresh("M")
    b.emit(ir.Cast(r, m.op, m.type, ct))
    b.stats["coop.cast" + (".use" if use != m.type.use else "")] += 1
    g = 0 if t.is_int and not src.is_int else m.grain
    _add(b, CVal(r, ct, math.floor(mag) if t.is_int and not src.is_int else mag, g))


def padded(ct: CoopMatrixType, S: int) -> bool:
    """Whether the sub-group layout of `ct` pads its columns (J > N: an 8 x 3 matrix at S=16)."""
    return Layout(ct.rows, ct.cols, ct.component.value, ct.use, S).J > ct.cols


def _components(b: _Builder, ct: CoopMatrixType, entries: bool = False) -> list[int]:
    """The components v of a lane (`extract`/`insert` indices); with `entries`, only those
    that hold a matrix entry in every lane (not a padding column)."""
    layout = Layout(ct.rows, ct.cols, ct.component.value, ct.use, b.S)
    if not entries:
        return list(range(layout.V))
    cols = layout.positions[1]
    return [v for v in range(layout.V) if cols[:, v].max() < ct.cols]


def extract(b: _Builder, m: CVal) -> Optional[Val]:
    """A component of every lane (None when padding is not to be extracted and every
    component is padding in some lane)."""
    vs = _components(b, m.type, not (b.p.extract_padding and b.p.padded_columns))
    if not vs:
        return None
    v = b.pick(vs)
    r = b.fresh()
    b.emit(ir.CoopExtract(r, m.op, v, m.type.component))
    b.stats["coop.extract"] += 1
    m.observed = True
    return b.add(Val(r, m.type.component, m.mag, m.grain, LANE, "extract"))


def insert(b: _Builder, m: CVal) -> None:
    x = b.some_val(m.type.component)
    r = b.fresh("M")
    b.emit(ir.CoopInsert(r, x.op, m.op, b.pick(_components(b, m.type)), m.type))
    b.stats["coop.insert"] += 1
    _add(b, CVal(r, m.type, max(m.mag, x.mag), max(m.grain, x.grain)))


def reduce(b: _Builder, m: CVal) -> None:
    ct = m.type
    if ct.rows % b.S:
        m = load(b, CoopMatrixType(ct.component, b.S, ct.cols, ct.use))
        ct = m.type
    mode = b.pick(("row", "column"))
    op = b.pick(("add",) if ct.component.is_complex else ("add", "max", "min"))
    mag = m.mag
    if op == "add":
        mag = m.mag * (ct.cols if mode == "row" else ct.rows)
        if not fits(ct.component, mag, m.grain):
            if ct.component.is_complex:
                return
            op, mag = "max", m.mag
    rt = CoopMatrixType(ct.component, *((ct.rows, 1) if mode == "row" else (1, ct.cols)),
                        ct.use)
    r = b.fresh("M")
    b.emit(ir.CoopReduce(r, op, mode, m.op, rt))
    b.stats[f"coop.reduce_{op}.{mode}"] += 1
    _add(b, CVal(r, rt, mag, m.grain))


def apply(b: _Builder, m: CVal) -> None:
    """cooperative_matrix_apply whose region combines the component with its row or column
    (cast to the component type), a constant or itself."""
    ct, t = m.type, m.type.component
    i, j, v = b.fresh("ai"), b.fresh("aj"), b.fresh("av")
    b.regions.append([])
    b.scopes.append([])
    b.cscopes.append([])
    val = Val(v, t, m.mag, m.grain, LANE)
    form = b.pick(("row", "col", "const", "self"))
    if form in ("row", "col"):
        iv = Val(i if form == "row" else j, I32, (ct.rows if form == "row" else ct.cols) - 1,
                 0, LANE)
        w = b.cast_to(iv, t) if t is not I32 else iv
    elif form == "const":
        w = b.random_const(t, here=True, mag=2)
    else:
        w = val
    y = None
    for op in (b.pick(("add", "sub", "mul", "max", "min")), "max", "add"):
        model = b.binary_model(op, val, w)
        if model is not None:
            y = b.arith(op, val, w, t, *model)
            break
    b.stats["coop.apply." + form] += 1
    if y is None:
        y = val
    b.emit(ir.Yield((y.op,), (t,)))
    body = Region(b.regions.pop())
    b.scopes.pop()
    b.cscopes.pop()
    r = b.fresh("M")
    b.emit(ir.CoopApply(r, i, j, v, m.op, ct, body))
    b.stats["coop.apply"] += 1
    _add(b, CVal(r, ct, max(y.mag, 0), y.grain))


def store(b: _Builder, m: CVal) -> None:
    """m to a new output memref: the block of this (work-group, sub-group), at column
    (glin * nsg + sid) * E1; with `.t` the block is transposed; a checked flag along the
    memref's first mode may cut the block's rows there. Without `padded_columns`, a matrix
    whose layout pads its columns is not stored."""
    ct = m.type
    if not b.p.padded_columns and padded(ct, b.S):
        return
    trans = b.flip(30)
    checked = b.pick((None, None, "rows", "cols", "both"))
    E0, E1 = (ct.rows, ct.cols) if not trans else (ct.cols, ct.rows)
    dir0 = "rows" if not trans else "cols"
    R = b.int(1, E0) if checked in (dir0, "both") and b.flip(50) else E0
    shape = (R, E1 * b.nsg * b.G)
    mt = b.strided(ct.component, shape)
    if trans and not b.p.transposed_strided_stores and mt.stride[0] != 1:
        mt = MemrefType.make(ct.component, shape)
    comp = ct.component
    form = b.pick(("store",) * 6 + ("atomic store", "atomic update")) \
        if comp in b.p.atomic_types else "store"
    op, mag, grain = None, 0, 0
    if form == "atomic update":  # the block holds data; each entry is updated once per run
        mag, grain = b.data_model(comp)
        for op in b.pick((("add", "max"), ("max", "add"), ("min", "add"))):
            if op == "add" and fits(comp, mag + b.mult * m.mag, max(grain, m.grain)):
                break
            if op != "add" and not comp.is_complex:
                break
        else:
            form = "store"
    data = b.data(comp, shape, mag, grain) if form == "atomic update" else \
        np.zeros(shape, comp.dtype)
    arg = b.new_arg("C", mt, data)
    t = b.arith("mul", b.glin, b.const(b.nsg, INDEX), INDEX, b.G * b.nsg, 0, "id")
    s = b.arith("add", t, b.sidi, INDEX, b.G * b.nsg, 0, "id")
    y = b.arith("mul", s, b.const(E1, INDEX), INDEX, shape[1], 0, "id")
    x = b.const(0, INDEX).op
    if form == "atomic update":
        r = b.fresh("M")
        b.emit(ir.CoopAtomicUpdate(r, op, m.op, arg, x, y.op, ct, trans, checked, *b.scope()))
        b.stats["coop.atomic_" + op] += 1
        # the old values (0 where nothing was taken), in a loop after earlier updates
        top = mag + b.mult * m.mag if op == "add" else max(mag, m.mag)
        _add(b, CVal(r, ct, top, max(grain, m.grain)))
    else:
        atomic = form == "atomic store"
        b.emit(ir.CoopStore(m.op, arg, x, y.op, trans, checked, atomic,
                            *(b.scope() if atomic else (None, None))))
        b.stats["coop.atomic_store" if atomic else "coop.plain_store"] += 1
    b.stats["coop.store" + (".t" if trans else ".n") + (f".{checked}" if checked else "")] += 1
    b.stats["coop.store"] += 1
    m.observed = True


def weights(b: _Builder) -> dict[str, int]:
    """The weights of this module's steps (fuzz.gen.spmd_loops.coop_step draws among them and
    its own loops)."""
    w = {"load": 3, "construct": 1, "mul_add": 4}
    if b.cvisible():
        w |= {"scale": 1, "arith": 2, "cast": 2, "extract": 3, "insert": 1, "reduce": 2,
              "apply": 1, "store": 2}
    return w


def step(b: _Builder, kind: str) -> None:
    """One step of `kind`, one of `weights`' keys: a new matrix, or an operation on a
    visible one."""
    if kind == "load":
        load(b, CoopMatrixType(b.pick(b.p.types), _rows(b), _cols(b),
                               b.pick(("matrix_a", "matrix_b", "matrix_acc"))))
    elif kind == "construct":
        construct(b, CoopMatrixType(b.pick(b.p.types), _rows(b), _cols(b),
                                    b.pick(("matrix_a", "matrix_b", "matrix_acc"))))
    elif kind == "mul_add":
        mul_add(b)
    else:
        globals()[kind](b, b.pick(b.cvisible()))


def observe_coop(b: _Builder) -> None:
    """Matrices of the closing region that nobody stored or extracted from: stored, or one
    component extracted and stored."""
    for m in list(b.cscopes[-1]):
        if not m.observed:
            e = extract(b, m) if b.flip(50) else None
            if e is None:
                store(b, m)
            else:
                b.store(e)
    for m in b.cscopes[-1]:  # old values an atomic update just gave: one component each
        if not m.observed and (e := extract(b, m)) is not None:
            b.store(e)


def foreach_tile(b: _Builder) -> None:
    """foreach_tile over an m x n input: each work-item of the tile's sub-group walks rows
    sid, sid + S, ... of the tile and all its columns, writing f(input) to its element of an
    output (m x n x work-groups): tiles are disjoint, so nothing races."""
    S, t = b.S, b.pick(b.p.types)
    T0, T1 = S * b.pick((1, 2)), b.int(1, 4)
    m, n = b.int(1, 2 * T0 + 3), b.int(1, 3 * T1 + 1)
    mag, grain = b.data_model(t)
    dynamic = b.flip(40)
    it = MemrefType(t, (None, None) if dynamic else (m, n), (1, None) if dynamic else (1, m))
    src = b.new_arg("T", it, b.data(t, (m, n), mag, grain))
    out_shape = (m, n, b.G)
    ot = MemrefType(t, out_shape, (1, m, m * n))
    dst = b.new_arg("U", ot, np.zeros(out_shape, t.dtype))
    c0 = b.const(0, INDEX).op
    if dynamic:
        bm, bn = b.fresh("sz"), b.fresh("sz")
        b.emit(ir.Size(bm, src, 0, it))
        b.emit(ir.Size(bn, src, 1, it))
    else:
        bm, bn = b.const(m, INDEX).op, b.const(n, INDEX).op
    i, j, si, sj = b.fresh("ti"), b.fresh("tj"), b.fresh("ts"), b.fresh("ts")
    b.regions.append([])
    b.scopes.append([])
    sl = b.fresh("sl")
    b.emit(ir.Builtin(sl, "subgroup_local_id", None, I32))
    sli = b.cast_to(Val(sl, I32, S - 1, 0, LANE, "id"), INDEX)
    r, c = b.fresh("r"), b.fresh("c")
    b.regions.append([])
    b.regions.append([])
    ii, jj = b.fresh(), b.fresh()
    b.emit(ir.Arith(ii, "add", i, r, INDEX))
    b.emit(ir.Arith(jj, "add", j, c, INDEX))
    x = b.fresh()
    b.emit(ir.Load(x, src, (ii, jj), it))
    xv = Val(x, t, mag, grain, LANE)
    op = b.pick(("add", "mul", "max", "neg", "copy"))
    y = xv
    if op == "neg":
        y = b.fresh()
        b.emit(ir.ArithUnary(y, "neg", x, t))
        y = Val(y, t, mag, grain, LANE)
    elif op != "copy":
        model = b.binary_model(op, xv, xv)
        if model is not None:
            y = b.arith(op, xv, xv, t, *model)
    b.emit(ir.Store(y.op, dst, (ii, jj, b.glin.op), ot))
    inner = Region(b.regions.pop())
    b.emit(ir.For(c, c0, sj, None, INDEX, inner))
    middle = Region(b.regions.pop())
    b.emit(ir.For(r, sli.op, si, b.const(S, INDEX).op, INDEX, middle))
    body = Region(b.regions.pop())
    b.scopes.pop()
    b.emit(ir.ForeachTile((i, j), (c0, c0), (bm, bn), (si, sj), (T0, T1), INDEX, body))
    b.stats["foreach_tile"] += 1
    b.stats["foreach_tile." + ("dynamic" if dynamic else "static")] += 1


__all__ = ["weights", "step", "observe_coop", "foreach_tile"]
