"""The IR: plain dataclasses, one per instruction kind, each with a source span.

Spans are excluded from equality so that `parse(print(p)) == p` holds.
SSA values are referred to by name (without the '%'); names are unique per function.
Operands are either a `Value` (a use of an SSA name) or a `Const` (a literal).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import ClassVar, Optional, Union

from tlinterp.lang.types import CoopMatrixType, Dyn, GroupType, MemrefType, ScalarType, Type


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
    """A literal. `value` is int (a bool for v0.4's true/false) or float; `is_float` records the
    spelling."""

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


# v0.4 attribute values: int, bool, str, tuple (array attribute), Attributes (dictionary)
Attributes = dict


@dataclass
class Alloca:
    MNEMONIC: ClassVar[str] = "alloca"

    result: Value
    type: MemrefType
    span: Optional[Span] = _span()
    attributes: Attributes = field(default_factory=dict, kw_only=True)  # v0.4 {alignment=...}


@dataclass
class Arith:
    result: Value
    op: str  # one of ops.names(ops.BINARY) (tlinterp/lang/ops.py declares them)
    lhs: Operand
    rhs: Operand
    type: ScalarType
    span: Optional[Span] = _span()


@dataclass
class ArithUnary:
    result: Value
    op: str  # one of ops.names(ops.UNARY)
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
    cond: str  # one of ops.names(ops.COMPARE)
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
    # v0.4 writes the result type, which may weaken the derived one ('?' strides); kept for
    # printing, not compared (v0.3 derives it: None)
    result_type: Optional[MemrefType] = field(default=None, kw_only=True, compare=False)


@dataclass
class Fuse:
    result: Value
    operand: Value
    first: int
    last: int
    type: MemrefType
    span: Optional[Span] = _span()
    # v0.4 writes the result type, which may weaken the derived one ('?' strides); kept for
    # printing, not compared (v0.3 derives it: None)
    result_type: Optional[MemrefType] = field(default=None, kw_only=True, compare=False)


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
    # v0.4 writes the result type, which may weaken the derived one ('?' strides); kept for
    # printing, not compared (v0.3 derives it: None)
    result_type: Optional[MemrefType] = field(default=None, kw_only=True, compare=False)


@dataclass
class Store:
    value: Operand
    operand: Value
    indices: tuple[Operand, ...]
    type: MemrefType
    span: Optional[Span] = _span()


BARRIER_FENCES = ("global", "local")


@dataclass
class Barrier:
    span: Optional[Span] = _span()
    # v0.4 `barrier[.global][.local]`: the memory fences; v0.3's `barrier` fences both
    fences: tuple[str, ...] = field(default=BARRIER_FENCES, kw_only=True)


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
    # `-> ()` was written: the same program as no arrow, kept only so the printer can
    # reproduce the spelling (the original compiler's programs use it)
    empty_arrow: bool = field(default=False, compare=False)


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
    # v0.4 `%r... = for ... init(%c=%init, ...) -> (types) {...} attributes{...}`: loop-carried
    # values (name in the body, initial value), their types, and the results after the loop
    results: tuple[Value, ...] = field(default=(), kw_only=True)
    inits: tuple[tuple[Value, Operand], ...] = field(default=(), kw_only=True)
    result_types: tuple[Type, ...] = field(default=(), kw_only=True)
    attributes: Attributes = field(default_factory=dict, kw_only=True)


@dataclass
class Foreach:
    MNEMONIC: ClassVar[str] = "foreach"

    var: Value
    start: Operand
    stop: Operand
    type: ScalarType
    body: Region
    span: Optional[Span] = _span()


# Collectives. alpha/beta are operands with their written scalar types; matrices are Values.
# Each BLAS class declares its static facts once, as class data, and every pass reads them:
# the checker (orders, shape relations, messages), the printer (mnemonic, modifiers, operand
# order), the interpreter and the lowering (inputs, output, K), the fuzzer's oracle and
# generator. How the numbers are computed stays in each pass.


@dataclass(frozen=True)
class MemrefRole:
    """One memref operand of a BLAS instruction."""

    field: str  # attribute holding the Value; its written type is in `field + "_type"`
    label: str  # its name in messages: capital for a matrix ("A"), small for a vector ("b")
    orders: tuple[int, ...]  # orders the operand may have
    trans: Optional[str] = None  # attribute of the '.t'/'.n' flag when op(X) may be transposed


# (label, (field, mode), (field, mode)): two modes of op() shapes that must have equal size
Relation = tuple[str, tuple[str, int], tuple[str, int]]


class Blas:
    """Static facts shared by the BLAS collectives (see docs/semantics.md, "Collectives").

    `out = alpha * op(inputs) + beta * out`; ROLES lists the input memrefs, then the output.
    RELATIONS are the M/N/K size relations between modes of op() shapes; the elementwise
    instructions (axpby, hadamard_product) instead relate every mode of equal-order shapes.
    REDUCED names the operand whose op() has the reduction length K as its last mode (None:
    the instruction sums nothing).
    """

    MNEMONIC: ClassVar[str]
    ROLES: ClassVar[tuple[MemrefRole, ...]]
    RELATIONS: ClassVar[tuple[Relation, ...]] = ()
    REDUCED: ClassVar[Optional[str]] = None
    # the syntax, from which both grammars' rules are written (tlinterp/lang/blas_syntax.py):
    # older keywords v0.3 also reads, v0.4's keyword where it is not MNEMONIC, and whether
    # v0.3 reads a comma after the modifiers (`gemm.n.t, ...`, docs/semantics.md "Accepted
    # syntax")
    V03_ALIASES: ClassVar[tuple[str, ...]] = ()
    V04_KEYWORD: ClassVar[Optional[str]] = None
    COMMA_AFTER_MODIFIERS: ClassVar[bool] = False

    @classmethod
    def keyword(cls, lang: str) -> str:
        """The instruction's keyword in `lang` ("v0.3" or "v0.4")."""
        return cls.V04_KEYWORD or cls.MNEMONIC if lang == "v0.4" else cls.MNEMONIC

    @classmethod
    def flags(cls) -> tuple[str, ...]:
        """Fields of the '.n'/'.t' flags, in the order they are written."""
        return tuple(r.trans for r in cls.ROLES if r.trans)

    @classmethod
    def operand_fields(cls) -> tuple[str, ...]:
        """Fields of the operands in the order both versions write them."""
        return ("alpha", *cls.inputs(), "beta", cls.output())

    @classmethod
    def input_order(cls, field: str, out_order: int) -> int:
        """The order of input `field` that goes with an output of `out_order`: the one the
        role allows, else one more for the reduced operand (sum), else the output's
        (the elementwise ones)."""
        orders = cls.role(field).orders
        if len(orders) == 1:
            return orders[0]
        return out_order + 1 if field == cls.REDUCED else out_order

    @classmethod
    def input_shapes(cls, out_shape: tuple, k: object) -> dict[str, tuple]:
        """The op() shape of every input that fits an output of `out_shape` and reduction
        length `k`, from RELATIONS (a mode related to no output mode is K) and REDUCED (its
        last mode is K); without relations, the output's shape (elementwise)."""
        out = cls.output()
        shapes = {}
        for f in cls.inputs():
            order = cls.input_order(f, len(out_shape))
            if not cls.RELATIONS:
                shapes[f] = tuple(out_shape)
                continue
            modes = []
            for m in range(order):
                size = k
                for _, x, y in cls.RELATIONS:
                    if (f, m) in (x, y):
                        other = y if x == (f, m) else x
                        if other[0] == out and other[1] < len(out_shape):
                            size = out_shape[other[1]]
                modes.append(size)
            shapes[f] = tuple(modes)
        return shapes

    @classmethod
    def inputs(cls) -> tuple[str, ...]:
        """Fields of the input memrefs, in operand order."""
        return tuple(r.field for r in cls.ROLES[:-1])

    @classmethod
    def output(cls) -> str:
        """Field of the output memref."""
        return cls.ROLES[-1].field

    @classmethod
    def role(cls, field: str) -> MemrefRole:
        return next(r for r in cls.ROLES if r.field == field)

    def memref_type(self, field: str) -> MemrefType:
        return getattr(self, field + "_type")

    def transposed(self, field: str) -> bool:
        """Whether op() transposes this operand ('.t' on a matrix; vectors never are)."""
        flag = self.role(field).trans
        return bool(flag and getattr(self, flag)) and self.memref_type(field).order == 2

    def op_shape(self, field: str) -> tuple[Dyn, ...]:
        """Written shape of op(X) for operand `field`."""
        shape = self.memref_type(field).shape
        return shape[::-1] if self.transposed(field) else shape

    def size_relations(self) -> tuple[Relation, ...]:
        """Every pair of op() modes that must have equal size: RELATIONS where the class
        declares them (a mode past an operand's order is dropped: the sum of a vector), else
        (the elementwise axpby, hadamard_product) each mode of the first operand against the
        same mode of every other operand."""
        if self.RELATIONS:
            order = {r.field: len(self.op_shape(r.field)) for r in self.ROLES}
            return tuple(r for r in self.RELATIONS
                         if r[1][1] < order[r[1][0]] and r[2][1] < order[r[2][0]])
        first, *others = (r.field for r in self.ROLES)
        return tuple((f"mode {k}", (first, k), (other, k)) for other in others
                     for k in range(len(self.op_shape(first))))

    def reduction_length(self) -> Optional[Dyn]:
        """Static K, None when K is dynamic; raises ValueError when nothing is summed."""
        if self.REDUCED is None:
            raise ValueError(f"{self.MNEMONIC} has no reduction")
        return self.op_shape(self.REDUCED)[-1]


@dataclass
class Update(Blas):
    """B := alpha * op(A) + beta * B, where op(A) is transposed or summed (axpby, sum)."""

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
class Product(Blas):
    """C := alpha * (op(A) combined with op(B)) + beta * C (gemm, gemv, ger, hadamard_product).
    Transpose flags are keyword-only fields of the instructions that have them."""

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
class Axpby(Update):
    MNEMONIC: ClassVar[str] = "axpby"
    # order 0 (a scalar update, B := alpha A + beta B) is a deviation: the spec says 1 or 2,
    # the original compiler accepts 0 (docs/semantics.md)
    ROLES: ClassVar = (MemrefRole("a", "A", (0, 1, 2), "trans"), MemrefRole("b", "B", (0, 1, 2)))


@dataclass
class Sum(Update):
    MNEMONIC: ClassVar[str] = "sum"
    COMMA_AFTER_MODIFIERS: ClassVar = True
    # B has one order less than op(A): a vector sums into a scalar, a matrix into a vector.
    ROLES: ClassVar = (MemrefRole("a", "A", (1, 2), "trans"), MemrefRole("b", "B", (0, 1)))
    RELATIONS: ClassVar = (("mode 0", ("a", 0), ("b", 0)),)  # for a matrix A
    REDUCED: ClassVar = "a"


@dataclass
class Gemm(Product):
    MNEMONIC: ClassVar[str] = "gemm"
    COMMA_AFTER_MODIFIERS: ClassVar = True
    ROLES: ClassVar = (MemrefRole("a", "A", (2,), "trans_a"), MemrefRole("b", "B", (2,), "trans_b"),
                       MemrefRole("c", "C", (2,)))
    RELATIONS: ClassVar = (("M", ("a", 0), ("c", 0)), ("N", ("b", 1), ("c", 1)),
                           ("K", ("a", 1), ("b", 0)))
    REDUCED: ClassVar = "a"

    trans_a: bool = field(kw_only=True)
    trans_b: bool = field(kw_only=True)


@dataclass
class Gemv(Product):
    MNEMONIC: ClassVar[str] = "gemv"
    COMMA_AFTER_MODIFIERS: ClassVar = True
    ROLES: ClassVar = (MemrefRole("a", "A", (2,), "trans_a"), MemrefRole("b", "b", (1,)),
                       MemrefRole("c", "c", (1,)))
    RELATIONS: ClassVar = (("M", ("a", 0), ("c", 0)), ("K", ("a", 1), ("b", 0)))
    REDUCED: ClassVar = "a"

    trans_a: bool = field(kw_only=True)


@dataclass
class Ger(Product):
    MNEMONIC: ClassVar[str] = "ger"
    ROLES: ClassVar = (MemrefRole("a", "a", (1,)), MemrefRole("b", "b", (1,)),
                       MemrefRole("c", "C", (2,)))
    RELATIONS: ClassVar = (("M", ("a", 0), ("c", 0)), ("N", ("b", 0), ("c", 1)))


@dataclass
class Hadamard(Product):
    MNEMONIC: ClassVar[str] = "hadamard_product"
    V03_ALIASES: ClassVar = ("hadamard",)
    V04_KEYWORD: ClassVar = "hadamard"
    # The spec says vectors; the original compiler also takes matrices of equal shape.
    ROLES: ClassVar = (MemrefRole("a", "a", (1, 2)), MemrefRole("b", "b", (1, 2)),
                       MemrefRole("c", "c", (1, 2)))


# --- tensor language v0.4 -----------------------------------------------------------------
# Instructions only v0.4 spells.  v0.4 constructs with a v0.3 equivalent use the classes above
# (`add` is Arith "add", `equal` is Compare "eq", `group_id.x : index` is GroupId, ...; the
# spellings are in tlinterp/lang/v04/names.py).  Operand types that v0.4 does not write are looked
# up by the v0.4 parser where a v0.3 class stores them (Load.type, Arith.type, Gemm.a_type...);
# the new classes store only what is written.  Memory scopes/semantics are None when omitted.


@dataclass
class Constant:
    result: Value
    value: Const  # complex constants: a Python complex with is_float
    type: Type  # scalar, bool (i1) or coopmatrix
    span: Optional[Span] = _span()


@dataclass
class Builtin:
    """group_id / num_groups / num_subgroups / subgroup_id (with comp x|y|z), subgroup_size,
    subgroup_linear_id, subgroup_local_id.  (`group_id.x : index` is GroupId, `num_groups.x :
    index` is GroupSize: the v0.3 instructions.)"""

    result: Value
    name: str
    comp: Optional[str]
    type: ScalarType
    span: Optional[Span] = _span()


@dataclass
class Associated:
    result: Value
    operand: Value
    type: Type  # the written result type (bool)
    span: Optional[Span] = _span()


@dataclass
class AtomicLoad:
    result: Value
    operand: Value
    indices: tuple[Operand, ...]
    type: Type  # the written result type
    scope: Optional[str] = None
    semantics: Optional[str] = None
    span: Optional[Span] = _span()


@dataclass
class AtomicStore:
    value: Operand
    operand: Value
    indices: tuple[Operand, ...]
    scope: Optional[str] = None
    semantics: Optional[str] = None
    span: Optional[Span] = _span()


@dataclass
class AtomicUpdate:
    result: Value
    op: str  # add, max, min
    value: Operand
    operand: Value
    indices: tuple[Operand, ...]
    type: Type  # the written result type
    scope: Optional[str] = None
    semantics: Optional[str] = None
    span: Optional[Span] = _span()


@dataclass
class Cumsum:
    atomic: bool
    alpha: Operand
    a: Value
    mode: int
    beta: Operand
    b: Value
    span: Optional[Span] = _span()


@dataclass
class Parallel:
    body: Region
    span: Optional[Span] = _span()


@dataclass
class ForeachNd:
    """`foreach (%i,%j,...) = (from...), (to...)` with two or more loop variables (one loop
    variable is the v0.3 Foreach)."""

    vars: tuple[Value, ...]
    starts: tuple[Operand, ...]
    stops: tuple[Operand, ...]
    type: ScalarType
    body: Region
    span: Optional[Span] = _span()


@dataclass
class ForeachTile:
    vars: tuple[Value, ...]
    starts: tuple[Operand, ...]
    stops: tuple[Operand, ...]
    sizes: tuple[Value, ...]
    tile_shape: tuple[int, ...]
    type: ScalarType
    body: Region
    span: Optional[Span] = _span()


@dataclass
class SubgroupBroadcast:
    result: Value
    value: Operand
    index: Operand
    type: Type
    span: Optional[Span] = _span()


@dataclass
class SubgroupOp:
    result: Value
    op: str  # exclusive_scan_add ... reduce_min (the mnemonic without "subgroup_")
    operand: Operand
    type: Type
    span: Optional[Span] = _span()


@dataclass
class CoopApply:
    result: Value
    row: Value
    col: Value
    val: Value
    operand: Value
    type: CoopMatrixType
    body: Region
    span: Optional[Span] = _span()


@dataclass
class CoopLoad:
    """cooperative_matrix_load and (atomic) cooperative_matrix_atomic_load."""

    result: Value
    operand: Value
    x: Operand
    y: Operand
    type: CoopMatrixType
    trans: bool = False
    checked: Optional[str] = None  # rows, cols, both
    atomic: bool = False
    scope: Optional[str] = None
    semantics: Optional[str] = None
    span: Optional[Span] = _span()


@dataclass
class CoopStore:
    """cooperative_matrix_store and (atomic) cooperative_matrix_atomic_store."""

    value: Value
    operand: Value
    x: Operand
    y: Operand
    trans: bool = False
    checked: Optional[str] = None
    atomic: bool = False
    scope: Optional[str] = None
    semantics: Optional[str] = None
    span: Optional[Span] = _span()


@dataclass
class CoopAtomicUpdate:
    result: Value
    op: str  # add, max, min
    value: Value
    operand: Value
    x: Operand
    y: Operand
    type: CoopMatrixType
    trans: bool = False
    checked: Optional[str] = None
    scope: Optional[str] = None
    semantics: Optional[str] = None
    span: Optional[Span] = _span()


@dataclass
class CoopConstruct:
    result: Value
    value: Operand
    type: CoopMatrixType
    span: Optional[Span] = _span()


@dataclass
class CoopExtract:
    result: Value
    operand: Value
    index: int
    type: Type
    span: Optional[Span] = _span()


@dataclass
class CoopInsert:
    result: Value
    value: Operand
    operand: Value
    index: int
    type: CoopMatrixType
    span: Optional[Span] = _span()


@dataclass
class CoopMulAdd:
    result: Value
    a: Value
    b: Value
    c: Value
    type: CoopMatrixType
    span: Optional[Span] = _span()


@dataclass
class CoopPrefetch:
    cache_level: int
    operand: Value
    x: Operand
    y: Operand
    rows: int
    cols: int
    span: Optional[Span] = _span()


@dataclass
class CoopReduce:
    result: Value
    op: str  # add, max, min
    mode: str  # row, column
    operand: Value
    type: CoopMatrixType
    span: Optional[Span] = _span()


@dataclass
class CoopScale:
    result: Value
    scalar: Operand
    matrix: Value
    type: CoopMatrixType
    span: Optional[Span] = _span()


V04_INSTRUCTIONS = (
    Constant, Builtin, Associated, AtomicLoad, AtomicStore, AtomicUpdate, Cumsum, Parallel,
    ForeachNd, ForeachTile, SubgroupBroadcast, SubgroupOp, CoopApply, CoopLoad, CoopStore,
    CoopAtomicUpdate, CoopConstruct, CoopExtract, CoopInsert, CoopMulAdd, CoopPrefetch,
    CoopReduce, CoopScale,
)
# v0.4 instructions with one region, in `body`
V04_REGION_INSTRUCTIONS = (Parallel, ForeachNd, ForeachTile, CoopApply)


Instruction = Union[
    Alloca, Arith, ArithUnary, Cast, Compare, Expand, Fuse, GroupId, GroupSize, Load, Size,
    Subview, Store, Barrier, LifetimeStop, If, Yield, For, Foreach,
    Axpby, Gemm, Gemv, Ger, Hadamard, Sum,
    Constant, Builtin, Associated, AtomicLoad, AtomicStore, AtomicUpdate, Cumsum, Parallel,
    ForeachNd, ForeachTile, SubgroupBroadcast, SubgroupOp, CoopApply, CoopLoad, CoopStore,
    CoopAtomicUpdate, CoopConstruct, CoopExtract, CoopInsert, CoopMulAdd, CoopPrefetch,
    CoopReduce, CoopScale,
]

# Subsets of `Instruction` that some passes handle on their own (each table over a subset is
# checked against it by tests/test_dispatch.py).
COLLECTIVES = (Alloca, Axpby, Gemm, Gemv, Ger, Hadamard, Sum, Foreach)
BLAS = (Axpby, Gemm, Gemv, Ger, Hadamard, Sum)


@dataclass
class Argument:
    value: Value
    type: Type
    span: Optional[Span] = _span()
    attributes: Attributes = field(default_factory=dict, kw_only=True)  # v0.4 {alignment=..}


@dataclass
class Function:
    name: str  # without '@'
    args: tuple[Argument, ...]
    body: Region
    work_group_size: Optional[tuple[int, int]] = None
    subgroup_size: Optional[int] = None
    span: Optional[Span] = _span()
    # v0.4 `attributes{...}` entries other than subgroup_size and work_group_size
    attributes: Attributes = field(default_factory=dict, kw_only=True)


@dataclass
class Program:
    functions: tuple[Function, ...]
    filename: str = field(default="<input>", compare=False)
    source: str = field(default="", compare=False, repr=False)
    lang: Optional[str] = field(default=None, compare=False)  # "v0.3"/"v0.4": as parsed
    # v0.4: (message, span) of the result-type rules the parser checked, reported by the
    # checker with its other errors
    pending: list = field(default_factory=list, compare=False, repr=False)

    def function(self, name: Optional[str] = None) -> Function:
        """The named function (without '@'), or the only one when `name` is None."""
        if name is None:
            if not self.functions:
                raise KeyError("the file defines no function: nothing to run")
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
    if isinstance(inst, (If, For)):
        return inst.results
    r = getattr(inst, "result", None)
    return (r,) if r is not None else ()


def regions_of(inst: Instruction) -> tuple[Region, ...]:
    if isinstance(inst, If):
        return (inst.then,) if inst.otherwise is None else (inst.then, inst.otherwise)
    if isinstance(inst, (For, Foreach) + V04_REGION_INSTRUCTIONS):
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
