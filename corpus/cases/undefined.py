"""Kernels whose run is undefined (docs/semantics.md "Execution"), at least one per report
kind. The reference must report the kind (exit 1); other implementations may do anything."""

from __future__ import annotations

import numpy as np

from corpus.cases.model import UndefinedCase


def _u(name, kind, source, args, groups=None, lang="v0.3") -> UndefinedCase:
    return UndefinedCase(name, kind, source, args, groups=groups, lang=lang)


F8 = "memref<f32x8>"
I8 = "memref<i32x8>"


def _binary(name, kind, op, t, a, b):
    mt = f"memref<{t}x{len(a)}>"
    src = (f"func @k(%a: {mt}, %b: {mt}, %c: {mt}) {{\n  foreach %i = 0, {len(a)} {{\n"
           f"    %x = load %a[%i] : {mt}\n    %y = load %b[%i] : {mt}\n"
           f"    %z = arith.{op} %x, %y : {t}\n    store %z, %c[%i] : {mt}\n  }}\n}}\n")
    dt = {"i32": np.int32, "i64": np.int64, "i8": np.int8, "index": np.int64}[t]
    return _u(name, kind, src, {"a": np.array(a, dt), "b": np.array(b, dt),
                                "c": np.zeros(len(a), dt)})


def memory() -> list[UndefinedCase]:
    f = np.arange(8, dtype=np.float32)
    return [
        _u("oob_load", "out-of-bounds",
           f"func @k(%a: {F8}, %n: index) {{\n  %x = load %a[%n] : {F8}\n"
           f"  store %x, %a[0] : {F8}\n}}\n", {"a": f, "n": np.asarray(8, np.int64)}),
        _u("oob_store_negative", "out-of-bounds",
           f"func @k(%a: {F8}, %n: index) {{\n  %x = load %a[0] : {F8}\n"
           f"  store %x, %a[%n] : {F8}\n}}\n", {"a": f, "n": np.asarray(-1, np.int64)}),
        _u("oob_subview_reaching_out", "out-of-bounds",
           f"func @k(%a: {F8}, %b: memref<f32x4>) {{\n  %v = subview %a[6:4] : {F8}\n"
           "  axpby.n 1.0, %v, 0.0, %b : f32, memref<f32x4>, f32, memref<f32x4>\n}\n",
           {"a": f, "b": np.zeros(4, np.float32)}),
        _u("oob_group_slice", "out-of-bounds",
           "func @k(%A: memref<f32x2x2x3>) {\n  %g = group_id\n"
           "  %a = subview %A[:, :, %g] : memref<f32x2x2x3>\n"
           "  %t = alloca -> memref<f32x2x2>\n"
           "  axpby.n 2.0, %a, 0.0, %t : f32, memref<f32x2x2>, f32, memref<f32x2x2>\n}\n",
           {"A": np.ones((2, 2, 3), np.float32)}, groups=4),
        _u("race_foreach_same_element", "data-race",
           f"func @k(%a: {F8}) {{\n  foreach %i = 0, 8 {{\n    %x = load %a[%i] : {F8}\n"
           f"    store %x, %a[0] : {F8}\n  }}\n}}\n", {"a": f}),
        _u("race_between_groups", "data-race",
           "func @k(%a: memref<f32x4x4>, %b: memref<f32x4x4>) {\n"
           "  axpby.n 1.0, %a, 1.0, %b : f32, memref<f32x4x4>, f32, memref<f32x4x4>\n}\n",
           {"a": np.ones((4, 4), np.float32), "b": np.ones((4, 4), np.float32)}, groups=2),
        _u("uninitialised_alloca", "uninitialised-read",
           "func @k(%b: memref<f32x4>) {\n  %t = alloca -> memref<f32x4>\n"
           "  axpby.n 1.0, %t, 0.0, %b : f32, memref<f32x4>, f32, memref<f32x4>\n}\n",
           {"b": np.zeros(4, np.float32)}),
        _u("uninitialised_partial", "uninitialised-read",
           "func @k(%s: memref<f32>) {\n  %t = alloca -> memref<f32x4>\n"
           "  foreach %i = 0, 3 {\n    %f = cast %i : index -> f32\n"
           "    store %f, %t[%i] : memref<f32x4>\n  }\n"
           "  sum.n 1.0, %t, 0.0, %s : f32, memref<f32x4>, f32, memref<f32>\n}\n",
           {"s": np.asarray(0, np.float32)}),
        _u("use_after_lifetime_stop", "use-after-lifetime",
           "func @k(%b: memref<f32x4>) {\n  %t = alloca -> memref<f32x4>\n"
           "  axpby.n 1.0, %b, 0.0, %t : f32, memref<f32x4>, f32, memref<f32x4>\n"
           "  lifetime_stop %t\n"
           "  axpby.n 1.0, %t, 0.0, %b : f32, memref<f32x4>, f32, memref<f32x4>\n}\n",
           {"b": np.ones(4, np.float32)}),
        _u("use_after_lifetime_stop_in_loop", "use-after-lifetime",
           "func @k(%b: memref<f32x4>) {\n"
           "  for %i = 0, 2 {\n    %u = alloca -> memref<f32x4>\n"
           "    axpby.n 1.0, %b, 0.0, %u : f32, memref<f32x4>, f32, memref<f32x4>\n"
           "    lifetime_stop %u\n    %x = load %b[0] : memref<f32x4>\n"
           "    store %x, %u[0] : memref<f32x4>\n  }\n}\n",
           {"b": np.ones(4, np.float32)}),
        _u("overlapping_gemm", "overlapping-operands",
           "func @k(%a: memref<f32x4x4>) {\n"
           "  gemm.n.n 1.0, %a, %a, 0.0, %a : f32, memref<f32x4x4>, memref<f32x4x4>, f32, "
           "memref<f32x4x4>\n}\n", {"a": np.ones((4, 4), np.float32)}),
        _u("overlapping_axpby_views", "overlapping-operands",
           f"func @k(%a: {F8}) {{\n  %x = subview %a[0:5] : {F8}\n"
           f"  %y = subview %a[3:5] : {F8}\n"
           "  axpby.n 1.0, %x, 1.0, %y : f32, memref<f32x5>, f32, memref<f32x5>\n}\n",
           {"a": f}),
        _u("atomic_order_dependent", "order-dependent-atomic",
           "func @k(%a: memref<f32x4>, %b: memref<f32x4>) {\n"
           "  axpby.n.atomic 1.0, %a, 2.0, %b : f32, memref<f32x4>, f32, memref<f32x4>\n}\n",
           {"a": np.ones(4, np.float32), "b": np.ones(4, np.float32)}, groups=3),
        _u("shape_mismatch_gemm_k", "shape-mismatch",
           "func @k(%a: memref<f64x2x?>, %b: memref<f64x?x3>, %c: memref<f64x2x3>) {\n"
           "  gemm.n.n 1.0, %a, %b, 0.0, %c : f64, memref<f64x2x?>, memref<f64x?x3>, f64, "
           "memref<f64x2x3>\n}\n",
           {"a": np.ones((2, 4)), "b": np.ones((5, 3)), "c": np.zeros((2, 3))}),
        _u("shape_mismatch_axpby", "shape-mismatch",
           "func @k(%a: memref<f32x4>, %b: memref<f32x?>) {\n"
           "  axpby.n 1.0, %a, 1.0, %b : f32, memref<f32x4>, f32, memref<f32x?>\n}\n",
           {"a": np.ones(4, np.float32), "b": np.ones(5, np.float32)}),
        _u("invalid_view_negative_offset", "invalid-view",
           f"func @k(%a: {F8}, %o: index) {{\n  %v = subview %a[%o:2] : {F8}\n"
           "  %x = load %v[1] : memref<f32x2>\n  store %x, %a[0] : memref<f32x8>\n}\n",
           {"a": f, "o": np.asarray(-3, np.int64)}),
        _u("invalid_view_zero_size", "invalid-view",
           f"func @k(%a: {F8}, %n: index) {{\n  %v = subview %a[1:%n] : {F8}\n"
           "  %s = size %v[0] : memref<f32x?>\n}\n",
           {"a": f, "n": np.asarray(0, np.int64)}),
        _u("invalid_view_fuse_dynamic", "invalid-view",
           "func @k(%a: memref<f32x4x2,strided<1,?>>, %b: memref<f32x8>) {\n"
           "  %f = fuse %a[0,1] : memref<f32x4x2,strided<1,?>>\n"
           "  axpby.n 1.0, %f, 0.0, %b : f32, memref<f32x8>, f32, memref<f32x8>\n}\n",
           {"a": np.ones((4, 2), np.float32), "a.strides": np.array([1, 5], np.int64),
            "b": np.zeros(8, np.float32)}),
        _u("invalid_view_expand_dynamic", "invalid-view",
           "func @k(%a: memref<f32x?>, %p: index) {\n"
           "  %e = expand %a[0->%p x ?] : memref<f32x?>\n"
           "  %s = size %e[1] : memref<f32x?x?>\n}\n",
           {"a": np.ones(10, np.float32), "p": np.asarray(3, np.int64)}),
    ]


