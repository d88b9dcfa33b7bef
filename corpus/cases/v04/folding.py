"""v0.4 kernels whose operands are all constants: the operations of corpus/cases/v04/scalar.py
again, now on `constant` values, so that a compiler with constant propagation computes them
itself (tinytc v0.4.0 folds them in its constant-propagation pass, code that its own tests and
our other cases never reached: docs/testing-a-compiler.md, "How much of your compiler do we
reach?"). One kernel per type; every result is stored at its own index of one output.
Expected values come from the same plain-Python tables as scalar.py (integer wrap, C division,
`math`, `complex`, f16/f32 rounding through `struct`), never from the interpreter."""

from __future__ import annotations

import math

import numpy as np

from corpus.cases.model import ValidCase
from corpus.cases.v04.core import _v, f16
from corpus.cases.v04.scalar import (
    INT_BINARY,
    INT_UNARY,
    NP,
    _round,
    f32r,
    wrap,
)

# (a, b, shift) triples: no overflow in i8, nonzero divisors, both signs of each
_INT_OPERANDS = ((-7, 3, 1), (12, -5, 2), (-9, -4, 3), (5, 1, 0))
# eighths and powers of two: every sum, product, quotient and remainder is exact in f16
_FLOAT_OPERANDS = ((-2.75, 0.5), (1.375, -0.25), (6.0, 4.0), (-0.625, -2.0))
_FLOAT_BINARY = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b,
                 "mul": lambda a, b: a * b, "div": lambda a, b: a / b, "rem": math.fmod,
                 "min": min, "max": max}
_FLOAT_UNARY = {"abs": abs, "neg": lambda a: -a}
# Pythagorean parts: abs is exact
_COMPLEX_OPERANDS = ((complex(-3, 4), complex(0.5, -2)), (complex(8, -15), complex(-1, 0.25)))
_COMPLEX_BINARY = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b,
                   "mul": lambda a, b: a * b}
_COMPLEX_UNARY = {"neg": lambda a: -a, "conj": lambda a: a.conjugate()}
_COMPLEX_REAL = {"re": lambda a: a.real, "im": lambda a: a.imag, "abs": abs}
_REAL_OF = {"c32": "f32", "c64": "f64"}


def _literal(v, t: str) -> str:
    if t.startswith("c"):
        return f"[{v.real!r}, {v.imag!r}]"
    return repr(float(v)) if t.startswith("f") else str(int(v))


def _kernel(outputs: dict[str, tuple[str, int]], body: list[str]) -> str:
    """`func @k` with one vector output per (name -> (type, length)) and `body` as its
    lines."""
    params = ", ".join(f"%{name}: memref<{t} x {n}>" for name, (t, n) in outputs.items())
    return f"func @k({params}) {{\n" + "".join(f"    {line}\n" for line in body) + "}\n"


