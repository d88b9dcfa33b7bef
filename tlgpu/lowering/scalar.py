"""C expressions for the replicated scalar instructions, with the interpreter's semantics:
each result rounded/wrapped in its own type, floats never contracted (FP_CONTRACT OFF).

One table per family, per type class, keyed by the operation names of tlinterp/lang/ops.py."""

from __future__ import annotations

from tlgpu.lowering.ctypes_map import ctype
from tlgpu.lowering.v04 import complexnum, lowp
from tlinterp.lang.ops import BOOL, FLOAT, INT, type_class
from tlinterp.lang.types import ScalarType

# v0.4's type classes beyond ops.py's: f16/bf16 as 16-bit patterns computed through float
# (lowp.py), c32/c64 as float2/double2 (complexnum.py)
LOWP, COMPLEX = "lowp", "complex"


def class_of(t: ScalarType) -> str:
    if t in lowp.LOWP:
        return LOWP
    return COMPLEX if t.is_complex else type_class(t)


def binary(op: str, a: str, b: str, t: ScalarType) -> str:
    return BINARY[class_of(t)][op](a, b, t)


def unary(op: str, a: str, t: ScalarType) -> str:
    return UNARY[class_of(t)][op](a, t)


def unary_result(op: str, t: ScalarType) -> ScalarType:
    """The result type of `op a : t` (abs, re, im of a complex value: its part's type)."""
    return complexnum.result_type(op, t) if t.is_complex else t


def compare(cond: str, a: str, b: str, t: ScalarType = ScalarType.i32) -> str:
    if t in lowp.LOWP:
        return lowp.compare(COMPARE[cond], a, b, t)
    if t.is_complex:
        return complexnum.compare(cond, a, b)
    return f"({a} {COMPARE[cond]} {b})"


def cast(a: str, src: ScalarType, dst: ScalarType) -> str:
    if dst.is_bool:
        return f"({a} != 0)"
    if dst.is_complex:
        return complexnum.cast(a, src, dst, cast)
    if src in lowp.LOWP or dst in lowp.LOWP:
        return lowp.cast(a, src, dst, ctype)
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


def _math(fn: str):
    """A math function in the type (the `native_*` forms as the full-precision ones: OpenCL
    has native_* for float only, and the interpreter computes them exactly too)."""
    base = fn.removeprefix("native_")
    return lambda a, t: f"{base}({a})"


MATH = ("cos", "sin", "exp", "exp2", "log", "log2", "native_cos", "native_sin", "native_exp",
        "native_exp2", "native_log", "native_log2")
_FLOAT_UNARY = {"neg": lambda a, t: f"(-{a})", "abs": lambda a, t: f"fabs({a})",
                **{f: _math(f) for f in MATH}}
_FLOAT_BINARY = {"add": _infix("+"), "sub": _infix("-"), "mul": _infix("*"), "div": _infix("/"),
                 "rem": lambda a, b, t: f"fmod({a}, {b})", "min": _select("<"),
                 "max": _select(">")}
_INT_OPS = {"add": "+", "sub": "-", "mul": "*", "div": "/", "rem": "%", "shl": "<<",
            "shr": ">>", "and": "&", "or": "|", "xor": "^"}

BINARY = {
    INT: {**{op: _wrapped(c) for op, c in _INT_OPS.items()},
          "min": _call("min"), "max": _call("max")},  # OpenCL C's integer min/max
    FLOAT: _FLOAT_BINARY,
    LOWP: {op: lowp.binary(f) for op, f in
           {**_FLOAT_BINARY, "rem": lambda a, b, t: f"tl_fmod_nan({a}, {b})"}.items()},
    COMPLEX: {op: complexnum.binary(op) for op in ("add", "sub", "mul", "div")},
    # i1 is C's bool: arithmetic modulo 2 (docs/semantics.md gives each operation a meaning)
    BOOL: {"add": _infix("!="), "sub": _infix("!="), "xor": _infix("!="),
           "mul": _infix("&&"), "and": _infix("&&"), "or": _infix("||"),
           **{op: _wrapped(_INT_OPS[op]) for op in ("div", "rem", "shl", "shr")}},
}
UNARY = {
    INT: {"neg": lambda a, t: f"(({ctype(t)})(-{a}))", "not": lambda a, t: f"(({ctype(t)})(~{a}))",
          "abs": lambda a, t: f"(({ctype(t)})abs({a}))"},  # abs(MIN) wraps (undefined anyway)
    FLOAT: _FLOAT_UNARY,
    LOWP: {op: lowp.unary(f) for op, f in _FLOAT_UNARY.items()},
    COMPLEX: complexnum.UNARY,
    BOOL: {"neg": lambda a, t: a, "not": lambda a, t: f"(!{a})"},  # -x == x modulo 2
}
COMPARE = {"eq": "==", "ne": "!=", "gt": ">", "ge": ">=", "lt": "<", "le": "<="}
