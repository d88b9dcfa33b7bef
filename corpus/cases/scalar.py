"""Replicated scalar instructions: arith (binary, unary), cast, cmp, over every scalar type.

The references use Python integers with explicit two's complement wrapping (C semantics:
division truncates, remainder takes the dividend's sign, signed shr is arithmetic) and NumPy
arithmetic in the operand's own float type (each instruction rounded in its type).
"""

from __future__ import annotations

import math

import numpy as np

from corpus.cases.model import ValidCase
from corpus.cases.util import FLOATS, INTS, UNSIGNED, dtype, memref, outputs, rng_for, tags

N = 8


def bits(t: str) -> int:
    return 64 if t == "index" else int(t[1:])


def wrap(v: int, t: str) -> int:
    """v reduced to the type's range (two's complement)."""
    b = bits(t)
    v %= 1 << b
    if t not in UNSIGNED and v >= 1 << (b - 1):
        v -= 1 << b
    return v


def c_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def c_rem(a: int, b: int) -> int:
    return a - b * c_div(a, b)


INT_BINARY = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": c_div, "rem": c_rem, "and": lambda a, b: a & b, "or": lambda a, b: a | b,
    "xor": lambda a, b: a ^ b,
}
FLOAT_BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "rem": np.fmod,
}


def _int_inputs(rng, t):
    """a: any sign (small for signed types so nothing overflows), b: non-zero,
    p: non-negative shift base, s: shift amounts in range."""
    if t in UNSIGNED:
        hi = min(1 << bits(t), 1 << 62)
        a = [int(x) for x in rng.integers(0, hi, N, dtype=np.uint64)]
        b = [int(x) or 3 for x in rng.integers(1, min(hi, 1 << 16), N)]
        p = a
    else:
        a = [int(x) for x in rng.integers(-11, 12, N)]
        b = [int(x) or 5 for x in rng.integers(-5, 6, N)]
        p = [abs(x) % 8 for x in a]
    s = [int(x) for x in rng.integers(0, min(bits(t) - 4, 9), N)]
    return a, b, p, s


def arith_case(t: str) -> ValidCase:
    name = f"arith_{t}"
    rng = rng_for(name)
    is_float = t in FLOATS
    ops = list(FLOAT_BINARY) if is_float else list(INT_BINARY) + ["shl", "shr"]
    unary = ["neg"] if is_float else ["neg", "not"]
    columns = ops + unary + ["mul_const"]
    mt, ot = memref(t, (N,)), memref(t, (N, len(columns)))
    lines = [f"func @arith(%a: {mt}, %b: {mt}, %p: {mt}, %s: {mt}, %r: {ot}) {{",
             f"  foreach %i = 0, {N} {{"]
    for v in "abps":
        lines.append(f"    %{v}v = load %{v}[%i] : {mt}")
    for k, op in enumerate(columns):
        if op in unary:
            expr = f"arith.{op} %av : {t}"
        elif op == "mul_const":
            expr = f"arith.mul %av, {'0.5' if is_float else '2'} : {t}"
        elif op in ("shl", "shr"):
            expr = f"arith.{op} %{'pv' if op == 'shl' else 'av'}, %sv : {t}"
        else:
            expr = f"arith.{op} %av, %bv : {t}"
        lines.append(f"    %x{k} = {expr}")
        lines.append(f"    store %x{k}, %r[%i, {k}] : {ot}")
    lines += ["  }", "}"]
    if is_float:
        dt = dtype(t)
        a = rng.uniform(-4, 4, N).astype(dt)
        b = rng.uniform(0.5, 3, N).astype(dt) * np.where(rng.random(N) < 0.5, -1, 1).astype(dt)
        p = a.copy()
        s = b.copy()
        res = [FLOAT_BINARY[o](a, b) for o in ops] + [-a, a * dt.type(0.5)]
        result = np.stack(res, axis=1).astype(dt)
    else:
        ai, bi, pi, si = _int_inputs(rng, t)
        res = []
        for op in columns:
            if op in INT_BINARY:
                col = [INT_BINARY[op](x, y) for x, y in zip(ai, bi)]
            elif op == "shl":
                col = [x << y for x, y in zip(pi, si)]
            elif op == "shr":
                col = [x >> y for x, y in zip(ai, si)]  # Python >> is arithmetic
            elif op == "neg":
                col = [-x for x in ai]
            elif op == "not":
                col = [~x for x in ai]
            else:
                col = [2 * x for x in ai]
            res.append([wrap(v, t) for v in col])
        dt = dtype(t)
        a, b, p, s = (np.array([wrap(v, t) for v in x], dtype=dt) for x in (ai, bi, pi, si))
        result = np.array(res, dtype=object).T.astype(dt)
    args = {"a": a, "b": b, "p": p, "s": s, "r": np.zeros((N, len(columns)), dtype(t))}
    names = [f"arith.{o}" for o in ops + unary]
    return ValidCase("scalar", name, "\n".join(lines) + "\n", args,
                     outputs(args, (), r=result),
                     tags(names + ["foreach", "load", "store"], t, "canonical"))


