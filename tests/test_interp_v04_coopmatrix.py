"""The interpreter runs v0.4 cooperative matrices (f32 and i32 here; the low-precision types'
arithmetic belongs to the scalar side): load/store with transposes and checks, mul_add, scale,
construct, reduce, apply, extract/insert, atomics, component-wise arithmetic; their undefined
behaviour (out of range without `checked`, non-uniform operands), each with a corrected twin.
References are plain NumPy, independent of tlinterp/interp/coopmatrix.py."""

from __future__ import annotations

import numpy as np
import pytest
from v04run import run_v04 as _run
from v04run import ub_v04 as _ub

RNG = np.random.default_rng(11)

def _tile_offset(name: str) -> str:
    """Kernel lines that set %c0 and %`name`, the index 8 * the sub-group's id: where each
    sub-group's tile starts (the kernels below give sub-group s columns or rows 8 s on)."""
    return f"""\
        %c0 = constant 0 : index
        %s = subgroup_linear_id : i32
        %c8 = constant 8 : i32
        %t = mul %s, %c8 : i32
        %{name} = cast %t : index
"""


# Two sub-groups of 8: sub-group s computes the 16 x 8 tile of C at columns 8 s.
GEMM = """\
func @k(%A: memref<f32 x 16 x 16>, %B: memref<f32 x BSHAPE>, %C: memref<f32 x 16 x 16>) \
attributes{subgroup_size=8, work_group_size=[16, 1]} {
    parallel {
""" + _tile_offset("col") + """\
        %a = cooperative_matrix_load %A[%c0, %c0] : coopmatrix<f32 x 16 x 16, matrix_a>
        %b = cooperative_matrix_loadBT %B[BPOS] : coopmatrix<f32 x 16 x 8, matrix_b>
        %c = cooperative_matrix_load %C[%c0, %col] : coopmatrix<f32 x 16 x 8, matrix_acc>
        %d = cooperative_matrix_mul_add %a, %b, %c : coopmatrix<f32 x 16 x 8, matrix_acc>
        %two = constant 2.0 : f32
        %e = cooperative_matrix_scale %two, %d : coopmatrix<f32 x 16 x 8, matrix_acc>
        cooperative_matrix_store %e, %C[%c0, %col]
    }
}
"""


@pytest.mark.parametrize("trans", [False, True])
def test_mul_add_scale_by_sub_group_tiles(trans):
    a = RNG.standard_normal((16, 16)).astype(np.float32)
    b = RNG.standard_normal((16, 16)).astype(np.float32)
    c = RNG.standard_normal((16, 16)).astype(np.float32)
    src = GEMM.replace("BT", ".t" if trans else "").replace(
        "BSHAPE", "16 x 16").replace(
        "BPOS", "%col, %c0" if trans else "%c0, %col")
    out = _run(src, {"A": a, "B": b.T.copy() if trans else b, "C": c})["C"]
    ref = 2 * (a.astype(np.float64) @ b + c)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


EDGE = """\
func @k(%A: memref<f32 x ? x ?>, %B: memref<f32 x ? x ?>) \
attributes{subgroup_size=8, work_group_size=[8, 1]} {
    parallel {
        %c0 = constant 0 : index
        %x = cooperative_matrix_loadCHK %A[%c0, %c0] : coopmatrix<f32 x 8 x 8, matrix_acc>
        cooperative_matrix_storeCHK %x, %B[%c0, %c0]
    }
}
"""


@pytest.mark.parametrize("shape,flag", [((5, 8), "rows"), ((8, 3), "cols"), ((5, 3), "both")])
def test_checked_edges_and_unchecked_twin(shape, flag):
    a = RNG.standard_normal(shape).astype(np.float32)
    out = _run(EDGE.replace("CHK", f".{flag}_checked"), {"A": a, "B": np.zeros(shape,
                                                                                np.float32)})
    assert (out["B"] == a).all()
    msg = _ub(EDGE.replace("CHK", ""), {"A": a, "B": np.zeros(shape, np.float32)},
              "out-of-bounds")
    assert "outside the memref" in msg