def arithmetic() -> list[UndefinedCase]:
    return [
        _binary("div_by_zero_i32", "division-by-zero", "div", "i32", [4, 5, 6], [1, 0, 2]),
        _binary("rem_by_zero_i64", "division-by-zero", "rem", "i64", [4, 5], [0, 3]),
        _binary("div_overflow_i32", "division-overflow", "div", "i32", [-2**31, 4], [-1, 2]),
        _binary("rem_overflow_i8", "division-overflow", "rem", "i8", [-128, 4], [-1, 2]),
        _binary("add_overflow_i32", "signed-overflow", "add", "i32", [2**31 - 1, 1], [1, 1]),
        _binary("mul_overflow_i64", "signed-overflow", "mul", "i64", [2**62, 3], [2, 3]),
        _binary("sub_overflow_i8", "signed-overflow", "sub", "i8", [-128, 0], [1, 0]),
        _binary("shl_overflow_i32", "signed-overflow", "shl", "i32", [1 << 30, 1], [2, 1]),
        _u("neg_overflow_i16", "signed-overflow",
           "func @k(%a: memref<i16x2>) {\n  %x = load %a[0] : memref<i16x2>\n"
           "  %y = arith.neg %x : i16\n  store %y, %a[1] : memref<i16x2>\n}\n",
           {"a": np.array([-32768, 0], np.int16)}),
        _binary("shift_too_far_i32", "shift-out-of-range", "shl", "i32", [1, 1], [1, 32]),
        _binary("shift_negative_i64", "shift-out-of-range", "shr", "i64", [8, 8], [-1, 1]),
        _u("cast_nan_to_int", "invalid-cast",
           "func @k(%a: memref<f32x2>, %b: memref<i32x2>) {\n  foreach %i = 0, 2 {\n"
           "    %x = load %a[%i] : memref<f32x2>\n    %y = cast %x : f32 -> i32\n"
           "    store %y, %b[%i] : memref<i32x2>\n  }\n}\n",
           {"a": np.array([1.5, np.nan], np.float32), "b": np.zeros(2, np.int32)}),
        _u("cast_out_of_range", "invalid-cast",
           "func @k(%a: memref<f64x2>, %b: memref<i8x2>) {\n  foreach %i = 0, 2 {\n"
           "    %x = load %a[%i] : memref<f64x2>\n    %y = cast %x : f64 -> i8\n"
           "    store %y, %b[%i] : memref<i8x2>\n  }\n}\n",
           {"a": np.array([-3.0, 200.0]), "b": np.zeros(2, np.int8)}),
    ]


