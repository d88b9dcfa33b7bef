"""Runnable v0.4 kernels on memory: the BLAS instructions in v0.4 spelling (transposes,
`.atomic` across work-groups) on every layout (canonical, strided, dynamic shape, dynamic
strides), group arguments with `offset: ?`, views (subview, expand, fuse, size) of a `local`
alloca, `associated`, atomic_load/atomic_store, the sub-group builtins on a 2-D work-group and
a 3-D grid of work-groups. Every expected result is a plain Python loop written here."""

from __future__ import annotations

import numpy as np

from corpus.cases.model import ValidCase
from corpus.cases.util import LAYOUTS, layout, rng_for
from corpus.cases.v04.core import SG, _v

NP = {"f32": np.float32, "f64": np.float64, "c32": np.complex64, "i32": np.int32,
      "i16": np.int16}


def memref04(t: str, shape, kind: str = "canonical", space: str = "") -> tuple[str, object]:
    """The v0.4 spelling of a memref of `shape` in layout `kind` (corpus.cases.util.layout) and
    its Layout (run-time strides for dynstride)."""
    lay = layout(kind, shape)
    dims = "".join(f" x {'?' if d is None else d}" for d in lay.shape)
    parts = [f"{t}{dims}"]
    if kind in ("strided", "dynstride"):
        parts.append("strided<" + ", ".join("?" if s is None else str(s) for s in lay.strides)
                     + ">")
    if space:
        parts.append(space)
    return f"memref<{', '.join(parts)}>", lay


def _data(name: str, t: str, shape) -> np.ndarray:
    """Small integers, or eighths (complex: both parts), so sums of products are exact."""
    rng = rng_for(name)
    n = int(np.prod(shape))
    if t.startswith("i"):
        flat = [int(v) for v in rng.integers(-3, 4, n)]
    elif t.startswith("c"):
        re, im = rng.integers(-16, 17, n), rng.integers(-16, 17, n)
        flat = [complex(int(a) / 8, int(b) / 8) for a, b in zip(re, im)]
    else:
        flat = [int(v) / 8 for v in rng.integers(-16, 17, n)]
    return np.array(flat, NP[t]).reshape(shape)


def _mat(x: np.ndarray) -> list:
    """Python numbers (lists of lists) for the references: no NumPy arithmetic."""
    return x.tolist()


def _scalars(t: str) -> tuple:
    return {"f32": (1.5, -0.5), "f64": (0.75, 2.0), "c32": (complex(1, 0.5), complex(0.5, -1)),
            "i32": (2, -1)}[t]


# --- BLAS ------------------------------------------------------------------------------------

BLAS_TYPE = {"canonical": "f32", "strided": "f64", "dynshape": "c32", "dynstride": "i32"}

# argument: shape
_SHAPES = {"A": (4, 3), "B": (3, 2), "Bt": (2, 3), "C": (4, 2), "D": (4, 2), "y": (4,),
           "x": (3,), "xt": (3,), "u": (3,), "v": (2,), "G": (3, 2), "w": (4,), "y2": (4,),
           "F": (4, 3), "Ft": (3, 4), "s": (4,), "st": (3,)}
_OUTPUTS = ("C", "D", "x", "xt", "G", "w", "F", "Ft", "s", "st")


def _gemm(alpha, a, b, beta, c, ta=False, tb=False):
    m, n = len(c), len(c[0])
    k = len(a) if ta else len(a[0])
    out = [[0] * n for _ in range(m)]
    for i in range(m):
        for j in range(n):
            acc = 0
            for p in range(k):
                acc += (a[p][i] if ta else a[i][p]) * (b[j][p] if tb else b[p][j])
            out[i][j] = alpha * acc + beta * c[i][j]
    return out


def _gemv(alpha, a, x, beta, y, ta=False):
    m = len(y)
    k = len(x)
    return [alpha * sum((a[p][i] if ta else a[i][p]) * x[p] for p in range(k)) + beta * y[i]
            for i in range(m)]