def test_checked_load_pads_with_zero_transposed():
    src = EDGE.replace("loadCHK", "load.t.both_checked").replace("storeCHK", "store")
    a = RNG.standard_normal((6, 5)).astype(np.float32)
    out = _run(src, {"A": a, "B": np.full((8, 8), 7, np.float32)})["B"]
    ref = np.zeros((8, 8), np.float32)
    ref[:5, :6] = a.T
    assert (out == ref).all()


ELEMENTS = """\
func @k(%A: memref<f32 x 8 x 4>, %R: memref<f32 x 8 x 1>, %K: memref<f32 x 1 x 4>, \
%E: memref<f32 x 8>) attributes{subgroup_size=8, work_group_size=[8, 1]} {
    parallel {
        %c0 = constant 0 : index
        %m = cooperative_matrix_load %A[%c0, %c0] : coopmatrix<f32 x 8 x 4, matrix_acc>
        %three = constant 3.0 : f32
        %t = cooperative_matrix_construct %three : coopmatrix<f32 x 8 x 4, matrix_acc>
        %p = mul %m, %t : coopmatrix<f32 x 8 x 4, matrix_acc>
        %q = sub %p, %m : coopmatrix<f32 x 8 x 4, matrix_acc>
        %n = neg %q : coopmatrix<f32 x 8 x 4, matrix_acc>
        %w = cooperative_matrix_apply (%i, %j, %v) = %n -> coopmatrix<f32 x 8 x 4, matrix_acc> {
            %fi = cast %i : f32
            %ten = constant 10.0 : f32
            %fj = cast %j : f32
            %s = mul %fi, %ten : f32
            %o = add %s, %fj : f32
            %z = add %v, %o : f32
            yield (%z)
        }
        %ra = cooperative_matrix_reduce_add.row %w : coopmatrix<f32 x 8 x 1, matrix_acc>
        %rm = cooperative_matrix_reduce_max.column %w : coopmatrix<f32 x 1 x 4, matrix_acc>
        cooperative_matrix_store %ra, %R[%c0, %c0]
        cooperative_matrix_store %rm, %K[%c0, %c0]
        %e = cooperative_matrix_extract %w[2] : f32
        %k = subgroup_local_id : i32
        %ki = cast %k : index
        store %e, %E[%ki]
        %ins = cooperative_matrix_insert %three, %w[0] : coopmatrix<f32 x 8 x 4, matrix_acc>
        cooperative_matrix_store %ins, %A[%c0, %c0]
    }
}
"""


def test_componentwise_apply_reduce_extract_insert():
    a = RNG.standard_normal((8, 4)).astype(np.float32)
    out = _run(ELEMENTS, {"A": a, "R": np.zeros((8, 1), np.float32),
                          "K": np.zeros((1, 4), np.float32), "E": np.zeros(8, np.float32)})
    w = -(a * 3 - a) + (10 * np.arange(8)[:, None] + np.arange(4)[None, :])
    np.testing.assert_allclose(out["R"][:, 0], w.sum(1), rtol=1e-6)
    np.testing.assert_allclose(out["K"][0], w.max(0), rtol=1e-6)
    # layout (docs/semantics.md): an 8 x 4 matrix_acc over 8 lanes, lane p holds column v in
    # component v: row p
    np.testing.assert_allclose(out["E"], w[:, 2], rtol=1e-6)
    ins = w.copy()
    ins[:, 0] = 3
    np.testing.assert_allclose(out["A"], ins, rtol=1e-6)


ATOMIC = """\
func @k(%A: memref<i32 x 8 x 8>, %C: memref<i32 x 8 x 8>, %O: memref<i32 x 8 x 8>) \
attributes{subgroup_size=8, work_group_size=[16, 1]} {
    parallel {
        %c0 = constant 0 : index
        %m = cooperative_matrix_load %A[%c0, %c0] : coopmatrix<i32 x 8 x 8, matrix_acc>
        %old = cooperative_matrix_atomic_add %m, %C[%c0, %c0] : coopmatrix<i32 x 8 x 8, matrix_acc>
        %s = subgroup_linear_id : i32
        %zero = constant 0 : i32
        %first = equal %s, %zero : bool
        if %first {
            cooperative_matrix_store %old, %O[%c0, %c0]
        }
    }
}
"""


