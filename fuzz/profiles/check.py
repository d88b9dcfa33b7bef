"""Which constructs of a program lie outside a profile: the one place that decides it, for the
generator (which must never produce them), tlconform (which skips such cases) and the tests."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Optional

import numpy as np

from fuzz.profiles import (
    BF16_CONVERSIONS,
    NARROW_ATOMIC_TYPES,
    NARROW_ATOMIC_UPDATE_TYPES,
    Profile,
)
from tlinterp.front.migrate import to_v04
from tlinterp.lang import ir
from tlinterp.lang.diagnostics import SourceError
from tlinterp.lang.types import INDEX, CoopMatrixType, GroupType, MemrefType, ScalarType
from tlinterp.lang.v03.printer import mnemonic

__all__ = ["Violation", "violations", "instruction_violations", "integer_product",
           "mixed_sizes", "narrow_atomic", "group_offset", "index_i64_cast", "bf16_constant",
           "inexact_constant_cast", "exact_in", "padded_coop_access", "bf16_conversion",
           "transposed_strided_store"]


@dataclass(frozen=True)
class Violation:
    construct: str  # a type (`u8`), a mnemonic (`barrier`), a feature, or `work_group_size`
    span: Optional[ir.Span]
    reason: str  # the profile's line for it

    def __str__(self) -> str:
        where = f"{self.span}: " if self.span is not None else ""
        return f"{where}{self.construct}: {self.reason}"


def _scalars(value) -> Iterator[ScalarType]:
    """The scalar types a field value spells (types nested in memrefs and groups too)."""
    if isinstance(value, ScalarType):
        yield value
    elif isinstance(value, MemrefType):
        yield value.element
    elif isinstance(value, GroupType):
        yield value.memref.element
    elif isinstance(value, tuple):
        for v in value:
            yield from _scalars(v)


def mixed_sizes(inst: ir.Instruction) -> bool:
    """A collective relating a `?` size to a static one (tinytc 0.3.1 requires equal sizes
    written alike)."""
    if not isinstance(inst, ir.Blas):
        return False
    for _, (f1, m1), (f2, m2) in inst.size_relations():
        s1, s2 = inst.op_shape(f1)[m1], inst.op_shape(f2)[m2]
        if (s1 is None) != (s2 is None):
            return True
    return False


def integer_product(inst: ir.Instruction) -> bool:
    """A gemm or gemv with an integer element type in any operand (tinytc 0.3.1 calls fma()
    on integers there, which does not build)."""
    return isinstance(inst, (ir.Gemm, ir.Gemv)) and any(
        not t.element.is_float for t in (inst.a_type, inst.b_type, inst.c_type))


def narrow_atomic(inst: ir.Instruction, element: Optional[ScalarType] = None) -> bool:
    """An atomic on an element type the feature "atomic-narrow-types" names (`element`: the
    memref's element type, for the v0.4 atomics that do not record it)."""
    if isinstance(inst, ir.Blas) and inst.atomic:
        return inst.memref_type(inst.output()).element in NARROW_ATOMIC_UPDATE_TYPES
    if isinstance(inst, (ir.AtomicLoad, ir.AtomicUpdate)):
        t = inst.type
        return t in (NARROW_ATOMIC_UPDATE_TYPES if isinstance(inst, ir.AtomicUpdate)
                     else NARROW_ATOMIC_TYPES)
    if isinstance(inst, ir.AtomicStore):
        return element in NARROW_ATOMIC_TYPES
    return False


def group_offset(t) -> bool:
    """A group type whose offset is not 0: a constant other than 0 or `?` (None)."""
    return isinstance(t, GroupType) and t.offset != 0


def index_i64_cast(inst: ir.Instruction) -> bool:
    """A cast from index to i64 or from i64 to index."""
    return isinstance(inst, ir.Cast) and {inst.from_type, inst.to_type} == {
        INDEX, ScalarType.i64}


def bf16_constant(inst: ir.Instruction) -> bool:
    """A v0.4 `constant` of type bf16, or of a cooperative matrix of bf16 components."""
    if not isinstance(inst, ir.Constant):
        return False
    t = inst.type
    return t is ScalarType.bf16 or (isinstance(t, CoopMatrixType)
                                    and t.component is ScalarType.bf16)


def exact_in(value, t: ScalarType) -> bool:
    """Whether the float or complex `value` is a value of type `t` (rounding to it keeps it)."""
    with np.errstate(over="ignore"):  # a literal past the type's range: inexact, not an error
        rounded = np.asarray(value).astype(t.dtype)
    parts = (value.real, value.imag) if isinstance(value, complex) else (value,)
    back = (complex(rounded).real, complex(rounded).imag) if t.is_complex \
        else (float(rounded),)
    return all(a == b or (a != a and b != b) for a, b in zip(parts, back))


def inexact_constant_cast(inst: ir.Instruction, constants: Optional[dict] = None) -> bool:
    """A cast of a floating-point or complex literal (v0.3 form) or `constant` (v0.4 form,
    `constants` maps them by name) whose literal its type does not hold exactly: tinytc
    0.4.0's constant folding casts the literal, not the constant's value."""
    t = getattr(inst, "from_type", None)  # a coopmatrix cast has a CoopMatrixType
    if not (isinstance(inst, ir.Cast) and isinstance(t, ScalarType)
            and (t.is_float or t.is_complex)):
        return False
    v = _literal(inst.operand, constants)
    return isinstance(v, (int, float, complex)) and not isinstance(v, bool) \
        and not exact_in(v, inst.from_type)


def bf16_conversion(inst: ir.Instruction, coop_types: dict) -> bool:
    """A cast of BF16_CONVERSIONS (of scalars or of a cooperative matrix's components), or a
    cooperative_matrix_mul_add of a bf16 operand into a result that is not bf16 (it converts
    the operands); `coop_types`: value name -> its CoopMatrixType."""
    def component(t):
        return t.component if isinstance(t, CoopMatrixType) else t

    if isinstance(inst, ir.Cast):
        return (component(inst.from_type), component(inst.to_type)) in BF16_CONVERSIONS
    if isinstance(inst, ir.CoopMulAdd):
        ops = [coop_types.get(v.name) for v in (inst.a, inst.b)]
        return any(isinstance(t, CoopMatrixType) and t.component is ScalarType.bf16
                   for t in ops) and inst.type.component is not ScalarType.bf16
    return False


def transposed_strided_store(inst: ir.Instruction, memref_types: dict) -> bool:
    """A `.t` cooperative_matrix_store or atomic update into a memref whose first stride is
    not 1 (tinytc 0.4.0 ignores it); `memref_types`: value name -> its MemrefType."""
    if not (isinstance(inst, (ir.CoopStore, ir.CoopAtomicUpdate)) and inst.trans):
        return False
    t = memref_types.get(inst.operand.name)
    return isinstance(t, MemrefType) and t.stride[:1] != (1,)


def padded_coop_access(inst: ir.Instruction, coop_types: dict, sizes) -> bool:
    """A store or atomic update of a cooperative matrix whose sub-group layout pads its
    columns, or an extract of a padding component, at any of the sub-group `sizes` (tinytc
    0.4.0 writes and reads the padding); `coop_types`: value name -> its CoopMatrixType."""
    from tlinterp.interp.coopmatrix import Layout

    if isinstance(inst, (ir.CoopStore, ir.CoopAtomicUpdate, ir.CoopExtract)):
        t = coop_types.get(getattr(inst, "value", inst.operand).name) \
            if not isinstance(inst, ir.CoopExtract) else coop_types.get(inst.operand.name)
        for S in sizes if isinstance(t, CoopMatrixType) else ():
            try:
                layout = Layout(t.rows, t.cols, t.component.value, t.use, int(S))
            except ValueError:  # a shape the checker rejects: not this feature's business
                return False
            if isinstance(inst, ir.CoopExtract):
                if inst.index < layout.V and layout.positions[1][:, inst.index].max() >= t.cols:
                    return True
            elif layout.J > t.cols:
                return True
    return False


def gemm_atomic_beta_one(inst: ir.Instruction, constants: Optional[dict] = None) -> bool:
    """A gemm.atomic whose beta is 1: a literal (v0.3 form) or a `constant` (v0.4 form, whose
    values `constants` maps by name)."""
    return isinstance(inst, ir.Gemm) and inst.atomic and _is_one(inst.beta, constants)


def nan_constant(inst: ir.Instruction, constants: Optional[dict] = None) -> bool:
    """A NaN literal or `constant`, a float `rem` by a literal or `constant` zero, or a float
    `div` of zero by zero (constant folding turns both into a NaN constant)."""
    if isinstance(inst, ir.Constant):
        v = inst.value.value
        return v != v if isinstance(v, float) else (isinstance(v, complex) and v != v)
    if isinstance(inst, ir.Arith) and inst.op == "rem" and inst.type.is_float:
        return _literal(inst.rhs, constants) == 0
    if isinstance(inst, ir.Arith) and inst.op == "div" and inst.type.is_float:
        return _literal(inst.lhs, constants) == 0 and _literal(inst.rhs, constants) == 0
    return False


def _literal(op, constants: Optional[dict]):
    """The value of a literal operand or a v0.4 `constant` (None when it is neither)."""
    if isinstance(op, ir.Value):
        op = (constants or {}).get("=" + op.name)
    return op.value if isinstance(op, ir.Const) else None


def _is_one(op, constants: Optional[dict]) -> bool:
    return _literal(op, constants) == 1


def instruction_violations(inst: ir.Instruction, profile: Profile,
                           elements: Optional[dict] = None) -> list[Violation]:
    """What one instruction (not its regions) uses outside the profile (`elements`: memref
    value name -> element type, which v0.4's atomic_store does not record)."""
    found: list[str] = []
    name = mnemonic(inst)
    if name in profile.exclude_instructions:
        found.append(name)
    for f in dataclasses.fields(inst):
        for t in _scalars(getattr(inst, f.name)):
            if t in profile.exclude_types:
                found.append(t.value)
    feats = profile.exclude_features
    if "store-constant" in feats and isinstance(inst, ir.Store) \
            and isinstance(inst.value, ir.Const):
        found.append("store-constant")
    if "hadamard-matrix" in feats and isinstance(inst, ir.Hadamard) and inst.c_type.order > 1:
        found.append("hadamard-matrix")
    if "integer-products" in feats and integer_product(inst):
        found.append("integer-products")
    if "order0-axpby" in feats and isinstance(inst, ir.Axpby) and inst.b_type.order == 0:
        found.append("order0-axpby")
    if "transposed-sum" in feats and isinstance(inst, ir.Sum) and inst.trans \
            and inst.a_type.order == 2:
        found.append("transposed-sum")
    if isinstance(inst, ir.Expand) and inst.type.shape[inst.mode] is None \
            and None in inst.shape and "expand-inferred-dynamic" in feats:
        found.append("expand-inferred-dynamic")
    if isinstance(inst, ir.Expand) and inst.type.stride[inst.mode] is None \
            and "expand-dynamic-stride" in feats:
        found.append("expand-dynamic-stride")
    if "mixed-static-dynamic-sizes" in feats and mixed_sizes(inst):
        found.append("mixed-static-dynamic-sizes")
    if "nan-constants" in feats and nan_constant(inst, elements):
        found.append("nan-constants")
    if "gemm-atomic-beta-one" in feats and gemm_atomic_beta_one(inst, elements):
        found.append("gemm-atomic-beta-one")
    if "index-i64-casts" in feats and index_i64_cast(inst):
        found.append("index-i64-casts")
    if "inexact-constant-casts" in feats and inexact_constant_cast(inst, elements):
        found.append("inexact-constant-casts")
    if "atomic-narrow-types" in feats and narrow_atomic(
            inst, (elements or {}).get(getattr(getattr(inst, "operand", None), "name", ""))):
        found.append("atomic-narrow-types")
    span = getattr(inst, "span", None)
    return [Violation(c, span, profile.reason(c)) for c in dict.fromkeys(found)]


def violations(program: ir.Program | ir.Function, profile: Profile) -> list[Violation]:
    """Every construct of the program outside the profile (each construct once per place)."""
    if not profile.restricts:
        return []
    functions = program.functions if isinstance(program, ir.Program) else (program,)
    out: list[Violation] = []
    for fn in functions:
        for a in fn.args:
            for t in _scalars(a.type):
                if t in profile.exclude_types:
                    out.append(Violation(t.value, a.span, profile.reason(t.value)))
            # groups come from arguments only: a load from one repeats the argument's type
            if "group-offsets" in profile.exclude_features and group_offset(a.type):
                out.append(Violation("group-offsets", a.span, profile.reason("group-offsets")))
        wgs = fn.work_group_size
        if wgs is not None and int(wgs[0]) % profile.work_group_size_multiple:
            out.append(Violation("work_group_size", fn.span,
                                 profile.reason("work_group_size")))
        if fn.subgroup_size is not None and profile.subgroup_sizes is not None \
                and int(fn.subgroup_size) not in profile.subgroup_sizes:
            out.append(Violation("subgroup_size", fn.span, profile.reason("subgroup_size")))
        elements = _elements(fn)
        if "bf16-constants" in profile.exclude_features:
            # in the v0.4 form, where literal operands are the `constant`s they print as
            out.extend(Violation("bf16-constants", inst.span, profile.reason("bf16-constants"))
                       for inst in ir.walk(_v04_form(fn).body) if bf16_constant(inst))
        padded = "coopmatrix-padded-columns" in profile.exclude_features
        bf16 = "bf16-conversions" in profile.exclude_features
        coop_types = {inst.result.name: inst.type for inst in ir.walk(fn.body)
                      if isinstance(getattr(inst, "type", None), CoopMatrixType)
                      and hasattr(inst, "result")} if padded or bf16 else {}
        sizes = (fn.subgroup_size,) if fn.subgroup_size is not None else \
            (profile.subgroup_sizes or (16, 32))
        strided = "coopmatrix-transposed-strided-stores" in profile.exclude_features
        memref_types = {a.value.name: a.type for a in fn.args} | {
            inst.result.name: inst.type for inst in ir.walk(fn.body)
            if isinstance(getattr(inst, "type", None), MemrefType) and hasattr(inst, "result")
        } if strided else {}
        for inst, in_if in _walk(fn.body):
            out.extend(instruction_violations(inst, profile, elements))
            if strided and transposed_strided_store(inst, memref_types):
                out.append(Violation("coopmatrix-transposed-strided-stores", inst.span,
                                     profile.reason("coopmatrix-transposed-strided-stores")))
            if bf16 and bf16_conversion(inst, coop_types):
                out.append(Violation("bf16-conversions", inst.span,
                                     profile.reason("bf16-conversions")))
            if padded and padded_coop_access(inst, coop_types, sizes):
                out.append(Violation("coopmatrix-padded-columns", inst.span,
                                     profile.reason("coopmatrix-padded-columns")))
            if in_if and isinstance(inst, ir.Alloca) and "alloca-in-if" in \
                    profile.exclude_features:
                out.append(Violation("alloca-in-if", inst.span, profile.reason("alloca-in-if")))
    return out


def _v04_form(fn: ir.Function) -> ir.Function:
    """The function with its literal operands as v0.4 `constant` instructions of the type
    each one has (tlinterp.front.migrate, the one place that decides it; a v0.4 program has none
    and stays as it is); a function v0.4 cannot express stays as it is."""
    try:
        return to_v04(ir.Program((fn,), "<profile check>")).functions[0]
    except SourceError:
        return fn


def _elements(fn: ir.Function) -> dict:
    """Memref value name -> element type: arguments, allocas, views, group loads; and
    "=NAME" -> the literal of the v0.4 `constant` NAME."""
    out = {}
    for a in fn.args:
        for t in _scalars(a.type):
            out[a.value.name] = t
    for inst in ir.walk(fn.body):
        t = getattr(inst, "type", None)
        if isinstance(inst, (ir.Alloca, ir.Subview, ir.Expand, ir.Fuse, ir.Load)) and \
                isinstance(t, (MemrefType, GroupType)):
            out[inst.result.name] = next(_scalars(t))
        if isinstance(inst, ir.Constant):  # "=NAME": the value of a v0.4 constant
            out["=" + inst.result.name] = inst.value
    return out


def _walk(region: ir.Region) -> Iterator[tuple[ir.Instruction, bool]]:
    """Every instruction with whether an `if` encloses it (explicit stack: any depth)."""
    stack = [(iter(region.instructions), False)]
    while stack:
        it, in_if = stack[-1]
        inst = next(it, None)
        if inst is None:
            stack.pop()
            continue
        yield inst, in_if
        for r in ir.regions_of(inst):
            stack.append((iter(r.instructions), in_if or isinstance(inst, ir.If)))
