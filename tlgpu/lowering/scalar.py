"""C expressions for the replicated scalar instructions, with the interpreter's semantics:
each result rounded/wrapped in its own type, floats never contracted (FP_CONTRACT OFF)."""

from __future__ import annotations

from tlgpu.lowering.ctypes_map import ctype
from tlinterp.types import ScalarType

_C_OPS = {"add": "+", "sub": "-", "mul": "*", "div": "/", "rem": "%", "shl": "<<",
          "shr": ">>", "and": "&", "or": "|", "xor": "^"}
_CMP = {"eq": "==", "ne": "!=", "gt": ">", "ge": ">=", "lt": "<", "le": "<="}


def binary(op: str, a: str, b: str, t: ScalarType) -> str:
    if t.is_float:
        if op == "rem":
            return f"fmod({a}, {b})"
        return f"({a} {_C_OPS[op]} {b})"
    if t.is_bool:
        if op in ("add", "sub", "xor"):
            return f"({a} != {b})"  # arithmetic modulo 2
        if op in ("mul", "and"):
            return f"({a} && {b})"
        if op == "or":
            return f"({a} || {b})"
    # C promotes narrow operands to int; converting back wraps as two's complement
    return f"(({ctype(t)})({a} {_C_OPS[op]} {b}))"


def unary(op: str, a: str, t: ScalarType) -> str:
    if t.is_bool:
        return f"(!{a})" if op == "not" else a  # -x == x modulo 2
    if op == "neg":
        return f"(-{a})" if t.is_float else f"(({ctype(t)})(-{a}))"
    return f"(({ctype(t)})(~{a}))"


def compare(cond: str, a: str, b: str) -> str:
    return f"({a} {_CMP[cond]} {b})"


def cast(a: str, src: ScalarType, dst: ScalarType) -> str:
    if dst.is_bool:
        return f"({a} != 0)"
    return f"(({ctype(dst)}){a})"