def blas() -> list[ValidCase]:
    """gemm, gemm.n.t, gemv, gemv.t, ger, hadamard, axpby, axpby.t, sum, sum.t in one kernel per
    layout; every argument in that layout."""
    out = []
    for kind in LAYOUTS:
        t = BLAS_TYPE[kind]
        alpha, beta = _scalars(t)
        params, args = [], {}
        for name, shape in _SHAPES.items():
            text, lay = memref04(t, shape, kind)
            params.append(f"%{name}: {text}")
            args[name] = _data(f"v04_blas_{kind}_{name}", t, shape)
            if lay.runtime_strides is not None:
                args[f"{name}.strides"] = np.asarray(lay.runtime_strides, np.int64)
        params += [f"%alpha: {t}", f"%beta: {t}"]
        args["alpha"], args["beta"] = np.asarray(alpha, NP[t]), np.asarray(beta, NP[t])
        src = (f"func @k({', '.join(params)}) {{\n"
               "    gemm %alpha, %A, %B, %beta, %C\n"
               "    gemm.n.t %alpha, %A, %Bt, %beta, %D\n"
               "    gemv %alpha, %A, %x, %beta, %y2\n"
               "    gemv.t %alpha, %A, %y, %beta, %xt\n"
               "    ger %alpha, %u, %v, %beta, %G\n"
               "    hadamard %alpha, %y, %y2, %beta, %w\n"
               "    axpby %alpha, %A, %beta, %F\n"
               "    axpby.t %alpha, %A, %beta, %Ft\n"
               "    sum %alpha, %A, %beta, %s\n"
               "    sum.t %alpha, %A, %beta, %st\n"
               "}\n")
        d = {k: _mat(v) for k, v in args.items() if k in _SHAPES}
        y2 = _gemv(alpha, d["A"], d["x"], beta, d["y2"])
        exp = {
            "C": _gemm(alpha, d["A"], d["B"], beta, d["C"]),
            "D": _gemm(alpha, d["A"], d["Bt"], beta, d["D"], tb=True),
            "y2": y2,
            "xt": _gemv(alpha, d["A"], d["y"], beta, d["xt"], ta=True),
            "G": [[alpha * d["u"][i] * d["v"][j] + beta * d["G"][i][j] for j in range(2)]
                  for i in range(3)],
            # hadamard reads y2 after gemv wrote it: the instructions run in order
            "w": [alpha * d["y"][i] * y2[i] + beta * d["w"][i] for i in range(4)],
            "F": [[alpha * d["A"][i][j] + beta * d["F"][i][j] for j in range(3)]
                  for i in range(4)],
            "Ft": [[alpha * d["A"][j][i] + beta * d["Ft"][i][j] for j in range(4)]
                   for i in range(3)],
            "s": [alpha * sum(d["A"][i][j] for j in range(3)) + beta * d["s"][i]
                  for i in range(4)],
            "st": [alpha * sum(d["A"][i][j] for i in range(4)) + beta * d["st"][j]
                   for j in range(3)],
        }
        case = _v(f"blas_{kind}", src, args, exp,
                  ["gemm", "gemv", "ger", "hadamard", "axpby", "sum"], [t])
        case.expected = {k: v for k, v in case.expected.items() if k not in ("alpha", "beta")}
        out.append(case)
    return out


