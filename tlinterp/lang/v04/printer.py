"""Printer: IR -> tensor language v0.4 text.

The IR must be in its v0.4 form (tlinterp/front/migrate.py `to_v04` makes it from any program:
literal operands become `constant` instructions, v0.3 slices become `offset:size`, allocas
and their views get the `local` address space).  `format_program_v04` runs `to_v04` first, so
any program prints, or a `SourceError` says what has no v0.4 equivalent and where.

Canonical v0.4 text: 4-space indentation, `attributes{...}` only when there are some,
`strided<...>` only when not packed, `, local` only for local memrefs, a group's size always,
its offset only when not 0, transposes only where `.t` is needed (`gemm.t` = `.t.n`).
`parse_v04(format_program_v04(p)) == to_v04(p)` holds for every program.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from tlinterp.lang import ir
from tlinterp.lang.diagnostics import no_equivalent
from tlinterp.lang.ir import Const, Value
from tlinterp.lang.types import (
    INDEX,
    CoopMatrixType,
    GroupType,
    MemrefType,
    ScalarType,
    Type,
    VoidType,
)
from tlinterp.lang.v03.printer import emit_lines
from tlinterp.lang.v04 import names

INDENT = "    "


def format_type(t: Type) -> str:
    if isinstance(t, ScalarType):
        return "bool" if t is ScalarType.i1 else t.value
    if isinstance(t, MemrefType):
        text = "memref<" + t.element.value + "".join("x" + _dyn(s) for s in t.shape)
        if not t.is_canonical:
            text += ",strided<" + ",".join(_dyn(s) for s in t.stride) + ">"
        if t.space != "global":
            text += "," + t.space
        return text + ">"
    if isinstance(t, GroupType):
        text = f"group<{format_type(t.memref)}x{_dyn(t.size)}"
        if t.offset != 0:
            text += ", offset: " + _dyn(t.offset)
        return text + ">"
    if isinstance(t, CoopMatrixType):
        return f"coopmatrix<{t.component.value}x{t.rows}x{t.cols},{t.use}>"
    if isinstance(t, VoidType):
        return "void"
    raise TypeError(f"not a type: {t!r}")


def _dyn(d) -> str:
    return "?" if d is None else str(int(d))


def format_float(f: float) -> str:
    if math.isnan(f):
        return "nan"
    if math.isinf(f):
        return "inf" if f > 0 else "-inf"
    return repr(float(f))


def format_constant(c: Const, t: Type) -> str:
    """The literal of a `constant` instruction of type `t`."""
    v = c.value
    if isinstance(v, complex):
        return f"[{format_float(v.real)}, {format_float(v.imag)}]"
    if t is ScalarType.i1:
        return "true" if v else "false"
    if c.is_float:
        return format_float(float(v))
    return str(int(v))


def _op(o: ir.Operand) -> str:
    """An operand: a value, or an integer constant where v0.4 allows one (slices, shapes)."""
    if isinstance(o, Value):
        return "%" + o.name
    if isinstance(o, Const) and not o.is_float:
        return str(int(o.value))
    raise no_equivalent(f"the literal operand {o.value!r}", "v0.4 (write a constant)",
                        getattr(o, "span", None))


def _ops(*ops: ir.Operand) -> str:
    return ", ".join(_op(o) for o in ops)


def _idx(inst) -> str:
    return f"%{inst.operand.name}[{_ops(*inst.indices)}]"


def _scope(inst) -> str:
    return (f".{inst.scope}" if inst.scope else "") + \
        (f".{inst.semantics}" if inst.semantics else "")


def _slice(s: ir.Slice) -> str:
    if not s.is_range:
        return _op(s.offset)
    if s.size is None:
        raise no_equivalent("a slice to the end of the mode ('?' size)", "v0.4", s.span)
    return f"{_op(s.offset)}:{_op(s.size)}"


def _view_type(inst) -> str:
    t = inst.result_type
    if t is None:
        raise ValueError("a view without its v0.4 result type: run migrate.to_v04 first")
    return format_type(t)


def _unary_result(inst: ir.ArithUnary) -> Type:
    from tlinterp.lang.v04.parser import unary_result_type

    return unary_result_type(inst.op, inst.type)


def _blas(inst: ir.Blas) -> str:
    head = inst.keyword("v0.4")
    head += ".atomic" if inst.atomic else ""
    flags = [getattr(inst, f) for f in inst.flags()]
    while flags and not flags[-1]:  # trailing .n are the default
        flags.pop()
    head += "".join(".t" if f else ".n" for f in flags)
    return f"{head} {_ops(*(getattr(inst, f) for f in inst.operand_fields()))}"


def _for(inst: ir.For) -> str:
    lhs = (", ".join("%" + r.name for r in inst.results) + " = ") if inst.results else ""
    step = (", " + _op(inst.step)) if inst.step is not None else ""
    carried = ""
    if inst.inits:
        carried = (" init(" + ", ".join(f"%{v.name}={_op(i)}" for v, i in inst.inits)
                   + ") -> (" + ", ".join(format_type(t) for t in inst.result_types) + ")")
    return f"{lhs}for %{inst.var.name}={_op(inst.start)},{_op(inst.stop)}{step}{carried} {{"


def _if(inst: ir.If) -> str:
    lhs = (", ".join("%" + r.name for r in inst.results) + " = ") if inst.results else ""
    types = (" -> (" + ", ".join(format_type(t) for t in inst.result_types) + ")") \
        if inst.result_types else (" -> ()" if inst.empty_arrow else "")
    return f"{lhs}if {_op(inst.cond)}{types} {{"


def _loop(kw: str, vars_, starts, stops) -> str:
    return (f"{kw} ({_ops(*vars_)})=({_ops(*starts)}),({_ops(*stops)})")


def _coop_mods(inst) -> str:
    return (".t" if inst.trans else "") + (f".{inst.checked}_checked" if inst.checked else "")


def _defines(text: Callable[..., str]) -> Callable[..., str]:
    return lambda inst: f"%{inst.result.name} = {text(inst)}"


def _typed(text: Callable[..., str]) -> Callable[..., str]:
    """`%name = TEXT : type`, the form of most single-result instructions."""
    return _defines(lambda i: f"{text(i)} : {format_type(i.type)}")


def _builtin(inst: ir.Builtin) -> str:
    return f"{inst.name}{'.' + inst.comp if inst.comp else ''} : {format_type(inst.type)}"


def _barrier(inst: ir.Barrier) -> str:
    return "barrier" + "".join(f".{f}" for f in ir.BARRIER_FENCES if f in inst.fences)


def _arith(inst: ir.Arith) -> str:
    if inst.op not in names.ARITH_BINARY:
        raise no_equivalent(f"arith.{inst.op}", "v0.4", inst.span)
    return f"{inst.op} {_ops(inst.lhs, inst.rhs)} : {format_type(inst.type)}"


def _unary(inst: ir.ArithUnary) -> str:
    if inst.op not in names.UNARY:
        raise no_equivalent(f"arith.{inst.op}", "v0.4", inst.span)
    return f"{inst.op} {_op(inst.operand)} : {format_type(_unary_result(inst))}"


def _load_type(inst: ir.Load) -> str:
    t = inst.type
    return format_type(t.element if isinstance(t, MemrefType) else t.memref)


def _expand_shape(shape) -> str:
    return " x ".join(_op(e) if isinstance(e, Value) else str(int(e)) for e in shape)


def _alloca(inst: ir.Alloca) -> str:
    return f"alloca{format_attributes(inst.attributes)} : {format_type(inst.type)}"


_HEADERS: dict[type, Callable[..., str]] = {
    ir.Alloca: _defines(_alloca),
    ir.Arith: _defines(_arith),
    ir.ArithUnary: _defines(_unary),
    ir.Cast: _defines(lambda i: f"cast {_op(i.operand)} : {format_type(i.to_type)}"),
    ir.Compare: _defines(lambda i: f"{names.COMPARE_SPELLING[i.cond]} "
                                   f"{_ops(i.lhs, i.rhs)} : bool"),
    ir.Expand: _defines(lambda i: f"expand %{i.operand.name}[{i.mode} -> "
                                  f"{_expand_shape(i.shape)}] : {_view_type(i)}"),
    ir.Fuse: _defines(lambda i: f"fuse %{i.operand.name}[{i.first},{i.last}] : "
                                f"{_view_type(i)}"),
    ir.GroupId: _defines(lambda i: "group_id.x : index"),
    ir.GroupSize: _defines(lambda i: "num_groups.x : index"),
    ir.Load: _defines(lambda i: f"load {_idx(i)} : {_load_type(i)}"),
    ir.Size: _defines(lambda i: f"size %{i.operand.name}[{i.mode}] : index"),
    ir.Subview: _defines(lambda i: f"subview %{i.operand.name}"
                                   f"[{', '.join(map(_slice, i.slices))}] : {_view_type(i)}"),
    ir.Store: lambda i: f"store {_op(i.value)}, {_idx(i)}",
    ir.Barrier: _barrier,
    ir.LifetimeStop: lambda i: _raise(no_equivalent("lifetime_stop", "v0.4", i.span)),
    ir.If: _if,
    ir.Yield: lambda i: f"yield ({_ops(*i.values)})",
    ir.For: _for,
    ir.Foreach: lambda i: _loop("foreach", (i.var,), (i.start,), (i.stop,)) + " {",
    **{cls: _blas for cls in ir.BLAS},
    ir.Constant: _typed(lambda i: f"constant {format_constant(i.value, i.type)}"),
    ir.Builtin: _defines(_builtin),
    ir.Associated: _typed(lambda i: f"associated %{i.operand.name}"),
    ir.AtomicLoad: _typed(lambda i: f"atomic_load{_scope(i)} {_idx(i)}"),
    ir.AtomicStore: lambda i: f"atomic_store{_scope(i)} {_op(i.value)}, {_idx(i)}",
    ir.AtomicUpdate: _typed(lambda i: f"atomic_{i.op}{_scope(i)} {_op(i.value)}, {_idx(i)}"),
    ir.Cumsum: lambda i: (f"cumsum{'.atomic' if i.atomic else ''} {_ops(i.alpha, i.a)}, "
                          f"{i.mode}, {_ops(i.beta, i.b)}"),
    ir.Parallel: lambda i: "parallel {",
    ir.ForeachNd: lambda i: _loop("foreach", i.vars, i.starts, i.stops) + " {",
    ir.ForeachTile: lambda i: (_loop("foreach_tile", i.vars, i.starts, i.stops) +
                               f" as ({_ops(*i.sizes)})<=({','.join(map(str, i.tile_shape))})"
                               " {"),
    ir.SubgroupBroadcast: _typed(lambda i: f"subgroup_broadcast {_ops(i.value, i.index)}"),
    ir.SubgroupOp: _typed(lambda i: f"subgroup_{i.op} {_op(i.operand)}"),
    ir.CoopApply: _defines(lambda i: f"cooperative_matrix_apply ({_ops(i.row, i.col, i.val)})"
                                     f"={_op(i.operand)} -> {format_type(i.type)} {{"),
    ir.CoopLoad: _typed(lambda i: f"cooperative_matrix_{'atomic_' if i.atomic else ''}load"
                                  f"{_coop_mods(i)}{_scope(i)} %{i.operand.name}"
                                  f"[{_ops(i.x, i.y)}]"),
    ir.CoopStore: lambda i: (f"cooperative_matrix_{'atomic_' if i.atomic else ''}store"
                             f"{_coop_mods(i)}{_scope(i)} {_op(i.value)}, %{i.operand.name}"
                             f"[{_ops(i.x, i.y)}]"),
    ir.CoopAtomicUpdate: _typed(lambda i: f"cooperative_matrix_atomic_{i.op}{_coop_mods(i)}"
                                          f"{_scope(i)} {_op(i.value)}, %{i.operand.name}"
                                          f"[{_ops(i.x, i.y)}]"),
    ir.CoopConstruct: _typed(lambda i: f"cooperative_matrix_construct {_op(i.value)}"),
    ir.CoopExtract: _typed(lambda i: f"cooperative_matrix_extract %{i.operand.name}[{i.index}]"),
    ir.CoopInsert: _typed(lambda i: f"cooperative_matrix_insert {_op(i.value)}, "
                                    f"%{i.operand.name}[{i.index}]"),
    ir.CoopMulAdd: _typed(lambda i: f"cooperative_matrix_mul_add {_ops(i.a, i.b, i.c)}"),
    ir.CoopPrefetch: lambda i: (f"cooperative_matrix_prefetch {i.cache_level}, "
                                f"%{i.operand.name}[{_ops(i.x, i.y)}], {i.rows}, {i.cols}"),
    ir.CoopReduce: _typed(lambda i: f"cooperative_matrix_reduce_{i.op}.{i.mode} "
                                    f"{_op(i.operand)}"),
    ir.CoopScale: _typed(lambda i: f"cooperative_matrix_scale {_ops(i.scalar, i.matrix)}"),
}


def _raise(e: Exception) -> str:
    raise e


class _Text(str):
    """Punctuation on format_attribute's stack (a plain str there is a string value)."""


