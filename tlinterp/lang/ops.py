"""The scalar operations, declared once: one row per `arith.*` and `cmp.*` operation.

A row states the static facts of one operation: its family (binary or unary `arith`, or
`cmp`), the type classes it accepts, its result type, the kinds of undefined behaviour it can
raise (`interp/ub.py` KINDS), whether v0.2 also spells it without `arith.`, and whether it is
an extension of the v0.3 reference. Everything static is derived from here: the grammar's
alternatives (`parser.py` writes them into the grammar text before loading it), the parser's
expected-token words, both checkers' type rules (v0.4's with the complex types a row's `v04`
adds) and v0.3's messages, the result type (`typerules.py`), the fuzz generator's op lists,
the excludable instructions of profiles.

What an operation computes is not here: each pass keeps its own table keyed by the same names,
per type class (`interp/scalar.py` NumPy, `interp/fastpath.py` Python scalars,
`tlgpu/lowering/scalar.py` OpenCL C, `fuzz/gen/ranges.py` value ranges), and the corpus keeps
independent references (`corpus/cases/scalar.py`). `tests/test_op_declarations.py` fails while
a declared operation misses an entry in any of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from tlinterp.lang.types import ScalarType

# type classes: v0.3's, and v0.4's complex types (c32, c64), which an operation accepts only
# where its row says so in `v04`
INT, FLOAT, BOOL, COMPLEX = "integer", "float", "i1", "complex"
CLASSES = (INT, FLOAT, BOOL)

# families: the IR class's field `op` (Arith, ArithUnary) or `cond` (Compare) holds the name
BINARY, UNARY, COMPARE = "binary", "unary", "compare"
_PREFIX = {BINARY: "arith", UNARY: "arith", COMPARE: "cmp"}


@dataclass(frozen=True)
class ScalarOp:
    family: str  # BINARY, UNARY or COMPARE
    name: str  # `add`: written `arith.add`
    accepts: frozenset  # type classes of its operands
    ub: tuple[str, ...] = ()  # undefined-behaviour kinds it can raise
    v02: bool = False  # v0.2 also spells it bare: `add %a, %b : T`, `neg %a : T`
    extension: str = ""  # not in the v0.3 reference: the version that has it, e.g. "v0.4"
    # on floats, its rounding error stays within the bound fuzz/oracle/magnitude.py gives (a
    # sum of rounding errors of add/sub/mul/neg): the generator's linear mode uses only these,
    # and the oracle compares no float output of a program with another float operation
    linear: bool = False
    # the type classes v0.4 adds to `accepts` (COMPLEX): v0.3 has no complex types, and the
    # passes' tables per class in `accepts` stay v0.3's (v0.4's types: interp/scalar_v04.py)
    v04: frozenset = frozenset()

    @property
    def mnemonic(self) -> str:
        return f"{_PREFIX[self.family]}.{self.name}" if self.family in _PREFIX else self.name

    @property
    def arity(self) -> int:
        return 1 if self.family == UNARY else 2

    def result_type(self, t: ScalarType) -> ScalarType:
        """Comparisons give i1; arithmetic gives its operands' type."""
        return ScalarType.i1 if self.family == COMPARE else t


def _ops(family: str, names: str, accepts, ub=(), v02=False, extension="",
         linear=False, v04=()) -> list[ScalarOp]:
    return [ScalarOp(family, n, frozenset(accepts), tuple(ub), v02, extension, linear,
                     frozenset(v04)) for n in names.split()]


_NUM, _ALL = (INT, FLOAT), (INT, FLOAT, BOOL)
_DIV = ("division-by-zero", "division-overflow")

