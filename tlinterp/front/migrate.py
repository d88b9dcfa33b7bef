"""Migration between the two surface forms of the one IR.

`to_v04(program)`: the v0.4 form of any program, which printer_v04 prints.  v0.4 has no
literal operands, so each literal becomes a `constant` instruction just before its use (named
`%c<N>`, fresh); a v0.3 slice `:` / `%a:?` becomes `0:size` / `%a:size-%a` (with `size`/`sub`
instructions where the size is dynamic); allocas and the views of them get the `local` address
space; a view gets its v0.4 result type.  What v0.4 cannot express is a `SourceError` at its
range: v0.2 unsigned types, casts to i1 (v0.4's `bool` has no casts), `lifetime_stop`.

`to_v03(program, purpose)`: the v0.3 form of a v0.4 program: `constant` values become literals
again at their uses.  A construct v0.3 lacks is an error at its range: for purpose "print" a
`SourceError` ("... has no v0.3 equivalent"), for purpose "run" a `NotExecutable` ("not yet
executable: ..."), which is how `tlrun` refuses to run what the interpreter does not execute
yet.  For a run, annotations without effect on the result are dropped (attributes; a
`barrier` that fences less than v0.3's, whose fences the interpreter does not model).

Both are pure: they return new IR and leave the argument alone.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Optional

from tlinterp.lang import ir, typerules
from tlinterp.lang.deepstack import deep_program_pass
from tlinterp.lang.diagnostics import Diagnostic, NotExecutable, SourceError
from tlinterp.lang.ir import Const, Value
from tlinterp.lang.types import (
    INDEX,
    V04_ONLY_SCALARS,
    CoopMatrixType,
    GroupType,
    MemrefType,
    ScalarType,
    Type,
)
from tlinterp.lang.v04 import names

_UNSIGNED = frozenset({ScalarType.u8, ScalarType.u16, ScalarType.u32, ScalarType.u64})


# --- v0.3 -> v0.4 ------------------------------------------------------------------------------


@deep_program_pass  # the rewrite recurses per nesting level
def to_v04(program: ir.Program) -> ir.Program:
    """The v0.4 form of `program` (see the module text); raises `SourceError` listing every
    construct v0.4 cannot express."""
    errors: list[Diagnostic] = []
    functions = tuple(_ToV04(fn, errors).function() for fn in program.functions)
    if errors:
        raise SourceError([dataclasses.replace(d, filename=program.filename) for d in errors],
                          program.source)
    result = dataclasses.replace(program, functions=functions)
    if program.lang != "v0.4":
        _expressible(result)
    return result


def _expressible(program: ir.Program) -> None:
    """A converted v0.3 program must satisfy v0.4's own rules, which are stricter in places
    (alpha and beta promote to the output's element type); what does not is an error at its
    range, never an invalid v0.4 text."""
    from tlinterp.checker.v04 import check as check_v04

    try:
        check_v04(program)
    except SourceError as e:
        raise SourceError([dataclasses.replace(d, message=f"no v0.4 equivalent: {d.message}")
                           for d in e.diagnostics], program.source) from None


def _names(fn: ir.Function) -> set[str]:
    used = {a.value.name for a in fn.args}
    for inst in ir.walk(fn.body):
        used.update(v.name for v in ir.results_of(inst))
        for attr in ("var", "row", "col", "val"):
            v = getattr(inst, attr, None)
            if isinstance(v, Value):
                used.add(v.name)
        used.update(v.name for v in getattr(inst, "vars", ()))
        used.update(v.name for v in getattr(inst, "sizes", ()))
        used.update(v.name for v, _ in getattr(inst, "inits", ()))
    return used


class _ToV04:
    def __init__(self, fn: ir.Function, errors: list[Diagnostic]):
        self.fn = fn
        self.errors = errors
        self.used = _names(fn)
        self.counter = itertools.count()
        self.local: set[str] = set()  # values that are local memrefs (allocas, their views)
        # memref/group values -> their defined types: v0.3's written operand type may differ
        # (a group's omitted offset, a warning there); v0.4 writes none, so the IR takes the
        # defined type, as the v0.4 parser does
        self.mtypes: dict[str, Type] = {a.value.name: a.type for a in fn.args
                                        if isinstance(a.type, (MemrefType, GroupType))}
        self.pre: list[ir.Instruction] = []  # instructions to insert before the current one
        self.known: dict[str, Const] = {}  # values of `constant` instructions

    def error(self, what: str, span) -> None:
        self.errors.append(Diagnostic(f"{what} has no v0.4 equivalent", span))

    def fresh(self, stem: str = "c") -> Value:
        while True:
            name = f"{stem}{next(self.counter)}"
            if name not in self.used:
                self.used.add(name)
                return Value(name)

    def check_type(self, t, span) -> None:
        s = t
        if isinstance(s, GroupType):
            s = s.memref
        if isinstance(s, MemrefType):
            s = s.element
        if isinstance(s, ScalarType) and s in _UNSIGNED:
            self.error(f"the v0.2 unsigned type {s.value}", span)

    def value(self, op: ir.Operand, t: Type) -> ir.Operand:
        """A literal operand becomes a `constant` instruction of type `t` placed before."""
        if not isinstance(op, Const):
            return op
        self.check_type(t, op.span)
        c = op
        if isinstance(t, ScalarType) and (t.is_float or t.is_complex) and not op.is_float:
            c = Const(float(op.value), True, op.span)
        elif isinstance(t, ScalarType) and t.is_int and op.is_float:
            c = Const(int(op.value), False, op.span)
        elif t is ScalarType.i1:  # v0.4 writes true/false, which the parser keeps as bools
            c = Const(bool(op.value), False, op.span)
        v = self.fresh()
        self.pre.append(ir.Constant(v, c, t, op.span))
        return v

    def function(self) -> ir.Function:
        fn = self.fn
        for a in fn.args:
            self.check_type(a.type, a.span)
        return dataclasses.replace(fn, body=self.region(fn.body))

    def region(self, region: ir.Region) -> ir.Region:
        out: list[ir.Instruction] = []
        for inst in region.instructions:
            saved, self.pre = self.pre, []
            new = self.instruction(inst)
            out.extend(self.pre)
            out.append(new)
            self.pre = saved
        return ir.Region(out, region.span)

    def memref(self, t: MemrefType, local: bool) -> MemrefType:
        return dataclasses.replace(t, space="local" if local else t.space)

    def instruction(self, inst: ir.Instruction) -> ir.Instruction:
        for r in ir.results_of(inst):
            # names are scoped by region: a name an alloca (view) had in a closed region may
            # name a global view here
            self.local.discard(r.name)
        new = self._instruction(self.retype(inst))
        r = getattr(new, "result", None)
        if isinstance(new, ir.Constant):
            self.known[r.name] = new.value
        elif isinstance(new, ir.Alloca):
            self.mtypes[r.name] = new.type
        elif isinstance(new, (ir.Subview, ir.Expand, ir.Fuse)) and new.result_type is not None:
            self.mtypes[r.name] = new.result_type
        elif isinstance(new, ir.Load) and isinstance(new.type, GroupType):
            self.mtypes[r.name] = new.type.memref
        return new

    def retype(self, inst: ir.Instruction) -> ir.Instruction:
        """Operand types of memrefs and groups as defined, not as written."""
        if isinstance(inst, (ir.Load, ir.Store, ir.Size, ir.Subview, ir.Expand, ir.Fuse)):
            t = self.mtypes.get(inst.operand.name)
            if t is not None and t != inst.type or (t is not None and isinstance(t, GroupType)):
                return dataclasses.replace(inst, type=t)
        if isinstance(inst, ir.Blas):
            changes = {}
            for f in (*inst.inputs(), inst.output()):
                t = self.mtypes.get(getattr(inst, f).name)
                if t is not None:
                    changes[f + "_type"] = t
            return dataclasses.replace(inst, **changes)
        return inst

    def _instruction(self, inst: ir.Instruction) -> ir.Instruction:
        rep = dataclasses.replace
        v = self.value
        if isinstance(inst, ir.LifetimeStop):
            self.error("lifetime_stop (v0.4 frees an alloca at the end of its region)",
                       inst.span)
            return inst
        if isinstance(inst, ir.Alloca):
            self.local.add(inst.result.name)
            self.check_type(inst.type, inst.span)
            return rep(inst, type=self.memref(inst.type, True))
        if isinstance(inst, ir.Arith):
            self.check_type(inst.type, inst.span)
            return rep(inst, lhs=v(inst.lhs, inst.type), rhs=v(inst.rhs, inst.type))
        if isinstance(inst, ir.ArithUnary):
            self.check_type(inst.type, inst.span)
            return rep(inst, operand=v(inst.operand, inst.type))
        if isinstance(inst, ir.Compare):
            self.check_type(inst.type, inst.span)
            lhs, rhs = v(inst.lhs, inst.type), v(inst.rhs, inst.type)
            if inst.type is ScalarType.i1 and inst.cond in ("eq", "ne"):
                # v0.4 compares numbers only: bool (in)equality is xor (and not)
                if inst.cond == "ne":
                    return ir.Arith(inst.result, "xor", lhs, rhs, inst.type, inst.span)
                d = self.fresh("b")
                self.pre.append(ir.Arith(d, "xor", lhs, rhs, inst.type, inst.span))
                return ir.ArithUnary(inst.result, "not", d, inst.type, inst.span)
            return rep(inst, lhs=lhs, rhs=rhs)
        if isinstance(inst, ir.Cast):
            if inst.to_type is ScalarType.i1:
                self.error("a cast to i1 (v0.4's bool is not a number)", inst.span)
            elif inst.from_type is ScalarType.i1:
                return self.select(inst)
            self.check_type(inst.to_type, inst.span)
            self.check_type(inst.from_type, inst.span)
            return rep(inst, operand=v(inst.operand, inst.from_type))
        if isinstance(inst, (ir.Subview, ir.Expand, ir.Fuse)):
            return self.view(inst)
        if isinstance(inst, ir.Load):
            self.check_type(inst.type, inst.span)
            return rep(inst, indices=tuple(v(i, INDEX) for i in inst.indices))
        if isinstance(inst, ir.Store):
            self.check_type(inst.type, inst.span)
            elem = inst.type.element if isinstance(inst.type, MemrefType) else INDEX
            return rep(inst, value=v(inst.value, elem),
                       indices=tuple(v(i, INDEX) for i in inst.indices))
        if isinstance(inst, ir.If):
            cond = v(inst.cond, ScalarType.i1)
            for t in inst.result_types:
                self.check_type(t, inst.span)
            return rep(inst, cond=cond, then=self.region(inst.then),
                       otherwise=self.region(inst.otherwise) if inst.otherwise else None)
        if isinstance(inst, ir.Yield):
            return rep(inst, values=tuple(v(x, t) for x, t in zip(inst.values, inst.types)))
        if isinstance(inst, (ir.For, ir.Foreach)):
            self.check_type(inst.type, inst.span)
            changes = dict(start=v(inst.start, inst.type), stop=v(inst.stop, inst.type))
            if isinstance(inst, ir.For):
                if inst.step is not None:
                    changes["step"] = v(inst.step, inst.type)
                changes["inits"] = tuple((c, v(i, t)) for (c, i), t in
                                         zip(inst.inits, inst.result_types))
            return rep(inst, body=self.region(inst.body), **changes)
        if isinstance(inst, ir.Blas):
            for f in (*inst.inputs(), inst.output()):
                self.check_type(inst.memref_type(f), inst.span)
            beta = self.known.get(inst.beta.name) if isinstance(inst.beta, Value) else inst.beta
            if inst.atomic and not (isinstance(beta, Const) and beta.value in (0, 1)):
                self.error(f"{inst.MNEMONIC}.atomic with beta other than a constant 0 or 1",
                           inst.span)
            return rep(inst, alpha=v(inst.alpha, inst.alpha_type),
                       beta=v(inst.beta, inst.beta_type))
        if isinstance(inst, ir.ForeachNd):
            return rep(inst, starts=tuple(v(x, inst.type) for x in inst.starts),
                       stops=tuple(v(x, inst.type) for x in inst.stops),
                       body=self.region(inst.body))
        if isinstance(inst, ir.V04_REGION_INSTRUCTIONS):
            return rep(inst, body=self.region(inst.body))
        if isinstance(inst, (ir.AtomicLoad, ir.AtomicStore, ir.AtomicUpdate)):
            changes = {"indices": tuple(v(i, INDEX) for i in inst.indices)}
            if not isinstance(inst, ir.AtomicLoad):
                changes["value"] = v(inst.value, self.element(inst.operand))
            return rep(inst, **changes)
        if isinstance(inst, ir.Cumsum):
            return rep(inst, alpha=v(inst.alpha, self.element(inst.a)),
                       beta=v(inst.beta, self.element(inst.b)))
        return inst  # GroupId, GroupSize, Size, Barrier and the other v0.4 instructions

    def element(self, memref: Value) -> Type:
        """The element type of a memref value (a literal stored into it or scaling it gets
        that type)."""
        t = self.mtypes.get(memref.name)
        return t.element if isinstance(t, MemrefType) else INDEX

    def select(self, inst: ir.Cast) -> ir.If:
        """`cast %b : i1 -> T` (v0.4's bool has no casts) as
        `if %b -> (T) { yield (1) } else { yield (0) }` with constants of type T."""
        self.check_type(inst.to_type, inst.span)
        t = inst.to_type
        regions = []
        for value in (1, 0):
            c = self.fresh()
            lit = Const(float(value), True, inst.span) if t.is_float or t.is_complex \
                else Const(value, False, inst.span)
            regions.append(ir.Region([ir.Constant(c, lit, t, inst.span),
                                      ir.Yield((c,), (t,), inst.span)], inst.span))
        return ir.If((inst.result,), self.value(inst.operand, ScalarType.i1), (t,), regions[0],
                     regions[1], inst.span)

    def view(self, inst):
        """v0.3 slices -> offset:size; the result type (local when the operand is)."""
        local = inst.operand.name in self.local
        if isinstance(inst, ir.Expand) and None in inst.shape and \
                isinstance(inst.type, MemrefType) and inst.mode < inst.type.order:
            inst = dataclasses.replace(inst, shape=self.expand_shape(inst))
        if isinstance(inst, ir.Subview) and isinstance(inst.type, MemrefType):
            inst = dataclasses.replace(inst, slices=tuple(
                self.slice(s, inst.operand, inst.type, k) for k, s in enumerate(inst.slices)))
        if inst.result_type is None:
            try:
                derived = typerules.result_types(inst)[0]
            except (typerules.TypeRuleError, TypeError, AttributeError, IndexError):
                return inst  # an invalid view: the checker reports it, printing fails there
            inst = dataclasses.replace(inst, result_type=self.memref(derived, local))
        if local or inst.result_type.space == "local":
            self.local.add(inst.result.name)
            inst = dataclasses.replace(inst, result_type=self.memref(inst.result_type, True))
        return inst

    def expand_shape(self, inst: ir.Expand) -> tuple:
        """v0.3's '?' entry of an expand shape is the mode size over the other entries: v0.4
        writes no '?', so it becomes a value (a constant when every size is static)."""
        size = inst.type.shape[inst.mode]
        others = [e for e in inst.shape if e is not None]
        static = 1
        for e in others:
            if not isinstance(e, Value):
                static *= int(e)
        values = [e for e in others if isinstance(e, Value)]
        if size is not None and not values:
            return tuple(size // static if e is None and static else e for e in inst.shape)
        n: ir.Operand
        if size is not None:
            n = self.value(Const(size, False, inst.span), INDEX)
        else:
            n = self.fresh("s")
            self.pre.append(ir.Size(n, inst.operand, inst.mode, inst.type, inst.span))
        divisor: ir.Operand = self.value(Const(static, False, inst.span), INDEX)
        for w in values:
            d = self.fresh("s")
            self.pre.append(ir.Arith(d, "mul", divisor, w, INDEX, inst.span))
            divisor = d
        q = self.fresh("s")
        self.pre.append(ir.Arith(q, "div", n, divisor, INDEX, inst.span))
        return tuple(q if e is None else e for e in inst.shape)

    def slice(self, s: ir.Slice, operand: Value, t: MemrefType, mode: int) -> ir.Slice:
        if not s.is_range or s.size is not None:
            return s
        size = t.shape[mode] if mode < t.order else None
        if size is not None and isinstance(s.offset, Const):
            return ir.Slice(s.offset, Const(size - int(s.offset.value), False, s.span), True,
                            s.span)
        # dynamic: %s = size %A[mode]; %d = sub %s, %offset
        n: ir.Operand
        if size is not None:
            n = Const(size, False, s.span)
        else:
            nv = self.fresh("s")
            self.pre.append(ir.Size(nv, operand, mode, t, s.span))
            n = nv
        if isinstance(s.offset, Const) and s.offset.value == 0:
            return ir.Slice(s.offset, n, True, s.span)
        d = self.fresh("s")
        self.pre.append(ir.Arith(d, "sub", self.value(n, INDEX), self.value(s.offset, INDEX),
                                 INDEX, s.span))
        return ir.Slice(s.offset, d, True, s.span)


# --- v0.4 -> v0.3 ------------------------------------------------------------------------------


@deep_program_pass  # the rewrite recurses per nesting level
def to_v03(program: ir.Program, purpose: str = "print") -> ir.Program:
    """The v0.3 form of `program`; raises `SourceError` (purpose "print") or `NotExecutable`
    (purpose "run") listing every construct v0.3 lacks."""
    errors: list[Diagnostic] = []
    functions = tuple(_ToV03(errors, purpose).function(fn) for fn in program.functions)
    if errors:
        cls = NotExecutable if purpose == "run" else SourceError
        raise cls([dataclasses.replace(d, filename=program.filename) for d in errors],
                  program.source)
    return dataclasses.replace(program, functions=functions)


class _ToV03:
    def __init__(self, errors: list[Diagnostic], purpose: str):
        self.errors = errors
        self.run = purpose == "run"
        self.consts: list[dict[str, Const]] = []

    def lacks(self, what: str, span) -> None:
        msg = f"not yet executable: {what}" + (f" at {span}" if span else "") if self.run \
            else f"{what} has no v0.3 equivalent"
        self.errors.append(Diagnostic(msg, span))

    def check_type(self, t, span) -> None:
        s = t
        if isinstance(s, GroupType):
            if s.size is not None and not self.run:
                self.lacks(f"a group of static size {s.size}", span)
            s = s.memref
        if isinstance(s, CoopMatrixType):
            if not self.run:  # the interpreter runs coopmatrices (interp/spmd_exec.py)
                self.lacks("the coopmatrix type", span)
                return
            s = s.component
        if isinstance(s, MemrefType):
            s = s.element
        if isinstance(s, ScalarType) and s in V04_ONLY_SCALARS and not self.run:
            self.lacks(f"the type {s.value}", span)  # the interpreter runs them all

    def sub(self, op):
        """A use of a `constant` value becomes the literal again."""
        if isinstance(op, Value):
            for scope in reversed(self.consts):
                if op.name in scope:
                    c = scope[op.name]
                    return Const(c.value, c.is_float, op.span)
        return op

    def kept(self, inst):
        """A v0.4 instruction the interpreter runs, as it is: uses of constants become
        literals, its regions are converted too."""
        return dataclasses.replace(inst, **{
            f.name: self.kept_field(f.name, getattr(inst, f.name))
            for f in dataclasses.fields(inst) if f.init})

    def kept_field(self, name: str, x):
        if name in ("result", "results", "var", "vars", "span"):  # definitions stay
            return x
        if isinstance(x, ir.Region):
            return self.region(x)
        if isinstance(x, Value):
            return self.sub(x)
        if isinstance(x, tuple):
            return tuple(self.kept_field(name, y) for y in x)
        return x

    def function(self, fn: ir.Function) -> ir.Function:
        if not self.run:
            if fn.attributes:
                self.lacks(f"the function attribute {next(iter(fn.attributes))}", fn.span)
            for a in fn.args:
                if a.attributes:
                    self.lacks(f"the parameter attribute {next(iter(a.attributes))}", a.span)
        for a in fn.args:
            self.check_type(a.type, a.span)
        return dataclasses.replace(fn, body=self.region(fn.body))

    def region(self, region: ir.Region) -> ir.Region:
        self.consts.append({})
        out = []
        for inst in region.instructions:
            new = self.instruction(inst)
            if new is not None:
                out.append(new)
        self.consts.pop()
        return ir.Region(out, region.span)

    def instruction(self, inst: ir.Instruction) -> Optional[ir.Instruction]:
        rep = dataclasses.replace
        s = self.sub
        if isinstance(inst, ir.Constant):
            if self.run and isinstance(inst.type, CoopMatrixType):
                self.check_type(inst.type, inst.span)
                return inst
            if isinstance(inst.type, CoopMatrixType) or (
                    isinstance(inst.value.value, complex) and not self.run):
                self.check_type(inst.type, inst.span)
                return None
            self.check_type(inst.type, inst.span)
            self.consts[-1][inst.result.name] = inst.value
            return None
        if self.run and _spmd(inst):
            return self.kept(inst)
        if isinstance(inst, ir.V04_INSTRUCTIONS):
            if self.run and names.executable(inst):
                return self.kept(inst)
            self.lacks(names.construct(inst), inst.span)
            return None
        if isinstance(inst, ir.Barrier):
            if not self.run and set(inst.fences) != set(ir.BARRIER_FENCES):
                self.lacks("a barrier without both fences (.global.local)", inst.span)
            return rep(inst, fences=ir.BARRIER_FENCES)
        if isinstance(inst, ir.Arith):
            self.check_type(inst.type, inst.span)
            if inst.op in names.V04_ONLY_BINARY and not self.run:
                self.lacks(inst.op, inst.span)
            return rep(inst, lhs=s(inst.lhs), rhs=s(inst.rhs))
        if isinstance(inst, ir.ArithUnary):
            self.check_type(inst.type, inst.span)
            if inst.op in names.V04_ONLY_UNARY and not self.run:
                self.lacks(inst.op, inst.span)
            return rep(inst, operand=s(inst.operand))
        if isinstance(inst, ir.Compare):
            self.check_type(inst.type, inst.span)
            return rep(inst, lhs=s(inst.lhs), rhs=s(inst.rhs))
        if isinstance(inst, ir.Cast):
            self.check_type(inst.from_type, inst.span)
            self.check_type(inst.to_type, inst.span)
            return rep(inst, operand=s(inst.operand))
        if isinstance(inst, ir.Alloca):
            self.check_type(inst.type, inst.span)
            if inst.attributes and not self.run:
                self.lacks("alloca attributes", inst.span)
            return rep(inst, attributes={})
        if isinstance(inst, (ir.Load, ir.Store)):
            self.check_type(inst.type, inst.span)
            extra = {"value": s(inst.value)} if isinstance(inst, ir.Store) else {}
            return rep(inst, indices=tuple(s(i) for i in inst.indices), **extra)
        if isinstance(inst, ir.Size) and isinstance(inst.type, GroupType):
            self.lacks("size of a group", inst.span)
            return inst
        if isinstance(inst, ir.Subview):
            return rep(inst, slices=tuple(dataclasses.replace(
                sl, offset=s(sl.offset), size=s(sl.size) if sl.size is not None else None)
                for sl in inst.slices))
        if isinstance(inst, ir.Expand):
            shape = tuple(_static(s(e)) for e in inst.shape)
            return rep(inst, shape=shape)
        if isinstance(inst, ir.If):
            for t in inst.result_types:
                self.check_type(t, inst.span)
            return rep(inst, cond=s(inst.cond), then=self.region(inst.then),
                       otherwise=self.region(inst.otherwise) if inst.otherwise else None)
        if isinstance(inst, ir.Yield):
            return rep(inst, values=tuple(s(x) for x in inst.values))
        if isinstance(inst, ir.For):
            if (inst.inits or inst.results) and not self.run:
                self.lacks("a for loop with loop-carried values (init)", inst.span)
            if inst.attributes and not self.run:
                self.lacks("for attributes", inst.span)
            return rep(inst, start=s(inst.start), stop=s(inst.stop),
                       step=s(inst.step) if inst.step is not None else None,
                       body=self.region(inst.body), attributes={},
                       inits=tuple((v, s(x)) for v, x in inst.inits))
        if isinstance(inst, ir.Foreach):
            return rep(inst, start=s(inst.start), stop=s(inst.stop),
                       body=self.region(inst.body))
        if isinstance(inst, ir.Blas):
            for f in (*inst.inputs(), inst.output()):
                self.check_type(inst.memref_type(f), inst.span)
            return rep(inst, alpha=s(inst.alpha), beta=s(inst.beta))
        return inst


# v0.4 instructions the interpreter runs as they are (tlinterp/interp/spmd_exec.py)
_SPMD = (ir.Parallel, ir.ForeachTile, ir.SubgroupBroadcast, ir.SubgroupOp, ir.CoopConstruct,
         ir.CoopLoad, ir.CoopStore, ir.CoopPrefetch, ir.CoopMulAdd, ir.CoopScale, ir.CoopReduce,
         ir.CoopExtract, ir.CoopInsert, ir.CoopApply, ir.CoopAtomicUpdate)
_SPMD_BUILTINS = frozenset({*names.SPMD_BUILTINS, "subgroup_size", "num_subgroups"})


def _spmd(inst) -> bool:
    return isinstance(inst, _SPMD) or (isinstance(inst, ir.Builtin)
                                       and inst.name in _SPMD_BUILTINS)


def _static(e):
    """An expand-shape entry: a literal becomes its integer."""
    return int(e.value) if isinstance(e, Const) else e


__all__ = ["to_v04", "to_v03"]
