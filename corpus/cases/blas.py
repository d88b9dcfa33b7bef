"""Collective BLAS instructions (axpby, gemm, gemv, ger, hadamard_product, sum) over scalar
types, layouts and work-group counts.

Each family has its own NumPy reference below (the formulas of spec v0.2). References compute
in float64 / int64 and round once to the output type; inputs are multiples of 1/8 or small
integers, so the correctly rounded result is also what any summation order gives, except in
the `rough` cases, which the comparison checks with fuzz.oracle.compare's error bound.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from corpus.cases.model import ValidCase
from corpus.cases.util import FLOATS, LAYOUTS, const, dtype, layout, outputs, rng_for, scalar, tags

M, N, K = 4, 3, 5


def _op(x: np.ndarray, trans: bool) -> np.ndarray:
    return x.T if trans and x.ndim == 2 else x


# --- the references, one per instruction (arguments already widened) ----------------------

def ref_axpby(alpha, a, beta, b, trans):
    return alpha * _op(a, trans) + _beta_term(beta, b)


def ref_gemm(alpha, a, bm, beta, c, ta, tb):
    return alpha * (_op(a, ta) @ _op(bm, tb)) + _beta_term(beta, c)


def ref_gemv(alpha, a, bv, beta, c, ta):
    return alpha * (_op(a, ta) @ bv) + _beta_term(beta, c)


def ref_ger(alpha, a, bv, beta, c):
    return alpha * np.outer(a, bv) + _beta_term(beta, c)


def ref_hadamard(alpha, a, bv, beta, c):
    return alpha * (a * bv) + _beta_term(beta, c)


def ref_sum(alpha, a, beta, b, trans):
    s = _op(a, trans).sum(axis=-1) if a.ndim == 2 else a.sum()
    return alpha * s + _beta_term(beta, b)


def _beta_term(beta, c):
    # BLAS convention (docs/semantics.md "Collectives"): beta = 0 never reads C, so NaN there
    # does not propagate.
    return np.zeros_like(c) if beta == 0 else beta * c


@dataclass
class Family:
    instruction: str  # tag
    mnemonic: str
    inputs: list[tuple[str, tuple]]  # (name, logical shape)
    output: tuple[str, tuple]
    ref: Callable


def family(instr: str, variant: int, m: int = M, n: int = N, k: int = K) -> Family:
    ta, tb = bool(variant & 1), bool(variant & 2)
    t = lambda x: ".t" if x else ".n"  # noqa: E731
    if instr == "axpby":
        shape = (m, n) if variant % 3 else (m,)
        a_shape = shape[::-1] if ta and len(shape) == 2 else shape
        return Family(instr, f"axpby{t(ta)}", [("A", a_shape)], ("B", shape),
                      lambda al, a, be, b: ref_axpby(al, a, be, b, ta))
    if instr == "gemm":
        return Family(instr, f"gemm{t(ta)}{t(tb)}",
                      [("A", (k, m) if ta else (m, k)), ("B", (n, k) if tb else (k, n))],
                      ("C", (m, n)), lambda al, a, b, be, c: ref_gemm(al, a, b, be, c, ta, tb))
    if instr == "gemv":
        return Family(instr, f"gemv{t(ta)}", [("A", (k, m) if ta else (m, k)), ("b", (k,))],
                      ("c", (m,)), lambda al, a, b, be, c: ref_gemv(al, a, b, be, c, ta))
    if instr == "ger":
        return Family(instr, "ger", [("a", (m,)), ("b", (n,))], ("C", (m, n)), ref_ger)
    if instr == "hadamard":
        return Family(instr, "hadamard_product", [("a", (m,)), ("b", (m,))], ("c", (m,)),
                      ref_hadamard)
    if instr == "sum":
        if variant % 3 == 0:
            return Family(instr, f"sum{t(ta)}", [("A", (m,))], ("b", ()),
                          lambda al, a, be, b: ref_sum(al, a, be, b, ta))
        return Family(instr, f"sum{t(ta)}", [("A", (n, m) if ta else (m, n))], ("b", (m,)),
                      lambda al, a, be, b: ref_sum(al, a, be, b, ta))
    raise ValueError(instr)


INSTRUCTIONS = ("axpby", "gemm", "gemv", "ger", "hadamard", "sum")


def collective_case(name: str, instr: str, t: str, lay: str, groups: int, variant: int,
                    alpha=2, beta=1, scalar_args: bool = True, atomic: bool = False,
                    shared_output: bool = False, nan_output: bool = False,
                    rough: bool = False, sizes=(M, N, K)) -> ValidCase:
    """One kernel running `instr` once per work-group on the group's slice of every operand
    (the last mode of each batched argument is the group id), or on a shared output with
    `.atomic`."""
    fam = family(instr, variant, *sizes)
    rng = rng_for(name)
    args: dict[str, np.ndarray] = {}
    params, body, types, vals, layouts_used = [], ["  %g = group_id"], [], [], {lay}
    batched = groups > 1

    def operand(vname, shape, is_output):
        per_group = batched and not (is_output and shared_output)
        full = tuple(shape) + ((groups,) if per_group else ())
        kind = lay if full else "canonical"  # order-0 memrefs have one layout
        layouts_used.add(kind)
        if rough and t in FLOATS:
            value = rng.standard_normal(full).astype(dtype(t))
        else:
            value = _data(rng, t, full)
        if nan_output and is_output:
            value = np.full(full, np.nan, dtype(t))
        lo = layout(kind, full)
        args[vname] = value
        if lo.runtime_strides is not None:
            args[f"{vname}.strides"] = np.asarray(lo.runtime_strides, np.int64)
        params.append(f"%{vname}: {lo.type(t)}")
        if per_group:
            view = lo.drop_last()
            idx = ",".join([":"] * len(shape) + ["%g"])
            body.append(f"  %{vname}_g = subview %{vname}[{idx}] : {lo.type(t)}")
            return f"%{vname}_g", view.type(t)
        return f"%{vname}", lo.type(t)

    in_ops = [operand(v, s, False) for v, s in fam.inputs]
    out_op = operand(fam.output[0], fam.output[1], True)
    if scalar_args:
        params = [f"%alpha: {t}", *params, f"%beta: {t}"]
        args["alpha"], args["beta"] = scalar(t, alpha), scalar(t, beta)
        a_s, b_s = "%alpha", "%beta"
    else:
        a_s, b_s = const(t, alpha), const(t, beta)
    vals = [v for v, _ in in_ops]
    types = [ty for _, ty in in_ops]
    mnemonic = fam.mnemonic + (".atomic" if atomic else "")
    if instr in ("axpby", "sum"):
        operands = f"{a_s}, {vals[0]}, {b_s}, {out_op[0]}"
        sig = f"{t}, {types[0]}, {t}, {out_op[1]}"
    else:
        operands = f"{a_s}, {vals[0]}, {vals[1]}, {b_s}, {out_op[0]}"
        sig = f"{t}, {types[0]}, {types[1]}, {t}, {out_op[1]}"
    body.append(f"  {mnemonic} {operands}")
    body.append(f"      : {sig}")
    source = f"func @{instr}({', '.join(params)}) {{\n" + "\n".join(body) + "\n}\n"

    expected = _reference(fam, t, args, alpha, beta, groups, batched, shared_output)
    scal = {"alpha", "beta"} if scalar_args else set()
    instr_tags = [instr] + (["atomic"] if atomic else []) + (["subview", "group_id"]
                                                             if batched else ["group_id"])
    return ValidCase("blas", name, source, args, outputs(args, scal, **expected),
                     tags(instr_tags, t, layouts_used), groups=groups)


def _data(rng, t, shape):
    if t in FLOATS:
        return (rng.integers(-16, 17, size=shape) / 8).astype(dtype(t))
    lo = 0 if t.startswith("u") else -3
    return rng.integers(lo, 4, size=shape).astype(dtype(t))


def _reference(fam: Family, t, args, alpha, beta, groups, batched, shared_output):
    wide = np.float64 if t in FLOATS else np.int64
    ins = [args[v].astype(wide) for v, _ in fam.inputs]
    oname = fam.output[0]
    out = args[oname].astype(wide)
    if not batched:
        return {oname: _narrow(_call(fam, alpha, ins, beta, out), t)}
    res = out.copy()
    for g in range(groups):
        gi = [x[..., g] for x in ins]
        if shared_output:  # .atomic with beta = 1: every group's contribution adds up
            res = _call(fam, alpha, gi, beta, res)
        else:
            res[..., g] = _call(fam, alpha, gi, beta, out[..., g])
    return {oname: _narrow(res, t)}


def _call(fam, alpha, ins, beta, out):
    return fam.ref(alpha, *ins, beta, out)


def _narrow(x, t):
    return np.asarray(x).astype(dtype(t))


def axpby_order0() -> ValidCase:
    """Order-0 axpby (a deviation: the spec says order 1 or 2; the original compiler accepts
    a scalar update): one work-group writes B, every work-group adds into C and I atomically."""
    groups = 5
    src = """func @k(%A: memref<f32>, %B: memref<f32>, %C: memref<f64>, %J: memref<i32>,
         %I: memref<i32>) {
  %g = group_id
  %x = cast %g : index -> f32
  %first = cmp.eq %g, 0 : index
  if %first {
    axpby.n 3.0, %A, 0.0, %B : f32, memref<f32>, f32, memref<f32>
  }
  axpby.t.atomic %x, %A, 1.0, %C : f32, memref<f32>, f32, memref<f64>
  axpby.n.atomic 2, %J, 1, %I : i32, memref<i32>, i32, memref<i32>
}
"""
    args = {"A": np.asarray(-1.25, np.float32), "B": np.asarray(7, np.float32),
            "C": np.asarray(0.5), "J": np.asarray(3, np.int32), "I": np.asarray(-4, np.int32)}
    ids = np.arange(groups)
    expected = {"B": 3.0 * args["A"], "C": 0.5 + float(ids.sum()) * -1.25,
                "I": -4 + groups * 2 * 3}
    return ValidCase("blas", "axpby_order0", src, args, outputs(args, (), **expected),
                     tags(["axpby", "atomic", "cast", "cmp.eq", "if", "group_id"],
                          ["f32", "f64", "i32"], "canonical"), groups=groups)


def cases() -> list[ValidCase]:
    out: list[ValidCase] = []
    group_counts = (1, 2, 3, 5)
    for instr in INSTRUCTIONS:
        i = 0
        for t in ("f32", "f64", "i32", "i64"):
            for lay in LAYOUTS:
                g = group_counts[i % 4]
                alpha, beta = [(2, 1), (-1, 2), (1, 0), (3, -1)][(i + 1) % 4]
                out.append(collective_case(f"{instr}_{t}_{lay}_v{i % 4}", instr, t, lay, g,
                                           variant=i, alpha=alpha, beta=beta,
                                           scalar_args=bool(i % 2)))
                i += 1
        for t in ("i8", "i16", "index"):
            out.append(collective_case(f"{instr}_{t}", instr, t, "canonical", 2, variant=i,
                                       alpha=2, beta=-1, scalar_args=False))
            i += 1
        out.append(collective_case(f"{instr}_atomic_f32", instr, "f32", "canonical", 3,
                                   variant=1, alpha=1.5, beta=1, scalar_args=False,
                                   atomic=True, shared_output=True))
        out.append(collective_case(f"{instr}_atomic_i32_strided", instr, "i32", "strided", 4,
                                   variant=2, alpha=-1, beta=1, scalar_args=True,
                                   atomic=True, shared_output=True))
        out.append(collective_case(f"{instr}_beta0_nan_f64", instr, "f64", "strided", 2,
                                   variant=3, alpha=0.5, beta=0, scalar_args=True,
                                   nan_output=True))
        out.append(collective_case(f"{instr}_rough_f32", instr, "f32", "dynstride", 3,
                                   variant=0, alpha=1.25, beta=-0.75, scalar_args=True,
                                   rough=True, sizes=(7, 6, 13)))
    # f64 operands contiguous along K with even leading dimensions (op(A) = A^T, B): a backend
    # may load two K steps at once there (tlgpu's tensor cores do); K = 18 leaves a partial
    # block of 8 and a partial step of 4
    out.append(collective_case("gemm_tn_f64_contiguous_k", "gemm", "f64", "canonical", 3,
                               variant=1, alpha=1.5, beta=-0.5, scalar_args=True, rough=True,
                               sizes=(12, 9, 18)))
    out.append(axpby_order0())
    return out