def blas_atomic() -> list[ValidCase]:
    """`.atomic` with beta 1 from 3 work-groups: each adds its update atomically, so the result
    is C + 3 alpha op(A)op(B) in any order (eighths: exact). gemm has a case of its own, so that
    a compiler failing on one instruction still has the others judged."""
    groups = 3
    shapes = {"A": (4, 3), "B": (2, 3), "C": (4, 2), "x": (3,), "y": (4,), "u": (4,),
              "v": (3,), "G": (4, 3), "F": (3, 4), "s": (3,), "h": (4,), "Q": (4, 3)}
    args = {k: _data(f"v04_blas_atomic_{k}", "f32", s) for k, s in shapes.items()}
    d = {k: _mat(v) for k, v in args.items()}
    a, g = 0.5, groups
    upd = _gemm(a, d["A"], d["B"], 0, d["C"], tb=True)
    exp = {
        "C": [[d["C"][i][j] + g * upd[i][j] for j in range(2)] for i in range(4)],
        "y": [d["y"][i] + g * v for i, v in enumerate(_gemv(a, d["A"], d["x"], 0, d["y"]))],
        "G": [[d["G"][i][j] + g * a * d["u"][i] * d["v"][j] for j in range(3)] for i in range(4)],
        "F": [[d["F"][i][j] + g * a * d["A"][j][i] for j in range(4)] for i in range(3)],
        "s": [d["s"][j] + g * a * sum(d["A"][i][j] for i in range(4)) for j in range(3)],
        "h": [d["h"][i] + g * a * d["u"][i] * d["u"][i] for i in range(4)],
    }
    q = [row[:] for row in d["Q"]]
    for i in range(4):
        run = 0.0
        for j in range(3):
            run += d["A"][i][j]
            q[i][j] += g * a * run
    exp["Q"] = q
    out = []
    for name, lines, keys in (
            ("gemm_atomic_groups", ["gemm.atomic.n.t %alpha, %A, %B, %one, %C"], "ABC"),
            ("blas_atomic_groups", ["gemv.atomic %alpha, %A, %x, %one, %y",
                                    "ger.atomic %alpha, %u, %v, %one, %G",
                                    "axpby.atomic.t %alpha, %A, %one, %F",
                                    "sum.atomic.t %alpha, %A, %one, %s",
                                    "hadamard.atomic %alpha, %u, %u, %one, %h",
                                    "cumsum.atomic %alpha, %A, 1, %one, %Q"],
             ["A", "x", "y", "u", "v", "G", "F", "s", "h", "Q"])):
        params = ", ".join(f"%{k}: {memref04('f32', shapes[k])[0]}" for k in keys)
        src = (f"func @k({params}) {{\n"
               "    %alpha = constant 0.5 : f32\n    %one = constant 1.0 : f32\n"
               + "".join(f"    {line}\n" for line in lines) + "}\n")
        out.append(_v(name, src, {k: args[k] for k in keys},
                      {k: v for k, v in exp.items() if k in keys},
                      [line.split(".")[0] for line in lines], ["f32"], groups=groups))
    return out


# --- groups, views, local memory -------------------------------------------------------------

def group_args() -> list[ValidCase]:
    """A group of dynamic-shape matrices with a dynamic offset and a group of strided vectors
    with a static offset: work-group g copies member g (the .npz holds what the kernel sees
    after the offset) into column g of the outputs. The output view has the member's dynamic
    size: tinytc v0.4.0 refuses axpby of a `?` size into a static one ("Incompatible tensor
    shapes"), which our checker accepts; this case is about groups, not that."""
    src = """func @k(%G: group<memref<f32 x ? x 2> x ?, offset: ?>,
         %H: group<memref<i16 x 3, strided<2>> x 4, offset: 2>,
         %O: memref<f32 x 3 x 2 x 4>, %P: memref<i16 x 4>) {
    %g = group_id.x : index
    %a = load %G[%g] : memref<f32 x ? x 2>
    %m = size %a[0] : index
    %o = subview %O[0:%m, 0:2, %g] : memref<f32 x ? x 2, strided<1, 3>>
    %one = constant 1.0 : f32
    %zero = constant 0.0 : f32
    axpby %one, %a, %zero, %o
    %h = load %H[%g] : memref<i16 x 3, strided<2>>
    %c1 = constant 1 : index
    %x = load %h[%c1] : i16
    store %x, %P[%g]
}
"""
    gdata = _data("v04_group_G", "f32", (4, 3, 2))
    hdata = _data("v04_group_H", "i16", (4, 3))
    args = {"G": gdata, "G.offset": np.asarray(5, np.int64), "H": hdata,
            "O": np.zeros((3, 2, 4), np.float32), "P": np.zeros(4, np.int16)}
    g, h = _mat(gdata), _mat(hdata)
    o = [[[g[m][i][j] for m in range(4)] for j in range(2)] for i in range(3)]
    exp = {"O": o, "P": [h[m][1] for m in range(4)]}
    case = _v("group_offsets", src, args, exp, ["group_id", "load", "subview", "axpby", "store",
                                               "constant"], ["f32", "i16", "index"], groups=4)
    case.expected = {k: v for k, v in case.expected.items() if k != "G.offset"}
    return [case]


