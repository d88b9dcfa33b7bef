"""The static checker: every rule of docs/semantics.md "Static rules".

`check(program)` walks each function once in program order with a chain of scopes mapping
visible SSA names to types. Every region (function body, loop body, if branch) opens a scope:
a name must not be visible already where it is defined (no redefinition, no shadowing), and it
vanishes when its region closes, so sibling regions may reuse it. Every violation becomes a
`Diagnostic`; the walk never stops at the first one. Accepted but doubtful constructs become
warnings. A definition whose type rule failed still defines its name, with the marker
`UNKNOWN` as its type, which silences every later check on that value (no cascades).
Result types come from `typerules.result_types` only; the rules here are the ones that
relate operands, regions and functions to each other. Those v0.4 states too are one function
each, shared with tlinterp/checker/v04.py: the layout rule (layout.py), the BLAS orders and
shapes (blas_shapes.py), names by region (tlinterp/lang/scopes.py); the others are v0.3's.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from functools import lru_cache, partial
from typing import Optional, Union

from tlinterp.checker.blas_shapes import shape_problems
from tlinterp.checker.constants import constant_problem
from tlinterp.checker.layout import layout_problems, written_layout_problems
from tlinterp.lang import ir, ops
from tlinterp.lang.diagnostics import WARNING, Diagnostic, SourceError
from tlinterp.lang.ir import Const, Span, Value
from tlinterp.lang.scopes import Binding, Scopes, redefinition
from tlinterp.lang.scopes import where as _where
from tlinterp.lang.typerules import TypeRuleError, result_types
from tlinterp.lang.types import BOOL, INDEX, GroupType, MemrefType, ScalarType, Type, VoidType


class _Unknown:
    """Type of a value whose definition was rejected; every check involving it is skipped."""

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN = _Unknown()
SeenType = Union[Type, _Unknown]

_SCALAR_INSTRUCTIONS = (  # no memref type written
    ir.Arith, ir.ArithUnary, ir.Cast, ir.Compare, ir.GroupId, ir.GroupSize, ir.Barrier,
    ir.LifetimeStop, ir.If, ir.Yield, ir.For, ir.Foreach)


def check(program: ir.Program, warnings: Optional[list[Diagnostic]] = None) -> ir.Program:
    """Return `program` unchanged if it obeys every static rule; else raise `SourceError`
    carrying one diagnostic per independent violation (and the warnings), sorted by source
    position. Warnings of an accepted program are appended to `warnings` when given.
    A v0.4 program is checked by v0.4's rules (tlinterp/checker/v04.py)."""
    if program.lang == "v0.4":
        from tlinterp.checker.v04 import check as check_v04

        return check_v04(program, warnings)
    errors: list[tuple[str, Optional[Span]]] = []
    found: list[tuple[str, Optional[Span]]] = []  # warnings
    first_seen: dict[str, ir.Function] = {}
    for f in program.functions:
        if f.name in first_seen:
            errors.append((f"function @{f.name} is defined twice (first at "
                           f"{_where(first_seen[f.name].span)})", _header_span(f, program.source)))
        else:
            first_seen[f.name] = f
        errors.extend(_function_attribute_errors(f, program.source))
        checker = _FunctionChecker(f)
        errors.extend(checker.run())
        found.extend(checker.warnings)
    diags = [Diagnostic(msg, span, program.filename) for msg, span in errors]
    diags += [Diagnostic(msg, span, program.filename, WARNING) for msg, span in found]
    diags.sort(key=lambda d: _position(d.span))
    if errors:
        raise SourceError(diags, program.source)
    if warnings is not None:
        warnings.extend(diags)
    return program


# --- written types ---------------------------------------------------------------------------


def _written_memrefs(inst: ir.Instruction) -> Iterator[MemrefType]:
    """Every memref type written in `inst` (a group's memref included)."""
    for name in ("type", "a_type", "b_type", "c_type"):
        t = getattr(inst, name, None)
        if isinstance(t, GroupType):
            yield t.memref
        elif isinstance(t, MemrefType):
            yield t


def _storage_problem(t: Type) -> Optional[str]:
    m = t.memref if isinstance(t, GroupType) else t
    if isinstance(m, MemrefType) and m.element is BOOL:
        return f"memref element type i1 is not allowed (i1 has no storage type): {t}"
    return None


