"""The IR: plain dataclasses, one per instruction kind, each with a source span.

Spans are excluded from equality so that `parse(print(p)) == p` holds.
SSA values are referred to by name (without the '%'); names are unique per function.
Operands are either a `Value` (a use of an SSA name) or a `Const` (a literal).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Optional, Union

from .types import Dyn, GroupType, MemrefType, ScalarType, Type


@dataclass(frozen=True)
class Span:
    """1-based source range; `end_col` is inclusive. Printed as L.C-C or L.C-L2.C2."""

    line: int
    col: int
    end_line: int
    end_col: int

    def __str__(self) -> str:
        if self.line == self.end_line:
            return f"{self.line}.{self.col}-{self.end_col}"
        return f"{self.line}.{self.col}-{self.end_line}.{self.end_col}"


def _span() -> Optional[Span]:
    return field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Value:
    """A use or definition of an SSA value `%name`."""

    name: str
    span: Optional[Span] = _span()

    def __str__(self) -> str:
        return f"%{self.name}"


@dataclass(frozen=True)
class Const:
    """A literal. `value` is int (also for true/false) or float; `is_float` records the spelling."""

    value: Union[int, float]
    is_float: bool = False
    span: Optional[Span] = _span()


Operand = Union[Value, Const]


# --- views -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Slice:
    """One entry of a subview index list: `offset` alone (rank-reducing) or `offset:size`.
    `size is None` with `is_range` means '?' (rest of the mode); ':' is `Const(0):?`."""

    offset: Operand
    size: Optional[Operand] = None
    is_range: bool = False
    span: Optional[Span] = _span()


ExpandEntry = Union[int, None, Value]  # static size, '?', or a run-time index value


# --- instructions ------------------------------------------------------------------------


@dataclass
class Alloca:
    result: Value
    type: MemrefType
    span: Optional[Span] = _span()


ARITH_BINARY_OPS = ("add", "sub", "mul", "div", "rem", "shl", "shr", "and", "or", "xor")
ARITH_UNARY_OPS = ("neg", "not")
COMPARE_CONDS = ("eq", "ne", "gt", "ge", "lt", "le")


@dataclass
class Arith:
    result: Value
    op: str  # one of ARITH_BINARY_OPS
    lhs: Operand
    rhs: Operand
    type: ScalarType
    span: Optional[Span] = _span()


@dataclass
class ArithUnary:
    result: Value
    op: str  # one of ARITH_UNARY_OPS
    operand: Operand
    type: ScalarType
    span: Optional[Span] = _span()


@dataclass
class Cast:
    result: Value
    operand: Operand
    from_type: ScalarType
    to_type: ScalarType
    span: Optional[Span] = _span()


@dataclass
class Compare:
    result: Value
    cond: str  # one of COMPARE_CONDS
    lhs: Operand
    rhs: Operand
    type: ScalarType
    span: Optional[Span] = _span()


@dataclass
class Expand:
    result: Value
    operand: Value
    mode: int
    shape: tuple[ExpandEntry, ...]
    type: MemrefType
    span: Optional[Span] = _span()


@dataclass
class Fuse:
    result: Value
    operand: Value
    first: int
    last: int
    type: MemrefType
    span: Optional[Span] = _span()


@dataclass
class GroupId:
    result: Value
    span: Optional[Span] = _span()


@dataclass
class GroupSize:
    result: Value
    span: Optional[Span] = _span()


@dataclass
class Load:
    result: Value
    operand: Value
    indices: tuple[Operand, ...]
    type: Union[MemrefType, GroupType]
    span: Optional[Span] = _span()


@dataclass
class Size:
    result: Value
    operand: Value
    mode: int
    type: MemrefType
    span: Optional[Span] = _span()


@dataclass
class Subview:
    result: Value
    operand: Value
    slices: tuple[Slice, ...]
    type: MemrefType
    span: Optional[Span] = _span()


@dataclass
class Store:
    value: Operand
    operand: Value
    indices: tuple[Operand, ...]
    type: MemrefType
    span: Optional[Span] = _span()


@dataclass
class Barrier:
    span: Optional[Span] = _span()


@dataclass
class LifetimeStop:
    operand: Value
    span: Optional[Span] = _span()


@dataclass
class Region:
    instructions: list[Instruction]
    span: Optional[Span] = _span()

    def __eq__(self, other: object) -> bool:
        # iterative: the generated __eq__ would recurse once per nesting level
        if not isinstance(other, Region):
            return NotImplemented
        return _regions_equal(self, other)


@dataclass
class If:
    results: tuple[Value, ...]
    cond: Operand
    result_types: tuple[ScalarType, ...]
    then: Region
    otherwise: Optional[Region] = None
    span: Optional[Span] = _span()


@dataclass
class Yield:
    values: tuple[Operand, ...]
    types: tuple[ScalarType, ...]
    span: Optional[Span] = _span()


@dataclass
class For:
    var: Value
    start: Operand
    stop: Operand
    step: Optional[Operand]
    type: ScalarType  # loop variable and bounds; index when not written
    body: Region
    span: Optional[Span] = _span()


@dataclass
class Foreach:
    var: Value
    start: Operand
    stop: Operand
    type: ScalarType
    body: Region
    span: Optional[Span] = _span()


# Collectives. alpha/beta are operands with their written scalar types; matrices are Values.


@dataclass
class Axpby:
    trans: bool
    atomic: bool
    alpha: Operand
    a: Value
    beta: Operand
    b: Value
    alpha_type: ScalarType
    a_type: MemrefType
    beta_type: ScalarType
    b_type: MemrefType
    span: Optional[Span] = _span()


@dataclass
class Gemm:
    trans_a: bool
    trans_b: bool
    atomic: bool
    alpha: Operand
    a: Value
    b: Value
    beta: Operand
    c: Value
    alpha_type: ScalarType
    a_type: MemrefType
    b_type: MemrefType
    beta_type: ScalarType
    c_type: MemrefType
    span: Optional[Span] = _span()


@dataclass
class Gemv:
    trans_a: bool
    atomic: bool
    alpha: Operand
    a: Value
    b: Value
    beta: Operand
    c: Value
    alpha_type: ScalarType
    a_type: MemrefType
    b_type: MemrefType
    beta_type: ScalarType
    c_type: MemrefType
    span: Optional[Span] = _span()


@dataclass
class Ger:
    atomic: bool
    alpha: Operand
    a: Value
    b: Value
    beta: Operand
    c: Value
    alpha_type: ScalarType
    a_type: MemrefType
    b_type: MemrefType
    beta_type: ScalarType
    c_type: MemrefType
    span: Optional[Span] = _span()


@dataclass
class Hadamard:
    atomic: bool
    alpha: Operand
    a: Value
    b: Value
    beta: Operand
    c: Value
    alpha_type: ScalarType
    a_type: MemrefType
    b_type: MemrefType
    beta_type: ScalarType
    c_type: MemrefType
    span: Optional[Span] = _span()


@dataclass
class Sum:
    trans: bool
    atomic: bool
    alpha: Operand
    a: Value
    beta: Operand
    b: Value
    alpha_type: ScalarType
    a_type: MemrefType
    beta_type: ScalarType
    b_type: MemrefType
    span: Optional[Span] = _span()


Instruction = Union[
    Alloca, Arith, ArithUnary, Cast, Compare, Expand, Fuse, GroupId, GroupSize, Load, Size,
    Subview, Store, Barrier, LifetimeStop, If, Yield, For, Foreach,
    Axpby, Gemm, Gemv, Ger, Hadamard, Sum,
]

COLLECTIVES = (Alloca, Axpby, Gemm, Gemv, Ger, Hadamard, Sum, Foreach)
BLAS = (Axpby, Gemm, Gemv, Ger, Hadamard, Sum)


@dataclass
class Argument:
    value: Value
    type: Type
    span: Optional[Span] = _span()


@dataclass
class Function:
    name: str  # without '@'
    args: tuple[Argument, ...]
    body: Region
    work_group_size: Optional[tuple[int, int]] = None
    subgroup_size: Optional[int] = None
    span: Optional[Span] = _span()


@dataclass
class Program:
    functions: tuple[Function, ...]
    filename: str = field(default="<input>", compare=False)
    source: str = field(default="", compare=False, repr=False)

    def function(self, name: Optional[str] = None) -> Function:
        """The named function (without '@'), or the only one when `name` is None."""
        if name is None:
            if len(self.functions) != 1:
                raise KeyError(
                    f"the file has {len(self.functions)} functions; choose one with --func")
            return self.functions[0]
        for f in self.functions:
            if f.name == name.lstrip("@"):
                return f
        raise KeyError(f"no function @{name.lstrip('@')}")


# Helpers every pass needs -------------------------------------------------------------------


def results_of(inst: Instruction) -> tuple[Value, ...]:
    """SSA values an instruction defines in its enclosing region (loop variables excluded)."""
    if isinstance(inst, If):
        return inst.results
    r = getattr(inst, "result", None)
    return (r,) if r is not None else ()


def regions_of(inst: Instruction) -> tuple[Region, ...]:
    if isinstance(inst, If):
        return (inst.then,) if inst.otherwise is None else (inst.then, inst.otherwise)
    if isinstance(inst, (For, Foreach)):
        return (inst.body,)
    return ()


def _regions_equal(a: Region, b: Region) -> bool:
    """Field-by-field equality (spans excluded) with an explicit stack of region pairs."""
    todo = [(a, b)]
    while todo:
        x, y = todo.pop()
        if len(x.instructions) != len(y.instructions):
            return False
        for i, j in zip(x.instructions, y.instructions):
            if type(i) is not type(j):
                return False
            for f in fields(i):
                if not f.compare:
                    continue
                u, v = getattr(i, f.name), getattr(j, f.name)
                if isinstance(u, Region) and isinstance(v, Region):
                    todo.append((u, v))
                elif u != v:
                    return False
    return True


def walk(region: Region):
    """Pre-order iteration over all instructions in a region and its nested regions (an
    explicit stack, so any nesting depth the parser accepts is fine)."""
    stack = [iter(region.instructions)]
    while stack:
        inst = next(stack[-1], None)
        if inst is None:
            stack.pop()
            continue
        yield inst
        stack.extend(iter(r.instructions) for r in reversed(regions_of(inst)))


__all__ = [n for n in dir() if not n.startswith("_")] + ["Dyn"]
