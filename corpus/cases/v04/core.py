"""Runnable v0.4 kernels (lang="v0.4"): low-precision and complex arithmetic, math, casts,
control flow, atomics, work-group builtins, sub-group operations, barriers with local memory
and cooperative matrices. Each expected result comes from plain Python written here (loops,
`math`, `complex`, `struct` for f16 rounding, ml_dtypes for bf16), never from NumPy's array
arithmetic that the interpreter uses; inputs are chosen so that results are exact (the corpus
compares most float outputs bit for bit: fuzz/oracle/compare.py)."""

from __future__ import annotations

import math
import struct

import ml_dtypes
import numpy as np

from corpus.cases.model import ValidCase
from corpus.cases.util import rng_for
from corpus.cases.v04.tags import instructions_of, layouts_of

# Sub-groups of 16: the size tinytc v0.4.0 takes for its default target (pvc: 16 or 32) and
# Intel's CPU runtime runs; two sub-groups per work-group in the SPMD kernels.
SG = 16
SPMD = f"attributes{{subgroup_size={SG}, work_group_size=[{2 * SG}, 1]}}"


def _v(name: str, source: str, args: dict, expected: dict, instr, types,
       groups=None) -> ValidCase:
    """A v0.4 case. Its instruction and layout tags are read from the source (corpus.cases.
    v04tags); `instr` names what the case is about and must be among them."""
    out = {k: np.array(v) for k, v in args.items()}
    for k, v in expected.items():
        out[k] = np.asarray(v).astype(out[k].dtype)
    used = instructions_of(source)
    if set(instr) - set(used):
        raise ValueError(f"{name}: tagged with {sorted(set(instr) - set(used))}, which its "
                         "kernel does not use")
    tags = {"instruction": used, "type": sorted(set(types)), "layout": layouts_of(source)}
    return ValidCase("v04", name, source, args, out, tags, groups=groups, lang="v0.4")


