"""v0.4 scalar and collective (non-SPMD) instructions on the interpreter, each against an
independent reference: Python's own arithmetic (math, cmath, fractions, struct rounding) or a
NumPy formula written differently from tlinterp/interp (loops instead of cumsum, ...)."""

from __future__ import annotations

import math
import struct

import ml_dtypes
import numpy as np
import pytest

from tlinterp.interp import run
from tlinterp.lang.diagnostics import NotExecutable, UndefinedBehaviour
from tlinterp.lang.types import ScalarType

BF16 = ml_dtypes.bfloat16


def _run(text: str, args: dict, **kw) -> dict:
    return run(text, args, **kw)


def _in_place(op: str, t: str, n: int) -> str:
    """A kernel that replaces each of the `n` elements of %A (of type `t`) by `op` of it."""
    return f"""func @k(%A: memref<{t} x {n}>) {{
        %c0 = constant 0 : index
        %n = constant {n} : index
        foreach (%i) = (%c0), (%n) {{
            %a = load %A[%i] : {t}
            %b = {op} %a : {t}
            store %b, %A[%i]
        }}
    }}"""


def _f16(x: float) -> float:
    """x rounded to binary16 by struct's 'e' format (not NumPy's conversion)."""
    return struct.unpack("e", struct.pack("e", x))[0]


def _bf16(x: float) -> float:
    """x (an f32 value) rounded to bfloat16 by hand: round to nearest even on the bits."""
    (bits,) = struct.unpack("I", struct.pack("f", x))
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16
    return struct.unpack("f", struct.pack("I", bits & 0xFFFFFFFF))[0]


def test_f16_bf16_arithmetic_rounds_once():
    text = """func @k(%A: memref<f16 x 8>, %B: memref<bf16 x 8>) {
        %c0 = constant 0 : index
        %n = constant 8 : index
        %h = constant 0.1 : f16
        %b = constant 0.1 : bf16
        foreach (%i) = (%c0), (%n) {
            %x = load %A[%i] : f16
            %y = mul %x, %h : f16
            %z = div %y, %x : f16
            store %z, %A[%i]
            %u = load %B[%i] : bf16
            %v = add %u, %b : bf16
            store %v, %B[%i]
        }
    }"""
    xs = [1.0, 3.0, 7.0, 0.333, 1000.0, 65000.0, -2.5, 5e-5]
    out = _run(text, {"A": np.array(xs, np.float16), "B": np.array(xs, BF16)})
    h = _f16(0.1)
    for k, x in enumerate(xs):
        x16 = _f16(x)
        y = _f16(x16 * h)
        want = _f16(y / x16)
        assert float(out["A"][k]) == want or (math.isinf(y) and math.isnan(float(out["A"][k])))
        xb = _bf16(x)
        assert float(out["B"][k]) == _bf16(xb + _bf16(0.1)), k


def test_complex_arithmetic_and_parts():
    text = """func @k(%A: memref<c32 x 4>, %R: memref<f32 x 4>, %I: memref<f32 x 4>,
                      %M: memref<f32 x 4>) {
        %c0 = constant 0 : index
        %n = constant 4 : index
        %z = constant [1.0, -2.0] : c32
        foreach (%i) = (%c0), (%n) {
            %a = load %A[%i] : c32
            %b = mul %a, %z : c32
            %c = conj %b : c32
            %r = re %c : f32
            %m = im %c : f32
            %s = abs %c : f32
            store %c, %A[%i]
            store %r, %R[%i]
            store %m, %I[%i]
            store %s, %M[%i]
        }
    }"""
    vals = [complex(1, 1), complex(0, 3), complex(-2, 0.5), complex(3, 4)]
    z = np.zeros(4, np.float32)
    out = _run(text, {"A": np.array(vals, np.complex64), "R": z, "I": z.copy(), "M": z.copy()})
    for k, v in enumerate(vals):
        prod = complex(v.real * 1 + v.imag * 2, v.imag * 1 - v.real * 2)  # v * (1-2i)
        conj = complex(prod.real, -prod.imag)
        assert complex(out["A"][k]) == pytest.approx(conj, rel=1e-6)
        assert float(out["R"][k]) == pytest.approx(conj.real, rel=1e-6)
        assert float(out["I"][k]) == pytest.approx(conj.imag, rel=1e-6)
        assert float(out["M"][k]) == pytest.approx(math.hypot(conj.real, conj.imag), rel=1e-6)


