"""Printer: IR -> canonical v0.3 text.

Canonical means: `arith.add` (not `add`), `hadamard_product`, no comma after the modifiers of
gemm/gemv/sum, `strided<...>` only when the layout is not the packed default, a group offset
only when it is not 0, floats as `repr()` (shortest text that round-trips exactly), and
2-space indentation.  `parse(format_program(p)) == p` holds for every program the parser can
produce.  Regions are printed with an explicit stack, so deep nesting needs no recursion.
"""

from __future__ import annotations

import math
import operator
from typing import Union

from . import ir
from .ir import Const, Value
from .types import INDEX, Dyn, GroupType, MemrefType, ScalarType, Type, VoidType

INDENT = "  "


def _dyn(d: Dyn) -> str:
    return "?" if d is None else str(int(d))


def format_type(t: Type) -> str:
    """`f32`, `memref<f32x4x?>`, `memref<f32x4x?,strided<1,?>>`, `group<memref<f32>, offset: ?>`."""
    if isinstance(t, ScalarType):
        return t.value
    if isinstance(t, MemrefType):
        text = "memref<" + t.element.value + "".join("x" + _dyn(s) for s in t.shape)
        if not t.is_canonical:
            text += ",strided<" + ",".join(_dyn(s) for s in t.stride) + ">"
        return text + ">"
    if isinstance(t, GroupType):
        text = "group<" + format_type(t.memref)
        if t.offset != 0:
            text += ", offset: " + _dyn(t.offset)
        return text + ">"
    if isinstance(t, VoidType):
        return "void"
    raise TypeError(f"not a type: {t!r}")


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


def _header(inst: ir.Instruction) -> str:
    """The one-line text of an instruction; for if/for/foreach the line that opens the body."""
    if isinstance(inst, ir.If):
        lhs = (", ".join("%" + r.name for r in inst.results) + " = ") if inst.results else ""
        types = (" -> (" + _types(*inst.result_types) + ")") if inst.result_types else \
            (" -> ()" if inst.empty_arrow else "")
        return f"{lhs}if {format_operand(inst.cond)}{types} {{"
    if isinstance(inst, ir.For):
        step = (", " + format_operand(inst.step)) if inst.step is not None else ""
        ty = "" if inst.type is INDEX else " : " + inst.type.value
        return (f"for %{inst.var.name} = {_ops(inst.start, inst.stop)}{step}{ty} {{")
    if isinstance(inst, ir.Foreach):
        ty = "" if inst.type is INDEX else " : " + inst.type.value
        return f"foreach %{inst.var.name} = {_ops(inst.start, inst.stop)}{ty} {{"
    if isinstance(inst, ir.Yield):
        vals = (" " + _ops(*inst.values)) if inst.values else ""
        types = (" " + _types(*inst.types)) if inst.types else ""
        return f"yield{vals} :{types}"
    if isinstance(inst, ir.Barrier):
        return "barrier"
    if isinstance(inst, ir.LifetimeStop):
        return f"lifetime_stop %{inst.operand.name}"
    if isinstance(inst, ir.Store):
        return (f"store {format_operand(inst.value)}, %{inst.operand.name}"
                f"[{_ops(*inst.indices)}] : {format_type(inst.type)}")
    if isinstance(inst, (ir.Axpby, ir.Sum)):
        head = "axpby" if isinstance(inst, ir.Axpby) else "sum"
        return (f"{head}{_t(inst.trans)}{_atomic(inst.atomic)} "
                f"{_ops(inst.alpha, inst.a, inst.beta, inst.b)} : "
                f"{_types(inst.alpha_type, inst.a_type, inst.beta_type, inst.b_type)}")
    if isinstance(inst, (ir.Gemm, ir.Gemv, ir.Ger, ir.Hadamard)):
        if isinstance(inst, ir.Gemm):
            head = "gemm" + _t(inst.trans_a) + _t(inst.trans_b)
        elif isinstance(inst, ir.Gemv):
            head = "gemv" + _t(inst.trans_a)
        elif isinstance(inst, ir.Ger):
            head = "ger"
        else:
            head = "hadamard_product"
        return (f"{head}{_atomic(inst.atomic)} "
                f"{_ops(inst.alpha, inst.a, inst.b, inst.beta, inst.c)} : "
                f"{_types(inst.alpha_type, inst.a_type, inst.b_type, inst.beta_type, inst.c_type)}")
    return f"%{inst.result.name} = {_value_op(inst)}"


