"""`cumsum[.atomic] alpha, A, n, beta, B` as a collective: B := alpha * (inclusive prefix sum
of A along mode n) + beta * B (docs/semantics.md "v0.4 instructions (interpreter, non-SPMD)").

The lines of A along mode n (one per index of the other modes) are dealt to the work-items in
turn; each work-item sums its line left to right in the compute type (elements converted
and added through scalar.py's tables: f16/bf16 in f32, complex componentwise), as the
interpreter's NumPy cumsum does, and stores every element through the collectives' store rule
(collectives.prepare: beta 0 never reads B, `.atomic` updates through the atomic helpers).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from tlgpu.lowering import collectives as C
from tlgpu.lowering import scalar as S
from tlgpu.lowering.ctypes_map import common_type, ctype
from tlinterp.lang import ir
from tlinterp.lang.types import ScalarType


@dataclass
class _Typed:
    """ir.Cumsum with the scalar types of alpha and beta, which v0.4 does not write: a
    value's own type, a constant's that of B's elements (as the interpreter takes them)."""

    inst: ir.Cumsum
    alpha_type: ScalarType
    beta_type: ScalarType

    @property
    def alpha(self) -> ir.Operand:
        return self.inst.alpha

    @property
    def beta(self) -> ir.Operand:
        return self.inst.beta

    @property
    def atomic(self) -> bool:
        return self.inst.atomic


def _problem(lw, c: _Typed) -> C.Problem:
    a, b = lw.view(c.inst.a), lw.view(c.inst.b)
    ct = common_type(c.alpha_type, c.beta_type, a.elem, b.elem)
    # the "row" passed to the store rule is the output index list itself
    return C.Problem(b, lambda idx, _: idx, "", "", None, lambda i, j, k: "", {a.root}, ct)


C._PROBLEMS[_Typed] = _problem


def _operand_type(lw, op: ir.Operand, fallback: ScalarType) -> ScalarType:
    if isinstance(op, ir.Const):
        return fallback
    return lw.env[op.name].type


def lower_cumsum(lw, w, inst: ir.Cumsum) -> None:
    a, b = lw.view(inst.a), lw.view(inst.b)
    typed = _Typed(inst, _operand_type(lw, inst.alpha, b.elem),
                   _operand_type(lw, inst.beta, b.elem))
    pr = C.prepare(lw, typed)
    ct, n, order = pr.p.ct, inst.mode, len(a.shape)
    w.open("/* cumsum */")
    lw.access(w, pr.reads, {b.root})
    lines = lw.fresh("lines")
    others = [k for k in range(order) if k != n]
    w.line(f"const long {lines} = {' * '.join(f'(long){a.shape[k]}' for k in others) or '1'};")
    t, i, acc = lw.fresh("t"), lw.fresh("i"), lw.fresh("acc")
    w.open(f"for (long {t} = tl_lid; {t} < {lines}; {t} += tl_nwi)")
    idx: list[Optional[str]] = [None] * order
    rest = t
    for pos, k in enumerate(others):  # the first other mode fastest
        name, coord = lw.fresh("x"), rest
        if pos + 1 < len(others):
            # no `%` beside the `/`: clang pairs them into a `freeze` Oclgrind cannot run
            nxt = lw.fresh("rest")
            w.line(f"const long {nxt} = {rest} / (long){a.shape[k]};")
            coord, rest = f"{rest} - {nxt} * (long){a.shape[k]}", nxt
        w.line(f"const long {name} = {coord};")
        idx[k] = name
    idx[n] = i
    w.line(f"{ctype(ct)} {acc} = 0;")
    w.open(f"for (long {i} = 0; {i} < (long){a.shape[n]}; ++{i})")
    # in the compute type through the scalar tables (f16/bf16 elements are bit patterns)
    w.line(f"{acc} = {S.binary('add', acc, S.cast(a.at(idx), a.elem, ct), ct)};")
    stores: list[str] = []
    pr.store(stores, idx, None, acc)
    for line in stores:
        w.line(line)
    w.close()
    w.close()
    w.close()
