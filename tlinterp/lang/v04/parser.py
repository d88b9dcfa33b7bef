"""Parser of tensor language v0.4: source text -> the same `ir.Program` as v0.3 produces.

The grammar is `grammar.peg`; the driver, spans, constants and syntax-error messages are
those of tlinterp/lang/v03/parser.py (this builder subclasses its _Builder).  v0.4 writes the
*result* type after `:` and no operand types, so the builder keeps the types of the values in
scope (regions nest scopes; as in v0.3, a name cannot be defined where it is visible, but
sibling regions may reuse one) and fills the operand
types the IR keeps (Load.type, Arith.type, Gemm.a_type, ...).  Where the IR does not keep the
written result type (load, arithmetic, comparison, views, size), the builder checks it against
the type the operands give, so that "result type" diagnostics come with the parse.

A use of an undefined name is reported here (its type is needed); the instruction still gets
built with `UNKNOWN` so that every independent error is reported.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

from parsimonious.grammar import Grammar

from tlinterp.lang import blas_syntax, ir, typerules
from tlinterp.lang.diagnostics import Diagnostic, SourceError
from tlinterp.lang.ir import Const, Span, Value
from tlinterp.lang.scopes import Scopes, redefinition
from tlinterp.lang.types import (
    INDEX,
    CoopMatrixType,
    GroupType,
    MemrefType,
    ScalarType,
    Type,
    VoidType,
)
from tlinterp.lang.v03.parser import _WORDS, _Builder, _collapses, _use_stdlib_re, expected_message
from tlinterp.lang.v03.parser import parse as _parse_with
from tlinterp.lang.v04 import names

GRAMMAR_PATH = Path(__file__).with_name("grammar.peg")
GRAMMAR = Grammar(GRAMMAR_PATH.read_text(encoding="utf-8") + "\n" + blas_syntax.rules("v0.4"))
_use_stdlib_re(GRAMMAR)

UNKNOWN = VoidType()  # the type of an undefined name (its use is already reported)
BOOL = ScalarType.i1

_NUMBER = {t.value: t for t in ScalarType if t.value not in ("i1", "u8", "u16", "u32", "u64")}
_V04_WORDS = {
    **_WORDS,
    **blas_syntax.words("v0.4"),
    "number_type": ["a number type"],
    "boolean_type": ["'bool'"],
    "arith_binary_op": [f"'{o}'" for o in names.ARITH_BINARY],
    "arith_unary_op": [f"'{o}'" for o in names.UNARY],
    "compare_op": [f"'{o}'" for o in names.COMPARE],
    "builtin_name": ["a builtin (group_id.x, num_groups.x, subgroup_size, ...)"],
    "memory_scope": [f"'.{s}'" for s in names.MEMORY_SCOPES],
    "memory_semantics": [f"'.{s}'" for s in names.MEMORY_SEMANTICS],
    "checked": [f"'.{c}_checked'" for c in names.CHECKED_FLAGS],
    "reduce_mode": ["'.row'", "'.column'"],
    "address_space": ["'global'", "'local'"],
    "matrix_use": ["'matrix_a'", "'matrix_b'", "'matrix_acc'"],
    "boolean_constant": ["'true'", "'false'"],
    "attribute_name": ["an attribute name"],
    "string_attribute": ["a string"],
    "subgroup_operation": ["a subgroup operation"],
    "atomic_update_op": ["'atomic_add'", "'atomic_max'", "'atomic_min'"],
    "coop_load_op": ["'cooperative_matrix_load'"],
    "coop_store_op": ["'cooperative_matrix_store'"],
    "coop_atomic_update_op": ["'cooperative_matrix_atomic_add'"],
    "coop_reduce_op": ["'cooperative_matrix_reduce_add'"],
}
_V04_COLLAPSES = _collapses(GRAMMAR, ())


def parse(text: str, filename: str = "<input>") -> ir.Program:
    """Parse v0.4 source; raises `SourceError` (and nothing else) on bad input."""
    _refuse_huge_attributes(text, filename)
    return _parse_with(text, filename, builder=_Builder04)


# Items of one function's attribute dictionary, nested arrays and dictionaries counted in:
# real ones have a few (work_group_size=[16, 2]); parsimonious spends about 1.4 KB and 20 us
# on each, so 1.9 million in a 3.8 MB file took 2.7 GB and minutes before this bound.
MAX_ATTRIBUTE_ITEMS = 4096
_ATTRIBUTES = re.compile(r"\battributes\s*\{")
_ATTRIBUTE_PUNCTUATION = re.compile(r'"[^"\n]*"|;[^\n]*|[{}\[\],]')


def _refuse_huge_attributes(text: str, filename: str) -> None:
    """SourceError at an attribute dictionary with more than MAX_ATTRIBUTE_ITEMS items,
    found before the parse (which would build them all); the scan stops at the bound."""
    for m in _ATTRIBUTES.finditer(text):
        depth, items = 1, 0
        for p in _ATTRIBUTE_PUNCTUATION.finditer(text, m.end()):
            c = p.group()
            if c in "{[":
                depth += 1
            elif c in "}]":
                depth -= 1
                if depth == 0:
                    break
            elif c == ",":
                items += 1
                if items > MAX_ATTRIBUTE_ITEMS:
                    line = text.count("\n", 0, m.start()) + 1
                    col = m.start() - text.rfind("\n", 0, m.start())
                    raise SourceError([Diagnostic(
                        f"an attribute dictionary with more than {MAX_ATTRIBUTE_ITEMS} items "
                        "(arrays included); refused before parsing",
                        Span(line, col, line, col + len("attributes") - 1), filename)], text)


def _opt(node):
    """The child of an optional `x?` node, or None."""
    return node.children[0] if node.children else None


class _Builder04(_Builder):
    LANG = "v0.4"
    FUNCTION = GRAMMAR["function_definition"]
    SKIP = GRAMMAR["_"]

    def __init__(self, text: str, filename: str):
        super().__init__(text, filename)
        self.names = Scopes()  # the rule both versions state (tlinterp/lang/scopes.py)
        self.late: list[tuple[str, Optional[Span]]] = []  # result-type errors: the checker's

    def expected(self, names_: list[str], extra: list[str]) -> str:
        return expected_message(names_, extra, GRAMMAR, _V04_COLLAPSES, _V04_WORDS)

    def error(self, message: str, span: Optional[Span]) -> None:
        super().error(names.v04_words(message), span)

    # scopes ---------------------------------------------------------------------------------

    def define(self, v: Value, t: Type) -> None:
        # tinytc v0.4.0 rejects a name visible in any enclosing scope, as the v0.3 rule does
        seen = self.names.conflict(v.name)
        if seen is not None:
            self.error(redefinition(v.name, *seen), v.span)
        self.names.bind(v.name, t, v.span)

    def type_of(self, v: Value) -> Type:
        b = self.names.lookup(v.name)
        if b is not None:
            return b.type
        self.error(f"%{v.name} is not defined", v.span)
        self.names.bind(v.name, UNKNOWN, None, defined=False)  # report each name once
        return UNKNOWN

    def expect(self, written: Type, want: Type, what: str, span: Optional[Span]) -> None:
        """The v0.4 result-type rule: the written type is the one the operands give (a view's
        written strides and sizes may be '?' where the derived ones are known)."""
        if UNKNOWN in (written, want) or written == want or _weakens(written, want):
            if isinstance(written, MemrefType) and isinstance(want, MemrefType) \
                    and written.space != want.space:
                self.late.append((f"{what} has address space {want.space}, written "
                                  f"{written.space}", span))
            return
        self.late.append((f"result type {written} does not match {want}, the type {what} "
                          "gives", span))

    def finish(self, program: ir.Program) -> ir.Program:
        program.pending = [(names.v04_words(m), s) for m, s in self.late]
        return program

    # terminals ------------------------------------------------------------------------------

    def const_float(self, node) -> Const:
        tok = node.match.group(1)
        if tok.lstrip("+-") in ("inf", "nan"):  # v0.4 spells infinities and NaN
            return Const(float(tok), True, self.span(node.start, node.match.end(1)))
        return super().const_float(node)

    def local(self, node) -> Value:
        return self.value(node)

    def use(self, node) -> tuple[Value, Type]:
        v = self.value(node)
        return v, self.type_of(v)

    def int_or_value(self, node) -> ir.Operand:
        c = node.children[0]
        if c.expr.name == "local_identifier":
            return self.use(c)[0]
        return self.const_int(c)

    # types ----------------------------------------------------------------------------------

    def _type(self, node) -> Type:
        while node.expr.name == "type":
            node = node.children[0]
        name = node.expr.name
        if name == "number_type":
            return _NUMBER[node.match.group(1)]
        if name == "boolean_type":
            return BOOL
        if name == "memref_type":
            return self.memref(node)
        if name == "group_type":
            _, memref, _, size, opt, _ = node.children
            offset: Optional[int] = 0
            if opt.children:
                offset = self.dyn(opt.children[0].children[3])
            return GroupType(self.memref(memref), offset, self.dyn(size))
        if name == "coopmatrix_type":
            _, comp, _, rows, _, cols, _, use, _ = node.children
            return CoopMatrixType(_NUMBER[comp.match.group(1)], self.int_value(rows),
                                  self.int_value(cols), use.match.group(1))
        return VoidType()

    def memref(self, node) -> MemrefType:
        _, scalar, shape_node, layout_opt, space_opt, _ = node.children
        shape = tuple(self.dyn(s.children[1]) for s in shape_node.children)
        stride = None
        if layout_opt.children:
            lst = layout_opt.children[0].children[1].children[1]
            stride = tuple(self.dyn(d) for d in self.items(lst.children[0])) \
                if lst.children else ()
        space = space_opt.children[0].children[1].match.group(1) if space_opt.children \
            else "global"
        return MemrefType.make(_NUMBER[scalar.match.group(1)], shape, stride, space)

    # attributes -----------------------------------------------------------------------------

    def attribute(self, node):
        c = node.children[0]
        name = c.expr.name
        if name == "array_attribute":
            lst = _opt(c.children[1])
            return tuple(self.attribute(a) for a in self.items(lst)) if lst else ()
        if name == "dictionary_attribute":
            return self.dictionary(c)
        if name == "boolean_constant":
            return c.match.group(1) == "true"
        if name == "integer_constant":
            return self.int_value(c)
        return c.match.group(1)

    def dictionary(self, node) -> dict:
        out: dict = {}
        lst = _opt(node.children[1])
        for a in (self.items(lst) if lst else ()):
            key_node, _, value = a.children
            key = key_node.children[0].match.group(1) if key_node.children \
                else key_node.match.group(1)
            if key in out:
                self.error(f"attribute {key} given twice", self.node_span(a))
            out[key] = self.attribute(value)
        return out

    # functions and regions ------------------------------------------------------------------

    def function(self, node) -> ir.Function:
        _, gid, _, params_opt, _, attrs_opt, body = node.children
        self.names = Scopes()
        args = []
        if params_opt.children:
            for p in self.items(params_opt.children[0]):
                lid, _, ty, dict_opt = p.children
                v = self.value(lid)
                t = self.type(ty)
                self.define(v, t)
                attrs = self.dictionary(dict_opt.children[0]) if dict_opt.children else {}
                args.append(ir.Argument(v, t, self.node_span(p), attributes=attrs))
        attrs = self.dictionary(attrs_opt.children[0].children[1]) if attrs_opt.children else {}
        wgs = attrs.pop("work_group_size", None)
        sgs = attrs.pop("subgroup_size", None)
        sp = self.node_span(node)
        if wgs is not None and not (isinstance(wgs, tuple) and len(wgs) == 2
                                    and all(type(x) is int for x in wgs)):
            self.error("work_group_size must be an array of 2 integers", sp)
            wgs = None
        if sgs is not None and type(sgs) is not int:
            self.error("subgroup_size must be an integer", sp)
            sgs = None
        return ir.Function(gid.match.group(1), tuple(args), self.region(body),
                           tuple(wgs) if wgs is not None else None, sgs, sp,
                           attributes=attrs)

    def region(self, node, defs: tuple[tuple[Value, Type], ...] = ()) -> ir.Region:
        self.names.open()
        for v, t in defs:
            self.define(v, t)
        try:
            return super().region(node)
        finally:
            self.names.close()

    def value_instruction(self, op, r: Value, sp) -> ir.Instruction:
        inst = _VALUE[op.expr.name](self, op, r, sp)
        self.define(r, _result_type(inst))
        return inst

    def other_instruction(self, node, name: str, sp) -> ir.Instruction:
        if name == "multi_value_instruction":
            lst, _, op = node.children
            results = tuple(self.value(v) for v in self.items(lst))
            op = op.children[0]
            inst = _OTHER[op.expr.name](self, op, sp, results)
            types = inst.result_types
            if len(types) != len(results):
                self.error(f"{len(results)} names for {len(types)} results", sp)
            for v, t in zip(results, types):
                self.define(v, t)
            return inst
        return _OTHER[name](self, node, sp, ())

    # value instructions (node, result, span) -------------------------------------------------

    def constant(self, n, r, s):
        _, val, _, ty = n.children
        c = val.children[0]
        kind = c.expr.name
        if kind == "complex_constant":
            re_, im_ = self.const_float(c.children[1]), self.const_float(c.children[3])
            const = Const(complex(re_.value, im_.value), True, self.node_span(c))
        elif kind == "floating_constant":
            const = self.const_float(c)
        elif kind == "boolean_constant":
            # a Python bool (== 0/1 for every use) so that the checker can tell `true`
            # from `1`: the literal kind must match the type
            const = Const(c.match.group(1) == "true", False, self.span(c.start, c.match.end(1)))
        else:
            const = self.const_int(c)
        return ir.Constant(r, const, self.type(ty), s)

    def load(self, n, r, s):
        _, lid, _, idx, _, _, ty = n.children
        v, t = self.use(lid)
        indices = tuple(self.use(i)[0] for i in self.items(idx.children[0])) \
            if idx.children else ()
        inst = ir.Load(r, v, indices, t, s)
        self.check_result(inst, self.type(ty), f"loading from %{v.name}", ty)
        return inst

    def check_result(self, inst, written: Type, what: str, ty_node) -> None:
        """Compare the written result type with the one typerules derives (v0.3 rules)."""
        if any(t is UNKNOWN for t in _operand_types(inst)):
            return
        try:
            # a size given by a name is dynamic ('?') in the derived type, also when the name
            # is a `constant` (the reference: "local identifiers ... are dynamic"; tinytc
            # v0.4.0 derives '?' too), so a written static size there is a mismatch
            want = typerules.result_types(inst)[0]
        except typerules.TypeRuleError as e:
            self.late.append((str(getattr(e, "message", e)), inst.span))
            return
        except (AttributeError, TypeError, IndexError):
            # an operand of the wrong kind (a scalar where a memref belongs): the checker
            # reports that in its own words; Python's text ('ScalarType' object has no
            # attribute 'order') is no diagnostic
            return
        if isinstance(want, MemrefType) and isinstance(inst.type, MemrefType):
            want = MemrefType(want.element, want.shape, want.stride, inst.type.space)
        self.expect(written, want, what, self.node_span(ty_node))

    def arith_binary(self, n, r, s):
        op, a, _, b, _, ty = n.children
        return ir.Arith(r, names.ARITH_BINARY[op.match.group(1)], self.use(a)[0],
                        self.use(b)[0], self.type(ty), s)

    def arith_unary(self, n, r, s):
        op, a, _, ty = n.children
        v, t = self.use(a)
        written = self.type(ty)
        o = names.UNARY[op.match.group(1)]
        operand_type = t if t is not UNKNOWN else written
        inst = ir.ArithUnary(r, o, v, operand_type, s)
        if t is not UNKNOWN:
            self.expect(written, unary_result_type(o, t), f"{o} of %{v.name}",
                        self.node_span(ty))
        return inst

    def compare(self, n, r, s):
        op, a, _, b, _, ty = n.children
        va, ta = self.use(a)
        vb, _ = self.use(b)
        self.expect(self.type(ty), BOOL, "a comparison", self.node_span(ty))
        return ir.Compare(r, names.COMPARE[op.match.group(1)], va, vb, ta, s)

    def cast(self, n, r, s):
        _, a, _, ty = n.children
        v, t = self.use(a)
        return ir.Cast(r, v, t, self.type(ty), s)

    def builtin(self, n, r, s):
        b, _, ty = n.children
        m = b.match
        name, comp = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), None)
        t = self.type(ty)
        if (name, comp, t) == ("group_id", "x", INDEX):
            return ir.GroupId(r, s)
        if (name, comp, t) == ("num_groups", "x", INDEX):
            return ir.GroupSize(r, s)
        return ir.Builtin(r, name, comp, t, s)

    def size(self, n, r, s):
        _, lid, _, mode, _, _, ty = n.children
        v, t = self.use(lid)
        self.expect(self.type(ty), INDEX, "size", self.node_span(ty))
        return ir.Size(r, v, self.int_value(mode), t, s)

    def subview(self, n, r, s):
        _, lid, _, lst, _, _, ty = n.children
        v, t = self.use(lid)
        slices = tuple(self.slice(i) for i in self.items(lst.children[0])) \
            if lst.children else ()
        written = self.type(ty)
        inst = ir.Subview(r, v, slices, t, s, result_type=written)
        if isinstance(t, MemrefType):
            self.check_result(inst, written, f"the subview of %{v.name}", ty)
        return inst

    def slice(self, node) -> ir.Slice:
        off, opt = node.children
        sp = self.node_span(node)
        offset = self.int_or_value(off)
        size_node = _opt(opt)
        if size_node is None:
            return ir.Slice(offset, None, False, sp)
        size = self.int_or_value(size_node.children[1])
        if isinstance(size, Const) and size.value == 0:  # `%i:0` is `%i`: the mode goes
            return ir.Slice(offset, None, False, sp)
        return ir.Slice(offset, size, True, sp)

    def alloca(self, n, r, s):
        _, dict_opt, _, ty = n.children
        attrs = self.dictionary(dict_opt.children[0]) if dict_opt.children else {}
        return ir.Alloca(r, self.type(ty), s, attributes=attrs)

    def expand(self, n, r, s):
        _, lid, _, mode, _, shape, _, _, ty = n.children
        v, t = self.use(lid)
        first, rest = shape.children
        entries: list[ir.ExpandEntry] = []
        for e in [first] + [x.children[1] for x in rest.children]:
            op = self.int_or_value(e)
            entries.append(op if isinstance(op, Value) else int(op.value))
        written = self.type(ty)
        inst = ir.Expand(r, v, self.int_value(mode), tuple(entries), t, s, result_type=written)
        if isinstance(t, MemrefType):
            self.check_result(inst, written, f"expanding %{v.name}", ty)
        return inst

    def fuse(self, n, r, s):
        _, lid, _, a, _, b, _, _, ty = n.children
        v, t = self.use(lid)
        written = self.type(ty)
        inst = ir.Fuse(r, v, self.int_value(a), self.int_value(b), t, s, result_type=written)
        if isinstance(t, MemrefType):
            self.check_result(inst, written, f"fusing %{v.name}", ty)
        return inst

    def associated(self, n, r, s):
        _, lid, _, ty = n.children
        return ir.Associated(r, self.use(lid)[0], self.type(ty), s)

    def _scope(self, scope, sem) -> tuple[Optional[str], Optional[str]]:
        return (scope.children[0].match.group(1) if scope.children else None,
                sem.children[0].match.group(1) if sem.children else None)

    def atomic_load(self, n, r, s):
        _, scope, sem, lid, _, idx, _, _, ty = n.children
        indices = tuple(self.use(i)[0] for i in self.items(idx.children[0])) \
            if idx.children else ()
        return ir.AtomicLoad(r, self.use(lid)[0], indices, self.type(ty),
                             *self._scope(scope, sem), s)

    def atomic_update(self, n, r, s):
        op, scope, sem, val, _, lid, _, idx, _, _, ty = n.children
        indices = tuple(self.use(i)[0] for i in self.items(idx.children[0])) \
            if idx.children else ()
        return ir.AtomicUpdate(r, op.match.group(1), self.use(val)[0], self.use(lid)[0],
                               indices, self.type(ty), *self._scope(scope, sem), s)

    def subgroup_broadcast(self, n, r, s):
        _, a, _, b, _, ty = n.children
        return ir.SubgroupBroadcast(r, self.use(a)[0], self.use(b)[0], self.type(ty), s)

    def subgroup_operation(self, n, r, s):
        op, a, _, ty = n.children
        return ir.SubgroupOp(r, op.match.group(1), self.use(a)[0], self.type(ty), s)

    def _coop_flags(self, tr, checked) -> tuple[bool, Optional[str]]:
        return (bool(tr.children) and tr.children[0].match.group(1) == "t",
                checked.children[0].match.group(1) if checked.children else None)

    def _coop_access(self, verb: str, op, tr, checked, scope, sem) -> tuple:
        """trans, checked, atomic, scope, semantics of cooperative_matrix_[atomic_]`verb`:
        only the atomic form takes a memory scope and semantics."""
        atomic = bool(op.match.group(1))
        if not atomic and (scope.children or sem.children):
            self.error(f"memory scope and semantics need cooperative_matrix_atomic_{verb}",
                       self.node_span(op))
        return (*self._coop_flags(tr, checked), atomic, *self._scope(scope, sem))

    def coop_load(self, n, r, s):
        op, tr, checked, scope, sem, lid, _, x, _, y, _, _, ty = n.children
        access = self._coop_access("load", op, tr, checked, scope, sem)
        return ir.CoopLoad(r, self.use(lid)[0], self.use(x)[0], self.use(y)[0], self.type(ty),
                           *access, s)

    def coop_mul_add(self, n, r, s):
        _, a, _, b, _, c, _, ty = n.children
        return ir.CoopMulAdd(r, self.use(a)[0], self.use(b)[0], self.use(c)[0], self.type(ty),
                             s)

    def coop_scale(self, n, r, s):
        _, a, _, b, _, ty = n.children
        return ir.CoopScale(r, self.use(a)[0], self.use(b)[0], self.type(ty), s)

    def coop_construct(self, n, r, s):
        _, a, _, ty = n.children
        return ir.CoopConstruct(r, self.use(a)[0], self.type(ty), s)

    def coop_extract(self, n, r, s):
        _, a, _, i, _, _, ty = n.children
        return ir.CoopExtract(r, self.use(a)[0], self.int_value(i), self.type(ty), s)

    def coop_insert(self, n, r, s):
        _, a, _, b, _, i, _, _, ty = n.children
        return ir.CoopInsert(r, self.use(a)[0], self.use(b)[0], self.int_value(i),
                             self.type(ty), s)

    def coop_reduce(self, n, r, s):
        op, mode, a, _, ty = n.children
        return ir.CoopReduce(r, op.match.group(1), mode.match.group(1), self.use(a)[0],
                             self.type(ty), s)

    def coop_atomic_update(self, n, r, s):
        op, tr, checked, scope, sem, val, _, lid, _, x, _, y, _, _, ty = n.children
        trans, chk = self._coop_flags(tr, checked)
        return ir.CoopAtomicUpdate(r, op.match.group(1), self.use(val)[0], self.use(lid)[0],
                                   self.use(x)[0], self.use(y)[0], self.type(ty), trans, chk,
                                   *self._scope(scope, sem), s)

    def coop_apply(self, n, r, s):
        _, _, row, _, col, _, val, _, _, a, _, ty, body = n.children
        t = self.type(ty)
        comp = t.component if isinstance(t, CoopMatrixType) else UNKNOWN
        rv, cv, vv = self.value(row), self.value(col), self.value(val)
        operand = self.use(a)[0]
        region = self.region(body, ((rv, ScalarType.i32), (cv, ScalarType.i32), (vv, comp)))
        return ir.CoopApply(r, rv, cv, vv, operand, t, region, s)

    # other instructions (node, span, results) -----------------------------------------------

    def if_(self, n, s, results):
        _, cond, types_opt, then, else_opt = n.children
        listed = types_opt.children[0].children[2] if types_opt.children else None
        types = tuple(self.type(t) for t in self.items(listed.children[0])) \
            if listed is not None and listed.children else ()
        otherwise = self.region(else_opt.children[0].children[1]) if else_opt.children else None
        return ir.If(results, self.use(cond)[0], types, self.region(then), otherwise, s,
                     empty_arrow=listed is not None and not listed.children)

    def yield_(self, n, s, results):
        _, _, lst, _ = n.children
        uses = [self.use(v) for v in self.items(lst.children[0])] if lst.children else []
        return ir.Yield(tuple(v for v, _ in uses), tuple(t for _, t in uses), s)

    def for_(self, n, s, results):
        _, var, _, a, _, b, step_opt, carried, body, attrs_opt = n.children
        va, ta = self.use(a)
        vb, _ = self.use(b)
        step = self.use(step_opt.children[0].children[1])[0] if step_opt.children else None
        inits: list[tuple[Value, ir.Operand]] = []
        types: tuple[Type, ...] = ()
        if carried.children:
            _, _, lst, _, _, _, tys, _ = carried.children[0].children
            for iv in self.items(lst):
                name, _, init = iv.children
                inits.append((self.value(name), self.use(init)[0]))
            types = tuple(self.type(t) for t in self.items(tys))
            if len(types) != len(inits):
                self.error(f"{len(inits)} loop-carried values and {len(types)} types", s)
        loop_type = ta if isinstance(ta, ScalarType) else INDEX
        v = self.value(var)
        region = self.region(body, ((v, loop_type), *((c, t) for (c, _), t in zip(inits, types))))
        attrs = self.dictionary(attrs_opt.children[0].children[1]) if attrs_opt.children else {}
        return ir.For(v, va, vb, step, loop_type, region, s, results=results,
                      inits=tuple(inits), result_types=types, attributes=attrs)

    def _loop_header(self, ch):
        """(vars) = (from), (to) of foreach / foreach_tile."""
        vars_ = tuple(self.value(v) for v in self.items(ch[2]))
        starts = [self.use(v) for v in self.items(ch[6])]
        stops = tuple(self.use(v)[0] for v in self.items(ch[10]))
        t = starts[0][1] if starts and isinstance(starts[0][1], ScalarType) else INDEX
        if not len(vars_) == len(starts) == len(stops):
            self.error(f"{len(vars_)} loop variables, {len(starts)} lower and {len(stops)} "
                       "upper bounds", self.node_span(ch[0]))
        return vars_, tuple(v for v, _ in starts), stops, t

    def foreach(self, n, s, results):
        ch = n.children
        vars_, starts, stops, t = self._loop_header(ch)
        body = self.region(ch[12], tuple((v, t) for v in vars_))
        if len(vars_) == 1 and len(starts) == 1 and len(stops) == 1:
            return ir.Foreach(vars_[0], starts[0], stops[0], t, body, s)
        return ir.ForeachNd(vars_, starts, stops, t, body, s)

    def foreach_tile(self, n, s, results):
        ch = n.children
        vars_, starts, stops, t = self._loop_header(ch)
        sizes = tuple(self.value(v) for v in self.items(ch[14]))
        shape = tuple(self.int_value(i) for i in self.items(ch[18]))
        body = self.region(ch[20], tuple((v, t) for v in vars_ + sizes))
        return ir.ForeachTile(vars_, starts, stops, sizes, shape, t, body, s)

    def parallel(self, n, s, results):
        return ir.Parallel(self.region(n.children[1]), s)

    def barrier(self, n, s, results):
        _, g, loc = n.children
        fences = (("global",) if g.children else ()) + (("local",) if loc.children else ())
        return ir.Barrier(s, fences=fences)

    def store(self, n, s, results):
        _, val, _, lid, _, idx, _ = n.children
        v, t = self.use(lid)
        indices = tuple(self.use(i)[0] for i in self.items(idx.children[0])) \
            if idx.children else ()
        return ir.Store(self.use(val)[0], v, indices, t, s)

    def atomic_store(self, n, s, results):
        _, scope, sem, val, _, lid, _, idx, _ = n.children
        indices = tuple(self.use(i)[0] for i in self.items(idx.children[0])) \
            if idx.children else ()
        return ir.AtomicStore(self.use(val)[0], self.use(lid)[0], indices,
                              *self._scope(scope, sem), s)

    def coop_store(self, n, s, results):
        op, tr, checked, scope, sem, val, _, lid, _, x, _, y, _ = n.children
        access = self._coop_access("store", op, tr, checked, scope, sem)
        return ir.CoopStore(self.use(val)[0], self.use(lid)[0], self.use(x)[0],
                            self.use(y)[0], *access, s)

    def coop_prefetch(self, n, s, results):
        _, level, _, lid, _, x, _, y, _, _, rows, _, cols = n.children
        return ir.CoopPrefetch(self.int_value(level), self.use(lid)[0], self.use(x)[0],
                               self.use(y)[0], self.int_value(rows), self.int_value(cols), s)

    def blas(self, n, s, results):
        return blas_syntax.build(n, "v0.4", s, _Builder._is_t, self.use, None, None)

    def cumsum(self, n, s, results):
        _, atomic, alpha, _, a, _, mode, _, beta, _, b = n.children
        return ir.Cumsum(bool(atomic.children), self.use(alpha)[0], self.use(a)[0],
                         self.int_value(mode), self.use(beta)[0], self.use(b)[0], s)


def _weakens(written: Type, want: Type) -> bool:
    """`written` is the memref type `want` with some static sizes or strides made '?'."""
    if not (isinstance(written, MemrefType) and isinstance(want, MemrefType)):
        return False
    if written.element != want.element or written.order != want.order:
        return False
    return all(w is None or w == d for w, d in zip(written.shape + written.stride,
                                                     want.shape + want.stride))


def _is_t(opt) -> bool:
    """An optional '.n'/'.t' token: present and '.t'."""
    return bool(opt.children) and _Builder._is_t(opt.children[0])


def _operand_types(inst) -> list:
    return [inst.type] if hasattr(inst, "type") else []


def unary_result_type(op: str, t: Type) -> Type:
    """abs/re/im of a complex number give its component type; the rest keep the type."""
    if isinstance(t, ScalarType) and t.is_complex and op in ("abs", "re", "im"):
        return ScalarType.f32 if t is ScalarType.c32 else ScalarType.f64
    return t


def _result_type(inst) -> Type:
    """The type a v0.4 value instruction defines (as written, or as the IR derives it)."""
    written = getattr(inst, "result_type", None)
    if written is not None:
        return written
    if isinstance(inst, ir.Load):
        t = inst.type
        if isinstance(t, MemrefType):
            return t.element
        if isinstance(t, GroupType):
            return t.memref
        return UNKNOWN
    if isinstance(inst, ir.ArithUnary):
        return unary_result_type(inst.op, inst.type)
    if isinstance(inst, ir.Compare):
        return BOOL
    if isinstance(inst, ir.Cast):
        return inst.to_type
    if isinstance(inst, (ir.GroupId, ir.GroupSize, ir.Size)):
        return INDEX
    return getattr(inst, "type", UNKNOWN)


_VALUE = {GRAMMAR[k].name: f for k, f in {
    "constant_instruction": _Builder04.constant,
    "load_instruction": _Builder04.load,
    "arith_binary_instruction": _Builder04.arith_binary,
    "arith_unary_instruction": _Builder04.arith_unary,
    "compare_instruction": _Builder04.compare,
    "subview_instruction": _Builder04.subview,
    "cast_instruction": _Builder04.cast,
    "builtin_instruction": _Builder04.builtin,
    "size_instruction": _Builder04.size,
    "alloca_instruction": _Builder04.alloca,
    "expand_instruction": _Builder04.expand,
    "fuse_instruction": _Builder04.fuse,
    "associated_instruction": _Builder04.associated,
    "atomic_load_instruction": _Builder04.atomic_load,
    "atomic_update_instruction": _Builder04.atomic_update,
    "subgroup_broadcast_instruction": _Builder04.subgroup_broadcast,
    "subgroup_operation_instruction": _Builder04.subgroup_operation,
    "coop_load_instruction": _Builder04.coop_load,
    "coop_mul_add_instruction": _Builder04.coop_mul_add,
    "coop_scale_instruction": _Builder04.coop_scale,
    "coop_construct_instruction": _Builder04.coop_construct,
    "coop_extract_instruction": _Builder04.coop_extract,
    "coop_insert_instruction": _Builder04.coop_insert,
    "coop_reduce_instruction": _Builder04.coop_reduce,
    "coop_atomic_update_instruction": _Builder04.coop_atomic_update,
    "coop_apply_instruction": _Builder04.coop_apply,
}.items()}
_OTHER = {GRAMMAR[k].name: f for k, f in {
    "if_instruction": _Builder04.if_,
    "yield_instruction": _Builder04.yield_,
    "for_instruction": _Builder04.for_,
    "foreach_instruction": _Builder04.foreach,
    "foreach_tile_instruction": _Builder04.foreach_tile,
    "parallel_instruction": _Builder04.parallel,
    "barrier_instruction": _Builder04.barrier,
    "store_instruction": _Builder04.store,
    "atomic_store_instruction": _Builder04.atomic_store,
    "coop_store_instruction": _Builder04.coop_store,
    "coop_prefetch_instruction": _Builder04.coop_prefetch,
    blas_syntax.RULE: _Builder04.blas,
    "cumsum_instruction": _Builder04.cumsum,
}.items()}

__all__ = ["parse", "GRAMMAR", "GRAMMAR_PATH", "unary_result_type", "UNKNOWN"]
