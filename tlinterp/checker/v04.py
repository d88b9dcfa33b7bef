"""Static rules of tensor language v0.4 (checker.check sends v0.4 programs here).

Diagnostics as in tlinterp/checker/v03.py: LINE.COL-COL, every independent error, sorted by
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
- operand kinds: every operand is of the kind the reference's operand tables give (a number,
  a memref, a memref or group, a coopmatrix, an index), reported at the operand; where the
  tables are silent, as tinytc v0.4.0 (subview/expand/fuse/atomic_store/atomic_add take a
  memref, atomic_load too: docs/semantics.md erratum table);
- constants: the literal's kind is the type's (true/false for bool, an integer literal for
  integer types, a floating literal for floating types, `[re, im]` for complex types);
- memory: alloca is static and local; load/store and the atomics take one index per mode (one
  for a group), of type index; stored, atomically updated and loaded values have the element
  type;
- BLAS and cumsum: alpha/beta are numbers, the others memrefs; orders and shapes are
  tlinterp/checker/blas_shapes.py's rules (shared with v0.3);
- coopmatrix: mul_add shapes (M x K, K x N, M x N) and uses (matrix_a, matrix_b,
  matrix_acc), load/store/atomic update/prefetch need an order-2 memref of the component type
  and an index position, construct/insert/scale take a number of the component type,
  extract gives it, insert/scale/atomic update keep the matrix type, reduce and mul_add need
  rows that are multiples of the subgroup size, rows are powers of two (the layout is defined
  for those only) and columns not negative, an extract/insert index names one of the lane's
  components (counted by the layout once subgroup_size is fixed); casts keep the shape
  and may only change the use from matrix_acc to matrix_a/b;
- attributes: subgroup_size an integer, work_group_size two integers, alignment a positive
  multiple of the element size, shape_gcd/stride_gcd arrays of positive integers no longer
  than the order, unroll a bool or integer; unknown names are errors unless spelled as
  strings (custom attributes).
"""

from __future__ import annotations

from typing import Optional

from tlinterp.checker.blas_shapes import shape_problems
from tlinterp.checker.constants import constant_problem
from tlinterp.checker.layout import written_layout_problems
from tlinterp.lang import ir, ops
from tlinterp.lang.deepstack import deep_program_pass
from tlinterp.lang.diagnostics import WARNING, Diagnostic, SourceError
from tlinterp.lang.ir import Const, Span, Value
from tlinterp.lang.types import (
    INDEX,
    CoopMatrixType,
    GroupType,
    MemrefType,
    ScalarType,
    Type,
    VoidType,
)
from tlinterp.lang.v04 import names
from tlinterp.lang.v04.names import v04_words

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

# the v0.4-only unary operations, which tlinterp/lang/ops.py does not declare yet
# (lang/v04/names.py V04_ONLY_UNARY): the type classes of each, as ops.py states them
_V04_ONLY_ACCEPTS = {
    **dict.fromkeys(("abs",), (ops.INT, ops.FLOAT, ops.COMPLEX)),
    **dict.fromkeys(("conj", "im", "re"), (ops.COMPLEX,)),
    **dict.fromkeys(("cos", "sin", "log", "log2", "native_cos", "native_sin", "native_log",
                     "native_log2"), (ops.FLOAT,)),
    **dict.fromkeys(("exp", "exp2", "native_exp", "native_exp2"), (ops.FLOAT, ops.COMPLEX)),
}


def _allowed(op: str, t: ScalarType) -> bool:
    """Whether arithmetic `op` (binary or unary: no name is both) accepts the (scalar or
    component) type `t`: ops.py's row, with the classes v0.4 adds."""
    o = ops.find(ops.BINARY, op) or ops.find(ops.UNARY, op)
    if o is not None:
        return ops.defined_v04(o, t)
    return ops.type_class(t) in _V04_ONLY_ACCEPTS.get(op, ())