def _value_op(inst: ir.Instruction) -> str:
    if isinstance(inst, ir.Alloca):
        return f"alloca -> {format_type(inst.type)}"
    if isinstance(inst, ir.Arith):
        return f"arith.{inst.op} {_ops(inst.lhs, inst.rhs)} : {inst.type.value}"
    if isinstance(inst, ir.ArithUnary):
        return f"arith.{inst.op} {format_operand(inst.operand)} : {inst.type.value}"
    if isinstance(inst, ir.Cast):
        return (f"cast {format_operand(inst.operand)} : {inst.from_type.value} -> "
                f"{inst.to_type.value}")
    if isinstance(inst, ir.Compare):
        return f"cmp.{inst.cond} {_ops(inst.lhs, inst.rhs)} : {inst.type.value}"
    if isinstance(inst, ir.Expand):
        return (f"expand %{inst.operand.name}[{inst.mode} -> {_expand_shape(inst.shape)}] : "
                f"{format_type(inst.type)}")
    if isinstance(inst, ir.Fuse):
        return (f"fuse %{inst.operand.name}[{inst.first},{inst.last}] : "
                f"{format_type(inst.type)}")
    if isinstance(inst, ir.GroupId):
        return "group_id"
    if isinstance(inst, ir.GroupSize):
        return "group_size"
    if isinstance(inst, ir.Load):
        return f"load %{inst.operand.name}[{_ops(*inst.indices)}] : {format_type(inst.type)}"
    if isinstance(inst, ir.Size):
        return f"size %{inst.operand.name}[{inst.mode}] : {format_type(inst.type)}"
    if isinstance(inst, ir.Subview):
        return (f"subview %{inst.operand.name}[{', '.join(_slice(s) for s in inst.slices)}] : "
                f"{format_type(inst.type)}")
    raise TypeError(f"not an instruction: {inst!r}")


_Task = Union[str, tuple]  # a finished line, or ("region", iterator, depth)


def _emit(instructions: list, depth: int, out: list[str]) -> None:
    """Append the lines of `instructions` at `depth`; iterative, so nesting depth is free."""
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
        pad = INDENT * d
        out.append(pad + _header(inst))
        if isinstance(inst, ir.If):
            if inst.otherwise is not None:
                stack.extend([pad + "}", ("region", iter(inst.otherwise.instructions), d + 1),
                              pad + "} else {"])
            else:
                stack.append(pad + "}")
            stack.append(("region", iter(inst.then.instructions), d + 1))
        elif isinstance(inst, (ir.For, ir.Foreach)):
            stack.extend([pad + "}", ("region", iter(inst.body.instructions), d + 1)])


def format_instruction(inst: ir.Instruction, indent: int = 0) -> str:
    """One instruction (with its regions, if any) at `indent` levels, no trailing newline."""
    out: list[str] = []
    _emit([inst], indent, out)
    return "\n".join(out)


def format_function(fn: ir.Function) -> str:
    args = ", ".join(f"%{a.value.name}: {format_type(a.type)}" for a in fn.args)
    attrs = ""
    if fn.work_group_size is not None:
        attrs += f" work_group_size({int(fn.work_group_size[0])},{int(fn.work_group_size[1])})"
    if fn.subgroup_size is not None:
        attrs += f" subgroup_size({int(fn.subgroup_size)})"
    out = [f"func @{fn.name}({args}){attrs} {{"]
    _emit(fn.body.instructions, 1, out)
    out.append("}")
    return "\n".join(out)


def format_program(program: ir.Program) -> str:
    """The whole program, functions separated by a blank line, ending with a newline."""
    return "\n\n".join(format_function(f) for f in program.functions) + "\n" \
        if program.functions else ""


def format_region(region: ir.Region, indent: int = 0) -> str:
    """The instructions of a region (no braces), at `indent` levels."""
    out: list[str] = []
    _emit(region.instructions, indent, out)
    return "\n".join(out)


__all__ = ["format_type", "format_operand", "format_instruction", "format_function",
           "format_program", "format_region"]

