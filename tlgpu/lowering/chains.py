"""Adjacent gemm pairs whose intermediate can stay in registers (lower_mma.lower_pair): the
output T of the first gemm is op(A) of a second gemm that follows it, with only views, scalar
arithmetic and allocas in between (`BETWEEN`: they read and write no memory, so the lowering
emits them before the pair and their results are the same). Matched on the IR;
whether the pair then takes the tensor-core path is the lowering's call
(lower_collectives.lower_gemm_pair), since it depends on the knobs, device and tiles.

The pair must be safe to run as one step with no barrier between its gemms, which holds
when the first gemm overwrites T whole (beta a constant 0, not atomic), the second reads T
untransposed and nothing else of the pair reads or writes T's memory, and the second writes
no memory the first reads. Memory is told apart by base: the alloca or argument a view comes
from (arguments never alias, docs/semantics.md "Arguments"; allocas live at once never share
memory). T is dead after the pair, so the first need not store it at all, when T is an alloca
of the same region and the next instruction that touches T's memory overwrites it whole or
ends its lifetime, or none does (the alloca's memory dies with its region).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional

from tlinterp.lang import ir
from tlinterp.lang.effects import effect


@dataclass(frozen=True)
class GemmPair:
    first: ir.Gemm
    second: ir.Gemm
    keep: bool  # T is read later: the first still stores it
    between: tuple = ()  # the instructions between the two, lowered before the pair

    @property
    def length(self) -> int:
        """How many instructions of the region the pair stands for."""
        return 2 + len(self.between)


# instructions that read and write no memory (views, sizes, scalar arithmetic, an alloca's
# fresh memory, placed before lowering starts): the first gemm cannot change their results,
# so they may move ahead of it
BETWEEN = (ir.Subview, ir.Expand, ir.Fuse, ir.Size, ir.Arith, ir.ArithUnary, ir.Cast,
           ir.Compare, ir.GroupId, ir.GroupSize, ir.Alloca)


Bases = dict[str, set[str]]


def bases(fn: ir.Function) -> Bases:
    """View name -> every alloca or argument it may view (all its definitions: names may be
    defined again after a region closes, and more bases only make `gemm_pair` stricter)."""
    out: Bases = {}
    for inst in ir.walk(fn.body):
        src = effect(inst).view_of
        if src is not None:
            out.setdefault(inst.result.name, set()).update(_base(out, src.name))
    return out


def _base(bs: Bases, name: str) -> set[str]:
    return bs.get(name, set()) | {name}


def _names(x, out: set[str]) -> set[str]:
    """Every value name an instruction mentions, nested regions included."""
    if isinstance(x, ir.Value):
        out.add(x.name)
    elif isinstance(x, ir.Region):
        for inst in x.instructions:
            _names(inst, out)
    elif isinstance(x, (list, tuple)):
        for y in x:
            _names(y, out)
    elif dataclasses.is_dataclass(x) and not isinstance(x, type):
        for f in dataclasses.fields(x):
            _names(getattr(x, f.name), out)
    return out


def _zero(op: ir.Operand) -> bool:
    return isinstance(op, ir.Const) and float(op.value) == 0.0


def _overwrites(inst, name: str) -> bool:
    """A collective writing all of `name` without reading it (beta a constant 0)."""
    return isinstance(inst, ir.BLAS) and getattr(inst, inst.output()).name == name \
        and not inst.atomic and _zero(inst.beta)


def _dead_after(insts: list, k: int, name: str, bs: Bases) -> bool:
    if not any(isinstance(i, ir.Alloca) and i.result.name == name for i in insts[:k]):
        return False
    for inst in insts[k + 1:]:
        touched = {n for n in _names(inst, set()) if name in _base(bs, n)}
        if not touched:
            continue
        if isinstance(inst, ir.LifetimeStop):
            return True
        inputs = {getattr(inst, f).name for f in inst.inputs()} \
            if isinstance(inst, ir.BLAS) else set()
        return _overwrites(inst, name) and not any(name in _base(bs, n) for n in inputs)
    return True


def gemm_pair(insts: list, k: int, bs: Bases) -> Optional[GemmPair]:
    """The pair starting at insts[k], or None."""
    j = k + 1
    while j < len(insts) and isinstance(insts[j], BETWEEN):
        j += 1
    if j >= len(insts):
        return None
    one, two = insts[k], insts[j]
    if not (isinstance(one, ir.Gemm) and isinstance(two, ir.Gemm)):
        return None
    if two.a.name != one.c.name or two.transposed("a") or not _overwrites(one, one.c.name):
        return None
    t = _base(bs, one.c.name)
    read1 = _base(bs, one.a.name) | _base(bs, one.b.name)
    if t & (read1 | _base(bs, two.b.name) | _base(bs, two.c.name)):
        return None
    if _base(bs, two.c.name) & read1:
        return None
    return GemmPair(one, two, keep=not _dead_after(insts, j, one.c.name, bs),
                    between=tuple(insts[k + 1:j]))
