"""Result-type rules, one per value-producing instruction (spec "Instructions" + errata).

Each rule takes the instruction (whose operand types are the types written after ':') and
returns the types of the values it defines, or raises `TypeRuleError` naming the offending
span. The checker and the lowering call `result_types`; the interpreter needs no result
types, because the checker has already accepted the program (its views carry their run-time
shapes and strides). The table covers every instruction, so a rule lives in exactly one place.
"""

from __future__ import annotations

from math import prod
from typing import Optional

from tlinterp.lang import ir, ops
from tlinterp.lang.ir import Const, Span, Value
from tlinterp.lang.types import INDEX, Dyn, GroupType, MemrefType, ScalarType, Type


class TypeRuleError(Exception):
    def __init__(self, message: str, span: Optional[Span]):
        super().__init__(message)
        self.message = message
        self.span = span


def _static(op) -> Optional[int]:
    """The value of an integer constant operand, else None (run-time value)."""
    if isinstance(op, Const) and not op.is_float:
        return int(op.value)
    return None


def subview_type(inst: ir.Subview) -> MemrefType:
    t = inst.type
    if len(inst.slices) != t.order:
        raise TypeRuleError(
            f"subview needs {t.order} indices or slices for a memref of order {t.order}, "
            f"got {len(inst.slices)}", inst.span)
    shape: list[Dyn] = []
    stride: list[Dyn] = []
    for sl, size, st in zip(inst.slices, t.shape, t.stride):
        off = _static(sl.offset)
        if off is not None and off < 0:
            raise TypeRuleError("subview offset must be non-negative", sl.span)
        if not sl.is_range:
            continue  # rank reduction
        if sl.size is None:  # '?': rest of the mode
            out = None if (size is None or off is None) else size - off
            if out is not None and out <= 0:
                raise TypeRuleError(
                    f"subview offset {off} leaves no elements of a mode of size {size}", sl.span)
        else:
            out = _static(sl.size)
            if out is not None and out <= 0:
                raise TypeRuleError("subview size must be positive", sl.span)
        shape.append(out)
        stride.append(st)
    return MemrefType(t.element, tuple(shape), tuple(stride))


