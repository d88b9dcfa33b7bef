"""Memory effects: which arguments of a function its instructions may write.

One rule per instruction class (`_EFFECTS`, covering `ir.Instruction`; tests/test_dispatch.py
checks that) says what an instruction does to memory an argument may own:

- a view: its result aliases its operand's memory — subview, expand, fuse, and load from a
  group (the member is the group argument's memory; a load from a memref defines a scalar);
- a write through an operand: store (atomic or not) and the output of every collective, the
  field its class declares once as `Blas.output()`;
- an escape: a yield handing a view out of its region. The grammar and the IR (`ir.Yield` and
  `ir.If` carry scalar types only) rule that out; should hand-built IR ever do it, the view's
  argument counts as written rather than be lost;
- nothing: scalar instructions, barrier, lifetime_stop, alloca (fresh local memory, no
  argument's), and control flow, whose regions `ir.walk` enters on its own.

`written_arguments(fn)` walks the function once, nested regions included, following views
derived from views back to the argument they come from (arguments never alias). An SSA name
always means its latest definition in text order — what the checker's scoping guarantees
(no shadowing, and a name defined in a closed region is defined again before any use), and
how the interpreter's and the lowering's environments bind names — so every definition drops
what the name meant before. The interpreter (race tracking only for arguments some
instruction may write), the lowering (`const restrict` for the others) and the fuzzer's
red-zone reports all ask here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Optional

from tlinterp.lang import ir
from tlinterp.lang.diagnostics import not_yet
from tlinterp.lang.ir import Span, Value
from tlinterp.lang.types import GroupType, MemrefType


@dataclass(frozen=True)
class Effect:
    """What one instruction does to memory (see the module docstring)."""

    view_of: Optional[Value] = None  # its result aliases this operand's memory
    writes: Optional[Value] = None  # it may write memory through this operand
    escapes: tuple[Value, ...] = ()  # views it hands out of its region


NONE = Effect()


def _view(inst) -> Effect:
    return Effect(view_of=inst.operand)


def _load(inst: ir.Load) -> Effect:
    return Effect(view_of=inst.operand) if isinstance(inst.type, GroupType) else NONE


def _store(inst: ir.Store) -> Effect:
    return Effect(writes=inst.operand)


def _output(inst: ir.Blas) -> Effect:
    return Effect(writes=getattr(inst, inst.output()))


def _yield(inst: ir.Yield) -> Effect:
    return Effect(escapes=tuple(v for v in inst.values if isinstance(v, Value)))


def _v04(inst: ir.Instruction) -> Effect:
    raise not_yet(inst, "analysed")


_EFFECTS: dict[type, Callable[[ir.Instruction], Effect]] = {
    **{cls: _view for cls in (ir.Subview, ir.Expand, ir.Fuse)},
    ir.Load: _load,
    ir.Store: _store,
    **{cls: _output for cls in ir.BLAS},
    ir.Yield: _yield,
    **{cls: lambda i: NONE for cls in (
        ir.Alloca, ir.Arith, ir.ArithUnary, ir.Cast, ir.Compare, ir.GroupId, ir.GroupSize,
        ir.Size, ir.Barrier, ir.LifetimeStop, ir.If, ir.For, ir.Foreach)},
    **{cls: _v04 for cls in ir.V04_INSTRUCTIONS},
    # v0.4 instructions the interpreter runs (non-SPMD)
    **{cls: lambda i: NONE for cls in (ir.Constant, ir.Builtin, ir.Associated, ir.AtomicLoad,
                                       ir.ForeachNd)},
    ir.AtomicStore: _store, ir.AtomicUpdate: _store,
    ir.Cumsum: lambda i: Effect(writes=i.b),
    # v0.4 SPMD (interp/spmd_exec.py): a coopmatrix store writes; the rest are register values
    ir.CoopStore: _store, ir.CoopAtomicUpdate: _store,
    **{cls: lambda i: NONE for cls in (
        ir.Parallel, ir.ForeachTile, ir.SubgroupBroadcast, ir.SubgroupOp,
        ir.CoopConstruct, ir.CoopLoad, ir.CoopPrefetch, ir.CoopMulAdd, ir.CoopScale,
        ir.CoopReduce, ir.CoopExtract, ir.CoopInsert, ir.CoopApply)},
}


def effect(inst: ir.Instruction) -> Effect:
    return _EFFECTS[type(inst)](inst)


def _defined(inst: ir.Instruction) -> tuple[Value, ...]:
    """Every name `inst` defines: its results, and a loop's variable."""
    if isinstance(inst, (ir.For, ir.Foreach)):
        return (inst.var,)
    return ir.results_of(inst)


def written_arguments(fn: ir.Function) -> dict[str, list[tuple[str, Optional[Span]]]]:
    """Argument name -> (instruction kind, span) of every instruction that may write its
    memory, in program order; arguments nothing writes are absent. Group arguments count:
    a write through a member loaded from `%g` writes `%g`. Conservative: every store, every
    collective output and every escaping view in any region counts, reached or not."""
    root: dict[str, str] = {a.value.name: a.value.name for a in fn.args  # view -> argument
                            if isinstance(a.type, (MemrefType, GroupType))}
    out: dict[str, list[tuple[str, Optional[Span]]]] = {}
    for inst in ir.walk(fn.body):
        e = effect(inst)
        targets = e.escapes if e.writes is None else (e.writes, *e.escapes)
        for v in targets:
            if v.name in root:
                out.setdefault(root[v.name], []).append((type(inst).__name__.lower(),
                                                         inst.span))
        base = root.get(e.view_of.name) if e.view_of is not None else None
        for d in _defined(inst):  # a definition drops what its name meant before
            root.pop(d.name, None)
        if base is not None:
            root[inst.result.name] = base
    return out


__all__ = ["Effect", "effect", "written_arguments"]