def opencl_fmin(x: float, y: float) -> float:
    """OpenCL C's fmin as its specification words it: y if y < x, else x; NaN gives the other."""
    if math.isnan(x):
        return y
    if math.isnan(y):
        return x
    return y if y < x else x


def opencl_fmax(x: float, y: float) -> float:
    if math.isnan(x):
        return y
    if math.isnan(y):
        return x
    return y if y > x else x


def minmax_case(t: str) -> ValidCase:
    """arith.min and arith.max (v0.4's min/max, an extension of v0.3): integers at their
    edges (unsigned ones with the top bit set, where a signed comparison would differ), floats
    with NaN operands, infinities and zeros of both signs (ties give the first operand)."""
    name = f"minmax_{t}"
    if t in FLOATS:
        nan, inf = math.nan, math.inf
        a = [1.5, -2.0, nan, 3.0, nan, -0.0, 0.0, -inf, 2.0, -1.0]
        b = [2.5, -3.0, 1.0, nan, nan, 0.0, -0.0, 5.0, inf, -1.0]
        ref_min = [opencl_fmin(x, y) for x, y in zip(a, b)]
        ref_max = [opencl_fmax(x, y) for x, y in zip(a, b)]
    else:
        b_ = bits(t)
        lo, hi = (0, (1 << b_) - 1) if t in UNSIGNED else (-(1 << (b_ - 1)), (1 << (b_ - 1)) - 1)
        rng = rng_for(name)
        a = [lo, hi, 0, -1 if lo else 1, 5, lo + 1, hi] + \
            [int(x) for x in rng.integers(max(lo, -100), min(hi, 100), 3)]
        b = [hi, lo, 0, 3, 5, lo, 2] + [int(x) for x in rng.integers(max(lo, -100), 100, 3)]
        ref_min = [min(x, y) for x, y in zip(a, b)]
        ref_max = [max(x, y) for x, y in zip(a, b)]
    n = len(a)
    mt, ot = memref(t, (n,)), memref(t, (n, 2))
    text = "\n".join([
        f"func @minmax(%a: {mt}, %b: {mt}, %r: {ot}) {{", f"  foreach %i = 0, {n} {{",
        f"    %x = load %a[%i] : {mt}", f"    %y = load %b[%i] : {mt}",
        f"    %lo = arith.min %x, %y : {t}", f"    %hi = arith.max %x, %y : {t}",
        f"    store %lo, %r[%i, 0] : {ot}", f"    store %hi, %r[%i, 1] : {ot}", "  }", "}"]) + "\n"
    dt = dtype(t)
    args = {"a": np.array(a, dt), "b": np.array(b, dt), "r": np.zeros((n, 2), dt)}
    result = np.array([ref_min, ref_max], dtype=dt).T.copy()
    return ValidCase("scalar", name, text, args, outputs(args, (), r=result),
                     tags(["arith.min", "arith.max", "foreach", "load", "store"], t,
                          "canonical"))


