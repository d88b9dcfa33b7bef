"""Scalar code on pocl is bit-identical to the interpreter: every arithmetic, comparison and
cast instruction for every scalar type, on the same (UB-free) inputs. All kernels live in one
program, so pocl builds once."""

from __future__ import annotations

import numpy as np
import pytest

import tlgpu
import tlinterp
from tlinterp.interp import run as interp_run
from tlinterp.lang import ops
from tlinterp.lang.types import V03_SCALARS, ScalarType

pytestmark = pytest.mark.opencl  # needs an OpenCL device (pocl in CI)

TYPES = [t for t in V03_SCALARS if t is not ScalarType.i1]  # the kernels are v0.3
INTS = [t for t in TYPES if t.is_int]
N = 64
CMP = list(ops.names(ops.COMPARE))


def binary_ops(t: ScalarType) -> list[str]:
    """Every binary operation tlinterp/lang/ops.py declares on t."""
    return list(ops.accepting(ops.BINARY, t))


def arith_kernel(t: ScalarType) -> str:
    T = t.value
    names = binary_ops(t)
    lines = [f"func @arith_{T}(%x: memref<{T}x?>, %y: memref<{T}x?>, "
             f"%o: memref<{T}x?x{len(names) + 2}>, %c: memref<i32x?x{len(CMP) + 1}>) {{",
             f"  %n = size %x[0] : memref<{T}x?>",
             "  foreach %i = 0, %n {",
             f"    %a = load %x[%i] : memref<{T}x?>",
             f"    %b = load %y[%i] : memref<{T}x?>"]
    col = 0
    for op in names:
        # shifts take the amount from y modulo a safe width; x is small enough not to overflow
        rhs = "%b"
        if op in ("shl", "shr"):
            lines.append(f"    %m{col} = arith.and %b, 3 : {T}")
            rhs = f"%m{col}"
        lines.append(f"    %r{col} = arith.{op} %a, {rhs} : {T}")
        lines.append(f"    store %r{col}, %o[%i, {col}] : memref<{T}x?x{len(names) + 2}>")
        col += 1
    lines.append(f"    %r{col} = arith.neg %a : {T}")
    lines.append(f"    store %r{col}, %o[%i, {col}] : memref<{T}x?x{len(names) + 2}>")
    col += 1
    if t.is_int:
        lines.append(f"    %r{col} = arith.not %a : {T}")
    else:
        lines.append(f"    %r{col} = arith.mul %a, 0.1 : {T}")  # a constant rounded to T
    lines.append(f"    store %r{col}, %o[%i, {col}] : memref<{T}x?x{len(names) + 2}>")
    for k, cond in enumerate(CMP):
        lines.append(f"    %q{k} = cmp.{cond} %a, %b : {T}")
        lines.append(f"    %z{k} = cast %q{k} : i1 -> i32")
        lines.append(f"    store %z{k}, %c[%i, {k}] : memref<i32x?x{len(CMP) + 1}>")
    lines.append(f"    %q9 = cast %a : {T} -> i1")  # anything -> i1 is x != 0
    lines.append("    %z9 = cast %q9 : i1 -> i32")
    lines.append(f"    store %z9, %c[%i, {len(CMP)}] : memref<i32x?x{len(CMP) + 1}>")
    lines += ["  }", "}"]
    return "\n".join(lines)


def cast_kernel(t: ScalarType) -> str:
    T = t.value
    params = ", ".join(f"%o_{d.value}: memref<{d.value}x?>" for d in TYPES)
    lines = [f"func @cast_{T}(%x: memref<{T}x?>, {params}) {{",
             f"  %n = size %x[0] : memref<{T}x?>",
             "  foreach %i = 0, %n {",
             f"    %a = load %x[%i] : memref<{T}x?>"]
    for d in TYPES:
        lines.append(f"    %c_{d.value} = cast %a : {T} -> {d.value}")
        lines.append(f"    store %c_{d.value}, %o_{d.value}[%i] : memref<{d.value}x?>")
    lines += ["  }", "}"]
    return "\n".join(lines)


SOURCE = "\n".join(arith_kernel(t) for t in TYPES) + "\n" + "\n".join(cast_kernel(t)
                                                                     for t in TYPES)


@pytest.fixture(scope="module")
def program():
    return tlinterp.check(tlinterp.parse(SOURCE, "scalar.tl"))


def values(t: ScalarType, rng, divisor: bool = False) -> np.ndarray:
    """UB-free operands: ints small enough that add/sub/mul/shl cannot overflow, divisors
    nonzero; floats with infinities, NaN, signed zeros and subnormals mixed in."""
    if t.is_float:
        v = rng.standard_normal(N).astype(t.dtype) * t.dtype.type(100)
        tiny = np.finfo(t.dtype).smallest_subnormal
        v[:8] = [np.inf, -np.inf, np.nan, 0.0, -0.0, tiny, -3 * tiny, np.finfo(t.dtype).max]
        return v
    half = 2 ** (t.bits // 2 - 1) - 1
    lo = 0 if not t.is_signed else -half
    v = rng.integers(lo, half + 1, N).astype(t.dtype)
    if divisor:
        v[v == 0] = 1
    return v


def same(a: np.ndarray, b: np.ndarray) -> bool:
    """Bit-identical, except that any NaN equals any NaN (payloads are not specified)."""
    if a.dtype.kind == "f":
        nan = np.isnan(a)
        return bool(np.array_equal(nan, np.isnan(b))
                    and np.array_equal(a[~nan].view(f"u{a.itemsize}"),
                                       b[~nan].view(f"u{b.itemsize}")))
    return bool(np.array_equal(a, b))


@pytest.mark.parametrize("t", TYPES, ids=str)
def test_arithmetic_and_comparisons(program, t):
    rng = np.random.default_rng(t.bits)
    n_ops = len(binary_ops(t)) + 2
    args = {"x": values(t, rng), "y": values(t, rng, divisor=True),
            "o": np.zeros((N, n_ops), t.dtype), "c": np.zeros((N, len(CMP) + 1), np.int32)}
    if t.is_float:  # the special values against each other: NaN on either side, -0.0 vs 0.0
        args["y"][:8] = np.roll(args["y"][:8], 1)
    want = interp_run(program, args, func=f"arith_{t.value}")
    got = tlgpu.run(program, args, func=f"arith_{t.value}")
    for key in ("o", "c"):
        for col in range(want[key].shape[1]):
            assert same(want[key][:, col], got[key][:, col]), (t, key, col)


def cast_sources(t: ScalarType, rng) -> np.ndarray:
    if t.is_float:  # in range of every target type, with fractions to truncate
        v = rng.uniform(0, 100, N).astype(t.dtype)
        v[:3] = [0.0, -0.0, 99.75]
        return v
    info = np.iinfo(t.dtype)
    return rng.integers(info.min, info.max, N, dtype=t.dtype, endpoint=True)


@pytest.mark.parametrize("t", TYPES, ids=str)
def test_casts(program, t):
    rng = np.random.default_rng(100 + t.bits)
    args = {"x": cast_sources(t, rng)}
    args.update({f"o_{d.value}": np.zeros(N, d.dtype) for d in TYPES})
    want = interp_run(program, args, func=f"cast_{t.value}")
    got = tlgpu.run(program, args, func=f"cast_{t.value}")
    for d in TYPES:
        assert same(want[f"o_{d.value}"], got[f"o_{d.value}"]), (t, d)


def test_pocl_keeps_f32_denormals():
    from tlgpu.runtime.devices import handle

    assert handle("pocl").keeps_f32_denormals