def f16(x: float) -> float:
    """x rounded to binary16 (struct's 'e' rounds to nearest even)."""
    try:
        return struct.unpack("<e", struct.pack("<e", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


def bf16_bits(x: float) -> int:
    return int(np.array([ml_dtypes.bfloat16(x)]).view(np.uint16)[0])


def bf16_val(bits: int) -> float:
    return float(np.array([bits], np.uint16).view(ml_dtypes.bfloat16)[0])


def _eighths(name: str, n: int, lo: int = -16, hi: int = 16) -> list[float]:
    rng = rng_for(name)
    return [int(v) / 8 for v in rng.integers(lo, hi + 1, size=n)]


# --- constants, arithmetic, math, comparisons, casts -----------------------------------------

def constants() -> list[ValidCase]:
    src = """func @k(%A: memref<f32 x 5>, %H: memref<f16 x 2>, %Z: memref<c32 x 2>) {
    %0 = constant inf : f32
    %1 = constant -inf : f32
    %2 = constant nan : f32
    %3 = constant 0x1.8p1 : f32
    %4 = constant -0.0 : f32
    %5 = constant 65504.0 : f16
    %6 = constant 0.1 : f16
    %7 = constant [1.5, -2.0] : c32
    %8 = constant [0.0, inf] : c32
    %c0 = constant 0 : index
    %c1 = constant 1 : index
    %c2 = constant 2 : index
    %c3 = constant 3 : index
    %c4 = constant 4 : index
    store %0, %A[%c0]
    store %1, %A[%c1]
    store %2, %A[%c2]
    store %3, %A[%c3]
    store %4, %A[%c4]
    store %5, %H[%c0]
    store %6, %H[%c1]
    store %7, %Z[%c0]
    store %8, %Z[%c1]
}
"""
    args = {"A": np.zeros(5, np.float32), "H": np.zeros(2, np.float16),
            "Z": np.zeros(2, np.complex64)}
    exp = {"A": [math.inf, -math.inf, math.nan, 3.0, -0.0], "H": [65504.0, f16(0.1)],
           "Z": [complex(1.5, -2.0), complex(0.0, math.inf)]}
    return [_v("constant_special", src, args, exp, ["constant", "store"], ["f32", "f16", "c32"])]


def _decimal(a: str, b: str, c: str, indent: int) -> str:
    """Lines computing %w = i32(100 a + 10 b + c) (three small indices in one number; %c100 and
    %c10 are defined before)."""
    lines = (f"%a = mul {a}, %c100 : index", f"%b = mul {b}, %c10 : index",
             "%ab = add %a, %b : index", f"%v = add %ab, {c} : index", "%w = cast %v : i32")
    return "".join(" " * indent + line + "\n" for line in lines)


def _vectors(n: int, **types: str) -> str:
    """Parameters `%NAME: memref<TYPE x n>`, in order."""
    return ", ".join(f"%{name}: memref<{t} x {n}>" for name, t in types.items())


def _lines(*lines: str) -> str:
    """A foreach body: one instruction per line, indented."""
    return "".join(f"        {line}\n" for line in lines)


def _foreach_kernel(params: str, n: int, body: str, setup: str = "") -> str:
    """`func @k(params)` running `body` for %i in [0, n), after `setup` (indented lines)."""
    return (f"func @k({params}) {{\n    %c0 = constant 0 : index\n    %n = constant {n} : index\n"
            f"{setup}    foreach (%i) = (%c0), (%n) {{\n{body}    }}\n}}\n")


def _binary_kernel(t: str, n: int, ops: list[str]) -> str:
    outs = ", ".join(f"%{o.upper()}: memref<{t} x {n}>" for o in ops)
    body = "".join(f"        %{o} = {o} %a, %b : {t}\n        store %{o}, %{o.upper()}[%i]\n"
                   for o in ops)
    return _foreach_kernel(f"%A: memref<{t} x {n}>, %B: memref<{t} x {n}>, {outs}", n,
                           f"        %a = load %A[%i] : {t}\n        %b = load %B[%i] : {t}\n"
                           + body)


def arith() -> list[ValidCase]:
    out = []
    # f16: inputs with more bits than the result keeps, so every op rounds
    rng = rng_for("v04_arith_f16")
    a = [f16(float(v)) for v in rng.uniform(-4, 4, 8)]
    b = [f16(float(v)) for v in rng.uniform(0.5, 3, 8)]
    ops = ["add", "sub", "mul", "div", "min", "max"]
    py = {"add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y,
          "div": lambda x, y: x / y, "min": min, "max": max}
    args = {"A": np.array(a, np.float16), "B": np.array(b, np.float16)}
    args |= {o.upper(): np.zeros(8, np.float16) for o in ops}
    exp = {o.upper(): [f16(py[o](x, y)) for x, y in zip(a, b)] for o in ops}
    out.append(_v("arith_f16", _binary_kernel("f16", 8, ops), args, exp, ops + ["load", "store",
                  "foreach"], ["f16"]))
    # bf16 (uint16 bit patterns)
    rng = rng_for("v04_arith_bf16")
    a = [bf16_val(bf16_bits(float(v))) for v in rng.uniform(-4, 4, 8)]
    b = [bf16_val(bf16_bits(float(v))) for v in rng.uniform(0.5, 3, 8)]
    ops = ["add", "mul", "div", "max"]
    args = {"A": np.array([bf16_bits(x) for x in a], np.uint16),
            "B": np.array([bf16_bits(x) for x in b], np.uint16)}
    args |= {o.upper(): np.zeros(8, np.uint16) for o in ops}
    exp = {o.upper(): [bf16_bits(py[o](x, y)) for x, y in zip(a, b)] for o in ops}
    out.append(_v("arith_bf16", _binary_kernel("bf16", 8, ops), args, exp, ops + ["load",
                  "store", "foreach"], ["bf16"]))
    # complex: eighths, so that products and sums are exact in either precision
    for t, dt in (("c32", np.complex64), ("c64", np.complex128)):
        re, im = _eighths(f"v04_{t}_a", 12), _eighths(f"v04_{t}_b", 12)
        a = [complex(re[i], im[i]) for i in range(6)]
        b = [complex(re[6 + i], im[6 + i]) for i in range(6)]
        ops = ["add", "sub", "mul"]
        args = {"A": np.array(a, dt), "B": np.array(b, dt)}
        args |= {o.upper(): np.zeros(6, dt) for o in ops}
        exp = {o.upper(): [py[o](x, y) for x, y in zip(a, b)] for o in ops}
        out.append(_v(f"arith_{t}", _binary_kernel(t, 6, ops), args, exp,
                      ops + ["load", "store", "foreach"], [t]))
    return out


def unary() -> list[ValidCase]:
    src = _foreach_kernel(
        _vectors(4, Z="c32", C="c32", R="f32", I="f32", M="f32", N="f32", K="i32"), 4, _lines(
            "%z = load %Z[%i] : c32", "%c = conj %z : c32", "%r = re %z : f32",
            "%m = im %z : f32", "%a = abs %z : f32", "%g = neg %r : f32", "%k = cast %m : i32",
            "%ka = abs %k : i32", "store %c, %C[%i]", "store %r, %R[%i]", "store %m, %I[%i]",
            "store %a, %M[%i]", "store %g, %N[%i]", "store %ka, %K[%i]"))
    z = [complex(3, -4), complex(-5, 12), complex(0, -8), complex(-1.5, 2)]
    args = {"Z": np.array(z, np.complex64), "C": np.zeros(4, np.complex64)}
    args |= {k: np.zeros(4, np.float32) for k in "RIMN"} | {"K": np.zeros(4, np.int32)}
    exp = {"C": [v.conjugate() for v in z], "R": [v.real for v in z], "I": [v.imag for v in z],
           "M": [math.hypot(v.real, v.imag) for v in z], "N": [-v.real for v in z],
           "K": [abs(int(v.imag)) for v in z]}
    return [_v("unary_complex", src, args, exp, ["conj", "re", "im", "abs", "neg", "cast",
                                                 "load", "store", "foreach"],
               ["c32", "f32", "i32"])]


def math_fns() -> list[ValidCase]:
    # points where every function's result is exact, so the comparison stays bit for bit
    fns = {"exp": (0.0, 1.0), "exp2": (3.0, 8.0), "log": (1.0, 0.0), "log2": (0.25, -2.0),
           "sin": (0.0, 0.0), "cos": (0.0, 1.0), "native_exp2": (-1.0, 0.5),
           "native_log2": (16.0, 4.0), "native_cos": (0.0, 1.0), "native_sin": (-0.0, -0.0)}
    out = []
    for t, dt in (("f32", np.float32), ("f64", np.float64)):
        names = list(fns)
        lines = "".join(
            f"    %x{i} = load %X[%c{i}] : {t}\n    %y{i} = {f} %x{i} : {t}\n"
            f"    store %y{i}, %Y[%c{i}]\n" for i, f in enumerate(names))
        consts = "".join(f"    %c{i} = constant {i} : index\n" for i in range(len(names)))
        src = (f"func @k(%X: memref<{t} x {len(names)}>, %Y: memref<{t} x {len(names)}>) {{\n"
               f"{consts}{lines}}}\n")
        args = {"X": np.array([fns[f][0] for f in names], dt), "Y": np.zeros(len(names), dt)}
        exp = {"Y": [fns[f][1] for f in names]}
        out.append(_v(f"math_{t}", src, args, exp, names + ["load", "store"], [t]))
    return out


def compare() -> list[ValidCase]:
    ops = ["equal", "not_equal", "greater_than", "greater_than_equal", "less_than",
           "less_than_equal"]
    py = [lambda x, y: x == y, lambda x, y: x != y, lambda x, y: x > y, lambda x, y: x >= y,
          lambda x, y: x < y, lambda x, y: x <= y]
    body = "".join(
        f"        %p{j} = {o} %a, %b : bool\n"
        f"        %v{j} = if %p{j} -> (i32) {{\n            yield (%one)\n        }} else {{\n"
        f"            yield (%zero)\n        }}\n        %j{j} = constant {j} : index\n"
        f"        store %v{j}, %R[%i, %j{j}]\n" for j, o in enumerate(ops))
    src = _foreach_kernel("%A: memref<f32 x 5>, %B: memref<f32 x 5>, %R: memref<i32 x 5 x 6>",
                          5, "        %a = load %A[%i] : f32\n        %b = load %B[%i] : f32\n"
                          + body,
                          "    %one = constant 1 : i32\n    %zero = constant 0 : i32\n")
    a = [1.0, 2.0, math.nan, -0.0, math.inf]
    b = [2.0, 2.0, 1.0, 0.0, 3.0]
    args = {"A": np.array(a, np.float32), "B": np.array(b, np.float32),
            "R": np.zeros((5, 6), np.int32)}
    exp = {"R": [[int(f(x, y)) for f in py] for x, y in zip(a, b)]}
    return [_v("compare_f32", src, args, exp, ops + ["if", "yield", "load", "store", "foreach"],
               ["f32", "bool", "i32"])]


def casts() -> list[ValidCase]:
    body = _lines("%x = load %X[%i] : f32", "%a = cast %x : i32", "%h = cast %x : f16",
                  "%g = cast %x : bf16", "%z = cast %h : c64", "%j = cast %a : i8",
                  "store %a, %I[%i]", "store %h, %H[%i]", "store %g, %G[%i]",
                  "store %z, %Z[%i]", "store %j, %J[%i]")
    src = _foreach_kernel(_vectors(6, X="f32", I="i32", H="f16", G="bf16", Z="c64", J="i8"), 6,
                          body)
    x = [float(np.float32(v)) for v in (2.75, -2.75, 1.0009765625 + 2**-12, 300.6, -0.1, 1e-6)]
    args = {"X": np.array(x, np.float32), "I": np.zeros(6, np.int32),
            "H": np.zeros(6, np.float16), "G": np.zeros(6, np.uint16),
            "Z": np.zeros(6, np.complex128), "J": np.zeros(6, np.int8)}
    ints = [math.trunc(v) for v in x]
    exp = {"I": ints, "H": [f16(v) for v in x], "G": [bf16_bits(v) for v in x],
           "Z": [complex(f16(v), 0) for v in x],
           "J": [(v + 128) % 256 - 128 for v in ints]}
    return [_v("cast_mix", src, args, exp, ["cast", "load", "store", "foreach"],
               ["f32", "i32", "f16", "bf16", "c64", "i8"])]


# --- control flow, collectives, builtins ---------------------------------------------------

def control() -> list[ValidCase]:
    out = []
    src = """func @k(%A: memref<f64 x ?>, %S: memref<f64 x 2>) {
    %c0 = constant 0 : index
    %c1 = constant 1 : index
    %n = size %A[0] : index
    %z = constant 0.0 : f64
    %sum, %cnt = for %i = %c0, %n, %c1 init(%acc = %z, %k = %c0) -> (f64, index) {
        %v = load %A[%i] : f64
        %acc1 = add %acc, %v : f64
        %k1 = add %k, %c1 : index
        yield (%acc1, %k1)
    }
    %cf = cast %cnt : f64
    store %sum, %S[%c0]
    store %cf, %S[%c1]
}
"""
    a = _eighths("v04_for", 7)
    total = 0.0
    for v in a:
        total += v
    out.append(_v("for_init_yield", src, {"A": np.array(a), "S": np.zeros(2)},
                  {"S": [total, len(a)]}, ["for", "yield", "size", "cast", "add", "load",
                                           "store"], ["f64", "index"]))
    src = """func @k(%A: memref<i32 x ? x ? x ?>) {
    %c0 = constant 0 : index
    %c1 = constant 1 : index
    %m = size %A[0] : index
    %n = size %A[1] : index
    %p = size %A[2] : index
    foreach (%i, %j, %k) = (%c0, %c1, %c0), (%m, %n, %p) {
        %c100 = constant 100 : index
        %c10 = constant 10 : index
DECIMAL_IJK        store %w, %A[%i, %j, %k]
    }
}
""".replace("DECIMAL_IJK", _decimal("%i", "%j", "%k", 8))
    a = np.full((3, 4, 2), -1, np.int32)
    e = [[[-1 if j < 1 else 100 * i + 10 * j + k for k in range(2)] for j in range(4)]
         for i in range(3)]
    out.append(_v("foreach_3d", src, {"A": a}, {"A": e}, ["foreach", "size", "mul", "add",
                                                          "cast", "store"], ["i32", "index"]))
    src = """func @k(%A: memref<f32 x 4 x 3>, %B: memref<f32 x 4 x 3>, %C: memref<f32 x 4 x 3>) {
    %one = constant 1.0 : f32
    %half = constant 0.5 : f32
    %zero = constant 0.0 : f32
    cumsum %one, %A, 0, %zero, %B
    cumsum %half, %A, 1, %one, %C
}
"""
    av = [[v for v in _eighths(f"v04_cumsum_{r}", 3)] for r in range(4)]
    cv = [[v for v in _eighths(f"v04_cumsum_c{r}", 3)] for r in range(4)]
    b = [[0.0] * 3 for _ in range(4)]
    for j in range(3):
        s = 0.0
        for i in range(4):
            s += av[i][j]
            b[i][j] = s
    c = [[0.0] * 3 for _ in range(4)]
    for i in range(4):
        s = 0.0
        for j in range(3):
            s += av[i][j]
            c[i][j] = 0.5 * s + cv[i][j]
    args = {"A": np.array(av, np.float32), "B": np.zeros((4, 3), np.float32),
            "C": np.array(cv, np.float32)}
    out.append(_v("cumsum_modes", src, args, {"B": b, "C": c}, ["cumsum", "constant"],
                  ["f32"]))
    # v0.4 types: f16 summed in f32 and rounded once per element, c32 componentwise (eighths:
    # every partial sum exact)
    src = """func @k(%A: memref<f16 x 4 x 3>, %B: memref<f16 x 4 x 3>, %Z: memref<c32 x 4 x 3>,
        %W: memref<c32 x 4 x 3>) {
    %one = constant 1.0 : f16
    %zero = constant 0.0 : f16
    %two = constant [2.0, 0.0] : c32
    %cone = constant [1.0, 0.0] : c32
    cumsum %one, %A, 0, %zero, %B
    cumsum %two, %Z, 1, %cone, %W
}
"""
    zv = [[complex(av[i][j], cv[i][j]) for j in range(3)] for i in range(4)]
    w = [[0j] * 3 for _ in range(4)]
    for i in range(4):
        s = 0j
        for j in range(3):
            s += zv[i][j]
            w[i][j] = 2 * s + zv[i][j]
    args = {"A": np.array(av, np.float16), "B": np.zeros((4, 3), np.float16),
            "Z": np.array(zv, np.complex64), "W": np.array(zv, np.complex64)}
    out.append(_v("cumsum_v04_types", src, args, {"B": b, "W": w}, ["cumsum", "constant"],
                  ["f16", "c32"]))
    return out


# the grid builtins and the three mode indices both grid kernels start with
_GRID_HEAD = """    %gx = group_id.x : index
    %gy = group_id.y : index
    %gz = group_id.z : index
    %nx = num_groups.x : index
    %ny = num_groups.y : index
    %nz = num_groups.z : index
    %c0 = constant 0 : index
    %c1 = constant 1 : index
    %c2 = constant 2 : index
"""


def builtins() -> list[ValidCase]:
    src = """func @k(%A: memref<i32 x 3 x 3>) {
GRID_HEADDECIMAL_N    %y = cast %gy : i32
    %z = cast %gz : i32
    store %w, %A[%gx, %c0]
    store %y, %A[%gx, %c1]
    store %z, %A[%gx, %c2]
}
""".replace("GRID_HEAD", _GRID_HEAD).replace("DECIMAL_N", _decimal("%nx", "%ny", "%nz", 4)) \
        .replace("    %c0 = constant 0 : index\n",
            "    %c0 = constant 0 : index\n    %c10 = constant 10 : index\n"
            "    %c100 = constant 100 : index\n")
    exp = [[3 * 100 + 10 + 1, 0, 0] for _ in range(3)]
    return [_v("group_id_xyz", src, {"A": np.zeros((3, 3), np.int32)}, {"A": exp},
               ["group_id", "num_groups", "cast", "store", "mul", "add"], ["i32", "index"],
               groups=3), _grid3d()]


def _grid3d() -> ValidCase:
    """A 3-D grid (3, 2, 2): each work-group writes its ids and the grid's sizes into the row
    of its linear id x + 3 (y + 2 z), computed from the ids and sizes themselves."""
    src = """func @k(%A: memref<i32 x 12 x 4>) {
GRID_HEAD    %c3 = constant 3 : index
    %c10 = constant 10 : index
    %c100 = constant 100 : index
DECIMAL_N    %yz = mul %ny, %gz : index
    %yzy = add %yz, %gy : index
    %row0 = mul %nx, %yzy : index
    %row = add %row0, %gx : index
    %x = cast %gx : i32
    %y = cast %gy : i32
    %z = cast %gz : i32
    store %w, %A[%row, %c0]
    store %x, %A[%row, %c1]
    store %y, %A[%row, %c2]
    store %z, %A[%row, %c3]
}
""".replace("GRID_HEAD", _GRID_HEAD).replace("DECIMAL_N", _decimal("%nx", "%ny", "%nz", 4))
    exp = [[0] * 4 for _ in range(12)]
    for z in range(2):
        for y in range(2):
            for x in range(3):
                exp[x + 3 * (y + 2 * z)] = [3 * 100 + 2 * 10 + 2, x, y, z]
    return _v("group_id_grid3d", src, {"A": np.full((12, 4), -1, np.int32)}, {"A": exp},
              ["group_id", "num_groups", "cast", "store", "mul", "add"], ["i32", "index"],
              groups=(3, 2, 2))


def atomics() -> list[ValidCase]:
    src = f"""func @k(%A: memref<i32 x 3>, %F: memref<f32>) {SPMD} {{
    parallel {{
        %c0 = constant 0 : index
        %c1 = constant 1 : index
        %c2 = constant 2 : index
        %one = constant 1 : i32
        %half = constant 0.5 : f32
        %s = subgroup_linear_id : i32
        %k = subgroup_local_id : i32
        %csg = constant {SG} : i32
        %t = mul %s, %csg : i32
        %l = add %t, %k : i32
        %0 = atomic_add %one, %A[%c0] : i32
        %1 = atomic_max %l, %A[%c1] : i32
        %2 = atomic_min.work_group.relaxed %l, %A[%c2] : i32
        %3 = atomic_add %half, %F[] : f32
    }}
}}
"""
    groups = 2
    a = [5, -7, 100]
    f = 1.25
    for _g in range(groups):
        for lid in range(2 * SG):
            a[0] += 1
            a[1] = max(a[1], lid)
            a[2] = min(a[2], lid)
            f += 0.5
    args = {"A": np.array([5, -7, 100], np.int32), "F": np.asarray(1.25, np.float32)}
    return [_v("atomics_work_items", src, args, {"A": a, "F": f},
               ["atomic_add", "atomic_max", "atomic_min", "parallel", "subgroup_linear_id",
                "subgroup_local_id"], ["i32", "f32"], groups=groups)]


def atomics_v04_types() -> list[ValidCase]:
    """Atomics on f16, bf16 and c32 elements by every work-item, and cumsum in f16 (small
    integers: exact in any order of the updates)."""
    src = f"""func @k(%H: memref<f16 x 2>, %B: memref<bf16 x 2>, %C: memref<c32 x 2>) {SPMD} {{
    parallel {{
        %c0 = constant 0 : index
        %c1 = constant 1 : index
        %one = constant 1.0 : f16
        %z = constant [0.5, -1.0] : c32
        %s = subgroup_linear_id : i32
        %k = subgroup_local_id : i32
        %csg = constant {SG} : i32
        %t = mul %s, %csg : i32
        %l = add %t, %k : i32
        %lh = cast %l : f16
        %lb = cast %l : bf16
        %0 = atomic_add %one, %H[%c0] : f16
        %1 = atomic_max.device.acquire_release %lh, %H[%c1] : f16
        %2 = atomic_min %lb, %B[%c0] : bf16
        %3 = atomic_max.work_group.relaxed %lb, %B[%c1] : bf16
        %4 = atomic_add %z, %C[%c0] : c32
        %5 = atomic_load %C[%c1] : c32
        %6 = atomic_add %5, %C[%c0] : c32
        atomic_store %5, %C[%c1]
    }}
}}
"""
    groups, n = 2, 2 * SG
    args = {"H": np.array([5.0, -3.0], np.float16),
            "B": np.array([100.0, -2.0], ml_dtypes.bfloat16),
            "C": np.array([1 + 1j, 2 - 2j], np.complex64)}
    # every work-item adds once; C[1] is only read, and stored back unchanged by each
    exp = {"H": [5.0 + groups * n, n - 1], "B": [0.0, n - 1],
           "C": [1 + 1j + groups * n * ((0.5 - 1j) + (2 - 2j)), 2 - 2j]}
    return [_v("atomics_v04_types", src, args, exp, ["atomic_add", "atomic_max",
               "atomic_min", "atomic_load", "atomic_store", "parallel"],
               ["f16", "bf16", "c32"], groups=groups)]


# --- work-items and sub-groups ---------------------------------------------------------------

_LANE = f"""        %s = subgroup_linear_id : i32
        %k = subgroup_local_id : i32
        %ki = cast %k : index
        %si = cast %s : index
        %csg = constant {SG} : index
        %t = mul %si, %csg : index
        %l = add %t, %ki : index
"""

_SG_OPS = ["subgroup_broadcast", "subgroup_reduce_add", "subgroup_reduce_max",
           "subgroup_reduce_min", "subgroup_inclusive_scan_add", "subgroup_inclusive_scan_max",
           "subgroup_inclusive_scan_min", "subgroup_exclusive_scan_add",
           "subgroup_exclusive_scan_max", "subgroup_exclusive_scan_min"]


def _sg_reference(x: list, op: str, lo, hi) -> list:
    """One sub-group's results, lane by lane."""
    if op == "subgroup_broadcast":
        return [x[3]] * len(x)
    kind, _, fold = op.rpartition("_")
    f = {"add": lambda a, b: a + b, "max": max, "min": min}[fold]
    ident = {"add": 0, "max": lo, "min": hi}[fold]
    res = []
    for p in range(len(x)):
        if kind.endswith("reduce"):
            part = x
        elif kind.endswith("inclusive_scan"):
            part = x[:p + 1]
        else:
            part = x[:p]
        acc = ident
        for v in part:
            acc = f(acc, v)
        res.append(acc)
    return res


def subgroups() -> list[ValidCase]:
    out = []
    for t, dt, lo, hi in (("i32", np.int32, -2**31, 2**31 - 1),
                          ("f32", np.float32, -math.inf, math.inf),
                          ("i64", np.int64, -2**63, 2**63 - 1),
                          ("f64", np.float64, -math.inf, math.inf),
                          ("f16", np.float16, -math.inf, math.inf)):
        body = "".join(
            f"        %r{j} = {op} %x{', %c3' if op == 'subgroup_broadcast' else ''} : {t}\n"
            f"        %o{j} = constant {j} : index\n        store %r{j}, %R[%l, %o{j}]\n"
            for j, op in enumerate(_SG_OPS))
        src = (f"func @k(%X: memref<{t} x {2 * SG}>, %R: memref<{t} x {2 * SG} x "
               f"{len(_SG_OPS)}>) "
               f"{SPMD} {{\n    parallel {{\n{_LANE}        %c3 = constant 3 : i32\n"
               f"        %x = load %X[%l] : {t}\n{body}    }}\n}}\n")
        x = [int(v) for v in rng_for(f"v04_sg_{t}").integers(-20, 21, 2 * SG)]
        r = [[0] * len(_SG_OPS) for _ in range(2 * SG)]
        for j, op in enumerate(_SG_OPS):
            for sg in range(2):
                lanes = _sg_reference(x[SG * sg:SG * sg + SG], op, lo, hi)
                for p in range(SG):
                    r[SG * sg + p][j] = lanes[p]
        args = {"X": np.array(x, dt), "R": np.zeros((2 * SG, len(_SG_OPS)), dt)}
        out.append(_v(f"subgroup_ops_{t}", src, args, {"R": r},
                      _SG_OPS + ["parallel", "subgroup_linear_id", "subgroup_local_id", "load",
                                 "store"], [t, "index"]))
    return out


def barrier_local() -> list[ValidCase]:
    src = f"""func @k(%A: memref<f32 x {2 * SG}>, %B: memref<f32 x {2 * SG}>) {SPMD} {{
    %L = alloca : memref<f32 x {2 * SG}, local>
    parallel {{
{_LANE}        %x = load %A[%l] : f32
        store %x, %L[%l]
        barrier.local
        %last = constant {2 * SG - 1} : index
        %m = sub %last, %l : index
        %y = load %L[%m] : f32
        store %y, %B[%l]
    }}
}}
"""
    a = _eighths("v04_barrier", 2 * SG)
    return [_v("barrier_local_reverse", src, {"A": np.array(a, np.float32),
                                              "B": np.zeros(2 * SG, np.float32)},
               {"B": list(reversed(a))}, ["barrier", "alloca", "parallel", "load", "store"],
               ["f32"])]


def foreach_tile() -> list[ValidCase]:
    src = f"""func @k(%A: memref<f32 x ? x ?>, %B: memref<f32 x ? x ?>) {SPMD} {{
    %c0 = constant 0 : index
    %c1 = constant 1 : index
    %m = size %A[0] : index
    %n = size %A[1] : index
    foreach_tile (%i, %j) = (%c0, %c0), (%m, %n) as (%si, %sj) <= ({SG}, 2) {{
        %k = subgroup_local_id : i32
        %ki = cast %k : index
        %p = less_than %ki, %si : bool
        if %p {{
            %r = add %i, %ki : index
            for %c = %c0, %sj {{
                %col = add %j, %c : index
                %x = load %A[%r, %col] : f32
                %y = add %x, %x : f32
                store %y, %B[%r, %col]
            }}
        }}
    }}
}}
"""
    a = [_eighths(f"v04_tile_{r}", 5) for r in range(SG + 4)]  # a full tile and an edge
    b = [[v + v for v in row] for row in a]
    args = {"A": np.array(a, np.float32), "B": np.zeros((SG + 4, 5), np.float32)}
    return [_v("foreach_tile_edges", src, args, {"B": b},
               ["foreach_tile", "subgroup_local_id", "less_than", "if", "for", "size", "add",
                "load", "store"], ["f32", "index"])]


# --- cooperative matrices (one sub-group of SG: lane p holds row p, component v column v) ---

SG1 = f"attributes{{subgroup_size={SG}, work_group_size=[{SG}, 1]}}"
M = SG  # rows of matrix_a and matrix_acc: a multiple of the sub-group size


def coopmatrix() -> list[ValidCase]:
    out = []
    for t, dt in (("f32", np.float32), ("f16", np.float16)):
        src = f"""func @k(%A: memref<{t} x {M} x 8>, %B: memref<{t} x 8 x 8>,
           %C: memref<f32 x {M} x 8>, %D: memref<f32 x {M} x 8>) {SG1} {{
    parallel {{
        %c0 = constant 0 : index
        %a = cooperative_matrix_load %A[%c0, %c0] : coopmatrix<{t} x {M} x 8, matrix_a>
        %b = cooperative_matrix_load.t %B[%c0, %c0] : coopmatrix<{t} x 8 x 8, matrix_b>
        %c = cooperative_matrix_load %C[%c0, %c0] : coopmatrix<f32 x {M} x 8, matrix_acc>
        %d = cooperative_matrix_mul_add %a, %b, %c : coopmatrix<f32 x {M} x 8, matrix_acc>
        cooperative_matrix_store %d, %D[%c0, %c0]
    }}
}}
"""
        a = [_eighths(f"v04_cm_{t}_a{r}", 8) for r in range(M)]
        b = [_eighths(f"v04_cm_{t}_b{r}", 8) for r in range(8)]
        c = [_eighths(f"v04_cm_{t}_c{r}", 8) for r in range(M)]
        d = [[0.0] * 8 for _ in range(M)]
        for m in range(M):
            for n in range(8):
                acc = c[m][n]
                for k in range(8):
                    acc += a[m][k] * b[n][k]  # B loaded transposed: entry (k, n) is B[n, k]
                d[m][n] = acc
        args = {"A": np.array(a, dt), "B": np.array(b, dt), "C": np.array(c, np.float32),
                "D": np.zeros((M, 8), np.float32)}
        out.append(_v(f"coopmatrix_mul_add_{t}", src, args, {"D": d},
                      ["cooperative_matrix_load", "cooperative_matrix_mul_add",
                       "cooperative_matrix_store", "parallel"], [t, "f32"]))
    acc = f"coopmatrix<f32 x {M} x 8, matrix_acc>"
    src = f"""func @k(%A: memref<f32 x {M} x 8>, %X: memref<f32 x {M}>, %C: memref<f32 x {M} x 8>,
           %R: memref<f32 x {M} x 1>, %Q: memref<f32 x 1 x 8>) {SG1} {{
    parallel {{
        %c0 = constant 0 : index
        %m = cooperative_matrix_load %A[%c0, %c0] : {acc}
        %e = cooperative_matrix_extract %m[2] : f32
        %k = subgroup_local_id : i32
        %ki = cast %k : index
        store %e, %X[%ki]
        %m2 = cooperative_matrix_insert %e, %m[0] : {acc}
        %two = constant 2.0 : f32
        %m3 = cooperative_matrix_scale %two, %m2 : {acc}
        %m4 = cooperative_matrix_apply (%i, %j, %v) = %m3 -> {acc} {{
            %c10 = constant 10 : i32
            %i10 = mul %i, %c10 : i32
            %ij = add %i10, %j : i32
            %f = cast %ij : f32
            %w = add %v, %f : f32
            yield (%w)
        }}
        cooperative_matrix_store %m4, %C[%c0, %c0]
        %r = cooperative_matrix_reduce_add.row %m4 : coopmatrix<f32 x {M} x 1, matrix_acc>
        cooperative_matrix_store %r, %R[%c0, %c0]
        %q = cooperative_matrix_reduce_max.column %m4 : coopmatrix<f32 x 1 x 8, matrix_acc>
        cooperative_matrix_store %q, %Q[%c0, %c0]
    }}
}}
"""
    a = [_eighths(f"v04_cm_el{r}", 8) for r in range(M)]
    x = [a[p][2] for p in range(M)]
    m = [[(x[i] if j == 0 else a[i][j]) * 2 + (10 * i + j) for j in range(8)] for i in range(M)]
    rows = []
    for i in range(M):
        s = 0.0
        for j in range(8):
            s += m[i][j]
        rows.append([s])
    cols = [[max(m[i][j] for i in range(M)) for j in range(8)]]
    args = {"A": np.array(a, np.float32), "X": np.zeros(M, np.float32),
            "C": np.zeros((M, 8), np.float32), "R": np.zeros((M, 1), np.float32),
            "Q": np.zeros((1, 8), np.float32)}
    out.append(_v("coopmatrix_elements", src, args, {"X": x, "C": m, "R": rows, "Q": cols},
                  ["cooperative_matrix_load", "cooperative_matrix_extract",
                   "cooperative_matrix_insert", "cooperative_matrix_scale",
                   "cooperative_matrix_apply", "cooperative_matrix_store",
                   "cooperative_matrix_reduce_add", "cooperative_matrix_reduce_max",
                   "subgroup_local_id", "parallel", "yield", "mul", "add", "cast"], ["f32", "i32"]))
    return out


def cases() -> list[ValidCase]:
    return [*constants(), *arith(), *unary(), *math_fns(), *compare(), *casts(), *control(),
            *builtins(), *atomics(), *atomics_v04_types(), *subgroups(), *barrier_local(),
            *foreach_tile(), *coopmatrix()]