def views() -> list[ValidCase]:
    """associated, a local alloca filled by axpby, fuse, expand (static and by a value),
    subview (a slice and a rank-reducing offset) and size."""
    src = """func @k(%A: memref<f32 x 4 x 6>, %B: memref<f32 x 24>, %C: memref<f32 x 2 x 3>,
         %R: memref<f32>, %S: memref<index x 3>) {
    %has = associated %A : bool
    %T = alloca : memref<f32 x 4 x 6, local>
    %one = constant 1.0 : f32
    %zero = constant 0.0 : f32
    if %has {
        axpby %one, %A, %zero, %T
    }
    %f = fuse %T[0, 1] : memref<f32 x 24, local>
    axpby %one, %f, %zero, %B
    %e = expand %f[0 -> 2 x 12] : memref<f32 x 2 x 12, local>
    %c0 = constant 0 : index
    %c1 = constant 1 : index
    %c2 = constant 2 : index
    %c3 = constant 3 : index
    %c4 = constant 4 : index
    %v = subview %e[0:2, %c3:3] : memref<f32 x 2 x 3, local>
    axpby %one, %v, %zero, %C
    %w = subview %A[%c1, 0:6] : memref<f32 x 6, strided<4>>
    sum %one, %w, %zero, %R
    %n = size %e[1] : index
    store %n, %S[%c0]
    %d = expand %B[0 -> %c4 x 6] : memref<f32 x ? x 6>
    %m = size %d[0] : index
    store %m, %S[%c1]
    %k = size %w[0] : index
    store %k, %S[%c2]
}
"""
    a = _data("v04_views_A", "f32", (4, 6))
    args = {"A": a, "B": np.zeros(24, np.float32), "C": np.zeros((2, 3), np.float32),
            "R": np.asarray(0.0, np.float32), "S": np.zeros(3, np.int64)}
    m = _mat(a)
    flat = [m[i][j] for j in range(6) for i in range(4)]  # column-major fuse
    exp = {"B": flat, "C": [[flat[i + 2 * (3 + j)] for j in range(3)] for i in range(2)],
           "R": sum(m[1][j] for j in range(6)), "S": [12, 4, 6]}
    case = _v("views_local", src, args, exp,
              ["associated", "alloca", "if", "axpby", "fuse", "expand", "subview", "sum", "size",
               "store", "constant"], ["f32", "index", "bool"])
    return [case]


# --- work-items: atomics and sub-group builtins ----------------------------------------------

