"""Run-time values as C expressions: scalars, strided memref views and groups."""

from __future__ import annotations

from dataclasses import dataclass

from tlinterp.lang.types import MemrefType, ScalarType


def var(name: str) -> str:
    """The C name of the tensor-language value `%name`."""
    return f"v_{name}"


@dataclass(frozen=True)
class Scalar:
    expr: str
    type: ScalarType


@dataclass(frozen=True)
class View:
    """A memref: pointer to element (0,..,0), sizes and strides as C expressions."""

    ptr: str
    space: str  # "global" or "local"
    elem: ScalarType
    shape: tuple[str, ...]
    stride: tuple[str, ...]
    root: str  # memory it lives in, for the barrier analysis
    align: int = 1  # bytes the pointer is known to be aligned to (a power of two)

    def offset(self, idx) -> str:
        terms = [f"({i}) * {_p(s)}" if s != "1" else f"({i})" for i, s in zip(idx, self.stride)]
        return " + ".join(terms) if terms else "0"

    def at(self, idx) -> str:
        return f"{self.ptr}[{self.offset(idx)}]"

    def addr(self, idx) -> str:
        return f"({self.ptr} + {self.offset(idx)})"


@dataclass(frozen=True)
class Group:
    """A group argument: pointer array, one long array per '?' in shape/stride, offset."""

    ptrs: str
    type: MemrefType
    shape_arrays: tuple[str | None, ...]
    stride_arrays: tuple[str | None, ...]
    offset: str
    root: str


def offset_align(terms: list[tuple[str, str]], elem_bytes: int) -> int:
    """Bytes to which a sum of index * stride terms (in elements) is provably aligned: each
    term contributes the power of two of its static factors (0 contributes nothing)."""
    best = 1 << 30
    for index, stride in terms:
        factor = 1
        for e in (index, stride):
            v = static_or(e)
            if v is not None:
                factor *= v
        if factor:  # a zero term adds nothing
            best = min(best, (factor & -factor) * elem_bytes)
    return best


def _p(e: str) -> str:
    return e if e.isidentifier() or e.lstrip("-").isdigit() else f"({e})"


def static_or(expr: str) -> int | None:
    try:
        return int(expr)
    except ValueError:
        return None


def mul(a: str, b: str) -> str:
    sa, sb = static_or(a), static_or(b)
    if sa is not None and sb is not None:
        return str(sa * sb)
    if sa == 1:
        return b
    if sb == 1:
        return a
    return f"{_p(a)} * {_p(b)}"