def test_atomic_update_from_two_sub_groups():
    a = RNG.integers(-9, 9, (8, 8)).astype(np.int32)
    c = RNG.integers(-9, 9, (8, 8)).astype(np.int32)
    out = _run(ATOMIC, {"A": a, "C": c, "O": np.zeros((8, 8), np.int32)})
    assert (out["C"] == c + 2 * a).all()
    assert (out["O"] == c).all()  # sub-group 0 updates first (work-group-major order)


CHECKED_MIN = """\
func @k(%A: memref<f32 x 4 x 3>, %C: memref<f32 x 5 x 6>, %O: memref<f32 x 4 x 3>) \
attributes{subgroup_size=4, work_group_size=[4, 1]} {
    parallel {
        %c0 = constant 0 : index
        %c2 = constant 2 : index
        %c4 = constant 4 : index
        %m = cooperative_matrix_load %A[%c0, %c0] : coopmatrix<f32 x 4 x 3, matrix_acc>
        %old = cooperative_matrix_atomic_min.both_checked %m, %C[%c2, %c4] \
: coopmatrix<f32 x 4 x 3, matrix_acc>
        cooperative_matrix_store %old, %O[%c0, %c0]
    }
}
"""


def test_checked_atomic_min_keeps_old_on_nan_and_tie():
    """Entries outside the memref on a checked side are not taken (their old value is 0);
    min is atomic_min's: a NaN operand is ignored, on a tie (+0.0 against -0.0) the old
    value stays."""
    a = np.full((4, 3), 2, np.float32)
    a[0, 0], a[1, 1] = np.nan, -0.0
    c = np.arange(30, dtype=np.float32).reshape(5, 6)
    c[3, 5] = 0.0
    out = _run(CHECKED_MIN, {"A": a, "C": c.copy(), "O": np.full((4, 3), 7, np.float32)})
    want = c.copy()  # rows 2..5 clipped to 2..4, columns 4..6 to 4..5
    want[2:5, 4:6] = np.fmin(c[2:5, 4:6], a[:3, :2])
    want[2, 4] = c[2, 4]  # NaN ignored
    np.testing.assert_array_equal(out["C"], want)
    assert np.signbit(out["C"][3, 5]) == np.False_  # the old +0.0 stays
    np.testing.assert_array_equal(out["O"][:3, :2], c[2:5, 4:6])
    assert (out["O"][3] == 0).all() and (out["O"][:, 2] == 0).all()


NONUNIFORM = """\
func @k(%A: memref<f32 x 16 x 8>, %B: memref<f32 x 16 x 8>) \
attributes{subgroup_size=8, work_group_size=[8, 1]} {
    parallel {
        %c0 = constant 0 : index
        %k = subgroup_local_id : i32
        %c8 = constant 8 : i32
        %r = div %k, %c8 : i32
        %ri = cast OFFSET : index
        %x = cooperative_matrix_load %A[%ri, %c0] : coopmatrix<f32 x 8 x 8, matrix_acc>
        cooperative_matrix_store %x, %B[%ri, %c0]
    }
}
"""


def test_nonuniform_coopmatrix_offset_and_twin():
    a = RNG.standard_normal((16, 8)).astype(np.float32)
    msg = _ub(NONUNIFORM.replace("OFFSET", "%k"), {"A": a, "B": np.zeros_like(a)},
              "non-uniform")
    assert "row offset of cooperative_matrix_load is not dynamically uniform" in msg
    out = _run(NONUNIFORM.replace("OFFSET", "%r"), {"A": a, "B": np.zeros_like(a)})["B"]
    assert (out[:8] == a[:8]).all() and (out[8:] == 0).all()


def test_a_shape_without_layout_is_a_clear_error():
    """Rows that are not a power of two have no layout: the checker rejects the type (before,
    the interpreter stopped at run time)."""
    from tlinterp.lang.diagnostics import SourceError

    src = EDGE.replace("CHK", "").replace("8 x 8, matrix_acc", "12 x 8, matrix_acc")
    args = {"A": np.zeros((12, 8), np.float32), "B": np.zeros((12, 8), np.float32)}
    with pytest.raises(SourceError, match="coopmatrix rows must be a power of two, not 12"):
        _run(src, args)