def expand_type(inst: ir.Expand) -> MemrefType:
    t, m = inst.type, inst.mode
    if not 0 <= m < t.order:
        raise TypeRuleError(f"expand mode {m} out of range for a memref of order {t.order}",
                            inst.span)
    if len(inst.shape) < 2:
        raise TypeRuleError("expand shape needs at least two entries", inst.span)
    if sum(e is None for e in inst.shape) > 1:
        raise TypeRuleError("at most one entry of the expand shape may be '?'", inst.span)
    for e in inst.shape:
        if isinstance(e, int) and e <= 0:
            raise TypeRuleError("expand shape entries must be positive", inst.span)
    size = t.shape[m]
    statics = [e for e in inst.shape if isinstance(e, int)]
    all_static = len(statics) == len(inst.shape)
    new: list[Dyn] = []
    for e in inst.shape:
        if isinstance(e, int):
            new.append(e)
        elif isinstance(e, Value):
            new.append(None)
        else:  # '?': inferred when everything else is known
            if size is not None and len(statics) == len(inst.shape) - 1:
                p = prod(statics)
                if size % p != 0:
                    raise TypeRuleError(
                        f"expand shape {p} does not evenly divide the mode size {size}", inst.span)
                new.append(size // p)
            else:
                new.append(None)
    if size is not None and all_static and prod(statics) != size:
        raise TypeRuleError(
            f"expand shape product {prod(statics)} differs from the mode size {size}", inst.span)
    if size is not None and not all_static and statics and size % prod(statics) != 0:
        raise TypeRuleError(
            f"expand shape {prod(statics)} does not evenly divide the mode size {size}", inst.span)
    strides: list[Dyn] = []
    s: Dyn = t.stride[m]
    for n in new:
        strides.append(s)
        s = None if (s is None or n is None) else s * n
    return MemrefType(
        t.element,
        t.shape[:m] + tuple(new) + t.shape[m + 1:],
        t.stride[:m] + tuple(strides) + t.stride[m + 1:],
    )


def fuse_type(inst: ir.Fuse) -> MemrefType:
    t, i, j = inst.type, inst.first, inst.last
    if not 0 <= i < j < t.order:
        raise TypeRuleError(
            f"fuse needs 0 <= from < to < order ({t.order}), got [{i},{j}]", inst.span)
    for k in range(i, j):
        sk, nk, sk1 = t.stride[k], t.shape[k], t.stride[k + 1]
        if None not in (sk, nk, sk1) and sk * nk != sk1:
            raise TypeRuleError(
                f"modes {k} and {k + 1} cannot be fused: stride {sk} x size {nk} != stride {sk1}",
                inst.span)
    sizes = t.shape[i:j + 1]
    fused = None if None in sizes else prod(sizes)
    return MemrefType(t.element, t.shape[:i] + (fused,) + t.shape[j + 1:],
                      t.stride[:i + 1] + t.stride[j + 1:])


def load_type(inst: ir.Load) -> Type:
    t = inst.type
    if isinstance(t, GroupType):
        if len(inst.indices) != 1:
            raise TypeRuleError(f"load from a group takes 1 index, got {len(inst.indices)}",
                                inst.span)
        return t.memref
    if len(inst.indices) != t.order:
        raise TypeRuleError(
            f"load from a memref of order {t.order} takes {t.order} indices, "
            f"got {len(inst.indices)}", inst.span)
    return t.element


def size_type(inst: ir.Size) -> ScalarType:
    if not 0 <= inst.mode < inst.type.order:
        raise TypeRuleError(
            f"size mode {inst.mode} out of range for a memref of order {inst.type.order}",
            inst.span)
    return INDEX


def alloca_type(inst: ir.Alloca) -> MemrefType:
    if not inst.type.is_static:
        raise TypeRuleError("alloca needs a static shape and stride", inst.span)
    return inst.type


def _op_result(family: str, name: str, t: ScalarType) -> ScalarType:
    op = ops.find(family, name)
    if op is None:  # the checker reports it
        raise TypeRuleError(f"unknown operation '{name}'", None)
    return op.result_type(t)


_RULES = {
    ir.Alloca: lambda i: (alloca_type(i),),
    ir.Arith: lambda i: (_op_result(ops.BINARY, i.op, i.type),),
    ir.ArithUnary: lambda i: (_op_result(ops.UNARY, i.op, i.type),),
    ir.Cast: lambda i: (i.to_type,),
    ir.Compare: lambda i: (_op_result(ops.COMPARE, i.cond, i.type),),
    ir.Expand: lambda i: (expand_type(i),),
    ir.Fuse: lambda i: (fuse_type(i),),
    ir.GroupId: lambda i: (INDEX,),
    ir.GroupSize: lambda i: (INDEX,),
    ir.Load: lambda i: (load_type(i),),
    ir.Size: lambda i: (size_type(i),),
    ir.Subview: lambda i: (subview_type(i),),
    ir.If: lambda i: tuple(i.result_types),
    # no values (a loop's variable is defined inside its body, with the loop's written type)
    **{cls: lambda i: () for cls in (
        ir.Store, ir.Barrier, ir.LifetimeStop, ir.Yield, ir.For, ir.Foreach, *ir.BLAS)},
    # v0.4: the written result type (checker_v04 holds the v0.4 rules)
    **{cls: (lambda i: (i.type,) if hasattr(i, "result") else ()) for cls in ir.V04_INSTRUCTIONS},
}


def result_types(inst: ir.Instruction) -> tuple[Type, ...]:
    """Types of the values `inst` defines (same order as `ir.results_of`); () for none."""
    return _RULES[type(inst)](inst)