# operand kinds of the v0.4 reference's operand tables: test and the words of the message
_KINDS = {
    "number": (lambda t: isinstance(t, ScalarType) and t is not BOOL, "a number"),
    "memref": (lambda t: isinstance(t, MemrefType), "a memref"),
    "memref or group": (lambda t: isinstance(t, (MemrefType, GroupType)), "a memref or group"),
    "coopmatrix": (lambda t: isinstance(t, CoopMatrixType), "a coopmatrix"),
    "index": (lambda t: t == INDEX, "of type index"),
}
_LITERALS = {"bool": "true or false", "int": "an integer literal",
             "float": "a floating literal", "complex": "a complex literal"}
_LITERAL_RULE = {"bool": "a bool constant is true or false",
                 "int": "an {t} constant needs an integer literal",
                 "float": "a {t} constant needs a floating literal",
                 "complex": "a {t} constant needs a complex literal [re, im]"}


def _label(op: ir.Operand) -> str:
    return f"%{op.name}" if isinstance(op, Value) else str(op.value)


def _component(t: Type) -> Optional[ScalarType]:
    if isinstance(t, CoopMatrixType):
        return t.component
    return t if isinstance(t, ScalarType) else None


@deep_program_pass  # the walk recurses per nesting level
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
        for p in written_layout_problems(t):
            self.error(f"{what}: {p}", span)
        if isinstance(t, CoopMatrixType) and min(t.shape) < 0:
            self.error(f"{what}: a coopmatrix shape needs non-negative sizes, not "
                       f"{t.rows}x{t.cols}", span)
        elif isinstance(t, CoopMatrixType) and (t.rows < 1 or t.rows & (t.rows - 1)):
            # the coopmatrix layout is defined for rows that are powers of two only
            # (tinytc v0.4.0: "Unsupported coopmatrix shape")
            self.error(f"{what}: coopmatrix rows must be a power of two, not {t.rows}", span)
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

    def operand(self, op: ir.Operand, kind: str, what: str, inst) -> Optional[Type]:
        """The type of operand `op` when it is of `kind` (a key of _KINDS); else report it at
        the operand ("{what}: %x must be ...") and give None (None too when the name is
        undefined: the parser reported that)."""
        t = self.type_of(op)
        if t is UNKNOWN:
            return None
        if not _KINDS[kind][0](t):
            self.error(f"{what}: {_label(op)} must be {_KINDS[kind][1]}, not {t}",
                       op.span or inst.span)
            return None
        return t

    def same(self, got: Optional[Type], want: Optional[Type], message: str, span) -> None:
        """Report `message` when two known types differ."""
        if got is not None and want is not None and got is not UNKNOWN \
                and want is not UNKNOWN and got != want:
            self.error(message, span)

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
        # every collective by its declarations (a new one needs no rule of its own)
        rule = self._blas if isinstance(inst, ir.Blas) else \
            getattr(self, "_" + type(inst).__name__.lower(), None)
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
        else:
            # the literal's kind must be the type's (tinytc v0.4.0 also rejects `1.0 : c32`
            # and `1 : bool`); the parser keeps true/false as Python bools
            lit = "complex" if isinstance(v.value, complex) else "float" if v.is_float \
                else "bool" if type(v.value) is bool else "int"
            want = "bool" if t is BOOL else "complex" if t.is_complex else \
                "float" if t.is_float else "int"
            if lit != want:
                self.error(_LITERAL_RULE[want].format(t=t.value) + f", not {_LITERALS[lit]}",
                           inst.span)
            elif lit == "int" and (problem := constant_problem(v, t)):
                # as v0.3 and tinytc: an integer constant must fit its type, never wraps
                self.error(problem, inst.span)
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
        elif not ops.defined_v04(ops.find(ops.COMPARE, inst.cond), ta):
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
        self.operand(inst.operand, "memref", "the operand of subview", inst)
        self._index_operands(inst, [x for s in inst.slices for x in (s.offset, s.size)],
                             "offset or size")

    def _expand(self, inst: ir.Expand, spmd) -> None:
        self.operand(inst.operand, "memref", "the operand of expand", inst)
        self._index_operands(inst, inst.shape, "expanded size")

    def _fuse(self, inst: ir.Fuse, spmd) -> None:
        self.operand(inst.operand, "memref", "the operand of fuse", inst)

    def _load(self, inst: ir.Load, spmd) -> None:
        self._indices(inst, inst.type)

    def _associated(self, inst: ir.Associated, spmd) -> None:
        self.operand(inst.operand, "memref or group", "the operand of associated", inst)
        if inst.type is not UNKNOWN and inst.type != BOOL:
            self.error(f"associated gives bool, not {inst.type}", inst.span)

    def _store(self, inst: ir.Store, spmd) -> None:
        self._indices(inst, inst.type)
        if isinstance(inst.type, GroupType):
            self.error("store needs a memref, not a group", inst.span)
        elif isinstance(inst.type, MemrefType):
            tv = self.type_of(inst.value)
            if tv is not UNKNOWN and tv != inst.type.element:
                self.error(f"stored value has type {tv}, the memref holds "
                           f"{inst.type.element}", inst.span)

    def _atomicload(self, inst: ir.AtomicLoad, spmd) -> None:
        # a memref only: the operand table also lists group-type, but the result is "a value
        # of the memref's element type" and tinytc v0.4.0 rejects a group (erratum table)
        t = self.operand(inst.operand, "memref", "the tensor of atomic_load", inst)
        if t is None:
            return
        self._indices(inst, t)
        self.same(inst.type, t.element, f"result type {inst.type} does not match {t.element}, "
                  f"the type atomic_load from %{inst.operand.name} gives", inst.span)

    def _atomic_value(self, inst, what: str) -> None:
        """atomic_store / atomic_add|max|min: a memref (no group) and a value of its element
        type."""
        t = self.operand(inst.operand, "memref", f"the tensor of {what}", inst)
        if t is None:
            return
        self._indices(inst, t)
        tv = self.operand(inst.value, "number", f"the value of {what}", inst)
        self.same(tv, t.element, f"value %{inst.value.name} has type {tv}, the memref "
                  f"%{inst.operand.name} holds {t.element}", inst.value.span or inst.span)

    def _atomicstore(self, inst: ir.AtomicStore, spmd) -> None:
        self._atomic_value(inst, "atomic_store")

    def _atomicupdate(self, inst: ir.AtomicUpdate, spmd) -> None:
        self._atomic_value(inst, f"atomic_{inst.op}")
        t = self.type_of(inst.operand)
        if isinstance(t, MemrefType):
            self.same(inst.type, t.element, f"result type {inst.type} does not match "
                      f"{t.element}, the element type of %{inst.operand.name}", inst.span)

    def _size(self, inst: ir.Size, spmd) -> None:
        t = inst.type
        self.operand(inst.operand, "memref or group", "the operand of size", inst)
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

    def _scalars(self, inst) -> tuple[Optional[Type], Optional[Type]]:
        """alpha and beta of a collective: number operands (tinytc: "Expected number type")."""
        return (self.operand(inst.alpha, "number", f"alpha of {_name(inst)}", inst),
                self.operand(inst.beta, "number", f"beta of {_name(inst)}", inst))

    def _promotion(self, inst, alpha, ins: list[ScalarType], out: ScalarType) -> None:
        """type(alpha) <= promote(inputs) <= element_type(out), type(beta) <= out (the
        reference's rule for every collective; cumsum and axpby have one input)."""
        a = ins[0] if len(ins) == 1 else promote(ins[0], ins[1])
        name = _name(inst)
        if a is None:
            self.error(f"{name}: {ins[0]} and {ins[1]} have no common type", inst.span)
            return
        if isinstance(alpha, ScalarType) and not promotable(alpha, a):
            self.error(f"{name}: alpha of type {alpha} does not promote to {a}", inst.span)
        if not promotable(a, out):
            self.error(f"{name}: {a} does not promote to {out}", inst.span)
        beta = self.type_of(inst.beta)
        if isinstance(beta, ScalarType) and beta is not BOOL and not promotable(beta, out):
            self.error(f"{name}: beta of type {beta} does not promote to {out}", inst.span)

    def _blas(self, inst, spmd) -> None:
        self._atomic_beta(inst)
        alpha, _ = self._scalars(inst)
        memrefs = {f: self.operand(getattr(inst, f), "memref", f"{inst.role(f).label} of "
                                   f"{inst.MNEMONIC}", inst)
                   for f in (*inst.inputs(), inst.output())}
        if any(t is None for t in memrefs.values()):
            return
        for message, span in shape_problems(inst):
            self.error(message, span)
        self._promotion(inst, alpha, [memrefs[f].element for f in inst.inputs()],
                        memrefs[inst.output()].element)

    def _cumsum(self, inst: ir.Cumsum, spmd) -> None:
        self._atomic_beta(inst)
        alpha, _ = self._scalars(inst)
        ta = self.operand(inst.a, "memref", "A of cumsum", inst)
        tb = self.operand(inst.b, "memref", "B of cumsum", inst)
        if ta is None or tb is None:
            return
        if ta.order < 1:
            self.error("cumsum needs A of order >= 1", inst.span)
        elif not 0 <= inst.mode < ta.order:
            self.error(f"cumsum mode {inst.mode} out of range for order {ta.order}", inst.span)
        if ta.shape != tb.shape:
            self.error("cumsum needs A and B of one shape", inst.span)
        self._promotion(inst, alpha, [ta.element], tb.element)

    # coopmatrix -----------------------------------------------------------------------------

    def _coopmuladd(self, inst: ir.CoopMulAdd, spmd) -> None:
        ta, tb, tc = (self.operand(x, "coopmatrix", f"{label} of cooperative_matrix_mul_add",
                                   inst) for x, label in ((inst.a, "A"), (inst.b, "B"),
                                                          (inst.c, "C")))
        if not all(isinstance(t, CoopMatrixType) for t in (ta, tb, tc, inst.type)):
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
        if tc.component.is_complex and not inst.type.component.is_complex:
            self.error(f"cooperative_matrix_mul_add: C of {tc.component} cannot be cast to "
                       f"the result's {inst.type.component} (complex to real)", inst.span)
        sg = self.fn.subgroup_size
        if sg and any(t.rows % sg for t in (ta, tc)):
            self.error(f"rows of A and C must be multiples of the subgroup size {sg}",
                       inst.span)

    def _coop_memref(self, inst, comp: Optional[ScalarType]) -> None:
        """The memref operand of a coopmatrix load/store/update/prefetch: order 2, element type
        the component type; the position x, y: index values."""
        name = _name(inst)
        t = self.operand(inst.operand, "memref", f"the tensor of {name}", inst)
        if t is not None:
            if t.order != 2:
                self.error(f"%{inst.operand.name} must be a memref of order 2, not {t}",
                           inst.span)
            elif comp is not None and t.element != comp:
                self.error(f"component type {comp} differs from the element type {t.element}",
                           inst.span)
        for x in (inst.x, inst.y):
            self.operand(x, "index", f"the position of {name}", inst)

    def _coopload(self, inst: ir.CoopLoad, spmd) -> None:
        self._coop_memref(inst, _component(inst.type))

    def _coopstore(self, inst: ir.CoopStore, spmd) -> None:
        tv = self.operand(inst.value, "coopmatrix", f"the matrix of {_name(inst)}", inst)
        self._coop_memref(inst, _component(tv) if tv is not None else None)

    def _coopatomicupdate(self, inst: ir.CoopAtomicUpdate, spmd) -> None:
        tv = self.operand(inst.value, "coopmatrix", f"the matrix of {_name(inst)}", inst)
        self.same(tv, inst.type, f"result type {inst.type} does not match {tv}, the type of "
                  f"%{inst.value.name}", inst.span)
        self._coop_memref(inst, _component(inst.type))

    def _coopprefetch(self, inst: ir.CoopPrefetch, spmd) -> None:
        self._coop_memref(inst, None)
        if inst.cache_level < 0:
            self.error(f"the cache level must be non-negative, not {inst.cache_level}",
                       inst.span)
        if inst.rows <= 0 or inst.cols <= 0:
            self.error(f"the prefetched region {inst.rows}x{inst.cols} needs positive sizes",
                       inst.span)

    def _coopconstruct(self, inst: ir.CoopConstruct, spmd) -> None:
        tv = self.operand(inst.value, "number", "the value of cooperative_matrix_construct", inst)
        comp = _component(inst.type)
        self.same(tv, comp, f"%{_label(inst.value)[1:]} has type {tv}, the component type is "
                  f"{comp}", inst.value.span or inst.span)

    def _coopextract(self, inst: ir.CoopExtract, spmd) -> None:
        tm = self.operand(inst.operand, "coopmatrix", "the matrix of cooperative_matrix_extract",
                          inst)
        if tm is not None:
            self.same(inst.type, tm.component, f"result type {inst.type} does not match "
                      f"{tm.component}, the component type of %{inst.operand.name}", inst.span)
        self._component_index(inst, tm)

    def _component_index(self, inst, tm: Optional[Type]) -> None:
        """extract/insert: the index names one of the lane's components; how many there are
        follows from the layout once the function fixes subgroup_size."""
        if inst.index < 0:
            self.error(f"the work-item vector index {inst.index} is negative", inst.span)
            return
        sg = self.fn.subgroup_size
        if not isinstance(tm, CoopMatrixType) or not sg or sg < 1:
            return
        # the layout's one definition is the interpreter's (imported here, where needed, so
        # that checking does not load the interpreter)
        from tlinterp.interp.coopmatrix import Layout, check_index

        try:
            check_index(Layout(tm.rows, tm.cols, tm.component.value, tm.use, sg), inst.index)
        except ValueError as e:  # also a shape the layout does not define (reported there)
            if "component index" in str(e):
                self.error(str(e), inst.span)

    def _coopinsert(self, inst: ir.CoopInsert, spmd) -> None:
        tm = self.operand(inst.operand, "coopmatrix", "the matrix of cooperative_matrix_insert",
                          inst)
        tv = self.operand(inst.value, "number", "the value of cooperative_matrix_insert", inst)
        if tm is not None:
            self.same(tv, tm.component, f"%{_label(inst.value)[1:]} has type {tv}, the "
                      f"component type is {tm.component}", inst.value.span or inst.span)
            self.same(inst.type, tm, f"result type {inst.type} does not match {tm}, the type "
                      f"of %{inst.operand.name}", inst.span)
        self._component_index(inst, tm)

    def _coopscale(self, inst: ir.CoopScale, spmd) -> None:
        ts = self.operand(inst.scalar, "number", "the scalar of cooperative_matrix_scale", inst)
        tm = self.operand(inst.matrix, "coopmatrix", "the matrix of cooperative_matrix_scale",
                          inst)
        if tm is not None:
            self.same(ts, tm.component, f"scalar of type {ts}, the matrix holds {tm.component}",
                      inst.span)
            self.same(inst.type, tm, f"result type {inst.type} differs from the matrix type "
                      f"{tm}", inst.span)

    def _coopreduce(self, inst: ir.CoopReduce, spmd) -> None:
        ta = self.operand(inst.operand, "coopmatrix", f"the matrix of {_name(inst)}", inst)
        t = inst.type
        sg = self.fn.subgroup_size
        if isinstance(ta, CoopMatrixType) and sg and ta.rows % sg:
            self.error(f"rows of the reduced matrix must be a multiple of the subgroup size "
                       f"{sg}", inst.span)
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
    from tlinterp.lang.v04.parser import _result_type

    return _result_type(inst)


__all__ = ["check", "promotable", "promote", "WARNING"]