def test_a_component_index_outside_the_lane_is_rejected():
    """extract past the lane's components (8 x 8 over 8 lanes: 8 components): the checker
    rejects it, as the layout fixes the count once subgroup_size is known (it ran into an
    IndexError in the interpreter)."""
    from tlinterp.lang.diagnostics import SourceError

    src = ("func @k(%A: memref<f32 x 8 x 8>, %B: memref<f32 x 8>) "
           "attributes{subgroup_size=8} {\n"
           "    parallel {\n        %c0 = constant 0 : index\n"
           "        %x = cooperative_matrix_load %A[%c0, %c0] : coopmatrix<f32 x 8 x 8, "
           "matrix_acc>\n        %e = cooperative_matrix_extract %x[100] : f32\n"
           "        store %e, %B[%c0]\n    }\n}\n")
    args = {"A": np.zeros((8, 8), np.float32), "B": np.zeros(8, np.float32)}
    with pytest.raises(SourceError, match="component index 100 is outside 0..7"):
        _run(src, args)


LOCAL = """\
func @k(%A: memref<f32 x 8 x 16>, %B: memref<f32 x 8 x 16>) \
attributes{subgroup_size=8, work_group_size=[16, 1]} {
    %L = alloca : memref<f32 x 8 x 16, local>
    parallel {
""" + _tile_offset("mine") + """\
        %o = sub %c8, %t : i32
        %other = cast %o : index
        %x = cooperative_matrix_load %A[%c0, %mine] : coopmatrix<f32 x 8 x 8, matrix_acc>
        cooperative_matrix_store %x, %L[%c0, STORE]
BARRIER
        %y = cooperative_matrix_load %L[%c0, %other] : coopmatrix<f32 x 8 x 8, matrix_acc>
        cooperative_matrix_store %y, %B[%c0, %mine]
    }
}
"""


def test_coopmatrix_exchange_through_local_memory_needs_a_barrier():
    a = RNG.standard_normal((8, 16)).astype(np.float32)
    ok = LOCAL.replace("STORE", "%mine").replace("BARRIER", "        barrier.local")
    out = _run(ok, {"A": a, "B": np.zeros_like(a)})["B"]
    assert (out == np.concatenate([a[:, 8:], a[:, :8]], axis=1)).all()
    msg = _ub(LOCAL.replace("STORE", "%mine").replace("BARRIER\n", ""),
              {"A": a, "B": np.zeros_like(a)}, "data-race")
    assert "two work-items in work-group 0" in msg


def test_two_sub_groups_storing_one_tile_race():
    a = RNG.standard_normal((8, 16)).astype(np.float32)
    src = LOCAL.replace("STORE", "%c0").replace("BARRIER", "        barrier.local")
    _ub(src, {"A": a, "B": np.zeros_like(a)}, "data-race")


def test_coopmatrix_load_of_unwritten_local_memory():
    a = RNG.standard_normal((8, 16)).astype(np.float32)
    src = LOCAL.replace("STORE", "%c0").replace("BARRIER", "        barrier.local")
    src = src.replace("%s = subgroup_linear_id : i32", "%s = constant 0 : i32")
    # nothing writes %L before this load
    msg = _ub(src.replace("cooperative_matrix_store %x, %L[%c0, %c0]",
                          "%z = cooperative_matrix_load %L[%c0, %c0] : coopmatrix<f32 x 8 x 8, "
                          "matrix_acc>"), {"A": a, "B": np.zeros_like(a)}, "uninitialised-read")
    assert "before any write" in msg


