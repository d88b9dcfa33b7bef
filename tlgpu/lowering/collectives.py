"""Collective BLAS instructions spread over the work-items of a work-group.

Every collective computes out(i,j) = alpha * sum_k term(i,j,k) + beta * out(i,j) (no sum when
there is no K). GEMM gets register tiles of C per work-item, fitted to its M x N (tiles.plan)
or on the work-group's (wg0, wg1) grid, optionally with A and B staged in local memory; the
others use one element per work-item in turn.
Arithmetic happens in the C usual-arithmetic-conversion type of all operands; beta == 0 never
reads the output (docs/semantics.md "Collectives").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Optional

from tlgpu.lowering import mma as lower_mma
from tlgpu.lowering import prelude, tiles
from tlgpu.lowering import scalar as S
from tlgpu.lowering.barriers import STAGE
from tlgpu.lowering.ctypes_map import common_type, ctype
from tlgpu.lowering.tiles import fits_int
from tlgpu.lowering.v04 import complexnum
from tlgpu.lowering.v04.atomics import Helpers
from tlgpu.lowering.views import View, static_or
from tlinterp.lang import ir
from tlinterp.lang.types import V04_ONLY_SCALARS, ScalarType

Term = Callable[[str, str, str], str]  # (i, j, k) -> C expression in the compute type


@dataclass
class Problem:
    out: View
    out_index: Callable[[str, str], list]  # (i, j) -> index list of the output
    M: str
    N: str
    K: Optional[str]
    term: Term
    reads: set
    ct: ScalarType


def _op(v: View, trans: bool):
    """Element (r, c) of op(v) for a matrix (transposed when `trans`), and its shape."""
    if trans:
        return (lambda r, c: v.at([c, r])), (v.shape[1], v.shape[0])
    return (lambda r, c: v.at([r, c])), (v.shape[0], v.shape[1])


def _op_pairs(lw, v: View, trans: bool, k_first: bool):
    """pair(x, k): the elements k and k + 1 (k even) of op(v) along K, at index x of its other
    mode, as one 16-byte `double2` load; None where that is not provably aligned. K is the
    first mode of op(v) for op(B), the second for op(A) (`k_first`). op(v) must be f64 in
    global memory, contiguous along K, with an even static stride in its other mode and a
    16-byte aligned first element (lower_mma.py, knob `k_pairs`)."""
    if not (lw.config.k_pairs and v.space == "global" and v.elem == ScalarType.f64
            and len(v.stride) == 2 and v.align % 16 == 0):
        return None
    k_mode = int(k_first == trans)  # the mode of v (not of op(v)) that K runs along
    other = static_or(v.stride[1 - k_mode])
    if v.stride[k_mode] != "1" or other is None or other % 2:
        return None

    def pair(x: str, k: str) -> str:
        return f"(*(global const double2*){v.addr([x, k] if k_mode else [k, x])})"
    return pair


def _cast(ct: ScalarType, e: str) -> str:
    return f"(({ctype(ct)}){e})"


def _conv(e: str, src: ScalarType, ct: ScalarType) -> str:
    """An element of type `src` in the compute type: a C conversion, or v0.4's `cast` where
    a type is f16/bf16 (bit patterns) or complex (scalar.cast)."""
    if src is ct:
        return e
    if src in V04_ONLY_SCALARS or ct in V04_ONLY_SCALARS:
        return S.cast(e, src, ct)
    return _cast(ct, e)


def _mul(ct: ScalarType, x: str, y: str) -> str:
    """x * y in the compute type (complex: scalar.py's complex multiplication)."""
    return S.binary("mul", x, y, ct) if ct.is_complex else f"{x} * {y}"


def has_v04_types(lw, inst: ir.Blas) -> bool:
    """Whether a v0.4 type (f16, bf16, c32, c64) is among the collective's operand types:
    then it runs on the generic path, every conversion through `_conv`."""
    types = [lw.view(getattr(inst, f)).elem for f in (*inst.inputs(), inst.output())]
    return any(t in V04_ONLY_SCALARS for t in (*types, inst.alpha_type, inst.beta_type))


def problem(lw, inst: ir.Blas) -> Problem:
    return _PROBLEMS[type(inst)](lw, inst)


def _reduction(lw, inst: ir.Blas) -> str:
    """K as a C expression: the last mode of op(X) for the operand the class declares."""
    v = lw.view(getattr(inst, inst.REDUCED))
    return (v.shape[::-1] if inst.transposed(inst.REDUCED) else v.shape)[-1]


def _gemm(lw, inst: ir.Gemm) -> Problem:
    a, b, c = lw.view(inst.a), lw.view(inst.b), lw.view(inst.c)
    ct = common_type(inst.alpha_type, a.elem, b.elem, inst.beta_type, c.elem)
    fa, _ = _op(a, inst.trans_a)
    fb, _ = _op(b, inst.trans_b)
    return Problem(c, lambda i, j: [i, j], c.shape[0], c.shape[1], _reduction(lw, inst),
                   lambda i, j, k: _mul(ct, _conv(fa(i, k), a.elem, ct),
                                        _conv(fb(k, j), b.elem, ct)),
                   {a.root, b.root}, ct)


def _gemv(lw, inst: ir.Gemv) -> Problem:
    a, b, c = lw.view(inst.a), lw.view(inst.b), lw.view(inst.c)
    ct = common_type(inst.alpha_type, a.elem, b.elem, inst.beta_type, c.elem)
    fa, _ = _op(a, inst.trans_a)
    return Problem(c, lambda i, j: [i], c.shape[0], "1", _reduction(lw, inst),
                   lambda i, j, k: _mul(ct, _conv(fa(i, k), a.elem, ct),
                                        _conv(b.at([k]), b.elem, ct)),
                   {a.root, b.root}, ct)


def _ger(lw, inst: ir.Ger) -> Problem:
    a, b, c = lw.view(inst.a), lw.view(inst.b), lw.view(inst.c)
    ct = common_type(inst.alpha_type, a.elem, b.elem, inst.beta_type, c.elem)
    return Problem(c, lambda i, j: [i, j], c.shape[0], c.shape[1], None,
                   lambda i, j, k: _mul(ct, _conv(a.at([i]), a.elem, ct),
                                        _conv(b.at([j]), b.elem, ct)),
                   {a.root, b.root}, ct)


def _hadamard(lw, inst: ir.Hadamard) -> Problem:
    a, b, c = lw.view(inst.a), lw.view(inst.b), lw.view(inst.c)
    ct = common_type(inst.alpha_type, a.elem, b.elem, inst.beta_type, c.elem)
    idx = _elementwise_index(len(c.shape))
    M, N = _elementwise_dims(c)
    return Problem(c, idx, M, N, None,
                   lambda i, j, k: _mul(ct, _conv(a.at(idx(i, j)), a.elem, ct),
                                        _conv(b.at(idx(i, j)), b.elem, ct)),
                   {a.root, b.root}, ct)


def _axpby(lw, inst: ir.Axpby) -> Problem:
    a, b = lw.view(inst.a), lw.view(inst.b)
    ct = common_type(inst.alpha_type, a.elem, inst.beta_type, b.elem)
    idx = _elementwise_index(len(b.shape))
    M, N = _elementwise_dims(b)
    if len(a.shape) == 2 and inst.trans:
        def term(i, j, k):
            return _conv(a.at([j, i]), a.elem, ct)
    else:
        def term(i, j, k):
            return _conv(a.at(idx(i, j)), a.elem, ct)
    return Problem(b, idx, M, N, None, term, {a.root}, ct)


def _sum(lw, inst: ir.Sum) -> Problem:
    a, b = lw.view(inst.a), lw.view(inst.b)
    ct = common_type(inst.alpha_type, a.elem, inst.beta_type, b.elem)
    if len(a.shape) == 1:
        return Problem(b, lambda i, j: [], "1", "1", _reduction(lw, inst),
                       lambda i, j, k: _conv(a.at([k]), a.elem, ct), {a.root}, ct)
    fa, sa = _op(a, inst.trans)
    return Problem(b, lambda i, j: [i], sa[0], "1", _reduction(lw, inst),
                   lambda i, j, k: _conv(fa(i, k), a.elem, ct), {a.root}, ct)


_PROBLEMS: dict[type, Callable[..., Problem]] = {
    ir.Axpby: _axpby, ir.Gemm: _gemm, ir.Gemv: _gemv, ir.Ger: _ger, ir.Hadamard: _hadamard,
    ir.Sum: _sum,
}


def _elementwise_index(order: int):
    if order == 0:
        return lambda i, j: []
    if order == 1:
        return lambda i, j: [i]
    return lambda i, j: [i, j]


def _elementwise_dims(v: View) -> tuple[str, str]:
    sh = list(v.shape) + ["1", "1"]
    return sh[0], sh[1]


def _scalar_operand(lw, op, t: ScalarType, ct: ScalarType) -> tuple[str, Optional[float]]:
    """C expression of alpha/beta in the compute type and its value if constant."""
    if isinstance(op, ir.Const):
        v = complex(op.value)  # a complex constant is known when it is real
        return _conv(lw.operand(op, t), t, ct), v.real if v.imag == 0 else None
    return _conv(lw.operand(op, t), t, ct), None


@dataclass
class Prepared:
    """What every lowering of a collective derives from it first."""

    p: Problem
    reads: set  # roots it reads: its inputs, and its output unless beta == 0
    store: Callable  # store(lines, i, j, acc): the statements storing one output element
    value: Callable[[str], str]  # value(acc): alpha * acc in the compute type (before beta)
    beta: Optional[float]  # beta when constant
    # update(i, j, acc): (output element, C expression of its new value) of a plain store;
    # None when the store is atomic (the update happens in the atomic helper)
    update: Optional[Callable[[str, str, str], tuple[str, str]]]


def prepare(lw, inst) -> Prepared:
    p = problem(lw, inst)
    ct, T = p.ct, p.out.elem
    alpha, alpha_c = _scalar_operand(lw, inst.alpha, inst.alpha_type, ct)
    beta, beta_c = _scalar_operand(lw, inst.beta, inst.beta_type, ct)
    reads = set(p.reads)
    if beta_c != 0.0:
        reads.add(p.out.root)
    atomic = inst.atomic

    def value(acc: str) -> str:
        return acc if alpha_c == 1.0 else _mul(ct, alpha, acc)

    def plain(i, j, acc) -> tuple[str, str]:
        val = value(acc)
        at = p.out.at(p.out_index(i, j))
        if beta_c == 0.0:
            new = val
        elif beta_c == 1.0:
            new = f"{val} + {_conv(at, T, ct)}"
        elif beta_c is not None:
            new = f"{val} + {_mul(ct, beta, _conv(at, T, ct))}"
        else:  # run-time beta: 0 must not read the output (BLAS convention)
            zero = complexnum.is_zero(beta) if ct.is_complex else f"{beta} == 0"
            new = f"({zero} ? {val} : {val} + {_mul(ct, beta, _conv(at, T, ct))})"
        if T in V04_ONLY_SCALARS or ct in V04_ONLY_SCALARS:
            return at, S.cast(f"({new})", ct, T) if T is not ct else f"({new})"
        return at, f"({ctype(T)})({new})"

    update = None if atomic else plain

    def store(lines, i, j, acc):
        if update is not None:
            at, new = update(i, j, acc)
            lines.append(f"{at} = {new};")
            return
        val = value(acc)  # atomic: the helper reads and writes the element
        addr = p.out.addr(p.out_index(i, j))
        if beta_c == 1.0 and prelude.native_add(T):
            name = prelude.add_name(p.out.space, T)
            lw.helpers.setdefault(name, prelude.add_helper(p.out.space, T))
            lines.append(f"{name}({addr}, ({ctype(T)})({val}));")
            return
        if T in V04_ONLY_SCALARS or ct in V04_ONLY_SCALARS:  # CAS through scalar.py's tables
            name = Helpers(lw, cl20=False).scaled_update(p.out.space, T, ct)
        else:
            name = prelude.update_name(p.out.space, T, ct)
            lw.helpers.setdefault(name, prelude.update_helper(p.out.space, T, ct))
        lines.append(f"{name}({addr}, {val}, {beta});")

    return Prepared(p, reads, store, value, beta_c, update)


def lower_blas(lw, w, inst) -> None:
    pr = prepare(lw, inst)
    w.open(f"/* {type(inst).__name__.lower()} */")
    if isinstance(inst, ir.Gemm) and lw.config.register_tiles and not has_v04_types(lw, inst):
        _tiled_gemm(lw, w, inst, pr.p, pr.reads, pr.store)
    else:
        lw.access(w, pr.reads, {pr.p.out.root})
        _generic(lw, w, inst, pr)
    w.close()


def lower_gemm_pair(lw, w, first: ir.Gemm, second: ir.Gemm, keep: bool) -> bool:
    """Two gemms that `chains.gemm_pair` matched (the first's output T is op(A) of the
    second) as one step on the tensor cores, T passed in registers (lower_mma.lower_pair);
    `keep`: T is read later, so the first still stores it. False, with nothing emitted, when
    the pair does not take that path here (knobs, device, types, tiles, staging)."""
    cfg, g = lw.config, lw.geo
    if not cfg.register_tiles or has_v04_types(lw, first) or has_v04_types(lw, second):
        return False
    one, two = prepare(lw, first), prepare(lw, second)
    M, N1, K1 = (static_or(x) for x in (one.p.M, one.p.N, one.p.K))
    N2, K2 = static_or(two.p.N), static_or(two.p.K)
    if not (lower_mma.eligible(cfg, g.size, one.p.ct, M, N1, K1)
            and lower_mma.eligible(cfg, g.size, two.p.ct, M, N2, K2)):
        return False
    # T in registers is what the first stores only when storing converts nothing
    if one.p.out.elem != ScalarType.f64 or _staging_bytes(lw, first, one.p, True) is not None:
        return False
    if not (lower_mma.one_warp(lw, M, N1) and lower_mma.one_warp(lw, M, N2)):
        return False
    reads = one.reads | {lw.view(second.b).root}
    if two.beta != 0.0:
        reads.add(two.p.out.root)
    writes = {two.p.out.root} | ({one.p.out.root} if keep else set())
    w.open("/* gemm; gemm: the first's output passed in registers */")
    lw.access(w, reads, writes)
    I = "int" if _index_type(lw, first, [M, N1, K1]) == _index_type(lw, second, [M, N2, K2]) \
        == "int" else "long"  # noqa: E741
    fa1, _ = _op(lw.view(first.a), first.trans_a)
    fb1, _ = _op(lw.view(first.b), first.trans_b)
    fb2, _ = _op(lw.view(second.b), second.trans_b)
    pairs1 = (_op_pairs(lw, lw.view(first.a), first.trans_a, False),
              _op_pairs(lw, lw.view(first.b), first.trans_b, True))
    lower_mma.lower_pair(lw, w, I, (M, N1, K1, fa1, fb1, one.store if keep else None,
                                    lambda acc: f"(double)({one.value(acc)})", pairs1),
                         (N2, fb2, two.store, lambda: lw.mark(w, second)))
    w.close()
    return True


def _generic(lw, w, inst, pr: Prepared) -> None:
    """One output element per work-item in turn. An elementwise collective (no K) with plain
    stores computes `load_batch` of a work-item's elements, all of their loads first, before
    it stores any: the loads are then in flight together instead of one memory latency per
    element (a store may alias any later load for the compiler). This is the same result, as
    an input sharing an element with the output is undefined (docs/semantics.md)."""
    p = pr.p
    ct = ctype(p.ct)
    M, N = static_or(p.M), static_or(p.N)
    K = static_or(p.K) if p.K is not None else 1
    batch = lw.config.load_batch if p.K is None and pr.update is not None else 1
    if M is not None and N is not None:  # no more than a work-item's share of the elements
        batch = max(1, min(batch, -(-M * N // lw.geo.size)))
    # the linear index runs up to a batch of work-items past M * N
    top = M * N + (batch - 1) * lw.geo.size if M is not None and N is not None else None
    I = _index_type(lw, inst, [top, K])  # noqa: E741
    t, i, j = lw.fresh("t"), lw.fresh("i"), lw.fresh("j")
    w.line(f"const {I} {i}M = {p.M}, {i}N = {p.N};")
    lid, nwi = ("tl_lid", "tl_nwi") if I == "long" else ("(int)tl_lid", "(int)tl_nwi")
    if batch > 1:
        v, T = lw.fresh("v"), ctype(p.out.elem)
        w.open(f"for ({I} {t} = {lid}; {t} < {i}M * {i}N; {t} += {batch} * {nwi})")
        items = []
        for u in range(batch):
            tu, iu, ju = f"{t}_{u}", f"{i}_{u}", f"{j}_{u}"
            at, new = pr.update(iu, ju, p.term(iu, ju, "0"))
            inside = "" if u == 0 else f"{tu} < {i}M * {i}N"  # the first is, by the loop test
            items.append((f"const {I} {tu} = {t} + {u} * {nwi}, {ju} = {tu} / {i}M, "
                          f"{iu} = {tu} - {ju} * {i}M;", f"{v}_{u}", inside, T, new, at))
        _loads_then_stores(w, items)
        w.close()
        return
    w.open(f"for ({I} {t} = {lid}; {t} < {i}M * {i}N; {t} += {nwi})")
    # no `%` beside the `/`: clang would pair them and insert `freeze`, which Oclgrind
    # cannot run
    w.line(f"const {I} {j} = {t} / {i}M, {i} = {t} - {j} * {i}M;")
    if p.K is None:
        acc = p.term(i, j, "0")
    else:
        acc, k = lw.fresh("acc"), lw.fresh("k")
        w.line(f"{ct} {acc} = ({ct})(0);")
        w.line(f"for ({I} {k} = 0; {k} < {p.K}; ++{k}) {acc} += {p.term(i, j, k)};")
    lines: list[str] = []
    pr.store(lines, i, j, acc)
    for ln in lines:
        w.line(ln)
    w.close()


def _staged_lds(M: int, K: int, mma: bool) -> tuple[int, int]:
    """Leading dimensions of staged op(A) and op(B), chosen against local-memory bank conflicts
    of their reader. Register tiles: A packed, B's odd (work-items read across B's columns).
    Tensor cores: both 4 more than a multiple of 16 elements, so the 16 lanes of a half-warp
    reading a fragment (4 rows or columns by 4 K steps) hit 16 different 8-byte banks."""
    if mma:
        return M + (4 - M) % 16, K + (4 - K) % 16
    return M, K + (1 - K % 2)


def _staging_bytes(lw, inst, p: Problem, mma: bool) -> Optional[int]:
    """Local memory staging op(A) and op(B) of a gemm takes, None when it does not pay."""
    cfg = lw.config
    if not cfg.local_staging:
        return None
    a, b = lw.view(inst.a), lw.view(inst.b)
    M, N, K = (static_or(x) for x in (p.M, p.N, p.K))
    if None in (M, N, K) or a.space != "global" or b.space != "global":
        return None
    if min(M, N) < cfg.local_staging_min_reuse:
        return None
    lda, ldb = _staged_lds(M, K, mma)
    nbytes = (lda * K + ldb * N) * p.ct.dtype.itemsize
    return None if nbytes > cfg.local_staging_bytes else nbytes


def _stage(lw, w, inst, p: Problem, reads: set, mma: bool) -> Optional[tuple[View, View]]:
    """Copy op(A) (M x K) and op(B) (K x N) of a static gemm into local memory, when it pays;
    `mma`: for the tensor cores (the layout differs)."""
    nbytes = _staging_bytes(lw, inst, p, mma)
    if nbytes is None:
        return None
    a, b = lw.view(inst.a), lw.view(inst.b)
    M, N, K = (static_or(x) for x in (p.M, p.N, p.K))
    lda, ldb = _staged_lds(M, K, mma)
    lw.stage_bytes = max(lw.stage_bytes, (nbytes + 7) // 8 * 8)
    C = ctype(p.ct)
    la, lb = lw.fresh("As"), lw.fresh("Bs")
    lw.access(w, reads - {p.out.root}, {STAGE})
    w.line(f"local {C}* {la} = (local {C}*)((local char*)tl_local + {lw.alloca_bytes});")
    w.line(f"local {C}* {lb} = {la} + {lda * K};")
    fa, _ = _op(a, inst.trans_a)
    fb, _ = _op(b, inst.trans_b)
    def at_a(u: str) -> str:
        return f"{la}[{u}]" if lda == M else f"{la}[{u} % {M} + {u} / {M} * {lda}]"

    copies = [(M * K, at_a, lambda u: fa(f"{u} % {M}", f"{u} / {M}")),
              (K * N, lambda u: f"{lb}[{u} % {K} + {u} / {K} * {ldb}]",
               lambda u: fb(f"{u} % {K}", f"{u} / {K}"))]
    _batched_copy(lw, w, C, copies)
    lw.barrier(w, {STAGE})
    sa = View(la, "local", p.ct, (str(M), str(K)), ("1", str(lda)), STAGE)
    sb = View(lb, "local", p.ct, (str(K), str(N)), ("1", str(ldb)), STAGE)
    return sa, sb


# values one work-item loads per round of a staging copy before it stores them: one element
# per iteration waits one memory latency per element. On an H200, GEMM 32^3 f64, in one run
# against one-element loops: 16x8 without tensor cores 0.643 -> 0.614 ms, 8x8 and 64x1
# 0.657 -> 0.67 ms; with the tensor cores, this and their layout (_staged_lds) together:
# default 0.774 -> 0.615 ms, 16x16 0.894 -> 0.571 ms
STAGE_BATCH = 32


def _batched_copy(lw, w, C: str, copies: list) -> None:
    """Copy global elements to local memory: each work-item loads a round of up to
    STAGE_BATCH of its elements of every copy (count, local lvalue of u, global value of u),
    all of them before it stores any. Local and global memory never alias, so the order of
    the stores does not matter."""
    size = lw.geo.size
    top = max(n for n, _, _ in copies)
    rounds = max(1, min(STAGE_BATCH // len(copies), -(-top // size)))
    t, v = lw.fresh("t"), lw.fresh("v")
    w.open(f"for (int {t} = (int)tl_lid; {t} < {top}; {t} += {rounds * size})")
    items = []
    for c, (n, dst, src) in enumerate(copies):
        for r in range(rounds):
            u = f"{t}_{c}_{r}"
            exact = n == top and (r == 0 or top % (rounds * size) == 0)  # provably inside
            guard = "" if exact else f"{t} + {r * size} < {n}"
            items.append((f"const int {u} = {t} + {r * size};", f"{v}_{c}_{r}", guard, C,
                          f"({C}){src(u)}", dst(u)))
    _loads_then_stores(w, items)
    w.close()


def _loads_then_stores(w, items: list) -> None:
    """A round of elements, every load before any store (what `load_batch` and the staging
    copies rely on). items: (index line, value name, guard or "", C type, value, lvalue); a
    guarded element takes 0 past the end and is not stored."""
    stores = []
    for index, name, guard, T, value, lvalue in items:
        w.line(index)
        w.line(f"const {T} {name} = " + (f"{guard} ? {value} : 0;" if guard else f"{value};"))
        stores.append((f"if ({guard}) " if guard else "") + f"{lvalue} = {name};")
    for line in stores:
        w.line(line)


def _index_type(lw, inst, extents: list[Optional[int]]) -> str:
    """`int` when 32-bit index arithmetic is safe for this collective (tiles.fits_int)."""
    if lw.config.narrow_indices is False or None in extents:
        return "long"
    strides = [s for name in ("a", "b", "c") if hasattr(inst, name)
               for s in lw.view(getattr(inst, name)).stride]
    return "int" if fits_int([e for e in extents if e is not None], strides) else "long"


def _tiled_gemm(lw, w, inst, p: Problem, reads: set, store) -> None:
    cfg, g = lw.config, lw.geo
    M, N, K = static_or(p.M), static_or(p.N), static_or(p.K)
    mma = lower_mma.eligible(cfg, g.size, p.ct, M, N, K)
    staged = _stage(lw, w, inst, p, reads, mma)
    pairs = (None, None)
    if staged is not None:
        sa, sb = staged
        reads = (reads - {lw.view(inst.a).root, lw.view(inst.b).root}) | {STAGE}
        fa, fb = (lambda r, c: sa.at([r, c])), (lambda r, c: sb.at([r, c]))
    else:
        fa, _ = _op(lw.view(inst.a), inst.trans_a)
        fb, _ = _op(lw.view(inst.b), inst.trans_b)
        pairs = (_op_pairs(lw, lw.view(inst.a), inst.trans_a, False),
                 _op_pairs(lw, lw.view(inst.b), inst.trans_b, True))
    lw.access(w, reads, {p.out.root})
    I = _index_type(lw, inst, [M, N, K])  # noqa: E741
    if mma:
        lower_mma.lower(lw, w, I, M, N, K, fa, fb, store, pairs)
    else:
        _register_tiles(lw, w, p, I, M, N, K, fa, fb, store)
    if staged is not None:
        lw.pending.add({STAGE}, set())


def _register_tiles(lw, w, p: Problem, I: str, M, N, K, fa, fb, store) -> None:  # noqa: E741
    """C in register tiles per work-item (tiles.plan, or the work-group's grid)."""
    cfg, g = lw.config, lw.geo
    if M is not None and N is not None and cfg.planned_tiles:
        tp = tiles.plan(M, N, g.size, cfg.max_tile)
    else:
        rm = min(-(-M // g.wg0), cfg.max_tile) if M is not None else 1
        rn = max(1, min(-(-N // g.wg1), cfg.max_tile // rm)) if N is not None else 1
        tp = tiles.TilePlan(g.wg0, g.wg1, rm, rn, False)
    rm, rn, g0, g1 = tp.rm, tp.rn, tp.g0, tp.g1
    C = ctype(p.ct)
    fused = cfg.fused_multiply_add is not False and p.ct.is_float
    bi, bj, k = lw.fresh("bi"), lw.fresh("bj"), lw.fresh("k")
    acc, av, bv = lw.fresh("acc"), lw.fresh("a"), lw.fresh("b")
    w.line(f"const {I} {bi}M = {p.M}, {bj}N = {p.N}, {k}K = {p.K};")
    if tp.planned:  # tile t is (t % g0, t / g0); work-item t takes tiles t, t + size, ...
        tt = lw.fresh("tt")
        lid, nwi = ("tl_lid", "tl_nwi") if I == "long" else ("(int)tl_lid", "(int)tl_nwi")
        one_each = g0 * g1 <= g.size
        if one_each:
            w.open(f"if (tl_lid < {g0 * g1})")
        else:
            w.open(f"for ({I} {tt} = {lid}; {tt} < {g0 * g1}; {tt} += {nwi})")
        if one_each and g0 == g.wg0:
            # tl_lid is lid0 + lid1 * wg0, so tile (t % g0, t / g0) is (lid0, lid1): said so,
            # pocl's work-item loops see loads affine in lid0 and vectorise them (GEMM 32^3)
            w.line(f"const {I} {bi} = ({I})get_local_id(0), {bj} = ({I})get_local_id(1);")
        else:
            if one_each:
                w.line(f"const {I} {tt} = {lid};")
            # no `%` beside the `/`: clang would pair them and insert `freeze`, which Oclgrind
            # cannot run
            w.line(f"const {I} {bj} = {tt} / {g0}, {bi} = {tt} - {bj} * {g0};")
        row_step, col_step = g0, g1
    else:
        w.open(f"for ({I} {bi} = ({I})get_local_id(0); {bi} < {bi}M; {bi} += {g0 * rm})")
        w.open(f"for ({I} {bj} = ({I})get_local_id(1); {bj} < {bj}N; {bj} += {g1 * rn})")
        row_step, col_step = g0, g1
    i_r, j_c = f"{bi} + r * {row_step}", f"{bj} + c * {col_step}"
    # a planned tile that fits inside C never reaches past its edge: no clamp, no guard
    rows_past = M is None or row_step * rm > M or not tp.planned
    cols_past = N is None or col_step * rn > N or not tp.planned
    if cfg.clamped_loads:  # rows/columns past the edge load the last one: no guard per K step
        ir, jc = lw.fresh("ir"), lw.fresh("jc")
        if rows_past:
            w.line(f"{I} {ir}[{rm}];")
            w.line("#pragma unroll")
            w.line(f"for (int r = 0; r < {rm}; ++r) {ir}[r] = min(({I})({i_r}), {bi}M - 1);")
        if cols_past:
            w.line(f"{I} {jc}[{rn}];")
            w.line("#pragma unroll")
            w.line(f"for (int c = 0; c < {rn}; ++c) {jc}[c] = min(({I})({j_c}), {bj}N - 1);")
        load_a = f"({C}){fa(f'{ir}[r]' if rows_past else f'({i_r})', k)}"
        load_b = f"({C}){fb(k, f'{jc}[c]' if cols_past else f'({j_c})')}"
    else:
        load_a = f"{i_r} < {bi}M ? ({C}){fa(i_r, k)} : 0"
        load_b = f"{j_c} < {bj}N ? ({C}){fb(k, j_c)} : 0"
    w.line(f"{C} {acc}[{rm}][{rn}];")
    w.line("#pragma unroll")
    w.line(f"for (int r = 0; r < {rm}; ++r) for (int c = 0; c < {rn}; ++c) {acc}[r][c] = 0;")
    if cfg.unroll_k > 1:  # (resolved by lower_program: LoweringConfig.for_device)
        w.line(f"#pragma unroll {cfg.unroll_k}")
    w.open(f"for ({I} {k} = 0; {k} < {k}K; ++{k})")
    w.line(f"{C} {av}[{rm}], {bv}[{rn}];")
    w.line("#pragma unroll")
    w.line(f"for (int r = 0; r < {rm}; ++r) {av}[r] = {load_a};")
    w.line("#pragma unroll")
    w.line(f"for (int c = 0; c < {rn}; ++c) {bv}[c] = {load_b};")
    w.line("#pragma unroll")
    update = (f"{acc}[r][c] = fma({av}[r], {bv}[c], {acc}[r][c]);" if fused
              else f"{acc}[r][c] += {av}[r] * {bv}[c];")
    w.line(f"for (int r = 0; r < {rm}; ++r) for (int c = 0; c < {rn}; ++c) {update}")
    w.close()
    w.line("#pragma unroll")
    w.open(f"for (int r = 0; r < {rm}; ++r)")
    w.line("#pragma unroll")
    w.open(f"for (int c = 0; c < {rn}; ++c)")
    lines: list[str] = []
    store(lines, f"({i_r})", f"({j_c})", f"{acc}[r][c]")
    guard = []
    if rows_past:
        guard.append(f"{i_r} < {bi}M")
    if cols_past:
        guard.append(f"{j_c} < {bj}N")
    w.line((f"if ({' && '.join(guard)}) " if guard else "") + lines[0])
    w.close()
    w.close()
    w.close()
    if not tp.planned:
        w.close()