def test_constants_inf_nan_and_compare_returns_bool():
    text = """func @k(%A: memref<f32 x 4>, %B: memref<i32 x 4>) {
        %c0 = constant 0 : index
        %n = constant 4 : index
        %inf = constant inf : f32
        %one = constant 1 : i32
        %zero = constant 0 : i32
        foreach (%i) = (%c0), (%n) {
            %a = load %A[%i] : f32
            %lt = less_than %a, %inf : bool
            %r = if %lt -> (i32) { yield (%one) } else { yield (%zero) }
            store %r, %B[%i]
        }
    }"""
    a = np.array([1.0, np.inf, np.nan, -np.inf], np.float32)
    out = _run(text, {"A": a, "B": np.zeros(4, np.int32)})
    assert out["B"].tolist() == [int(x < math.inf) for x in a.tolist()]


@pytest.mark.parametrize("op", ["cos", "sin", "exp", "exp2", "log", "log2", "native_cos",
                                "native_exp", "native_log2"])
def test_math_functions_f64_within_a_few_ulps(op):
    text = _in_place(op, "f64", 5)
    xs = [0.5, 1.0, 2.25, 3.0, 10.0]
    out = _run(text, {"A": np.array(xs)})
    ref = {"cos": math.cos, "sin": math.sin, "exp": math.exp, "exp2": lambda x: 2.0 ** x,
           "log": math.log, "log2": math.log2}[op.removeprefix("native_")]
    for k, x in enumerate(xs):
        assert abs(float(out["A"][k]) - ref(x)) <= 4 * math.ulp(ref(x))


def test_math_f16_is_f32_then_rounded():
    text = _in_place("exp", "f16", 3)
    xs = [0.5, 1.0, 2.0]
    out = _run(text, {"A": np.array(xs, np.float16)})
    assert [float(v) for v in out["A"]] == [_f16(math.exp(x)) for x in xs]


def test_casts_v04_table_and_invalid_cast_is_ub():
    text = """func @k(%A: memref<f16 x 3>, %B: memref<i32 x 3>, %C: memref<c64 x 3>) {
        %c0 = constant 0 : index
        %n = constant 3 : index
        foreach (%i) = (%c0), (%n) {
            %a = load %A[%i] : f16
            %b = cast %a : i32
            store %b, %B[%i]
            %c = cast %a : c64
            store %c, %C[%i]
        }
    }"""
    a = np.array([2.75, -3.5, 1000.0], np.float16)
    out = _run(text, {"A": a, "B": np.zeros(3, np.int32), "C": np.zeros(3, np.complex128)})
    assert out["B"].tolist() == [int(x) for x in a.tolist()]  # truncation toward zero
    assert out["C"].tolist() == [complex(x) for x in a.tolist()]
    bad = np.array([1.0, np.inf, 0.0], np.float16)
    with pytest.raises(UndefinedBehaviour, match="invalid cast"):
        _run(text, {"A": bad, "B": np.zeros(3, np.int32), "C": np.zeros(3, np.complex128)})


def test_abs_of_integer_minimum_is_ub_and_twin_is_not():
    text = _in_place("abs", "i32", 2)
    out = _run(text, {"A": np.array([-5, 2**31 - 1], np.int32)})
    assert out["A"].tolist() == [5, 2**31 - 1]
    with pytest.raises(UndefinedBehaviour, match="signed overflow"):
        _run(text, {"A": np.array([-5, -2**31], np.int32)})