# --- functions -------------------------------------------------------------------------------


def _function_attribute_errors(f: ir.Function, source: str) -> list[tuple[str, Optional[Span]]]:
    errors = []
    wgs, sgs = f.work_group_size, f.subgroup_size
    if wgs is not None:
        span = _attribute_span(f, source, "work_group_size")
        if any(n <= 0 for n in wgs):
            errors.append((f"work_group_size entries must be positive, got "
                           f"({wgs[0]},{wgs[1]})", span))
        elif sgs is not None and sgs > 0 and wgs[0] % sgs != 0:
            errors.append((f"work_group_size first entry {wgs[0]} is not a multiple of "
                           f"subgroup_size {sgs}", span))
    if sgs is not None and sgs <= 0:
        errors.append((f"subgroup_size must be positive, got {sgs}",
                       _attribute_span(f, source, "subgroup_size")))
    return errors


@lru_cache(maxsize=4)  # one scan per source, not one per diagnostic (was quadratic)
def _line_starts(source: str) -> list[int]:
    return [0] + [m.end() for m in re.finditer("\n", source)]


def _header_text(f: ir.Function, source: str) -> Optional[tuple[int, str, list[int]]]:
    """(offset, text, line starts) of the function header: 'func' up to the body's '{'."""
    if f.span is None or f.body.span is None or not source:
        return None
    starts = _line_starts(source)
    if f.body.span.line > len(starts) or f.span.line > len(starts):
        return None
    begin = starts[f.span.line - 1] + f.span.col - 1
    end = starts[f.body.span.line - 1] + f.body.span.col - 1
    return begin, source[begin:end], starts


def _span_of_offsets(starts: list[int], begin: int, end: int) -> Span:
    """Span of source[begin:end] (end exclusive)."""
    l1 = bisect.bisect_right(starts, begin)
    l2 = bisect.bisect_right(starts, end - 1)
    return Span(l1, begin - starts[l1 - 1] + 1, l2, end - 1 - starts[l2 - 1] + 1)


def _header_span(f: ir.Function, source: str) -> Optional[Span]:
    found = _header_text(f, source)
    if found is None:
        return f.span
    begin, text, starts = found
    # strip trailing blanks and comments so the range ends at the last header token
    code = re.sub(r";[^\n]*", lambda m: " " * len(m.group()), text).rstrip()
    return _span_of_offsets(starts, begin, begin + len(code)) if code else f.span


def _attribute_span(f: ir.Function, source: str, name: str) -> Optional[Span]:
    found = _header_text(f, source)
    if found is None:
        return f.span
    begin, text, starts = found
    code = re.sub(r";[^\n]*", lambda m: " " * len(m.group()), text)
    m = re.search(name + r"\s*\([^)]*\)", code)
    if m is None:
        return _header_span(f, source)
    return _span_of_offsets(starts, begin + m.start(), begin + m.end())


def _position(span: Optional[Span]) -> tuple[int, int, int, int]:
    if span is None:
        return (0, 0, 0, 0)
    return (span.line, span.col, span.end_line, span.end_col)


# --- the walk over one function ----------------------------------------------------------------


@dataclass
class _Context:
    """Where a region sits: inside a foreach (SPMD) or not, and what a final yield must be."""

    spmd: bool = False
    yield_types: Optional[tuple[ScalarType, ...]] = None  # None: not an if region
    last: bool = False  # the instruction is the last of its region (where a yield may stand)


