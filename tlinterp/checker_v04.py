"""Static rules of tensor language v0.4 (checker.check sends v0.4 programs here).

Diagnostics as in tlinterp/checker.py: LINE.COL-COL, every independent error, sorted by
position.  The rules, by topic:

- regions: the function body is collective; foreach, foreach_tile, parallel and
  cooperative_matrix_apply open SPMD regions; if/for bodies inherit.  Collective instructions
  (alloca, the BLAS family, cumsum, foreach, foreach_tile, parallel) only in collective
  regions; SPMD instructions (subgroup builtins and operations, cooperative_matrix_*) only in
  SPMD regions;
- types: arithmetic operands have the instruction's type and the operation allows it (e.g.
  `rem` not on complex, `shl` only on integers, `and` on bool or integers); comparisons take
  two operands of one number type (ordering ones not complex); `bool` is not a number (no
  casts to or from it, no arithmetic but and/or/xor/not); casts never go from complex to
  real; constants match their type's kind; if conditions are bool; loop bounds share one
  integer type; loop-carried and yielded values match the declared types;
- mixed precision: BLAS operands follow the promotion order of the v0.4 reference
  (alpha <= A <= B and beta <= B, with promote(A, B) for products);
- `.atomic` BLAS need beta to be a `constant` 0 or 1;
- memory: alloca is static and local; load/store take one index per mode (one for a group),
  of type index; the stored value has the element type;
- coopmatrix: mul_add shapes (M x K, K x N, M x N) and uses (matrix_a, matrix_b,
  matrix_acc), load/store need an order-2 memref of the component type, casts keep the shape
  and may only change the use from matrix_acc to matrix_a/b;
- attributes: subgroup_size an integer, work_group_size two integers, alignment a positive
  multiple of the element size, shape_gcd/stride_gcd arrays of positive integers no longer
  than the order, unroll a bool or integer; unknown names are errors unless spelled as
  strings (custom attributes).
"""

from __future__ import annotations

from typing import Optional

from . import ir
from . import v04names as names
from .diagnostics import WARNING, Diagnostic, SourceError
from .ir import Const, Span, Value
from .layout import layout_problems
from .types import INDEX, CoopMatrixType, GroupType, MemrefType, ScalarType, Type, VoidType
from .v04names import v04_words

BOOL = ScalarType.i1
UNKNOWN = VoidType()

# the promotion order of the v0.4 reference (alpha <= beta: alpha promotable to beta)
_ORDER = ("i8", "i16", "i32", "i64", "bf16", "f16", "f32", "f64", "c32", "c64")
_PROMOTES = {
    "i8": set(_ORDER),
    "i16": {"i16", "i32", "i64", "f32", "f64", "c32", "c64"},
    "i32": {"i32", "i64", "f64", "c64"},
    "i64": {"i64"},
    "bf16": {"bf16", "f32", "f64", "c32", "c64"},
    "f16": {"f16", "f32", "f64", "c32", "c64"},
    "f32": {"f32", "f64", "c32", "c64"},
    "f64": {"f64", "c64"},
    "c32": {"c32", "c64"},
    "c64": {"c64"},
}


def promotable(a: ScalarType, b: ScalarType) -> bool:
    """a <= b in v0.4's partial order (index counts as i64)."""
    x = "i64" if a is INDEX else a.value
    y = "i64" if b is INDEX else b.value
    return y in _PROMOTES.get(x, {x})


def promote(a: ScalarType, b: ScalarType) -> Optional[ScalarType]:
    if promotable(a, b):
        return b
    if promotable(b, a):
        return a
    return None


_COLLECTIVE = (ir.Alloca, *ir.BLAS, ir.Cumsum, ir.Foreach, ir.ForeachNd, ir.ForeachTile,
               ir.Parallel)
_SPMD = (ir.SubgroupBroadcast, ir.SubgroupOp, ir.CoopApply, ir.CoopLoad, ir.CoopStore,
         ir.CoopAtomicUpdate, ir.CoopConstruct, ir.CoopExtract, ir.CoopInsert, ir.CoopMulAdd,
         ir.CoopPrefetch, ir.CoopReduce, ir.CoopScale)