def test_for_loop_carried_values_with_divergent_trip_counts():
    text = """func @k(%A: memref<f64 x ?>, %N: memref<index x 3>, %S: memref<f64 x 3>,
                      %K: memref<index x 3>) {
        %c0 = constant 0 : index
        %c1 = constant 1 : index
        %c3 = constant 3 : index
        %z = constant 0.0 : f64
        foreach (%g) = (%c0), (%c3) {
            %n = load %N[%g] : index
            %sum, %cnt = for %i = %c0, %n init(%acc = %z, %k = %c0) -> (f64, index) {
                %v = load %A[%i] : f64
                %acc1 = add %acc, %v : f64
                %k1 = add %k, %c1 : index
                yield (%acc1, %k1)
            }
            store %sum, %S[%g]
            store %cnt, %K[%g]
        }
    }"""
    a = np.array([0.5, 1.25, 2.0, 4.0])
    ns = [0, 2, 4]
    out = _run(text, {"A": a, "N": np.array(ns, np.int64), "S": np.zeros(3),
                      "K": np.zeros(3, np.int64)})
    assert out["S"].tolist() == [sum(a.tolist()[:n]) for n in ns]
    assert out["K"].tolist() == ns


def test_multidimensional_foreach_covers_the_box_once():
    text = """func @k(%B: memref<i32 x 3 x 4 x 2>) {
        %c0 = constant 0 : index
        %c1 = constant 1 : index
        %m = constant 3 : index
        %n = constant 4 : index
        %p = constant 2 : index
        %one = constant 1 : i32
        foreach (%i, %j, %k) = (%c1, %c0, %c0), (%m, %n, %p) {
            %v = load %B[%i, %j, %k] : i32
            %w = add %v, %one : i32
            store %w, %B[%i, %j, %k]
        }
    }"""
    out = _run(text, {"B": np.zeros((3, 4, 2), np.int32, order="F")})
    want = [[[0 if i == 0 else 1 for _ in range(2)] for _ in range(4)] for i in range(3)]
    assert out["B"].tolist() == want


def test_grid_builtins_x_fastest():
    text = """func @k(%G: memref<index x 3 x 24>) {
        %c0 = constant 0 : index
        %c1 = constant 1 : index
        %c2 = constant 2 : index
        %x = group_id.x : index
        %y = group_id.y : index
        %z = group_id.z : index
        %nx = num_groups.x : index
        %ny = num_groups.y : index
        %t = mul %ny, %z : index
        %u = add %t, %y : index
        %v = mul %u, %nx : index
        %lin = add %v, %x : index
        store %x, %G[%c0, %lin]
        store %y, %G[%c1, %lin]
        store %z, %G[%c2, %lin]
    }"""
    out = _run(text, {"G": np.full((3, 24), -1, np.int64)}, groups=(2, 3, 4))
    lin = 0
    for z in range(4):
        for y in range(3):
            for x in range(2):
                assert out["G"][:, lin].tolist() == [x, y, z]
                lin += 1


def test_atomics_return_old_value_in_lane_order():
    text = """func @k(%A: memref<i32 x 1>, %O: memref<i32 x 5>, %L: memref<i32 x 1>) {
        %c0 = constant 0 : index
        %n = constant 5 : index
        foreach (%i) = (%c0), (%n) {
            %ii = cast %i : i32
            %old = atomic_add.device.relaxed %ii, %A[%c0] : i32
            store %old, %O[%i]
            %m = atomic_max %ii, %L[%c0] : i32
        }
        %v = atomic_load %A[%c0] : i32
        atomic_store.work_group.release %v, %L[%c0]
    }"""
    out = _run(text, {"A": np.array([10], np.int32), "O": np.zeros(5, np.int32),
                      "L": np.array([2], np.int32)})
    running, olds = 10, []
    for i in range(5):
        olds.append(running)
        running += i
    assert out["O"].tolist() == olds
    assert out["A"].tolist() == [running] and out["L"].tolist() == [running]


def test_cumsum_inclusive_along_mode_with_alpha_beta():
    text = """func @k(%A: memref<f64 x 3 x 4>, %B: memref<f64 x 3 x 4>) {
        %alpha = constant 2.0 : f64
        %beta = constant 0.5 : f64
        cumsum %alpha, %A, 1, %beta, %B
    }"""
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    out = _run(text, {"A": a, "B": b})
    for i in range(3):
        for j in range(4):
            s = 0.0
            for k in range(j + 1):
                s += a[i, k]
            assert out["B"][i, j] == pytest.approx(2.0 * s + 0.5 * b[i, j], rel=1e-12)