def atomics_builtins() -> list[ValidCase]:
    """A 2 SG x 2 work-group of sub-groups of SG (2 x 2 sub-groups): each work-item records the
    sub-group builtins and an atomic_load of an element nobody writes, and atomic_stores its
    lane number."""
    src = f"""func @k(%A: memref<i32 x 2>, %L: memref<i32 x {4 * SG} x 7>)
        attributes{{subgroup_size={SG}, work_group_size=[{2 * SG}, 2]}} {{
    parallel {{
        %c0 = constant 0 : index
        %c1 = constant 1 : index
        %c2 = constant 2 : index
        %c3 = constant 3 : index
        %c4 = constant 4 : index
        %c5 = constant 5 : index
        %c6 = constant 6 : index
        %csg = constant {SG} : index
        %s = subgroup_linear_id : i32
        %k = subgroup_local_id : i32
        %si = cast %s : index
        %ki = cast %k : index
        %t = mul %si, %csg : index
        %l = add %t, %ki : index
        %v = atomic_load %A[%c0] : i32
        %w = atomic_load.work_group.acquire %A[%c1] : i32
        %sum = add %v, %w : i32
        store %sum, %L[%l, %c0]
        %size = subgroup_size : i32
        store %size, %L[%l, %c1]
        %sx = subgroup_id.x : i32
        store %sx, %L[%l, %c2]
        %sy = subgroup_id.y : i32
        store %sy, %L[%l, %c3]
        %nx = num_subgroups.x : i32
        store %nx, %L[%l, %c4]
        %ny = num_subgroups.y : i32
        store %ny, %L[%l, %c5]
        atomic_store.work_group.release %k, %L[%l, %c6]
    }}
}}
"""
    rows = []
    for lin in range(4):
        sx, sy = lin % 2, lin // 2  # the linear id runs over x first
        for k in range(SG):
            rows.append([7 + 35, SG, sx, sy, 2, 2, k])
    args = {"A": np.array([7, 35], np.int32), "L": np.zeros((4 * SG, 7), np.int32)}
    return [_v("atomics_subgroup_builtins", src, args, {"L": rows},
               ["parallel", "atomic_load", "atomic_store", "subgroup_size", "subgroup_id",
                "num_subgroups", "subgroup_linear_id", "subgroup_local_id", "cast", "mul", "add",
                "store", "constant"], ["i32", "index"])]


def grid_3d() -> list[ValidCase]:
    """A 2 x 3 x 2 grid: work-group (x, y, z) writes 100 x + 10 y + z and the grid's sizes."""
    src = """func @k(%A: memref<i32 x 2 x 3 x 2>, %N: memref<i32 x 3>) {
    %gx = group_id.x : index
    %gy = group_id.y : index
    %gz = group_id.z : index
    %c100 = constant 100 : index
    %c10 = constant 10 : index
    %a = mul %gx, %c100 : index
    %b = mul %gy, %c10 : index
    %ab = add %a, %b : index
    %v = add %ab, %gz : index
    %w = cast %v : i32
    store %w, %A[%gx, %gy, %gz]
    %c0 = constant 0 : index
    %c1 = constant 1 : index
    %c2 = constant 2 : index
    %nx = num_groups.x : index
    %ny = num_groups.y : index
    %nz = num_groups.z : index
    %x = cast %nx : i32
    %y = cast %ny : i32
    %z = cast %nz : i32
    %p = equal %gx, %c0 : bool
    %q = equal %gy, %c0 : bool
    %r = equal %gz, %c0 : bool
    %pq = and %p, %q : bool
    %first = and %pq, %r : bool
    if %first {
        store %x, %N[%c0]
        store %y, %N[%c1]
        store %z, %N[%c2]
    }
}
"""
    a = [[[100 * x + 10 * y + z for z in range(2)] for y in range(3)] for x in range(2)]
    args = {"A": np.full((2, 3, 2), -1, np.int32), "N": np.zeros(3, np.int32)}
    return [_v("grid_3d", src, args, {"A": a, "N": [2, 3, 2]},
               ["group_id", "num_groups", "mul", "add", "cast", "equal", "and", "if", "store",
                "constant"], ["i32", "index", "bool"], groups=(2, 3, 2))]


def cases() -> list[ValidCase]:
    return [*blas(), *blas_atomic(), *group_args(), *views(), *atomics_builtins(), *grid_3d()]