@dataclass
class _FunctionChecker:
    function: ir.Function
    errors: list[tuple[str, Optional[Span]]] = field(default_factory=list)
    warnings: list[tuple[str, Optional[Span]]] = field(default_factory=list)
    names: Scopes = field(default_factory=Scopes)  # the rule both versions state
    closed: dict[str, Optional[Span]] = field(default_factory=dict)  # out of scope: last def
    first_def: dict[str, Optional[Span]] = field(default_factory=dict)  # in text order
    # results of the ifs being walked: taken inside their regions, defined after them
    claimed: list[tuple[str, Optional[Span]]] = field(default_factory=list)
    allocas: set[str] = field(default_factory=set)
    # Pending work, last item first. Regions are walked with this explicit stack rather than
    # by recursion, so nesting depth is bounded by memory, not by Python's recursion limit.
    todo: list[Callable[[], None]] = field(default_factory=list)

    def run(self) -> list[tuple[str, Optional[Span]]]:
        f = self.function
        self._find_definitions(f)
        self.names = Scopes()
        for arg in f.args:
            self._check_argument(arg)
        self._later(lambda: self._region(f.body, _Context()))
        while self.todo:
            self.todo.pop()()
        return self.errors

    def _later(self, *tasks: Callable[[], None]) -> None:
        """Run `tasks` in order, before anything scheduled earlier."""
        self.todo.extend(reversed(tasks))

    def _find_definitions(self, f: ir.Function) -> None:
        """Record the first definition of every name in text order (what `walk` yields: an
        if's results and a loop's variable come before their regions), so that a use before
        it can be told from an undefined name."""
        defs = [a.value for a in f.args]
        for inst in ir.walk(f.body):  # iterative: any nesting depth
            if isinstance(inst, (ir.For, ir.Foreach)):
                defs.append(inst.var)
            defs.extend(ir.results_of(inst))
        for value in defs:
            self.first_def.setdefault(value.name, value.span)

    def _error(self, message: str, span: Optional[Span]) -> None:
        self.errors.append((message, span))

    def _warn(self, message: str, span: Optional[Span]) -> None:
        self.warnings.append((message, span))

    # scoping ----------------------------------------------------------------------------

    def _define(self, value: Value, t: SeenType) -> None:
        name = value.name
        seen = self.names.conflict(name)
        if seen is not None:
            self._error(redefinition(name, *seen, hint=" (a name visible here cannot be "
                                     "defined again)"), value.span)
            t = UNKNOWN  # which definition later uses mean is unclear: check none
        else:
            claim = next((span for n, span in reversed(self.claimed) if n == name), False)
            if claim is not False:
                self._error(redefinition(name, 0, claim), value.span)
                t = UNKNOWN
        self.names.bind(name, t, value.span)

    def _close_scope(self) -> None:
        for name, binding in self.names.close().items():
            self.closed[name] = binding.span

    def _visible(self, name: str) -> Optional[Binding]:
        return self.names.lookup(name)

    def _lookup(self, value: Value) -> SeenType:
        binding = self._visible(value.name)
        if binding is not None:
            return binding.type
        if value.name in self.closed:
            self._error(f"%{value.name} is not visible here: it is defined inside a nested "
                        f"region at {_where(self.closed[value.name])}", value.span)
        elif value.name in self.first_def:
            self._error(f"%{value.name} is used before its definition", value.span)
        else:
            self._error(f"%{value.name} is not defined", value.span)
        return UNKNOWN

    # operands ---------------------------------------------------------------------------

    def _operand(self, op: ir.Operand, expected: Optional[Type], role: Optional[str] = None,
                 integral_float_ok: bool = False) -> SeenType:
        """Check one use against the type written for it; returns the operand's type."""
        if isinstance(op, Value):
            t = self._lookup(op)
            if t is UNKNOWN or expected is None or t == expected:
                return t
            if role is None:
                self._error(f"type mismatch: %{op.name} has type {t}, the instruction says "
                            f"{expected}", op.span)
            else:
                self._error(f"{role} must have type {expected}, %{op.name} has type {t}",
                            op.span)
            return t
        if isinstance(expected, ScalarType):
            problem = constant_problem(op, expected, integral_float_ok)
            if problem is not None:
                self._error(f"{role}: {problem}" if role else problem, op.span)
        return expected if expected is not None else UNKNOWN

    def _indices(self, indices: tuple, role: str) -> None:
        for idx in indices:
            self._operand(idx, INDEX, role)

    # arguments --------------------------------------------------------------------------

    def _check_argument(self, arg: ir.Argument) -> None:
        t = arg.type
        span = arg.span or arg.value.span
        if isinstance(t, VoidType):
            self._error(f"argument %{arg.value.name} cannot have type void", span)
        problem = _storage_problem(t)
        if problem is not None:
            self._error(problem, span)
        for p in written_layout_problems(t):
            self._error(f"argument %{arg.value.name}: {p}", span)
        if isinstance(t, GroupType) and t.offset is not None and t.offset < 0:
            self._error(f"group offset must be non-negative, got {t.offset}", span)
        self._define(arg.value, UNKNOWN if isinstance(t, VoidType) else t)

    # regions ----------------------------------------------------------------------------

    def _region(self, region: ir.Region, ctx: _Context) -> None:
        insts = region.instructions
        last = len(insts) - 1
        at_end = replace(ctx, last=True)
        self.todo.extend(reversed([partial(self._instruction, inst, at_end if k == last else ctx)
                                   for k, inst in enumerate(insts)]))

    def _nested(self, region: ir.Region, ctx: _Context,
                defines: tuple[tuple[Value, SeenType], ...] = ()) -> Callable[[], None]:
        """A task that walks `region` in a new scope holding `defines`."""
        def enter() -> None:
            self.names.open()
            for value, t in defines:
                self._define(value, t)
            self._region(region, ctx)  # schedules the body before the pop below

        return lambda: self._later(enter, self._close_scope)

    def _yield(self, inst: ir.Yield, ctx: _Context) -> None:
        if len(inst.values) != len(inst.types):
            self._error(f"yield has {_count(len(inst.values), 'value')} but "
                        f"{_count(len(inst.types), 'type')}", inst.span)
        for value, t in zip(inst.values, inst.types):
            self._operand(value, t)
        if ctx.yield_types is None or not ctx.last:
            self._error("yield is only allowed as the last instruction of an if region",
                        inst.span)
            return
        want = ctx.yield_types
        if len(inst.types) != len(want):
            self._error(f"yield returns {_count(len(inst.types), 'value')}, the if expects "
                        f"{len(want)}", inst.span)
        elif tuple(inst.types) != tuple(want):
            self._error(f"yield types ({', '.join(map(str, inst.types))}) differ from the if's "
                        f"result types ({', '.join(map(str, want))})", inst.span)

    # instructions -----------------------------------------------------------------------

    def _instruction(self, inst: ir.Instruction, ctx: _Context) -> None:
        if ctx.spmd and isinstance(inst, ir.COLLECTIVES):
            self._error(f"collective instruction '{inst.MNEMONIC}' is not allowed "
                        "inside a foreach (SPMD region)", inst.span)
        malformed = False
        if not isinstance(inst, _SCALAR_INSTRUCTIONS):
            for t in set(_written_memrefs(inst)):
                problem = _storage_problem(t)
                if problem is not None:
                    self._error(problem, inst.span)
                if len(t.stride) != t.order:  # the type rules index strides by mode
                    self._error(layout_problems(t)[0], inst.span)
                    malformed = True
        if malformed:
            for value in ir.results_of(inst):
                self._define(value, UNKNOWN)
            return
        _HANDLERS[type(inst)](self, inst, ctx)
        if isinstance(inst, (ir.If, ir.For, ir.Foreach)):
            return  # they define their names themselves
        try:
            types: tuple[SeenType, ...] = result_types(inst)
        except TypeRuleError as e:
            self._error(e.message, e.span or inst.span)
            types = (inst.type,) if isinstance(inst, ir.Alloca) else (UNKNOWN,)
        for value, t in zip(ir.results_of(inst), types):
            self._define(value, t)

    def _alloca(self, inst: ir.Alloca, ctx: _Context) -> None:
        for p in layout_problems(inst.type):
            self._error(f"alloca: {p}", inst.span)
        self.allocas.add(inst.result.name)

    def _arith(self, inst: ir.Arith, ctx: _Context) -> None:
        self._op_type(ops.BINARY, inst.op, inst.type, inst.span)
        self._operand(inst.lhs, inst.type)
        self._operand(inst.rhs, inst.type)

    def _arithunary(self, inst: ir.ArithUnary, ctx: _Context) -> None:
        self._op_type(ops.UNARY, inst.op, inst.type, inst.span)
        self._operand(inst.operand, inst.type)

    def _op_type(self, family: str, name: str, t: ScalarType, span: Optional[Span]) -> None:
        """The type classes that the operation's row in tlinterp/lang/ops.py accepts."""
        op = ops.find(family, name)
        problem = ops.type_error(op, t) if op is not None else None  # unknown: typerules says
        if problem:
            self._error(problem, span)

    def _cast(self, inst: ir.Cast, ctx: _Context) -> None:
        self._operand(inst.operand, inst.from_type)

    def _compare(self, inst: ir.Compare, ctx: _Context) -> None:
        self._op_type(ops.COMPARE, inst.cond, inst.type, inst.span)
        self._operand(inst.lhs, inst.type)
        self._operand(inst.rhs, inst.type)

    def _expand(self, inst: ir.Expand, ctx: _Context) -> None:
        self._operand(inst.operand, inst.type)
        for entry in inst.shape:
            if isinstance(entry, Value):
                self._operand(entry, INDEX, "an expand shape entry")

    def _fuse(self, inst: ir.Fuse, ctx: _Context) -> None:
        self._operand(inst.operand, inst.type)

    def _groupid(self, inst: ir.GroupId, ctx: _Context) -> None:
        pass

    def _groupsize(self, inst: ir.GroupSize, ctx: _Context) -> None:
        pass

    def _load(self, inst: ir.Load, ctx: _Context) -> None:
        if not self._group_offset_omitted(inst.operand, inst.type):
            self._operand(inst.operand, inst.type)
        self._indices(inst.indices, "a load index")

    def _group_offset_omitted(self, op: Value, written: Type) -> bool:
        """True (after a warning) when `written` is the operand's group type without its
        offset. The original compiler takes the operand's own type there; the loaded memref
        does not depend on the offset, so the program is accepted, but doubtful."""
        binding = self._visible(op.name)
        actual = binding.type if binding is not None else None
        if not (isinstance(written, GroupType) and isinstance(actual, GroupType)
                and written.offset == 0 and actual.offset != 0
                and written.memref == actual.memref):
            return False
        self._warn(f"the type written for %{op.name} lacks its offset: %{op.name} has type "
                   f"{actual}, the instruction says {written}; the load uses {actual}",
                   op.span)
        return True

    def _size(self, inst: ir.Size, ctx: _Context) -> None:
        self._operand(inst.operand, inst.type)

    def _subview(self, inst: ir.Subview, ctx: _Context) -> None:
        self._operand(inst.operand, inst.type)
        for sl in inst.slices:
            self._operand(sl.offset, INDEX, "a subview offset")
            if sl.size is not None:
                self._operand(sl.size, INDEX, "a subview size")

    def _store(self, inst: ir.Store, ctx: _Context) -> None:
        t = inst.type
        self._operand(inst.value, t.element, "the stored value")
        self._operand(inst.operand, t)
        if len(inst.indices) != t.order:
            self._error(f"store to a memref of order {t.order} takes {t.order} indices, "
                        f"got {len(inst.indices)}", inst.span)
        self._indices(inst.indices, "a store index")

    def _barrier(self, inst: ir.Barrier, ctx: _Context) -> None:
        if ctx.spmd:
            self._error("barrier is not allowed inside a foreach (SPMD region)", inst.span)

    def _lifetimestop(self, inst: ir.LifetimeStop, ctx: _Context) -> None:
        t = self._operand(inst.operand, None)
        if t is not UNKNOWN and inst.operand.name not in self.allocas:
            self._error(f"lifetime_stop needs the result of an alloca; %{inst.operand.name} "
                        "is not one", inst.operand.span)

    def _if(self, inst: ir.If, ctx: _Context) -> None:
        self._operand(inst.cond, BOOL, "the if condition")
        types = tuple(inst.result_types)
        if len(inst.results) != len(types):
            self._error(f"if returns {_count(len(types), 'value')} but "
                        f"{_count(len(inst.results), 'name')} assigned", inst.span)
        if types and inst.otherwise is None:
            self._error("an if with results needs an else region", inst.span)
        inner = _Context(spmd=ctx.spmd, yield_types=types)
        for name, region in (("then", inst.then), ("else", inst.otherwise)):
            if region is None:
                continue
            last = region.instructions[-1] if region.instructions else None
            if types and not isinstance(last, ir.Yield):
                where = (last.span if last is not None else None) or region.span or inst.span
                self._error(f"the {name} region of an if with results must end with a yield",
                            where)

        claims = [(value.name, value.span) for value in inst.results]

        def define_results() -> None:
            del self.claimed[len(self.claimed) - len(claims):]
            for k, value in enumerate(inst.results):
                self._define(value, types[k] if k < len(types) else UNKNOWN)

        self.claimed.extend(claims)
        regions = [r for r in (inst.then, inst.otherwise) if r is not None]
        self._later(*(self._nested(r, inner) for r in regions), define_results)

    def _loop_header(self, inst: Union[ir.For, ir.Foreach], bounds: tuple) -> None:
        t = inst.type
        if t.is_float or t.is_bool:
            self._error(f"the loop variable needs an integer type other than i1, got {t}",
                        inst.span)
            for b in bounds:
                self._operand(b, None)  # scoping only: the expected type is unusable
            return
        for b in bounds:
            self._operand(b, t, "a loop bound or step")

    def _for(self, inst: ir.For, ctx: _Context) -> None:
        bounds = (inst.start, inst.stop) + ((inst.step,) if inst.step is not None else ())
        self._loop_header(inst, bounds)
        step = inst.step
        if isinstance(step, Const) and not step.is_float and int(step.value) <= 0:
            self._error(f"the for step must be positive, got {int(step.value)}", step.span)
        self._later(self._nested(inst.body, _Context(spmd=ctx.spmd), ((inst.var, inst.type),)))

    def _foreach(self, inst: ir.Foreach, ctx: _Context) -> None:
        self._loop_header(inst, (inst.start, inst.stop))
        self._later(self._nested(inst.body, _Context(spmd=True), ((inst.var, inst.type),)))

    # collectives ------------------------------------------------------------------------

    def _collective_operands(self, inst: ir.Blas) -> None:
        memrefs = [(getattr(inst, r.field), inst.memref_type(r.field)) for r in inst.ROLES]
        self._operand(inst.alpha, inst.alpha_type, integral_float_ok=True)
        for value, t in memrefs[:-1]:
            self._operand(value, t)
        self._operand(inst.beta, inst.beta_type, integral_float_ok=True)
        self._operand(*memrefs[-1])
        for name, t in (("alpha", inst.alpha_type), ("beta", inst.beta_type)):
            if t.is_bool:
                self._error(f"{name} cannot have type i1 (no arithmetic on booleans)",
                            getattr(inst, name).span or inst.span)
        out = memrefs[-1][1].element
        inputs = [inst.alpha_type, inst.beta_type] + [t.element for _, t in memrefs[:-1]]
        floats = sorted({str(t) for t in inputs if t.is_float})
        if out.is_int and floats:
            self._error(f"the output element type {out} is an integer type but operands are "
                        f"floating-point ({', '.join(floats)})", inst.span)

    def _blas(self, inst: ir.Blas, ctx: _Context) -> None:
        """Operand types here; the order and shape rules are blas_shapes' (shared with v0.4)."""
        self._collective_operands(inst)
        for message, span in shape_problems(inst):
            self._error(message, span)