_NAMES = ("alignment", "shape_gcd", "stride_gcd", "subgroup_size", "unroll", "work_group_size")


def format_attribute(v) -> str:
    """An attribute value as v0.4 text; with an explicit stack, since the parser takes arrays
    and dictionaries nested `parser.MAX_NESTING` deep."""
    out: list[str] = []
    stack: list = [v]
    while stack:
        x = stack.pop()
        if isinstance(x, _Text):
            out.append(x)
        elif isinstance(x, bool):
            out.append("true" if x else "false")
        elif isinstance(x, int):
            out.append(str(x))
        elif isinstance(x, str):
            out.append(f'"{x}"')
        elif isinstance(x, (tuple, dict)):
            items: list = []
            for i, e in enumerate(x.items() if isinstance(x, dict) else x):
                if i:
                    items.append(_Text(","))
                if isinstance(x, dict):
                    k, e = e
                    items.append(_Text(f"{k if k in _NAMES else chr(34) + k + chr(34)}="))
                items.append(e)
            opening, closing = ("{", "}") if isinstance(x, dict) else ("[", "]")
            stack.append(_Text(closing))
            stack.extend(reversed(items))
            stack.append(_Text(opening))
        else:
            raise TypeError(f"not an attribute value: {x!r}")
    return "".join(out)