_OPENS_SPMD = (ir.Foreach, ir.ForeachNd, ir.ForeachTile, ir.Parallel, ir.CoopApply)

_NUMBER_OPS = {"add", "sub", "mul", "div", "neg", "abs"}
_REAL_OPS = {"rem", "max", "min"}
_INT_OPS = {"shl", "shr"}
_LOGIC_OPS = {"and", "or", "xor", "not"}
_COMPLEX_OPS = {"conj", "im", "re"}
_FLOAT_MATH = {"cos", "sin", "log", "log2", "native_cos", "native_sin", "native_log",
               "native_log2"}
_FLOAT_OR_COMPLEX_MATH = {"exp", "exp2", "native_exp", "native_exp2"}


def _allowed(op: str, t: ScalarType) -> bool:
    """Whether arithmetic `op` accepts the (scalar or component) type `t`."""
    if op in _LOGIC_OPS:
        return t is BOOL or t.is_int
    if t is BOOL:
        return False
    if op in _NUMBER_OPS:
        return True
    if op in _REAL_OPS:
        return not t.is_complex
    if op in _INT_OPS:
        return t.is_int
    if op in _COMPLEX_OPS:
        return t.is_complex
    if op in _FLOAT_MATH:
        return t.is_float
    if op in _FLOAT_OR_COMPLEX_MATH:
        return t.is_float or t.is_complex
    return False


def _component(t: Type) -> Optional[ScalarType]:
    if isinstance(t, CoopMatrixType):
        return t.component
    return t if isinstance(t, ScalarType) else None


def check(program: ir.Program, warnings: Optional[list[Diagnostic]] = None) -> ir.Program:
    """Return `program` if it obeys v0.4's rules, else raise `SourceError` with every error."""
    errors: list[tuple[str, Optional[Span]]] = list(program.pending)
    seen: set[str] = set()
    for f in program.functions:
        if f.name in seen:
            errors.append((f"function @{f.name} is defined twice", f.span))
        seen.add(f.name)
        errors.extend(_Function(f).run())
    if errors:
        diags = [Diagnostic(v04_words(m), s, program.filename) for m, s in errors]
        diags.sort(key=lambda d: (d.span.line, d.span.col) if d.span else (0, 0))
        raise SourceError(diags, program.source)
    return program