SHARED_B = """\
func @k(%A: memref<f32 x 16 x 16>, %B: memref<f32 x 16 x 16>, %C: memref<f32 x 16 x 16>) \
attributes{subgroup_size=8, work_group_size=[16, 1]} {
    parallel {
""" + _tile_offset("row") + """\
        %a = cooperative_matrix_load %A[%row, %c0] : coopmatrix<f32 x 8 x 16, matrix_a>
        %b = cooperative_matrix_load %B[%c0, %c0] : coopmatrix<f32 x 16 x 16, matrix_b>
        %c = cooperative_matrix_load %C[%row, %c0] : coopmatrix<f32 x 8 x 16, matrix_acc>
        %d = cooperative_matrix_mul_add %a, %b, %c : coopmatrix<f32 x 8 x 16, matrix_acc>
        cooperative_matrix_store %d, %C[%row, %c0]
    }
}
"""


def test_mul_add_with_one_b_for_all_sub_groups():
    a, b, c = (RNG.standard_normal((16, 16)).astype(np.float32) for _ in range(3))
    out = _run(SHARED_B, {"A": a, "B": b, "C": c})["C"]
    np.testing.assert_allclose(out, a.astype(np.float64) @ b + c, rtol=1e-5, atol=1e-5)


def test_corpus_coopmatrix_atomics_are_exempt_from_races():
    from pathlib import Path

    src = (Path(__file__).resolve().parents[1] / "corpus" / "v04" / "valid" /
           "coopmatrix_atomics.tl").read_text()
    c = np.arange(256, dtype=np.float32).reshape(16, 16)
    out = _run(src, {"C": c})["C"]
    assert (out == c.T).all()  # the last atomic store: the transposed load's values


# A coopmatrix carried by a `for` whose trip count differs between work-groups (work-group g
# runs g iterations), and one yielded by an `if` whose condition does: the interpreter runs all
# work-groups at once, so the lanes of some groups leave the loop (or take the other branch)
# while the others go on, and the coopmatrix must follow the lanes that run.
DIVERGENT = """\
func @k(%A: memref<f32 x 8 x 8>, %C: memref<f32 x 8 x 8 x ?>) \
attributes{subgroup_size=8, work_group_size=[8, 1]} {
    %c0 = constant 0 : index
    %c1 = constant 1 : index
    %c2 = constant 2 : index
    %g = group_id.x : index
    %Cg = subview %C[0:8, 0:8, %g] : memref<f32 x 8 x 8>
    parallel {
        %a = cooperative_matrix_load %A[%c0, %c0] : coopmatrix<f32 x 8 x 8, matrix_acc>
        %z = constant 0.0 : coopmatrix<f32 x 8 x 8, matrix_acc>
        %s = for %i = %c0, %g init(%x = %z) -> (coopmatrix<f32 x 8 x 8, matrix_acc>) {
            %y = add %x, %a : coopmatrix<f32 x 8 x 8, matrix_acc>
            yield (%y)
        }
        %odd = rem %g, %c2 : index
        %isodd = equal %odd, %c1 : bool
        %r = if %isodd -> (coopmatrix<f32 x 8 x 8, matrix_acc>) {
            %n = constant -1.0 : f32
            %m = cooperative_matrix_scale %n, %s : coopmatrix<f32 x 8 x 8, matrix_acc>
            yield (%m)
        } else {
            yield (%s)
        }
        cooperative_matrix_store %r, %Cg[%c0, %c0]
    }
}
"""


# the `if` with only yields in both branches (no instruction that is not a scalar one)
DIVERGENT_YIELDS = DIVERGENT.replace("""\
            %n = constant -1.0 : f32
            %m = cooperative_matrix_scale %n, %s : coopmatrix<f32 x 8 x 8, matrix_acc>
            yield (%m)""", "            yield (%z)")


@pytest.mark.parametrize("src,odd", [(DIVERGENT, -1.0), (DIVERGENT_YIELDS, 0.0)])
def test_coopmatrix_follows_lanes_of_divergent_loops_and_branches(src, odd):
    a = RNG.standard_normal((8, 8)).astype(np.float32)
    out = _run(src, {"A": a, "C": np.zeros((8, 8, 5), np.float32)}, groups=5)["C"]
    for g in range(5):
        np.testing.assert_allclose(out[:, :, g], (odd if g % 2 else 1.0) * g * a,
                                   rtol=1e-6, err_msg=f"work-group {g}")