# two sub-groups of 16 (the size tinytc v0.4.0's default target takes)
_SPMD_HEAD = ("func @k(%a: memref<i32 x 32>) attributes{subgroup_size=16, "
              "work_group_size=[32, 1]} {\n    parallel {\n"
              "        %k = subgroup_local_id : i32\n        %ki = cast %k : index\n")


def spmd() -> list[UndefinedCase]:
    """v0.4 work-items and sub-groups (tests/test_interp_v04_spmd.py has the twins)."""
    a = {"a": np.arange(32, dtype=np.int32)}
    return [
        _u("v04_broadcast_index_not_uniform", "non-uniform",
           _SPMD_HEAD + "        %x = load %a[%ki] : i32\n"
           "        %b = subgroup_broadcast %x, %k : i32\n    }\n}\n", a, lang="v0.4"),
        _u("v04_barrier_in_divergent_branch", "barrier-divergence",
           _SPMD_HEAD + "        %c4 = constant 4 : i32\n        %p = less_than %k, %c4 : bool\n"
           "        if %p {\n            barrier.local\n        }\n    }\n}\n", a, lang="v0.4"),
        _u("v04_race_between_sub_groups", "data-race",
           _SPMD_HEAD + "        %x = load %a[%ki] : i32\n        store %x, %a[%ki]\n"
           "    }\n}\n", a, lang="v0.4"),
        _u("v04_coopmatrix_load_unchecked_edge", "out-of-bounds",
           "func @k(%a: memref<f32 x 5 x 8>) attributes{subgroup_size=16} {\n"
           "    parallel {\n        %c0 = constant 0 : index\n"
           "        %x = cooperative_matrix_load %a[%c0, %c0] : "
           "coopmatrix<f32 x 16 x 8, matrix_acc>\n    }\n}\n",
           {"a": np.ones((5, 8), np.float32)}, lang="v0.4"),
    ]