def test_cumsum_integer_overflow_is_ub_and_twin_is_not():
    text = """func @k(%A: memref<i32 x 3>, %B: memref<i32 x 3>) {
        %one = constant 1 : i32
        %zero = constant 0 : i32
        cumsum %one, %A, 0, %zero, %B
    }"""
    ok = _run(text, {"A": np.array([2**30, 2**29, 5], np.int32), "B": np.zeros(3, np.int32)})
    assert ok["B"].tolist() == [2**30, 2**30 + 2**29, 2**30 + 2**29 + 5]
    with pytest.raises(UndefinedBehaviour, match="signed overflow"):
        _run(text, {"A": np.array([2**30, 2**30, 5], np.int32), "B": np.zeros(3, np.int32)})


def test_associated_is_true_for_arguments():
    text = """func @k(%A: memref<i32 x 1>) {
        %c0 = constant 0 : index
        %a = associated %A : bool
        %one = constant 1 : i32
        %zero = constant 0 : i32
        %r = if %a -> (i32) { yield (%one) } else { yield (%zero) }
        store %r, %A[%c0]
    }"""
    assert _run(text, {"A": np.zeros(1, np.int32)})["A"].tolist() == [1]


def test_bf16_arguments_as_bit_patterns_and_bad_dtype_refused():
    text = """func @k(%A: memref<bf16 x 2>) {
        %c0 = constant 0 : index
        %x = load %A[%c0] : bf16
        %y = add %x, %x : bf16
        store %y, %A[%c0]
    }"""
    bits = np.array([0x3FC0, 0x4000], np.uint16)  # 1.5, 2.0
    out = _run(text, {"A": bits})
    assert out["A"].dtype == BF16 and [float(v) for v in out["A"]] == [3.0, 2.0]
    from tlinterp.lang.diagnostics import ArgumentError
    with pytest.raises(ArgumentError, match="bf16"):
        _run(text, {"A": np.array([1.5, 2.0], np.float32)})


GRID = """func @k(%G: memref<index x 2 x 6>) {
    %c0 = constant 0 : index
    %c1 = constant 1 : index
    %x = group_id.x : index
    %y = group_id.y : index
    %nx = num_groups.x : index
    %v = mul %y, %nx : index
    %lin = add %v, %x : index
    store %x, %G[%c0, %lin]
    store %y, %G[%c1, %lin]
}
"""