# THE table (declaration order is the order of error messages and generator lists)
OPS: tuple[ScalarOp, ...] = tuple([
    *_ops(BINARY, "add sub mul", _NUM, ["signed-overflow"], v02=True, linear=True,
          v04=[COMPLEX]),
    *_ops(BINARY, "div", _NUM, _DIV, v02=True, v04=[COMPLEX]),
    *_ops(BINARY, "rem", _NUM, _DIV, v02=True),
    *_ops(BINARY, "shl", [INT], ["shift-out-of-range", "signed-overflow"]),
    *_ops(BINARY, "shr", [INT], ["shift-out-of-range"]),
    *_ops(BINARY, "and or xor", [INT, BOOL]),
    *_ops(BINARY, "min max", _NUM, extension="v0.4"),
    *_ops(UNARY, "neg", _NUM, ["signed-overflow"], v02=True, linear=True, v04=[COMPLEX]),
    *_ops(UNARY, "not", [INT, BOOL]),
    *_ops(COMPARE, "eq ne", _ALL, v04=[COMPLEX]),
    *_ops(COMPARE, "gt ge lt le", _NUM),
])

BY_MNEMONIC: dict[str, ScalarOp] = {o.mnemonic: o for o in OPS}

# `cast` (ir.Cast), declared beside the table: any scalar type to any other; a value out of
# the target's range (or a NaN to an integer) is undefined; linear on floats except that a
# float cast to an integer type truncates (`linear_cast`)
CAST = ScalarOp("cast", "cast", frozenset(_ALL), ("invalid-cast",), linear=True)
_BY_FAMILY: dict[str, dict[str, ScalarOp]] = {
    f: {o.name: o for o in OPS if o.family == f} for f in (BINARY, UNARY, COMPARE)}


def names(family: str) -> tuple[str, ...]:
    """The names of one family in declaration order (`ir.Arith.op` is one of names(BINARY))."""
    return tuple(o.name for o in OPS if o.family == family)


def find(family: str, name: str) -> Optional[ScalarOp]:
    """The row of `name` in `family`; None for a name the table does not declare."""
    return _BY_FAMILY[family].get(name)


def type_class(t: ScalarType) -> str:
    return BOOL if t.is_bool else FLOAT if t.is_float else COMPLEX if t.is_complex else INT


def defined_v04(o: ScalarOp, t: ScalarType) -> bool:
    """Whether v0.4 defines `o` on the (scalar or component) type `t`: a class it accepts,
    or one v0.4 adds."""
    c = type_class(t)
    return c in o.accepts or c in o.v04


def accepting(family: str, t: ScalarType) -> tuple[str, ...]:
    """The names of one family defined on type `t`."""
    c = type_class(t)
    return tuple(o.name for o in OPS if o.family == family and c in o.accepts)


def extensions() -> tuple[str, ...]:
    """Mnemonics beyond the v0.3 reference (a profile may exclude them)."""
    return tuple(o.mnemonic for o in OPS if o.extension)


_NEEDS = {INT: "an integer type", FLOAT: "a floating-point type"}


def type_error(o: ScalarOp, t: ScalarType) -> Optional[str]:
    """The checker's message when `o` is not defined on `t`, else None."""
    c = type_class(t)
    if c in o.accepts:
        return None
    if c != BOOL:
        needs = " or ".join(v for k, v in _NEEDS.items() if k in o.accepts) or "i1"
        return f"'{o.mnemonic}' needs {needs}, got {t}"
    on_bool = [x for x in OPS if _PREFIX[x.family] == _PREFIX[o.family] and BOOL in x.accepts]
    if o.family == COMPARE:  # i1 has no agreed order (signless: is true 1 or -1?)
        alts = " or ".join(x.mnemonic for x in on_bool)
        return f"'{o.mnemonic}' is not defined on i1 (booleans have no order; use {alts})"
    alts = ", ".join(x.name for x in on_bool[:-1]) + f" and {on_bool[-1].name}"
    return f"'{o.mnemonic}' is not defined on i1 (no arithmetic on booleans; {alts} are)"


def linear(family: str, name: str) -> bool:
    """Whether the operation is linear on floats (False for one the table lacks, such as
    v0.4's math functions)."""
    o = find(family, name)
    return o is not None and o.linear


def linear_cast(src: ScalarType, dst: ScalarType) -> bool:
    """Whether a cast from `src` to `dst` is linear: a float to an integer type is not."""
    return CAST.linear and not (src.is_float and not dst.is_float)