class _Function:
    def __init__(self, fn: ir.Function):
        self.fn = fn
        self.errors: list[tuple[str, Optional[Span]]] = []
        self.scopes: list[dict[str, Type]] = [{a.value.name: a.type for a in fn.args}]
        self.constants: dict[str, Const] = {}

    def error(self, msg: str, span: Optional[Span]) -> None:
        self.errors.append((msg, span))

    def define(self, v: Value, t: Type) -> None:
        self.valid_type(t, v.span, f"%{v.name}")
        self.scopes[-1][v.name] = t

    def valid_type(self, t: Type, span: Optional[Span], what: str) -> None:
        """The layout rule of memref types (also a group's), and non-negative group sizes and
        offsets: every written type passes here once (parameters and defined values)."""
        m = t.memref if isinstance(t, GroupType) else t
        if isinstance(m, MemrefType):
            for p in layout_problems(m):
                self.error(f"{what}: {p}", span)
        if isinstance(t, GroupType):
            for name, x in (("size", t.size), ("offset", t.offset)):
                if x is not None and x < 0:
                    self.error(f"{what}: the group has negative {name} {x}", span)

    def type_of(self, op: ir.Operand) -> Type:
        if isinstance(op, Const):
            return INDEX if not op.is_float else UNKNOWN
        for s in reversed(self.scopes):
            if op.name in s:
                return s[op.name]
        return UNKNOWN  # the parser reported it

    def run(self) -> list[tuple[str, Optional[Span]]]:
        for a in self.fn.args:
            self.valid_type(a.type, a.span, f"argument %{a.value.name}")
        self.attributes()
        self.region(self.fn.body, spmd=False)
        return self.errors

    # attributes -----------------------------------------------------------------------------

    def attributes(self) -> None:
        fn = self.fn
        if fn.subgroup_size is not None and fn.subgroup_size <= 0:
            self.error("subgroup_size must be positive", fn.span)
        if fn.work_group_size is not None and any(x <= 0 for x in fn.work_group_size):
            self.error("work_group_size entries must be positive", fn.span)
        if fn.work_group_size is not None and fn.subgroup_size \
                and fn.work_group_size[0] % fn.subgroup_size:
            self.error("work_group_size[0] must be a multiple of subgroup_size", fn.span)
        for key in fn.attributes:
            if key in ("alignment", "shape_gcd", "stride_gcd", "unroll"):
                self.error(f"{key} is not a function attribute", fn.span)
        for a in fn.args:
            if isinstance(a.type, CoopMatrixType):
                self.error("a parameter must not have coopmatrix type", a.span)
            self.memref_attributes(a.attributes, a.type, a.span, "parameter")

    def memref_attributes(self, attrs: dict, t: Type, span, what: str) -> None:
        m = t.memref if isinstance(t, GroupType) else t
        for key, v in attrs.items():
            if key == "alignment":
                if not isinstance(m, MemrefType):
                    self.error(f"alignment needs a memref or group {what}", span)
                elif type(v) is not int or v <= 0 or v % (m.element.bits // 8 or 1):
                    self.error(f"alignment must be a positive multiple of "
                               f"{m.element.bits // 8}, the size of {m.element.value}", span)
            elif key in ("shape_gcd", "stride_gcd"):
                if not isinstance(m, MemrefType):
                    self.error(f"{key} needs a memref or group {what}", span)
                elif not (isinstance(v, tuple) and all(type(x) is int and x > 0 for x in v)):
                    self.error(f"{key} must be an array of positive integers", span)
                elif len(v) > m.order:
                    self.error(f"{key} has {len(v)} entries, more than the order {m.order}",
                               span)
            elif key in ("subgroup_size", "work_group_size", "unroll"):
                self.error(f"{key} is not a {what} attribute", span)

    # regions --------------------------------------------------------------------------------

    def region(self, region: ir.Region, spmd: bool,
               defs: tuple[tuple[Value, Type], ...] = ()) -> None:
        self.scopes.append({v.name: t for v, t in defs})
        for inst in region.instructions:
            self.instruction(inst, spmd)
        self.scopes.pop()

    def instruction(self, inst: ir.Instruction, spmd: bool) -> None:
        if spmd and isinstance(inst, _COLLECTIVE):
            self.error(f"collective instruction {_name(inst)} must not be in an SPMD region "
                       "(inside foreach, foreach_tile, parallel or cooperative_matrix_apply)",
                       inst.span)
        if not spmd and isinstance(inst, _SPMD) or \
                (not spmd and isinstance(inst, ir.Builtin) and inst.name in names.SPMD_BUILTINS):
            self.error(f"SPMD instruction {_name(inst)} must be in an SPMD region "
                       "(foreach, foreach_tile, parallel)", inst.span)
        rule = getattr(self, "_" + type(inst).__name__.lower(), None)
        if rule is not None:
            rule(inst, spmd)
        for v in ir.results_of(inst):
            if not isinstance(inst, (ir.If, ir.For)):
                self.define(v, _result(inst, self))

    # scalar instructions --------------------------------------------------------------------

    def _constant(self, inst: ir.Constant, spmd) -> None:
        t = _component(inst.type)
        v = inst.value
        if t is None:
            self.error(f"a constant cannot have type {inst.type}", inst.span)
        elif t is BOOL:
            if v.is_float:
                self.error("a bool constant is true or false", inst.span)
        elif t.is_complex:
            if not v.is_float:
                self.error(f"a {t.value} constant needs a floating or complex literal",
                           inst.span)
        elif t.is_float:
            if not v.is_float or isinstance(v.value, complex):
                self.error(f"a {t.value} constant needs a floating literal", inst.span)
        elif v.is_float:
            self.error(f"an {t.value} constant needs an integer literal", inst.span)
        self.constants[inst.result.name] = v

    def _arith(self, inst: ir.Arith, spmd) -> None:
        t = inst.type
        for o in (inst.lhs, inst.rhs):
            ot = self.type_of(o)
            if ot is not UNKNOWN and ot != t:
                self.error(f"operand %{o.name} has type {ot}, not {t}", o.span or inst.span)
        c = _component(t)
        if c is None or not _allowed(inst.op, c):
            self.error(f"{inst.op} is not defined on {t}", inst.span)

    def _arithunary(self, inst: ir.ArithUnary, spmd) -> None:
        c = _component(inst.type)
        if inst.type is not UNKNOWN and (c is None or not _allowed(inst.op, c)):
            self.error(f"{inst.op} is not defined on {inst.type}", inst.span)
        if inst.op in names.MATH_UNARY and isinstance(inst.type, CoopMatrixType):
            self.error(f"{inst.op} is not defined on coopmatrix types", inst.span)

    def _compare(self, inst: ir.Compare, spmd) -> None:
        ta, tb = self.type_of(inst.lhs), self.type_of(inst.rhs)
        if UNKNOWN in (ta, tb):
            return
        if ta != tb:
            self.error(f"comparison of {ta} with {tb}", inst.span)
        elif not isinstance(ta, ScalarType) or ta is BOOL:
            self.error(f"comparison needs number operands, not {ta}", inst.span)
        elif ta.is_complex and inst.cond not in ("eq", "ne"):
            self.error(f"{names.COMPARE_SPELLING[inst.cond]} is not defined on {ta}", inst.span)

    def _cast(self, inst: ir.Cast, spmd) -> None:
        a, b = inst.from_type, inst.to_type
        if a is UNKNOWN:
            return
        if BOOL in (a, b):
            self.error("bool is not a number: no casts to or from it", inst.span)
            return
        if isinstance(b, CoopMatrixType) or isinstance(a, CoopMatrixType):
            if not (isinstance(a, CoopMatrixType) and isinstance(b, CoopMatrixType)):
                self.error(f"cast from {a} to {b}: both or neither must be coopmatrix types",
                           inst.span)
                return
            if a.shape != b.shape:
                self.error(f"cast changes the coopmatrix shape {a.shape} to {b.shape}",
                           inst.span)
            if a.use != b.use and a.use != "matrix_acc":
                self.error(f"cast changes the use {a.use} to {b.use} (only matrix_acc may "
                           "become matrix_a or matrix_b)", inst.span)
            a, b = a.component, b.component
        for t in (a, b):
            if not isinstance(t, ScalarType):
                self.error(f"cast needs number types, not {t}", inst.span)
                return
        if isinstance(a, ScalarType) and isinstance(b, ScalarType) and a.is_complex \
                and not b.is_complex:
            self.error(f"cast from complex {a} to {b} is forbidden", inst.span)

    def _builtin(self, inst: ir.Builtin, spmd) -> None:
        want = INDEX if inst.name in ("group_id", "num_groups") else ScalarType.i32
        if inst.type != want:
            self.error(f"{inst.name} has type {want}, not {inst.type}", inst.span)

    def _subgroup_operand(self, inst, op: ir.Operand, what: str) -> None:
        t = self.type_of(op)
        if t is UNKNOWN:
            return
        if not isinstance(t, ScalarType) or t == BOOL:
            self.error(f"{what} needs a number operand, not {t}", inst.span)
        elif t != inst.type:
            self.error(f"operand %{op.name} has type {t}, not {inst.type}", inst.span)

    def _subgroupbroadcast(self, inst: ir.SubgroupBroadcast, spmd) -> None:
        self._subgroup_operand(inst, inst.value, "subgroup_broadcast")
        ti = self.type_of(inst.index)
        if ti is not UNKNOWN and ti != ScalarType.i32:
            self.error(f"the sub-group lane %{inst.index.name} has type {ti}, not i32",
                       inst.span)

    def _subgroupop(self, inst: ir.SubgroupOp, spmd) -> None:
        self._subgroup_operand(inst, inst.operand, f"subgroup_{inst.op}")
        t = self.type_of(inst.operand)
        if inst.op.endswith(("_min", "_max")) and isinstance(t, ScalarType) and t.is_complex:
            self.error(f"subgroup_{inst.op} is not defined on complex {t} (no order)",
                       inst.span)

    # memory ---------------------------------------------------------------------------------

    def _alloca(self, inst: ir.Alloca, spmd) -> None:
        t = inst.type
        if not isinstance(t, MemrefType):
            self.error(f"alloca needs a memref type, not {t}", inst.span)
            return
        if not t.is_static:
            self.error("alloca needs a static shape and stride", inst.span)
        if t.space != "local":
            self.error("alloca's memref type needs the local address space", inst.span)
        self.memref_attributes(inst.attributes, t, inst.span, "alloca")

    def _indices(self, inst, t: Type) -> None:
        order = 1 if isinstance(t, GroupType) else t.order if isinstance(t, MemrefType) else None
        if order is None:
            if t is not UNKNOWN:
                self.error(f"%{inst.operand.name} is not a memref or group ({t})", inst.span)
            return
        if len(inst.indices) != order:
            self.error(f"{len(inst.indices)} indices for %{inst.operand.name} of order {order}",
                       inst.span)
        for i in inst.indices:
            ti = self.type_of(i)
            if ti is not UNKNOWN and ti != INDEX:
                self.error(f"index %{i.name} has type {ti}, not index", i.span or inst.span)

    def _index_operands(self, inst, operands, what: str) -> None:
        for op in operands:
            if isinstance(op, Value):
                t = self.type_of(op)
                if t is not UNKNOWN and t != INDEX:
                    self.error(f"{what} %{op.name} has type {t}, not index", op.span or inst.span)

    def _subview(self, inst: ir.Subview, spmd) -> None:
        self._index_operands(inst, [x for s in inst.slices for x in (s.offset, s.size)],
                             "offset or size")

    def _expand(self, inst: ir.Expand, spmd) -> None:
        self._index_operands(inst, inst.shape, "expanded size")

    def _load(self, inst: ir.Load, spmd) -> None:
        self._indices(inst, inst.type)

    def _store(self, inst: ir.Store, spmd) -> None:
        self._indices(inst, inst.type)
        if isinstance(inst.type, GroupType):
            self.error("store needs a memref, not a group", inst.span)
        elif isinstance(inst.type, MemrefType):
            tv = self.type_of(inst.value)
            if tv is not UNKNOWN and tv != inst.type.element:
                self.error(f"stored value has type {tv}, the memref holds "
                           f"{inst.type.element}", inst.span)

    def _atomicload(self, inst, spmd) -> None:
        self._indices(inst, self.type_of(inst.operand))

    _atomicstore = _atomicload
    _atomicupdate = _atomicload

    def _size(self, inst: ir.Size, spmd) -> None:
        t = inst.type
        order = 1 if isinstance(t, GroupType) else t.order if isinstance(t, MemrefType) else None
        if order is not None and not 0 <= inst.mode < order:
            self.error(f"size mode {inst.mode} out of range for order {order}", inst.span)

    # control flow ---------------------------------------------------------------------------

    def _if(self, inst: ir.If, spmd) -> None:
        tc = self.type_of(inst.cond)
        if tc is not UNKNOWN and tc != BOOL:
            self.error(f"if needs a bool condition, not {tc}", inst.span)
        for region in (inst.then, inst.otherwise):
            if region is not None:
                self.region(region, spmd)
                self._yields(region, inst.result_types, inst.span, "if")
        if inst.result_types and inst.otherwise is None:
            self.error("an if with results needs an else region", inst.span)
        for v, t in zip(inst.results, inst.result_types):
            self.define(v, t)

    def _yields(self, region: ir.Region, types, span, what: str) -> None:
        last = region.instructions[-1] if region.instructions else None
        if not types:
            if isinstance(last, ir.Yield) and last.values:
                self.error(f"yield of values in a {what} without results", last.span)
            return
        if not isinstance(last, ir.Yield):
            self.error(f"the {what}'s region must end with a yield of {len(types)} value(s)",
                       region.span or span)
            return
        if len(last.values) != len(types):
            self.error(f"yield of {len(last.values)} value(s), the {what} has {len(types)}",
                       last.span)
        for v, want, got in zip(last.values, types, last.types):
            if got is not UNKNOWN and got != want:
                self.error(f"yielded %{v.name} has type {got}, not {want}", last.span)

    def _for(self, inst: ir.For, spmd) -> None:
        bounds = [inst.start, inst.stop] + ([inst.step] if inst.step is not None else [])
        types = {self.type_of(b) for b in bounds} - {UNKNOWN}
        if len(types) > 1:
            self.error("for bounds must share one integer type", inst.span)
        for t in types:
            if not (isinstance(t, ScalarType) and t.is_int):
                self.error(f"for bounds need an integer type, not {t}", inst.span)
        for (c, init), t in zip(inst.inits, inst.result_types):
            ti = self.type_of(init)
            if ti is not UNKNOWN and ti != t:
                self.error(f"initial value of %{c.name} has type {ti}, not {t}", inst.span)
        defs = ((inst.var, inst.type),) + tuple((c, t) for (c, _), t in
                                                zip(inst.inits, inst.result_types))
        self.region(inst.body, spmd, defs)
        self._yields(inst.body, inst.result_types, inst.span, "for")
        unroll = inst.attributes.get("unroll")
        if unroll is not None and type(unroll) not in (bool, int):
            self.error("unroll must be a bool or an integer", inst.span)
        for key in inst.attributes:
            if key in ("alignment", "shape_gcd", "stride_gcd", "subgroup_size",
                       "work_group_size"):
                self.error(f"{key} is not a for attribute", inst.span)
        for v, t in zip(inst.results, inst.result_types):
            self.define(v, t)

    def _loop(self, inst, vars_, starts, stops, extra=()) -> None:
        for a, b in zip(starts, stops):
            ta, tb = self.type_of(a), self.type_of(b)
            if UNKNOWN not in (ta, tb) and ta != tb:
                self.error(f"loop bounds of types {ta} and {tb} (they must match)", inst.span)
        self.region(inst.body, True, tuple((v, inst.type) for v in vars_) + extra)

    def _foreach(self, inst: ir.Foreach, spmd) -> None:
        self._loop(inst, (inst.var,), (inst.start,), (inst.stop,))

    def _foreachnd(self, inst: ir.ForeachNd, spmd) -> None:
        self._loop(inst, inst.vars, inst.starts, inst.stops)

    def _foreachtile(self, inst: ir.ForeachTile, spmd) -> None:
        if not len(inst.vars) == len(inst.sizes) == len(inst.tile_shape):
            self.error("foreach_tile needs one size and one tile extent per loop variable",
                       inst.span)
        if any(x <= 0 for x in inst.tile_shape):
            self.error("tile extents must be positive", inst.span)
        sg = self.fn.subgroup_size
        if sg and inst.tile_shape and inst.tile_shape[0] % sg:
            self.error(f"the first tile extent must be a multiple of the subgroup size {sg}",
                       inst.span)
        self._loop(inst, inst.vars + inst.sizes, inst.starts, inst.stops)

    def _parallel(self, inst: ir.Parallel, spmd) -> None:
        self.region(inst.body, True)

    def _coopapply(self, inst: ir.CoopApply, spmd) -> None:
        t = inst.type
        comp = t.component if isinstance(t, CoopMatrixType) else UNKNOWN
        ta = self.type_of(inst.operand)
        if ta is not UNKNOWN and ta != t:
            self.error(f"cooperative_matrix_apply of {ta} must return the same type, not {t}",
                       inst.span)
        self.region(inst.body, True, ((inst.row, ScalarType.i32), (inst.col, ScalarType.i32),
                                      (inst.val, comp)))
        self._yields(inst.body, (comp,), inst.span, "cooperative_matrix_apply")

    # collectives ----------------------------------------------------------------------------

    def _atomic_beta(self, inst) -> None:
        if not inst.atomic:
            return
        b = inst.beta
        c = b if isinstance(b, Const) else self.constants.get(b.name)
        if c is None or c.value not in (0, 1):
            self.error(".atomic needs beta to be a constant 0 or 1", b.span or inst.span)

    def _blas(self, inst, spmd) -> None:
        self._atomic_beta(inst)
        memrefs = {f: inst.memref_type(f) for f in (*inst.inputs(), inst.output())}
        if any(not isinstance(t, MemrefType) for t in memrefs.values()):
            for f, t in memrefs.items():
                if t is not UNKNOWN and not isinstance(t, MemrefType):
                    self.error(f"{inst.role(f).label} must be a memref, not {t}", inst.span)
            return
        for r in inst.ROLES:
            if memrefs[r.field].order not in r.orders:
                self.error(f"{inst.MNEMONIC}: {r.label} has order {memrefs[r.field].order}",
                           inst.span)
        for label, (fa, ma), (fb, mb) in inst.size_relations():
            sa, sb = inst.op_shape(fa), inst.op_shape(fb)
            if ma < len(sa) and mb < len(sb) and None not in (sa[ma], sb[mb]) \
                    and sa[ma] != sb[mb]:
                self.error(f"{inst.MNEMONIC}: {label} sizes differ ({sa[ma]} and {sb[mb]})",
                           inst.span)
        ins = [memrefs[f].element for f in inst.inputs()]
        out = memrefs[inst.output()].element
        a = ins[0] if len(ins) == 1 else promote(ins[0], ins[1])
        if a is None:
            self.error(f"{inst.MNEMONIC}: {ins[0]} and {ins[1]} have no common type", inst.span)
            return
        alpha, beta = inst.alpha_type, inst.beta_type
        if isinstance(alpha, ScalarType) and not promotable(alpha, a):
            self.error(f"{inst.MNEMONIC}: alpha of type {alpha} does not promote to {a}",
                       inst.span)
        if not promotable(a, out):
            self.error(f"{inst.MNEMONIC}: {a} does not promote to {out}", inst.span)
        if isinstance(beta, ScalarType) and not promotable(beta, out):
            self.error(f"{inst.MNEMONIC}: beta of type {beta} does not promote to {out}",
                       inst.span)

    _axpby = _gemm = _gemv = _ger = _hadamard = _sum = _blas

    def _cumsum(self, inst: ir.Cumsum, spmd) -> None:
        self._atomic_beta(inst)
        ta, tb = self.type_of(inst.a), self.type_of(inst.b)
        if isinstance(ta, MemrefType) and isinstance(tb, MemrefType):
            if ta.order < 1:
                self.error("cumsum needs A of order >= 1", inst.span)
            elif not 0 <= inst.mode < ta.order:
                self.error(f"cumsum mode {inst.mode} out of range for order {ta.order}",
                           inst.span)
            if ta.shape != tb.shape:
                self.error("cumsum needs A and B of one shape", inst.span)

    # coopmatrix -----------------------------------------------------------------------------

    def _coopmuladd(self, inst: ir.CoopMulAdd, spmd) -> None:
        ta, tb, tc = (self.type_of(x) for x in (inst.a, inst.b, inst.c))
        if not all(isinstance(t, CoopMatrixType) for t in (ta, tb, tc, inst.type)):
            if UNKNOWN not in (ta, tb, tc):
                self.error("cooperative_matrix_mul_add needs coopmatrix operands", inst.span)
            return
        for t, use, label in ((ta, "matrix_a", "A"), (tb, "matrix_b", "B"),
                              (tc, "matrix_acc", "C"), (inst.type, "matrix_acc", "result")):
            if t.use != use:
                self.error(f"{label} of cooperative_matrix_mul_add needs use {use}, not {t.use}",
                           inst.span)
        if ta.cols != tb.rows or tc.shape != (ta.rows, tb.cols) or inst.type.shape != tc.shape:
            self.error(f"cooperative_matrix_mul_add shapes {ta.shape} x {tb.shape} + "
                       f"{tc.shape} -> {inst.type.shape} do not fit", inst.span)
        p = promote(ta.component, tb.component)
        if p is None or not promotable(p, tc.component):
            self.error(f"cooperative_matrix_mul_add: {ta.component} x {tb.component} does not "
                       f"promote to {tc.component}", inst.span)
        sg = self.fn.subgroup_size
        if sg and any(t.rows % sg for t in (ta, tc)):
            self.error(f"rows of A and C must be multiples of the subgroup size {sg}",
                       inst.span)

    def _coop_memref(self, inst, comp: Optional[ScalarType]) -> None:
        t = self.type_of(inst.operand)
        if t is UNKNOWN:
            return
        if not isinstance(t, MemrefType) or t.order != 2:
            self.error(f"%{inst.operand.name} must be a memref of order 2, not {t}", inst.span)
        elif comp is not None and t.element != comp:
            self.error(f"component type {comp} differs from the element type {t.element}",
                       inst.span)

    def _coopload(self, inst: ir.CoopLoad, spmd) -> None:
        self._coop_memref(inst, _component(inst.type))

    def _coopstore(self, inst: ir.CoopStore, spmd) -> None:
        self._coop_memref(inst, _component(self.type_of(inst.value)))

    def _coopatomicupdate(self, inst, spmd) -> None:
        self._coop_memref(inst, _component(inst.type))

    def _coopprefetch(self, inst, spmd) -> None:
        self._coop_memref(inst, None)

    def _coopscale(self, inst: ir.CoopScale, spmd) -> None:
        ts, tm = self.type_of(inst.scalar), self.type_of(inst.matrix)
        if isinstance(tm, CoopMatrixType):
            if ts is not UNKNOWN and ts != tm.component:
                self.error(f"scalar of type {ts}, the matrix holds {tm.component}", inst.span)
            if tm != inst.type:
                self.error(f"result type {inst.type} differs from the matrix type {tm}",
                           inst.span)

    def _coopextract(self, inst: ir.CoopExtract, spmd) -> None:
        """The component read has the matrix's component type (tinytc v0.4.0 agrees: "Number
        type mismatch"); accepted before, the value then carried the wrong type."""
        tm = self.type_of(inst.operand)
        if not isinstance(tm, CoopMatrixType):
            if tm is not UNKNOWN:
                self.error(f"%{inst.operand.name} is not a coopmatrix ({tm})", inst.span)
        elif inst.type != tm.component:
            self.error(f"cooperative_matrix_extract of {tm} gives {tm.component}, not "
                       f"{inst.type}", inst.span)

    def _coopinsert(self, inst: ir.CoopInsert, spmd) -> None:
        """The value has the component type and the result the matrix's type."""
        tm, tv = self.type_of(inst.operand), self.type_of(inst.value)
        if not isinstance(tm, CoopMatrixType):
            if tm is not UNKNOWN:
                self.error(f"%{inst.operand.name} is not a coopmatrix ({tm})", inst.span)
            return
        if tv is not UNKNOWN and tv != tm.component:
            self.error(f"inserted value of type {tv}, the matrix holds {tm.component}",
                       inst.span)
        if tm != inst.type:
            self.error(f"result type {inst.type} differs from the matrix type {tm}", inst.span)

    def _coopreduce(self, inst: ir.CoopReduce, spmd) -> None:
        ta, t = self.type_of(inst.operand), inst.type
        if isinstance(ta, CoopMatrixType) and isinstance(t, CoopMatrixType):
            want = (ta.rows, 1) if inst.mode == "row" else (1, ta.cols)
            if t.shape != want or t.component != ta.component or t.use != ta.use:
                self.error(f"cooperative_matrix_reduce.{inst.mode} of {ta} gives "
                           f"coopmatrix<{ta.component.value}x{want[0]}x{want[1]},{ta.use}>",
                           inst.span)


def _name(inst) -> str:
    if isinstance(inst, ir.Blas):
        return inst.MNEMONIC
    return names.construct(inst) if type(inst) in names.MNEMONICS else type(inst).__name__.lower()


def _result(inst, fc: _Function) -> Type:
    from .parser_v04 import _result_type

    return _result_type(inst)


__all__ = ["check", "promotable", "promote", "WARNING"]