def cast_reference(x: np.ndarray, src: str, dst: str) -> np.ndarray:
    if dst == "i1":
        return (x != 0).astype(np.int32)
    if src in FLOATS and dst in INTS:
        return np.trunc(x.astype(np.float64)).astype(dtype(dst))
    if src in INTS and dst in INTS:
        return np.array([wrap(int(v), dst) for v in x], dtype=object).astype(dtype(dst))
    # int->float, float->float: NumPy's conversions round to nearest even, as C does.
    return x.astype(dtype(dst))


CASTS = [
    ("i32", "i8"), ("i8", "i64"), ("u8", "i32"), ("i32", "u16"), ("i16", "u64"),
    ("i64", "index"), ("index", "i32"), ("u64", "i16"), ("i32", "f32"), ("i64", "f64"),
    ("u32", "f32"), ("i8", "f64"), ("f32", "i32"), ("f64", "i64"), ("f64", "u8"),
    ("f32", "i16"), ("f64", "f32"), ("f32", "f64"), ("i32", "i1"), ("f64", "i1"),
    ("u16", "u8"), ("index", "f64"),
]


def _cast_inputs(rng, src, dst):
    if src in FLOATS:
        if dst == "i1":
            return np.array([0.0, -0.0, 0.5, -2.0, 1e-300, 3.0, 0.0, -7.5], dtype(src))
        lo, hi = (0, 255) if dst in UNSIGNED else (-100, 100)
        if dst == "f32":  # values that need rounding, and ones beyond f32 precision
            return (rng.uniform(-1e3, 1e3, N) + 1e-9).astype(dtype(src))
        return rng.uniform(lo + 0.0, hi - 0.001, N).astype(dtype(src))
    if src in UNSIGNED:
        return rng.integers(0, 1 << min(bits(src), 62), N, dtype=np.uint64).astype(dtype(src))
    big = {"i32": 1 << 24, "i64": 1 << 53}.get(src)
    if big and dst in FLOATS:  # integers that are not representable in the float type
        return np.array([big + 1, big + 3, -big - 1, 7, -9, big - 1, 0, 2 * big + 2],
                        dtype(src))
    lo = -(1 << (bits(src) - 1))
    return rng.integers(lo, -lo, N).astype(dtype(src))


def cast_case(src: str, dst: str) -> ValidCase:
    name = f"cast_{src}_{dst}"
    rng = rng_for(name)
    x = _cast_inputs(rng, src, dst)
    out_t = "i32" if dst == "i1" else dst
    mi, mo = memref(src, (N,)), memref(out_t, (N,))
    body = [f"    %c = cast %v : {src} -> {dst}"]
    if dst == "i1":  # i1 has no storage: select 1 or 0
        body += ["    %w = if %c -> (i32) {", "      yield 1 : i32", "    } else {",
                 "      yield 0 : i32", "    }", f"    store %w, %y[%i] : {mo}"]
    else:
        body.append(f"    store %c, %y[%i] : {mo}")
    src_text = "\n".join([f"func @cast(%x: {mi}, %y: {mo}) {{", f"  foreach %i = 0, {N} {{",
                          f"    %v = load %x[%i] : {mi}", *body, "  }", "}"]) + "\n"
    args = {"x": x, "y": np.zeros(N, dtype(out_t))}
    instr = ["cast", "load", "store", "foreach"] + (["if"] if dst == "i1" else [])
    return ValidCase("scalar", name, src_text, args,
                     outputs(args, (), y=cast_reference(x, src, dst)),
                     tags(instr, [src, dst], "canonical"))


CONDS = {"eq": np.equal, "ne": np.not_equal, "gt": np.greater, "ge": np.greater_equal,
         "lt": np.less, "le": np.less_equal}