def test_tlrun_groups_grid_and_its_errors(tmp_path, capsys):
    from tlinterp.cli import tlrun as cli

    k, a, o = tmp_path / "k.tl", tmp_path / "a.npz", tmp_path / "o.npz"
    k.write_text(GRID)
    np.savez(a, G=np.zeros((2, 6), np.int64, order="F"))
    assert cli.main([str(k), "--args", str(a), "--groups", "2,3", "--out", str(o), "-q"]) == 0
    g = np.load(o)["G"]
    assert g.tolist() == [[lin % 2 for lin in range(6)], [lin // 2 for lin in range(6)]]
    capsys.readouterr()
    assert cli.main([str(k), "--args", str(a), "--groups", "2,x"]) == 2
    assert "X,Y[,Z]" in capsys.readouterr().err


def test_tlrun_bf16_npz_round_trip_as_bit_patterns(tmp_path):
    from tlinterp.cli import tlrun as cli

    k, a, o = tmp_path / "k.tl", tmp_path / "a.npz", tmp_path / "o.npz"
    k.write_text("""func @k(%A: memref<bf16 x 2>) {
        %c0 = constant 0 : index
        %x = load %A[%c0] : bf16
        %y = mul %x, %x : bf16
        store %y, %A[%c0]
    }""")
    np.savez(a, A=np.array([0x3FC0, 0x4000], np.uint16))  # 1.5, 2.0
    assert cli.main([str(k), "--args", str(a), "--out", str(o), "-q"]) == 0
    out = np.load(o)["A"]
    assert out.dtype == np.uint16 and out.tolist() == [0x4010, 0x4000]  # 2.25, 2.0
    np.savez(a, A=np.array([1.5, 2.0], np.float32))
    assert cli.main([str(k), "--args", str(a), "-q"]) == 2  # wrong dtype: an argument error


RUNNABLE = ["arith_binary", "arith_unary", "associated_alloca", "casts", "compare_bool",
            "expand_fuse", "for_yield", "foreach_multi", "if_yield", "math_ops",
            "nested_regions", "param_attributes", "preprocessor", "scalar_types",
            "subview_slices"]


@pytest.mark.parametrize("name", RUNNABLE)
def test_corpus_v04_kernels_of_this_scope_run(name):
    """Our v0.4 corpus kernels that use no SPMD construct run to the end (values: the tests
    above check each instruction against its reference)."""
    from pathlib import Path

    from tlinterp import parse
    from tlinterp.lang.types import GroupType, MemrefType

    path = Path(__file__).parent.parent / "corpus" / "v04" / "valid" / f"{name}.tl"
    program = parse(path.read_text(), str(path))
    rng = np.random.default_rng(0)
    for fn in program.functions:
        args = {}
        for arg in fn.args:
            t = arg.type
            if isinstance(t, GroupType):
                m = t.memref
                shape = (t.size or 2,) + tuple(4 if s is None else s for s in m.shape)
                args[arg.value.name] = np.zeros(shape, m.element.dtype)
                if t.offset is None:
                    args[arg.value.name + ".offset"] = np.int64(0)
            elif isinstance(t, MemrefType):
                shape = tuple(4 if s is None else s for s in t.shape)
                data = rng.uniform(0.5, 2.0, shape) if not t.element.is_int else \
                    rng.integers(0, 3, shape)
                args[arg.value.name] = np.array(np.asarray(data).astype(t.element.dtype),
                                                order="F")
            else:
                v = 1 if t.is_int or t.is_bool else 0.75
                args[arg.value.name] = np.asarray(v).astype(t.dtype)
        run(program, args, func=fn.name)


RACE = """func @k(%A: memref<i32 x 1>) attributes{work_group_size=[1, 1]} {
    %c0 = constant 0 : index
    %one = constant 1 : i32
    %g = group_id.x : index
    %first = equal %g, %c0 : bool
    if %first {
        %PLAIN
    }
    %old = atomic_add %one, %A[%c0] : i32
}
"""


def test_plain_access_racing_with_an_atomic_is_ub_and_atomic_twin_is_not():
    plain = RACE.replace("%PLAIN", "store %one, %A[%c0]")
    with pytest.raises(UndefinedBehaviour, match="race"):
        _run(plain, {"A": np.zeros(1, np.int32)}, groups=3)
    atomic = RACE.replace("%PLAIN", "atomic_store %one, %A[%c0]")
    assert _run(atomic, {"A": np.zeros(1, np.int32)}, groups=3)["A"].tolist() == [4]


def test_atomic_add_outside_spmd_adds_once_per_work_item():
    """tinytc v0.4.0 on Intel's CPU runtime: a kernel of 16 work-items with `atomic_add 5`
    outside any parallel region turns 10 into 90."""
    text = """func @k(%D: memref<i32 x 2>) attributes{work_group_size=[16, 1], subgroup_size=16} {
        %c0 = constant 0 : index
        %c1 = constant 1 : index
        %five = constant 5 : i32
        %o = atomic_add %five, %D[%c0] : i32
        store %o, %D[%c1]
    }"""
    out = _run(text, {"D": np.array([10, 0], np.int32)})
    assert out["D"].tolist() == [10 + 16 * 5, 10]  # the old value the first work-item sees
    no_size = text.replace(" attributes{work_group_size=[16, 1], subgroup_size=16}", "")
    from tlinterp.lang.diagnostics import ExecutionError
    with pytest.raises(ExecutionError, match="work_group_size"):
        _run(no_size, {"D": np.array([10, 0], np.int32)})


def test_gemm_f16_and_hadamard_c32_matrices():
    text = """func @k(%A: memref<f16 x 3 x 2>, %B: memref<f16 x 2 x 4>, %C: memref<f16 x 3 x 4>,
                      %X: memref<c32 x 2 x 2>, %Y: memref<c32 x 2 x 2>, %Z: memref<c32 x 2 x 2>) {
        %one = constant 1.0 : f16
        %zero = constant 0.0 : f16
        gemm.n.n %one, %A, %B, %zero, %C
        %cone = constant [1.0, 0.0] : c32
        %czero = constant [0.0, 0.0] : c32
        hadamard %cone, %X, %Y, %czero, %Z
    }"""
    rng = np.random.default_rng(3)
    a = rng.integers(-4, 5, (3, 2)).astype(np.float16)
    b = rng.integers(-4, 5, (2, 4)).astype(np.float16)
    x = (rng.integers(-3, 4, (2, 2)) + 1j * rng.integers(-3, 4, (2, 2))).astype(np.complex64)
    y = (rng.integers(-3, 4, (2, 2)) + 1j * rng.integers(-3, 4, (2, 2))).astype(np.complex64)
    out = _run(text, {"A": a, "B": b, "C": np.zeros((3, 4), np.float16), "X": x, "Y": y,
                      "Z": np.zeros((2, 2), np.complex64)})
    for i in range(3):
        for j in range(4):
            s = sum(float(a[i, k]) * float(b[k, j]) for k in range(2))  # exact: small integers
            assert float(out["C"][i, j]) == s
    for i in range(2):
        for j in range(2):
            assert complex(out["Z"][i, j]) == complex(x[i, j]) * complex(y[i, j])


def test_one_lane_f16_loop_rounds_every_step():
    """A scalar loop in one work-group (the fast path's case) still rounds each f16 add."""
    text = """func @k(%A: memref<f16 x 1>) {
        %c0 = constant 0 : index
        %c1 = constant 1 : index
        %n = constant 3000 : index
        %inc = constant 1.0 : f16
        for %i = %c0, %n {
            %a = load %A[%c0] : f16
            %b = add %a, %inc : f16
            store %b, %A[%c0]
        }
    }"""
    out = _run(text, {"A": np.zeros(1, np.float16)})
    acc = 0.0
    for _ in range(3000):
        acc = _f16(acc + 1.0)
    assert float(out["A"][0]) == acc == 2048.0  # 2048 + 1 rounds back to 2048 in f16


@pytest.mark.parametrize("grid", [(2, None), (2, -1), (1, 2, 3, 4), (2, 2.5), (2**20, 2**20)])
def test_bad_grids_are_argument_errors(grid):
    from tlinterp.lang.diagnostics import ArgumentError

    with pytest.raises(ArgumentError, match="groups|work-groups"):
        _run(GRID, {"G": np.zeros((2, 6), np.int64)}, groups=grid)


def test_cumsum_atomic_adds_every_work_groups_contribution():
    text = """func @k(%A: memref<f64 x 4 x ?>, %B: memref<f64 x 4>) {
        %g = group_id.x : index
        %a = subview %A[0:4, %g] : memref<f64 x 4>
        %one = constant 1.0 : f64
        cumsum.atomic %one, %a, 0, %one, %B
    }"""
    a = np.array([[1.0, 10.0, 100.0], [2.0, 20.0, 200.0], [3.0, 30.0, 300.0],
                  [4.0, 40.0, 400.0]])
    out = _run(text, {"A": a, "B": np.full(4, 0.5)}, groups=3)
    want = [0.5 + sum(sum(a[k][g] for k in range(i + 1)) for g in range(3)) for i in range(4)]
    assert out["B"].tolist() == want


def test_atomic_add_f16_rounds_each_update():
    text = """func @k(%A: memref<f16 x 1>) {
        %c0 = constant 0 : index
        %n = constant 3000 : index
        %one = constant 1.0 : f16
        foreach (%i) = (%c0), (%n) {
            %o = atomic_add %one, %A[%c0] : f16
        }
    }"""
    assert float(_run(text, {"A": np.zeros(1, np.float16)})["A"][0]) == 2048.0


def test_cumsum_over_work_groups_of_different_shapes():
    text = """func @k(%A: group<memref<i32 x ?> x ?>, %B: group<memref<i32 x ?> x ?>) {
        %g = group_id.x : index
        %a = load %A[%g] : memref<i32 x ?>
        %b = load %B[%g] : memref<i32 x ?>
        %one = constant 1 : i32
        %zero = constant 0 : i32
        cumsum %one, %a, 0, %zero, %b
    }"""
    a = [np.array([1, 2, 3], np.int32), np.array([5, 7], np.int32)]
    args = {"A.0": a[0], "A.1": a[1], "B.0": np.zeros(3, np.int32), "B.1": np.zeros(2, np.int32)}
    out = _run(text, args)
    for k in range(2):
        running, want = 0, []
        for v in a[k].tolist():
            running += v
            want.append(running)
        assert out[f"B.{k}"].tolist() == want
    args["A.1"] = np.array([2**31 - 1, 1], np.int32)
    with pytest.raises(UndefinedBehaviour, match="work-group 1: a partial sum"):
        _run(text, args)


def test_hand_built_subgroup_builtin_is_refused_not_guessed():
    from tlinterp.interp import exec_v04
    from tlinterp.lang import ir
    from tlinterp.lang.types import ScalarType

    inst = ir.Builtin(ir.Value("s"), "subgroup_size", None, ScalarType.i32)
    with pytest.raises(NotExecutable, match="subgroup_size"):
        exec_v04._builtin(None, inst, None, None, None)


def test_abs_of_c32_is_the_correctly_rounded_modulus():
    # NumPy's complex64 abs gives 12.999999 for |-5+12i|; Pythagorean triples are exact
    z = [complex(-5, 12), complex(3, -4), complex(-8, 15), complex(20, 21)]
    src = """func @k(%Z: memref<c32 x 4>, %M: memref<f32 x 4>) {
        %c0 = constant 0 : index
        %n = constant 4 : index
        foreach (%i) = (%c0), (%n) {
            %z = load %Z[%i] : c32
            %m = abs %z : f32
            store %m, %M[%i]
        }
    }"""
    out = _run(src, {"Z": np.array(z, np.complex64), "M": np.zeros(4, np.float32)})
    assert out["M"].tolist() == [math.hypot(v.real, v.imag) for v in z] == [13, 5, 17, 29]


def test_a_constant_size_under_a_dynamic_type_runs():
    """`%c8 = constant 8` as a size of a view declared `?` is valid v0.4 (tinytc's constant
    propagation writes it); the form made for running folds it to the literal 8, which the
    v0.3 rules read as a static size: that form is not checked by them again (it was a
    'type mismatch' at run time, found by `ir:` with tinytc-opt)."""
    src = """func @f(%A: memref<f32 x 8>, %B: memref<f32 x 8>) {
        %c8 = constant 8 : index
        %v = expand %A[0 -> %c8 x 1] : memref<f32 x ? x 1>
        %w = fuse %v[0, 1] : memref<f32 x ?>
        %c3 = constant 3 : index
        %s = subview %B[0:%c3] : memref<f32 x ?>
        %t = subview %w[0:%c3] : memref<f32 x ?>
        %one = constant 1.0 : f32
        axpby %one, %t, %one, %s
    }"""
    out = _run(src, {"A": np.arange(8, dtype=np.float32), "B": np.ones(8, np.float32)})
    assert out["B"].tolist() == [1, 2, 3, 1, 1, 1, 1, 1]


@pytest.mark.parametrize("t", [ScalarType.c32, ScalarType.c64], ids=str)
def test_complex_multiplication_is_the_written_out_formula(t):
    """(ac - bd) + (ad + bc)i with every product and sum rounded in the part's type, on any
    machine: NumPy's own complex product fuses one product into the sum (an FMA) where the
    CPU has AVX2, which differed from this formula in about half of random products."""
    from tlinterp.interp import scalar_v04

    rng = np.random.default_rng(5)
    x = (rng.standard_normal(512) + 1j * rng.standard_normal(512)).astype(t.dtype)
    y = (rng.standard_normal(512) + 1j * rng.standard_normal(512)).astype(t.dtype)
    got, faults = scalar_v04.binary("mul", t, x, y)
    a, b, c, d = x.real, x.imag, y.real, y.imag
    assert faults == []
    assert np.array_equal(got.real, a * c - b * d) and np.array_equal(got.imag, a * d + b * c)
    exp2, _ = scalar_v04.unary("exp2", t, x[:1])  # exp(z ln 2) through the same product
    ln2 = np.log(2.0).astype(a.dtype)
    assert np.array_equal(exp2, np.exp(np.array([complex(a[0] * ln2 - b[0] * 0,
                                                         a[0] * 0 + b[0] * ln2)], t.dtype)))
