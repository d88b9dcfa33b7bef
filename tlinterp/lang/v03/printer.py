"""Printer: IR -> canonical v0.3 text.

Canonical means: `arith.add` (not `add`), `hadamard_product`, no comma after the modifiers of
gemm/gemv/sum, `strided<...>` only when the layout is not the packed default, a group offset
only when it is not 0, floats as `repr()` (shortest text that round-trips exactly), and
2-space indentation.  `parse(format_program(p)) == p` holds for every program the parser can
produce.  Regions are printed with an explicit stack, so deep nesting needs no recursion.

`spellings` (mnemonic -> spelling, e.g. {"hadamard_product": "hadamard"}) prints a target's
dialect instead (fuzz/profiles); the parser reads every spelling it may produce.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping
from typing import Optional, Union

from tlinterp.lang import ir, ops
from tlinterp.lang.diagnostics import no_equivalent
from tlinterp.lang.ir import Const, Value
from tlinterp.lang.types import INDEX, GroupType, MemrefType, ScalarType, Type, VoidType

INDENT = "  "


def format_type(t: Type) -> str:
    """`f32`, `memref<f32x4x?>`, `memref<f32x4x?,strided<1,?>>`, `group<memref<f32>, offset: ?>`
    (the types spell themselves, in tlinterp/lang/types.py)."""
    if not isinstance(t, (ScalarType, MemrefType, GroupType, VoidType)):
        raise TypeError(f"not a type: {t!r}")
    return str(t)


def format_operand(op: ir.Operand) -> str:
    """`%name`, `42`, `1.5` (floats always with '.', 'e' or hex so they re-parse as floats)."""
    if isinstance(op, Value):
        return "%" + op.name
    if isinstance(op, Const):
        v = op.value
        if op.is_float:
            f = float(v)
            if not math.isfinite(f):
                raise ValueError(f"{f} has no spelling in the tensor language")
            return repr(f)  # e.g. '1.0', '1e+20', '5e-324': all valid floating constants
        try:
            return str(operator.index(v))  # int, bool, numpy integers
        except TypeError:
            if isinstance(v, float) and v.is_integer():
                return str(int(v))
            raise ValueError(f"integer constant with non-integer value {v!r}") from None
    raise TypeError(f"not an operand: {op!r}")


def _slice(s: ir.Slice) -> str:
    if not s.is_range:
        return format_operand(s.offset)
    if s.size is None:
        if isinstance(s.offset, Const) and not s.offset.is_float and s.offset.value == 0:
            return ":"
        return format_operand(s.offset) + ":?"
    return format_operand(s.offset) + ":" + format_operand(s.size)


def _expand_shape(shape: tuple) -> str:
    parts = ["?" if e is None else format_operand(e) if isinstance(e, Value) else str(int(e))
             for e in shape]
    # `%nx8` would lex as one identifier: space the 'x' out whenever a value takes part.
    sep = " x " if any(isinstance(e, Value) for e in shape) else "x"
    return sep.join(parts)


def _ops(*ops: ir.Operand) -> str:
    return ", ".join(format_operand(o) for o in ops)


def _types(*ts: Type) -> str:
    return ", ".join(format_type(t) for t in ts)


def _t(trans: bool) -> str:
    return ".t" if trans else ".n"


def _atomic(atomic: bool) -> str:
    return ".atomic" if atomic else ""


Spellings = Optional[Mapping[str, str]]


def _header(inst: ir.Instruction, spellings: Spellings = None) -> str:
    """The one-line text of an instruction; for if/for/foreach the line that opens the body."""
    text = _HEADERS[type(inst)](inst)
    if spellings:
        name = mnemonic(inst)
        if name in spellings:  # the mnemonic opens the text after any `%r = `
            at = text.index(name, text.index("= ") + 2 if text.startswith("%") else 0)
            text = text[:at] + spellings[name] + text[at + len(name):]
    return text


def mnemonic(inst: ir.Instruction) -> str:
    """The canonical mnemonic without modifiers: `gemm`, `arith.add`, `cmp.lt`, `store`."""
    if isinstance(inst, ir.Blas):
        return inst.MNEMONIC
    # named without formatting operands (v0.4 IR may hold complex literals, which v0.3 lacks)
    if isinstance(inst, (ir.Arith, ir.ArithUnary)):
        return f"arith.{inst.op}"
    if isinstance(inst, ir.Compare):
        return f"cmp.{inst.cond}"
    if isinstance(inst, ir.Cast):
        return ops.CAST.mnemonic
    if isinstance(inst, (ir.Store, ir.Yield, ir.If)):  # v0.4's if may yield coopmatrices
        return {ir.Store: "store", ir.Yield: "yield", ir.If: "if"}[type(inst)]
    if isinstance(inst, ir.V04_INSTRUCTIONS):  # no v0.3 spelling: v0.4's name
        from tlinterp.lang.v04.names import construct

        return construct(inst)
    text = _HEADERS[type(inst)](inst)
    if text.startswith("%"):
        text = text[text.index("= ") + 2:]
    return text.split(" ", 1)[0]


def _if(inst: ir.If) -> str:
    lhs = (", ".join("%" + r.name for r in inst.results) + " = ") if inst.results else ""
    types = (" -> (" + _types(*inst.result_types) + ")") if inst.result_types else \
        (" -> ()" if inst.empty_arrow else "")
    return f"{lhs}if {format_operand(inst.cond)}{types} {{"


def _for(inst: ir.For) -> str:
    step = (", " + format_operand(inst.step)) if inst.step is not None else ""
    ty = "" if inst.type is INDEX else " : " + inst.type.value
    return (f"for %{inst.var.name} = {_ops(inst.start, inst.stop)}{step}{ty} {{")


def _foreach(inst: ir.Foreach) -> str:
    ty = "" if inst.type is INDEX else " : " + inst.type.value
    return f"foreach %{inst.var.name} = {_ops(inst.start, inst.stop)}{ty} {{"


def _yield(inst: ir.Yield) -> str:
    vals = (" " + _ops(*inst.values)) if inst.values else ""
    types = (" " + _types(*inst.types)) if inst.types else ""
    return f"yield{vals} :{types}"


def _store(inst: ir.Store) -> str:
    return (f"store {format_operand(inst.value)}, %{inst.operand.name}"
            f"[{_ops(*inst.indices)}] : {format_type(inst.type)}")


def _blas(inst: ir.Blas) -> str:
    """Mnemonic, one .n/.t per transposable operand, .atomic, then alpha, the inputs, beta
    and the output with their types, all as the instruction class declares them."""
    head = inst.MNEMONIC + "".join(_t(getattr(inst, f)) for f in inst.flags())
    fields = inst.operand_fields()
    ops = (getattr(inst, f) for f in fields)
    types = (getattr(inst, f + "_type") for f in fields)
    return f"{head}{_atomic(inst.atomic)} {_ops(*ops)} : {_types(*types)}"


def _alloca(inst: ir.Alloca) -> str:
    return f"alloca -> {format_type(inst.type)}"


def _arith(inst: ir.Arith) -> str:
    return f"arith.{inst.op} {_ops(inst.lhs, inst.rhs)} : {inst.type.value}"


def _arith_unary(inst: ir.ArithUnary) -> str:
    return f"arith.{inst.op} {format_operand(inst.operand)} : {inst.type.value}"


def _cast(inst: ir.Cast) -> str:
    return (f"cast {format_operand(inst.operand)} : {inst.from_type.value} -> "
            f"{inst.to_type.value}")


def _compare(inst: ir.Compare) -> str:
    return f"cmp.{inst.cond} {_ops(inst.lhs, inst.rhs)} : {inst.type.value}"


def _indexed(mnemonic: str, inside: Callable[..., object]) -> Callable[..., str]:
    """`MNEMONIC %operand[INSIDE] : type`, the form of load, size and the view instructions."""
    return lambda inst: (f"{mnemonic} %{inst.operand.name}[{inside(inst)}] : "
                         f"{format_type(inst.type)}")


def _defines(op_text: Callable[..., str]) -> Callable[..., str]:
    """`%name = ` before the text of a single-result instruction."""
    return lambda inst: f"%{inst.result.name} = {op_text(inst)}"


def _v04_only(inst: ir.Instruction) -> str:
    """v0.4-only instructions: tlinterp/migrate.to_v03 rewrites or rejects them first."""
    from tlinterp.lang.v04.names import construct

    raise no_equivalent(construct(inst), "v0.3", inst.span)


_HEADERS: dict[type, Callable[..., str]] = {
    ir.Alloca: _defines(_alloca),
    ir.Arith: _defines(_arith),
    ir.ArithUnary: _defines(_arith_unary),
    ir.Cast: _defines(_cast),
    ir.Compare: _defines(_compare),
    ir.Expand: _defines(_indexed("expand", lambda i: f"{i.mode} -> {_expand_shape(i.shape)}")),
    ir.Fuse: _defines(_indexed("fuse", lambda i: f"{i.first},{i.last}")),
    ir.GroupId: _defines(lambda inst: "group_id"),
    ir.GroupSize: _defines(lambda inst: "group_size"),
    ir.Load: _defines(_indexed("load", lambda i: _ops(*i.indices))),
    ir.Size: _defines(_indexed("size", lambda i: i.mode)),
    ir.Subview: _defines(_indexed("subview", lambda i: ", ".join(map(_slice, i.slices)))),
    ir.Store: _store,
    ir.Barrier: lambda inst: "barrier",
    ir.LifetimeStop: lambda inst: f"lifetime_stop %{inst.operand.name}",
    ir.If: _if,
    ir.Yield: _yield,
    ir.For: _for,
    ir.Foreach: _foreach,
    **{cls: _blas for cls in ir.BLAS},
    **{cls: _v04_only for cls in ir.V04_INSTRUCTIONS},
}


_Task = Union[str, tuple]  # a finished line, or ("region", iterator, depth)


def _emit(instructions: list, depth: int, out: list[str], spellings: Spellings = None) -> None:
    """Append the lines of `instructions` at `depth`."""
    emit_lines(instructions, depth, out, lambda inst: _header(inst, spellings), INDENT,
               (ir.For, ir.Foreach))


def emit_lines(instructions: list, depth: int, out: list[str],
               header: Callable[[ir.Instruction], str], indent: str,
               bodies: tuple[type, ...],
               close: Callable[[ir.Instruction], str] = lambda inst: "") -> None:
    """Append the lines of `instructions` at `depth` (levels of `indent`), each opened by
    `header(inst)`; an if prints its then/else regions, instances of `bodies` their `body`,
    closed by "}" and `close(inst)`. The v0.3 and v0.4 printers both walk with it;
    iterative, so nesting depth is free."""
    stack: list[_Task] = [("region", iter(instructions), depth)]
    while stack:
        task = stack.pop()
        if isinstance(task, str):
            out.append(task)
            continue
        _, it, d = task
        inst = next(it, None)
        if inst is None:
            continue
        stack.append(task)
        pad = indent * d
        out.append(pad + header(inst))
        if isinstance(inst, ir.If):
            if inst.otherwise is not None:
                stack.extend([pad + "}", ("region", iter(inst.otherwise.instructions), d + 1),
                              pad + "} else {"])
            else:
                stack.append(pad + "}")
            stack.append(("region", iter(inst.then.instructions), d + 1))
        elif isinstance(inst, bodies):
            stack.extend([pad + "}" + close(inst), ("region", iter(inst.body.instructions),
                                                    d + 1)])


def format_instruction(inst: ir.Instruction, indent: int = 0,
                       spellings: Spellings = None) -> str:
    """One instruction (with its regions, if any) at `indent` levels, no trailing newline."""
    out: list[str] = []
    _emit([inst], indent, out, spellings)
    return "\n".join(out)


def format_function(fn: ir.Function, spellings: Spellings = None) -> str:
    args = ", ".join(f"%{a.value.name}: {format_type(a.type)}" for a in fn.args)
    attrs = ""
    if fn.work_group_size is not None:
        attrs += f" work_group_size({int(fn.work_group_size[0])},{int(fn.work_group_size[1])})"
    if fn.subgroup_size is not None:
        attrs += f" subgroup_size({int(fn.subgroup_size)})"
    out = [f"func @{fn.name}({args}){attrs} {{"]
    _emit(fn.body.instructions, 1, out, spellings)
    out.append("}")
    return "\n".join(out)


def format_program(program: ir.Program, spellings: Spellings = None) -> str:
    """The whole program, functions separated by a blank line, ending with a newline."""
    return "\n\n".join(format_function(f, spellings) for f in program.functions) + "\n" \
        if program.functions else ""


def format_region(region: ir.Region, indent: int = 0) -> str:
    """The instructions of a region (no braces), at `indent` levels."""
    out: list[str] = []
    _emit(region.instructions, indent, out)
    return "\n".join(out)


__all__ = ["format_type", "format_operand", "format_instruction", "format_function",
           "format_program", "format_region", "mnemonic"]

