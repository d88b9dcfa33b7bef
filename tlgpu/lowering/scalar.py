"""C expressions for the replicated scalar instructions, with the interpreter's semantics:
each result rounded/wrapped in its own type, floats never contracted (FP_CONTRACT OFF).

One table per family, per type class, keyed by the operation names of tlinterp/lang/ops.py."""

from __future__ import annotations

from tlgpu.lowering.ctypes_map import ctype
from tlinterp.lang.ops import BOOL, FLOAT, INT, type_class
from tlinterp.lang.types import ScalarType


def binary(op: str, a: str, b: str, t: ScalarType) -> str:
    return BINARY[type_class(t)][op](a, b, t)


def unary(op: str, a: str, t: ScalarType) -> str:
    return UNARY[type_class(t)][op](a, t)


def compare(cond: str, a: str, b: str) -> str:
    return f"({a} {COMPARE[cond]} {b})"


def cast(a: str, src: ScalarType, dst: ScalarType) -> str:
    if dst.is_bool:
        return f"({a} != 0)"
    return f"(({ctype(dst)}){a})"


def _wrapped(c_op: str):
    """C promotes narrow operands to int; converting back wraps as two's complement."""
    return lambda a, b, t: f"(({ctype(t)})({a} {c_op} {b}))"


def _infix(c_op: str):
    return lambda a, b, t: f"({a} {c_op} {b})"


def _call(fn: str):
    return lambda a, b, t: f"(({ctype(t)}){fn}({a}, {b}))"


def _select(c_cmp: str):
    """OpenCL C fmin/fmax as its specification words them (b if b < a, else a; a NaN operand
    gives the other one), written out: the fmin() of device libraries may return either zero
    when -0.0 meets +0.0, the interpreter returns a."""
    return lambda a, b, t: f"((isnan({a}) || {b} {c_cmp} {a}) ? {b} : {a})"


_INT_OPS = {"add": "+", "sub": "-", "mul": "*", "div": "/", "rem": "%", "shl": "<<",
            "shr": ">>", "and": "&", "or": "|", "xor": "^"}

BINARY = {
    INT: {**{op: _wrapped(c) for op, c in _INT_OPS.items()},
          "min": _call("min"), "max": _call("max")},  # OpenCL C's integer min/max
    FLOAT: {"add": _infix("+"), "sub": _infix("-"), "mul": _infix("*"), "div": _infix("/"),
            "rem": lambda a, b, t: f"fmod({a}, {b})", "min": _select("<"),
            "max": _select(">")},
    # i1 is C's bool: arithmetic modulo 2 (docs/semantics.md gives each operation a meaning)
    BOOL: {"add": _infix("!="), "sub": _infix("!="), "xor": _infix("!="),
           "mul": _infix("&&"), "and": _infix("&&"), "or": _infix("||"),
           **{op: _wrapped(_INT_OPS[op]) for op in ("div", "rem", "shl", "shr")}},
}
UNARY = {
    INT: {"neg": lambda a, t: f"(({ctype(t)})(-{a}))", "not": lambda a, t: f"(({ctype(t)})(~{a}))"},
    FLOAT: {"neg": lambda a, t: f"(-{a})"},
    BOOL: {"neg": lambda a, t: a, "not": lambda a, t: f"(!{a})"},  # -x == x modulo 2
}
COMPARE = {"eq": "==", "ne": "!=", "gt": ">", "ge": ">=", "lt": "<", "le": "<="}