# The one dispatch table of the checker: every instruction class to its rule (if, for and
# foreach define their own names; the others get theirs from `result_types`).
_HANDLERS: dict[type, Callable[[_FunctionChecker, ir.Instruction, _Context], None]] = {
    ir.Alloca: _FunctionChecker._alloca,
    ir.Arith: _FunctionChecker._arith,
    ir.ArithUnary: _FunctionChecker._arithunary,
    ir.Cast: _FunctionChecker._cast,
    ir.Compare: _FunctionChecker._compare,
    ir.Expand: _FunctionChecker._expand,
    ir.Fuse: _FunctionChecker._fuse,
    ir.GroupId: _FunctionChecker._groupid,
    ir.GroupSize: _FunctionChecker._groupsize,
    ir.Load: _FunctionChecker._load,
    ir.Size: _FunctionChecker._size,
    ir.Subview: _FunctionChecker._subview,
    ir.Store: _FunctionChecker._store,
    ir.Barrier: _FunctionChecker._barrier,
    ir.LifetimeStop: _FunctionChecker._lifetimestop,
    ir.If: _FunctionChecker._if,
    ir.Yield: _FunctionChecker._yield,
    ir.For: _FunctionChecker._for,
    ir.Foreach: _FunctionChecker._foreach,
    **{cls: _FunctionChecker._blas for cls in ir.BLAS},  # by their declarations
    # v0.4-only instructions are checked by checker_v04 (check() sends v0.4 programs there)
    **{cls: lambda self, inst, ctx: self._error(
        "a v0.4 instruction in a v0.3 program (check it as v0.4)", inst.span)
       for cls in ir.V04_INSTRUCTIONS},
}


def _count(n: int, noun: str, plural: Optional[str] = None) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {plural or noun + 's'}"


__all__ = ["check", "layout_problems", "UNKNOWN"]
