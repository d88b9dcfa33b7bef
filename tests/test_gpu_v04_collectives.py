"""The BLAS collectives with v0.4's types lowered to OpenCL C against the interpreter, on pocl
and Intel's CPU runtime: f16/bf16 operands computed in f32 (or f64) and rounded once to the
output, complex operands in c32/c64 (mixed with real ones), run-time alpha/beta (beta = 0 not
reading the output). Results within docs/semantics.md's collective bound of the interpreter's;
sums of exactly representable products (small integers) agree bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from opencl_devices import require_device

import tlgpu
import tlinterp
from tlinterp.front.pipeline import parse
from tlinterp.interp import run as interp_run
from tlinterp.interp.lowp import DTYPES, UNIT_ROUNDOFF

pytestmark = [pytest.mark.opencl,
              pytest.mark.filterwarnings("ignore:Non-empty compiler output")]

M, N, K = 5, 3, 7


@pytest.fixture(params=["pocl", "intel"])
def device(request) -> str:
    return require_device(request.param)


def _source(ti: str, to: str, ts: str) -> str:
    """Every collective: inputs of type ti, outputs of type to, alpha/beta of type ts."""
    m = lambda t, *s: f"memref<{t} x {' x '.join(map(str, s))}>"  # noqa: E731
    return (f"func @k(%A: {m(ti, M, K)}, %B: {m(ti, K, N)}, %C: {m(to, M, N)}, "
            f"%x: {m(ti, K)}, %y: {m(to, M)}, %u: {m(ti, M)}, %v: {m(ti, N)}, "
            f"%G: {m(to, M, N)}, %h: {m(to, M)}, %F: {m(to, M, K)}, %s: {m(to, M)}, "
            f"%Z: {m(to, M, N)}, %alpha: {ts}, %beta: {ts}) {{\n"
            "    gemm %alpha, %A, %B, %beta, %C\n"
            "    gemv %alpha, %A, %x, %beta, %y\n"
            "    ger %alpha, %u, %v, %beta, %G\n"
            "    hadamard %alpha, %u, %u, %beta, %h\n"
            "    axpby %alpha, %A, %beta, %F\n"
            "    sum %alpha, %A, %beta, %s\n"
            f"    %zero = constant {'[0.0, 0.0]' if ts[0] == 'c' else '0.0'} : {ts}\n"
            "    gemm %alpha, %A, %B, %zero, %Z\n"
            "}\n")


SHAPES = {"A": (M, K), "B": (K, N), "C": (M, N), "x": (K,), "y": (M,), "u": (M,), "v": (N,),
          "G": (M, N), "h": (M,), "F": (M, K), "s": (M,), "Z": (M, N)}
INPUTS = ("A", "B", "x", "u", "v")


def _values(t: str, shape, rng, exact: bool) -> np.ndarray:
    if exact:  # small integers: every product and sum exact in every type here
        re = rng.integers(-4, 5, shape).astype(np.float64)
        im = rng.integers(-4, 5, shape).astype(np.float64)
    else:
        re, im = rng.standard_normal(shape), rng.standard_normal(shape)
    v = (re + 1j * im if t.startswith("c") else re).astype(DTYPES[t])
    return v.view(np.uint16) if t == "bf16" else v


def _args(ti, to, ts, rng, exact):
    args = {k: _values(ti if k in INPUTS else to, s, rng, exact) for k, s in SHAPES.items()}
    args["Z"][...] = np.nan if to in ("f16", "f32") else args["Z"]  # beta = 0 never reads Z
    args["alpha"] = _values(ts, (), rng, True)[()] if ts != "bf16" else \
        np.array(0x4000, np.uint16).view(DTYPES["bf16"])[()]
    args["beta"] = _values(ts, (), rng, True)[()] if ts != "bf16" else \
        np.array(0xbf80, np.uint16).view(DTYPES["bf16"])[()]
    return args


def _as_values(t: str, a) -> np.ndarray:
    a = np.asarray(a)
    return a.view(DTYPES["bf16"]).astype(np.float32) if t == "bf16" else a


# (inputs, outputs, alpha and beta): v0.4 wants alpha and beta to promote to the inputs' type
CASES = [("f16", "f32", "f16"), ("f16", "f16", "f16"), ("bf16", "f32", "bf16"),
         ("bf16", "bf16", "bf16"), ("f16", "f64", "f16"), ("c32", "c32", "c32"),
         ("c64", "c64", "c64"), ("f32", "c32", "f32"), ("c32", "c64", "c32"),
         ("f16", "c32", "f16")]
IDS = ["-".join(c) for c in CASES]


def _run(ti, to, ts, exact, device):
    src = _source(ti, to, ts)
    program = tlinterp.check(parse(src, "v04blas.tl", lang="v0.4"))
    args = _args(ti, to, ts, np.random.default_rng(len(ti + to + ts) + exact), exact)
    want = interp_run(program, {k: np.copy(v) for k, v in args.items()})
    got = tlgpu.run(program, {k: np.copy(v) for k, v in args.items()}, device=device)
    return want, got


@pytest.mark.parametrize("ti,to,ts", CASES, ids=IDS)
def test_exact_sums_bit_for_bit(device, ti, to, ts):
    """(Complex results: equal values; the sign of a zero part of a sum is not specified.)"""
    want, got = _run(ti, to, ts, True, device)
    for k in SHAPES:
        if k in INPUTS:
            continue
        w, g = np.asarray(want[k]), np.asarray(got[k])
        if w.dtype.kind == "c":
            assert np.array_equal(w, g), k
        else:
            assert np.array_equal(w.view(np.uint8), g.view(np.uint8)), k


@pytest.mark.parametrize("ti,to,ts", CASES, ids=IDS)
def test_within_the_collective_bound(device, ti, to, ts):
    """Random operands: |got - want| within 2 gamma_K sum|terms| plus one rounding of the
    output (u of the output type) on each part."""
    want, got = _run(ti, to, ts, False, device)
    wide = {"f64", "c64"} & {ti, to, ts}
    u_ct, u_out = 2.0 ** (-53 if wide else -24), UNIT_ROUNDOFF[to]
    for k in SHAPES:
        if k in INPUTS:
            continue
        w, g = _as_values(to, want[k]), _as_values(to, got[k])
        # sum|terms| <= (|alpha| K max|a||b| + |beta| |c|) <= 16 K max|w| + 64 K for these
        # inputs (|alpha|, |beta| <= 4, standard normal operands of magnitude < 6)
        terms = 64.0 * K * (1.0 + float(np.max(np.abs(w))))
        bound = 2 * (K + 2) * u_ct * terms + u_out * np.abs(w)
        for part in ((np.real, np.imag) if np.iscomplexobj(w) else (np.real,)):
            d = np.abs(part(w).astype(np.float64) - part(g).astype(np.float64))
            assert (d <= bound).all(), (k, float(np.max(d)))


@pytest.mark.parametrize("ti,to", [("f16", "f16"), ("bf16", "f32"), ("bf16", "bf16"),
                                   ("c32", "c32"), ("f16", "c32")], ids="-".join)
def test_atomic_collectives(device, ti, to):
    """`.atomic` with beta 1 into f16/bf16 (a CAS on the 32-bit word) and c32 elements (a
    CAS on 64 bits), every work-group adding into the same output: exact sums (small
    integers) bit for bit."""
    m = lambda t, *s: f"memref<{t} x {' x '.join(map(str, s))}>"  # noqa: E731
    src = (f"func @k(%A: {m(ti, M, K)}, %B: {m(ti, K, N)}, %C: {m(to, M, N)}, "
           f"%u: {m(ti, M)}, %h: {m(to, M)}, %alpha: {ti}) {{\n"
           f"    %one = constant {'[1.0, 0.0]' if ti[0] == 'c' else '1.0'} : {ti}\n"
           "    gemm.atomic %alpha, %A, %B, %one, %C\n"
           "    hadamard.atomic %alpha, %u, %u, %one, %h\n"
           "}\n")
    program = tlinterp.check(parse(src, "v04atomic.tl", lang="v0.4"))
    rng = np.random.default_rng(7)
    args = {"A": _values(ti, (M, K), rng, True), "B": _values(ti, (K, N), rng, True),
            "C": _values(to, (M, N), rng, True), "u": _values(ti, (M,), rng, True),
            "h": _values(to, (M,), rng, True), "alpha": _values(ti, (), rng, True)[()]}
    want = interp_run(program, {k: np.copy(v) for k, v in args.items()}, groups=3)
    got = tlgpu.run(program, {k: np.copy(v) for k, v in args.items()}, groups=3,
                    device=device)
    for k in ("C", "h"):
        assert np.array_equal(np.asarray(want[k]), np.asarray(got[k])), k