_LANE16 = ("        %c16 = constant 16 : index\n        %s = subgroup_linear_id : i32\n"
           "        %si = cast %s : index\n        %t = mul %si, %c16 : index\n"
           "        %l = add %t, %ki : index\n")
_ACC16 = "coopmatrix<f32 x 16 x 8, matrix_acc>"


def spmd_more() -> list[UndefinedCase]:
    """More v0.4-only undefined behaviour: races in local memory and between work-items,
    atomics against plain accesses, barriers under lane-dependent loops, non-uniform
    cooperative-matrix operands, unchecked coopmatrix stores and uninitialised local memory."""
    a = {"a": np.arange(32, dtype=np.int32)}
    f = {"f": np.arange(128, dtype=np.float32).reshape(16, 8)}
    coop = ("func @k(%f: memref<f32 x 16 x 8>) attributes{subgroup_size=16} {\n"
            "    parallel {\n"
            "        %c0 = constant 0 : index\n")
    return [
        _u("v04_race_local_memory_without_barrier", "data-race",
           "func @k(%a: memref<i32 x 32>) attributes{subgroup_size=16, "
           "work_group_size=[32, 1]} {\n    %L = alloca : memref<i32 x 32, local>\n"
           "    parallel {\n        %k = subgroup_local_id : i32\n"
           "        %ki = cast %k : index\n" + _LANE16 +
           "        %x = load %a[%l] : i32\n        store %x, %L[%l]\n"
           "        %c31 = constant 31 : index\n        %m = sub %c31, %l : index\n"
           "        %y = load %L[%m] : i32\n        store %y, %a[%l]\n    }\n}\n", a,
           lang="v0.4"),
        _u("v04_race_work_items_same_element", "data-race",
           _SPMD_HEAD + "        %c0 = constant 0 : index\n        store %k, %a[%c0]\n"
           "    }\n}\n", a, lang="v0.4"),
        _u("v04_race_atomic_and_plain_load", "data-race",
           _SPMD_HEAD + "        %c0 = constant 0 : index\n        %one = constant 1 : i32\n"
           "        %x = atomic_add %one, %a[%c0] : i32\n        %y = load %a[%c0] : i32\n"
           "        store %y, %a[%ki]\n    }\n}\n", a, lang="v0.4"),
        _u("v04_barrier_in_lane_dependent_loop", "barrier-divergence",
           _SPMD_HEAD + "        %c0 = constant 0 : i32\n        %c1 = constant 1 : i32\n"
           "        for %i = %c0, %k {\n            barrier.local\n        }\n    }\n}\n",
           a, lang="v0.4"),
        _u("v04_coopmatrix_load_index_not_uniform", "non-uniform",
           coop + "        %k = subgroup_local_id : i32\n        %ki = cast %k : index\n"
           f"        %m = cooperative_matrix_load %f[%ki, %c0] : {_ACC16}\n    }}\n}}\n",
           f, lang="v0.4"),
        _u("v04_coopmatrix_store_unchecked_edge", "out-of-bounds",
           coop + "        %c1 = constant 1 : index\n"
           f"        %m = cooperative_matrix_load %f[%c0, %c0] : {_ACC16}\n"
           "        cooperative_matrix_store %m, %f[%c1, %c0]\n    }\n}\n", f, lang="v0.4"),
        _u("v04_uninitialised_local_memory", "uninitialised-read",
           "func @k(%a: memref<i32 x 32>) attributes{subgroup_size=16, "
           "work_group_size=[32, 1]} {\n    %L = alloca : memref<i32 x 32, local>\n"
           "    parallel {\n        %k = subgroup_local_id : i32\n"
           "        %ki = cast %k : index\n" + _LANE16 +
           "        %y = load %L[%l] : i32\n        store %y, %a[%l]\n    }\n}\n", a,
           lang="v0.4"),
    ]


def cases() -> list[UndefinedCase]:
    return [*memory(), *arithmetic(), *spmd(), *spmd_more()]