class _Body:
    """Lines of a kernel that stores each folded result at the next index of its output."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.count: dict[str, int] = {}
        self.names = 0

    def value(self, text: str) -> str:
        self.names += 1
        name = f"%v{self.names}"
        self.lines.append(f"{name} = {text}")
        return name

    def store(self, value: str, output: str) -> None:
        k = self.count.get(output, 0)
        self.count[output] = k + 1
        index = self.value(f"constant {k} : index")
        self.lines.append(f"store {value}, %{output}[{index}]")


def integers() -> list[ValidCase]:
    out = []
    for t in ("i8", "i16", "i32", "i64", "index"):
        body, expected = _Body(), []
        for a, b, s in _INT_OPERANDS:
            ca, cb, cs = (body.value(f"constant {v} : {t}") for v in (a, b, s))
            for o, f in INT_BINARY.items():
                rhs = cs if o in ("shl", "shr") else cb
                body.store(body.value(f"{o} {ca}, {rhs} : {t}"), "R")
                expected.append(wrap(f(a, b, s), t))
            for o, f in INT_UNARY.items():
                body.store(body.value(f"{o} {ca} : {t}"), "R")
                expected.append(wrap(f(a), t))
        n = len(expected)
        out.append(_v(f"folded_int_ops_{t}", _kernel({"R": (t, n)}, body.lines),
                      {"R": np.zeros(n, NP[t])}, {"R": expected},
                      list(INT_BINARY) + list(INT_UNARY) + ["constant", "store"], [t]))
    return out


def floats() -> list[ValidCase]:
    """f64, f32 and f16 (bf16 constants stop tinytc v0.4.0 whatever the operation:
    corpus/findings/tinytc-0.4.0, so bf16 folding would test that bug again)."""
    rounding = {"f64": float, "f32": f32r, "f16": f16}
    out = []
    for t in ("f64", "f32", "f16"):
        body, expected = _Body(), []
        for a, b in _FLOAT_OPERANDS:
            ca, cb = (body.value(f"constant {_literal(v, t)} : {t}") for v in (a, b))
            for o, f in _FLOAT_BINARY.items():
                body.store(body.value(f"{o} {ca}, {cb} : {t}"), "R")
                expected.append(rounding[t](f(a, b)))
            for o, f in _FLOAT_UNARY.items():
                body.store(body.value(f"{o} {ca} : {t}"), "R")
                expected.append(rounding[t](f(a)))
        n = len(expected)
        out.append(_v(f"folded_float_ops_{t}", _kernel({"R": (t, n)}, body.lines),
                      {"R": np.zeros(n, NP[t])}, {"R": expected},
                      list(_FLOAT_BINARY) + list(_FLOAT_UNARY) + ["constant", "store"], [t]))
    return out


def complexes() -> list[ValidCase]:
    out = []
    for t in ("c32", "c64"):
        real = _REAL_OF[t]
        body, expected, parts = _Body(), [], []
        for a, b in _COMPLEX_OPERANDS:
            ca, cb = (body.value(f"constant {_literal(v, t)} : {t}") for v in (a, b))
            for o, f in _COMPLEX_BINARY.items():
                body.store(body.value(f"{o} {ca}, {cb} : {t}"), "R")
                expected.append(_round(f(a, b), t))
            for o, f in _COMPLEX_UNARY.items():
                body.store(body.value(f"{o} {ca} : {t}"), "R")
                expected.append(_round(f(a), t))
            for o, f in _COMPLEX_REAL.items():
                body.store(body.value(f"{o} {ca} : {real}"), "P")
                parts.append(_round(f(a), real))
        n, m = len(expected), len(parts)
        out.append(_v(f"folded_complex_ops_{t}",
                      _kernel({"R": (t, n), "P": (real, m)}, body.lines),
                      {"R": np.zeros(n, NP[t]), "P": np.zeros(m, NP[real])},
                      {"R": expected, "P": parts},
                      list(_COMPLEX_BINARY) + list(_COMPLEX_UNARY) + list(_COMPLEX_REAL)
                      + ["constant", "store"], [t, real]))
    return out


def casts() -> list[ValidCase]:
    """A constant of each of i32, f64 and c32 cast to every type its kind casts to (bf16
    left out, as in floats())."""
    sources = {"i32": [-3, 100], "f64": [-1.5, 2.75, 1 / 3], "c32": [complex(0.25, -2.75)]}
    targets = {"i32": ("i8", "i16", "i64", "index", "f16", "f32", "f64", "c32", "c64"),
               "f64": ("i8", "i32", "i64", "index", "f16", "f32", "c32", "c64"),
               "c32": ("c64",)}
    out = []
    for src, values in sources.items():
        body, expected = _Body(), {t.upper(): [] for t in targets[src]}
        for v in values:
            c = body.value(f"constant {_literal(v, src)} : {src}")
            for t in targets[src]:
                body.store(body.value(f"cast {c} : {t}"), t.upper())
                expected[t.upper()].append(_round(v, t))
        outputs = {t.upper(): (t, len(values)) for t in targets[src]}
        out.append(_v(f"folded_casts_from_{src}", _kernel(outputs, body.lines),
                      {name: np.zeros(n, NP[t]) for name, (t, n) in outputs.items()},
                      expected, ["cast", "constant", "store"], (src,) + targets[src]))
    return out


def cases() -> list[ValidCase]:
    return [*integers(), *floats(), *complexes(), *casts()]
