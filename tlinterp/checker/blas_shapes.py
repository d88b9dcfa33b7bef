"""The shape rules of the BLAS collectives (orders and the M/N/K relations of op() shapes),
shared by the v0.3 checker (tlinterp/checker/v03.py) and the v0.4 one (tlinterp/checker/v04.py):
both versions state the same restrictions, so they live here once.  Each rule gives
(message, span) pairs; the checkers only report them."""

from __future__ import annotations

from typing import Optional

from tlinterp.lang import ir
from tlinterp.lang.ir import Span

Problem = tuple[str, Optional[Span]]


def shape_text(shape: tuple) -> str:
    if not shape:
        return "a scalar (order 0)"
    return "x".join("?" if s is None else str(s) for s in shape)


def shape_problems(inst: ir.Blas) -> list[Problem]:
    """Every violated order or shape rule of `inst` (whose memref operands have memref
    types); the relations are only checked once the orders are right."""
    if isinstance(inst, ir.Axpby):
        return _axpby(inst)
    if isinstance(inst, ir.Hadamard):
        return _hadamard(inst)
    if isinstance(inst, ir.Sum):
        return _sum(inst)
    return _orders(inst) or _relations(inst)  # gemm, gemv, ger


def _orders(inst: ir.Blas, roles: Optional[tuple[ir.MemrefRole, ...]] = None) -> list[Problem]:
    """The orders of `roles` (default: every memref operand) against the declared ones."""
    out = []
    for role in inst.ROLES if roles is None else roles:
        value, t = getattr(inst, role.field), inst.memref_type(role.field)
        if t.order not in role.orders:
            want = " or ".join(filter(None, (", ".join(map(str, role.orders[:-1])),
                                             str(role.orders[-1]))))
            out.append((f"{inst.MNEMONIC} needs {role.label} of order {want}, got order "
                        f"{t.order}", value.span or inst.span))
    return out


def _relations(inst: ir.Blas) -> list[Problem]:
    """The declared M/N/K relations between op() shapes."""
    fields = [r.field for r in inst.ROLES]
    parts = [(f"op({r.label})" if r.trans else r.label, inst.op_shape(r.field))
             for r in inst.ROLES]
    return _shapes_agree(inst, parts, [
        (label, fields.index(fi), mi, fields.index(fj), mj)
        for label, (fi, mi), (fj, mj) in inst.RELATIONS])


def _shapes_agree(inst, parts: list[tuple[str, tuple]],
                  pairs: list[tuple[str, int, int, int, int]]) -> list[Problem]:
    """`parts` names shapes; each pair (label, part_i, mode_i, part_j, mode_j) must agree
    where both sizes are static. All mismatches go into one diagnostic."""
    bad = []
    for label, pi, mi, pj, mj in pairs:
        a, b = parts[pi][1][mi], parts[pj][1][mj]
        if a is not None and b is not None and a != b:
            bad.append(f"{label} ({a} vs {b})")
    if not bad:
        return []
    shapes = ", ".join(f"{n} is {shape_text(s)}" for n, s in parts)
    return [(f"incompatible tensor shapes: {shapes}: {', '.join(bad)} differ", inst.span)]


def _axpby(inst: ir.Axpby) -> list[Problem]:
    out = _orders(inst)
    if out:
        return out
    a = inst.op_shape("a")
    b = inst.b_type.shape
    if len(a) != len(b):
        return [(f"incompatible tensor shapes: op(A) is {shape_text(a)} and B is "
                 f"{shape_text(b)}: orders differ", inst.span)]
    return _shapes_agree(inst, [("op(A)", a), ("B", b)],
                         [(f"mode {k}", 0, k, 1, k) for k in range(len(a))])


def _hadamard(inst: ir.Hadamard) -> list[Problem]:
    out = _orders(inst)
    if out:
        return out
    shapes = [(r.label, inst.memref_type(r.field).shape) for r in inst.ROLES]
    if len({len(s) for _, s in shapes}) != 1:
        return [("incompatible tensor shapes: "
                 + ", ".join(f"{n} is {shape_text(s)}" for n, s in shapes)
                 + ": orders differ", inst.span)]
    return _shapes_agree(inst, shapes,
                         [(f"mode {k} of {shapes[i][0]} and {shapes[j][0]}", i, k, j, k)
                          for i, j in ((0, 1), (0, 2), (1, 2))
                          for k in range(len(shapes[0][1]))])


def _sum(inst: ir.Sum) -> list[Problem]:
    out = _orders(inst, inst.ROLES[:1])  # B's order follows from A's, below
    if out:
        return out
    a = inst.op_shape("a")
    want = len(a) - 1  # a vector sums into a scalar, a matrix into a vector
    if inst.b_type.order != want:
        kind = "a vector" if len(a) == 2 else "a scalar memref (order 0)"
        return [(f"sum of an order-{len(a)} A needs B to be {kind}, got order "
                 f"{inst.b_type.order}", inst.b.span or inst.span)]
    return _relations(inst) if want == 1 else []


__all__ = ["shape_problems", "shape_text", "Problem"]