def cmp_case(t: str) -> ValidCase:
    name = f"cmp_{t}"
    rng = rng_for(name)
    if t in FLOATS:
        a = np.array([1.0, -2.5, np.nan, 0.0, 3.25, np.inf, -0.0, 1.0], dtype(t))
        b = np.array([1.0, 2.5, 1.0, -0.0, np.nan, 1e30, 0.0, 0.75], dtype(t))
    else:
        lo = 0 if t in UNSIGNED else -3
        a = rng.integers(lo, lo + 6, N).astype(dtype(t))
        b = a.copy()
        b[::2] = rng.integers(lo, lo + 6, N // 2)
        if t in UNSIGNED:  # unsigned order: the largest value compares greater
            a[0] = np.iinfo(dtype(t)).max
    mt, ot = memref(t, (N,)), memref("i32", (N, len(CONDS)))
    lines = [f"func @cmp(%a: {mt}, %b: {mt}, %r: {ot}) {{", f"  foreach %i = 0, {N} {{",
             f"    %x = load %a[%i] : {mt}", f"    %y = load %b[%i] : {mt}"]
    for k, c in enumerate(CONDS):
        lines += [f"    %c{k} = cmp.{c} %x, %y : {t}",
                  f"    %v{k} = if %c{k} -> (i32) {{", "      yield 1 : i32", "    } else {",
                  "      yield 0 : i32", "    }", f"    store %v{k}, %r[%i, {k}] : {ot}"]
    lines += ["  }", "}"]
    with np.errstate(invalid="ignore"):
        result = np.stack([f(a, b) for f in CONDS.values()], axis=1).astype(np.int32)
    args = {"a": a, "b": b, "r": np.zeros((N, len(CONDS)), np.int32)}
    return ValidCase("scalar", name, "\n".join(lines) + "\n", args, outputs(args, (), r=result),
                     tags([f"cmp.{c}" for c in CONDS] + ["if", "yield"], t, "canonical"))


def _i1_case(name: str, func: str, exprs: list[str], reference, tagged: list[str]) -> ValidCase:
    """i1 values %p = x > 0 and %q = x < 3, combined by each of `exprs` (i1 results), each
    result selected to 1 or 0 with if and stored; `reference(p, q)` gives the columns."""
    n = N
    mt, ot = memref("i32", (n,)), memref("i32", (n, len(exprs)))
    lines = [f"func @{func}(%a: {mt}, %r: {ot}) {{", f"  foreach %i = 0, {n} {{",
             f"    %x = load %a[%i] : {mt}", "    %p = cmp.gt %x, 0 : i32",
             "    %q = cmp.lt %x, 3 : i32"]
    for k, expr in enumerate(exprs):
        lines += [f"    %b{k} = {expr} : i1",
                  f"    %v{k} = if %b{k} -> (i32) {{", "      yield 1 : i32", "    } else {",
                  "      yield 0 : i32", "    }", f"    store %v{k}, %r[%i, {k}] : {ot}"]
    lines += ["  }", "}"]
    a = np.arange(-2, n - 2, dtype=np.int32)
    result = np.stack(reference(a > 0, a < 3), axis=1).astype(np.int32)
    args = {"a": a, "r": np.zeros((n, len(exprs)), np.int32)}
    return ValidCase("scalar", name, "\n".join(lines) + "\n", args,
                     outputs(args, (), r=result), tags(tagged + ["if"], "i1", "canonical"))


def bool_case() -> ValidCase:
    """i1 values: comparisons combined with and/or/xor/not, selected with if."""
    return _i1_case("bool_ops", "bools", ["arith.and %p, %q", "arith.or %p, %q",
                                          "arith.xor %p, %q", "arith.not %p"],
                    lambda p, q: [p & q, p | q, p ^ q, ~p],
                    ["arith.and", "arith.or", "arith.xor", "arith.not", "cmp.gt", "cmp.lt"])


def bool_compare_case() -> ValidCase:
    """cmp.eq and cmp.ne on i1 (the only comparisons defined there)."""
    return _i1_case("bool_cmp", "bool_cmp", ["cmp.eq %p, %q", "cmp.ne %p, %q"],
                    lambda p, q: [p == q, p != q], ["cmp.eq", "cmp.ne", "cmp.gt", "cmp.lt"])


def cases() -> list[ValidCase]:
    types = ("i8", "i16", "i32", "i64", "index", "u8", "u16", "u32", "u64", "f32", "f64")
    return ([arith_case(t) for t in types] + [cast_case(s, d) for s, d in CASTS]
            + [cmp_case(t) for t in ("i8", "i32", "i64", "index", "u32", "f32", "f64")]
            + [bool_case(), bool_compare_case()]
            + [minmax_case(t) for t in ("i8", "i32", "i64", "index", "u8", "u64", "f32", "f64")])