def format_dictionary(d: dict) -> str:
    return format_attribute(d)


def format_attributes(d: dict) -> str:
    """` {name=value,...}` or '' when empty."""
    return " " + format_dictionary(d) if d else ""


def _emit(instructions: list, depth: int, out: list[str]) -> None:
    """Lines of `instructions` at `depth`: the v0.3 printer's walk, with v0.4's headers,
    indentation, region instructions and a `for`'s attributes after its closing brace."""
    emit_lines(instructions, depth, out, lambda inst: _HEADERS[type(inst)](inst), INDENT,
               (ir.For, ir.Foreach) + ir.V04_REGION_INSTRUCTIONS, _for_close)


def _for_close(inst: ir.Instruction) -> str:
    """What follows a region's "}": a `for`'s attributes, if any."""
    if isinstance(inst, ir.For) and inst.attributes:
        return " attributes" + format_dictionary(inst.attributes)
    return ""


def format_function(fn: ir.Function) -> str:
    args = ", ".join(f"%{a.value.name}: {format_type(a.type)}{format_attributes(a.attributes)}"
                     for a in fn.args)
    attrs: dict = {}
    if fn.subgroup_size is not None:
        attrs["subgroup_size"] = int(fn.subgroup_size)
    if fn.work_group_size is not None:
        attrs["work_group_size"] = tuple(int(x) for x in fn.work_group_size)
    attrs.update(fn.attributes)
    head = f"func @{fn.name}({args})" + (" attributes" + format_dictionary(attrs) if attrs
                                          else "")
    out = [head + " {"]
    _emit(fn.body.instructions, 1, out)
    out.append("}")
    return "\n".join(out)


def format_program_v04(program: ir.Program) -> str:
    """Any program as v0.4 text (migrated first); `SourceError` where v0.4 has no spelling."""
    from tlinterp.front.migrate import to_v04

    p = to_v04(program)
    return "\n\n".join(format_function(f) for f in p.functions) + "\n" if p.functions else ""


__all__ = ["format_program_v04", "format_function", "format_type", "format_constant",
           "format_attribute", "INDEX"]
