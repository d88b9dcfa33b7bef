"""v0.4 lane model and sub-group operations (tlinterp/interp/spmd.py, subgroups.py) against
brute-force references: ids from the v0.4 builtin definitions one work-item at a time, and
folds written as Python loops over NumPy scalars."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tlinterp.interp import lowp
from tlinterp.interp import subgroups as sg
from tlinterp.interp.spmd import WorkGroup, nonuniform


@given(st.sampled_from([1, 2, 4, 8, 16, 32]), st.integers(1, 4), st.integers(1, 3))
def test_ids_brute_force(S, nx, wy):
    wg = WorkGroup((S * nx, wy), S)
    wx = S * nx
    lin = np.arange(wx * wy)
    sx, sy, sz = wg.subgroup_id()
    for l in lin:  # the v0.4 definitions, one work-item at a time
        lx, ly = l % wx, l // wx
        assert (sx[l], sy[l], sz[l]) == (lx // S, ly, 0)
        assert wg.subgroup_linear_id()[l] == lx // S + ly * (wx // S)
        assert wg.subgroup_local_id()[l] == lx % S
        assert wg.item(wg.subgroup_linear_id()[l], wg.subgroup_local_id()[l]) == l
    assert wg.num_subgroups == (nx, wy, 1)
    # the (G, W) <-> (G, sub-group, lane) views agree with the ids
    x = np.stack([lin, lin + 1000])
    v = wg.as_subgroups(x)
    for l in lin:
        assert v[1, wg.subgroup_linear_id()[l], wg.subgroup_local_id()[l]] == l + 1000
    assert (wg.as_items(v) == x).all()


def test_ids_hand_case():
    wg = WorkGroup((32, 2), 16)
    assert wg.subgroup_linear_id()[40] == 2 and wg.subgroup_local_id()[40] == 8
    assert [a[40] for a in wg.subgroup_id()] == [0, 1, 0]


def test_no_partial_subgroups():
    with pytest.raises(ValueError, match="multiple of the sub-group size"):
        WorkGroup((24, 1), 16)
    with pytest.raises(ValueError):
        WorkGroup((0, 1), 16)


def _fold(values, op, t):
    out, acc = [], None
    for v in values:
        v = t.type(v)
        if acc is None:
            acc = v
        elif op == "add":
            acc = t.type(acc + v)
        elif op == "max":
            acc = v if math.isnan(float(acc)) else acc if math.isnan(float(v)) else max(acc, v)
        else:
            acc = v if math.isnan(float(acc)) else acc if math.isnan(float(v)) else min(acc, v)
        out.append(acc)
    return out


@given(st.sampled_from([4, 8, 16]), st.integers(1, 2), st.integers(1, 3),
       st.sampled_from(["add", "max", "min"]), st.sampled_from(["f32", "f16", "bf16", "f64"]),
       st.data())
def test_float_scans_and_reduce_are_left_folds(S, nx, G, op, ty, data):
    wg = WorkGroup((S * nx, 1), S)
    t = lowp.dtype(ty)
    vals = data.draw(st.lists(st.floats(-1e4, 1e4, width=16) | st.just(float("nan")),
                              min_size=G * wg.n_items, max_size=G * wg.n_items))
    x = np.array(vals, t).reshape(G, wg.n_items)
    inc = sg.inclusive_scan(wg, x, op, ty)
    exc = sg.exclusive_scan(wg, x, op, ty)
    red = sg.reduce(wg, x, op, ty)
    ident = {"add": 0.0, "max": -np.inf, "min": np.inf}[op]
    for g in range(G):
        for s in range(wg.n_subgroups):
            lanes = x[g, s * S:(s + 1) * S]
            want = _fold(lanes, op, t)
            _same(inc[g, s * S:(s + 1) * S], np.array(want, t))
            _same(exc[g, s * S:(s + 1) * S], np.array([ident] + want[:-1], t))
            _same(red[g, s * S:(s + 1) * S], np.full(S, want[-1], t))


def _same(a, b):
    """Equal values, NaN equal to NaN (through f64: NumPy does not know bf16's NaN)."""
    np.testing.assert_array_equal(a.astype(np.float64), b.astype(np.float64))


@given(st.lists(st.integers(-2 ** 31, 2 ** 31 - 1), min_size=16, max_size=16))
def test_integer_add_wraps(vals):
    wg = WorkGroup((16, 1), 16)
    x = np.array([vals], np.int32)
    got = sg.reduce(wg, x, "add", "i32")[0, 0]
    want = (sum(vals) + 2 ** 31) % 2 ** 32 - 2 ** 31
    assert got == want
    inc = sg.inclusive_scan(wg, x, "add", "i32")[0]
    assert [int(v) for v in inc] == [(sum(vals[:i + 1]) + 2 ** 31) % 2 ** 32 - 2 ** 31
                                     for i in range(16)]
    assert sg.exclusive_scan(wg, x, "max", "i32")[0, 0] == -2 ** 31


def test_fold_order_is_sequential_hand_case():
    wg = WorkGroup((4, 1), 4)
    x = np.array([[2.0 ** 24, 1, 1, 1]], np.float32)  # pairwise would give 2^24 + 2
    assert sg.reduce(wg, x, "add", "f32")[0, 0] == 2.0 ** 24


@given(st.lists(st.floats(-1e3, 1e3, width=32), min_size=16, max_size=16))
def test_add_bound_holds_for_sequential_and_pairwise(vals):
    wg = WorkGroup((16, 1), 16)
    x = np.array([vals], np.float32)
    exact = math.fsum(vals)
    bound = sg.add_bound(x[0], "f32")
    seq = float(sg.reduce(wg, x, "add", "f32")[0, 0])
    assert abs(seq - exact) <= bound
    pw = x[0]
    while len(pw) > 1:
        pw = (pw[0::2] + pw[1::2]).astype(np.float32)
    assert abs(float(pw[0]) - exact) <= bound


def test_complex_min_max_forbidden():
    wg = WorkGroup((4, 1), 4)
    with pytest.raises(ValueError, match="complex"):
        sg.reduce(wg, np.zeros((1, 4), np.complex64), "max", "c32")
    r = sg.reduce(wg, np.array([[1 + 1j, 2, 3j, 1]], np.complex64), "add", "c32")
    assert r[0, 0] == 4 + 4j


def test_broadcast_value_and_ub():
    wg = WorkGroup((8, 2), 4)
    G = 2
    x = np.arange(G * 16, dtype=np.float32).reshape(G, 16)
    idx = np.full((G, 16), 3, np.int32)
    got, bad = sg.broadcast(wg, x, idx, "f32")
    assert bad == []
    for s in range(4):
        assert (got[:, s * 4:(s + 1) * 4] == x[:, s * 4 + 3:s * 4 + 4]).all()
    idx2 = idx.copy()
    idx2[1, 5] = 2  # work-group 1, sub-group 1, lane 1 differs
    got, bad = sg.broadcast(wg, x, idx2, "f32", groups=[7, 9])
    assert got is None and [(b.kind, b.groups, b.element) for b in bad] == \
        [("non-uniform", (9,), (1,))]
    assert "lane 1 has 2" in bad[0].message
    idx3 = idx.copy()
    idx3[0, 12:16] = 4
    got, bad = sg.broadcast(wg, x, idx3, "f32")
    assert got is None and [(b.kind, b.element) for b in bad] == [("out-of-bounds", (3,))]
    got, bad = sg.broadcast(wg, x, np.full((G, 16), -1), "f32")
    assert got is None and len(bad) == 8


def test_nonuniform_nan_is_uniform():
    wg = WorkGroup((4, 1), 4)
    assert nonuniform(wg, np.full((1, 4), np.nan), "x") == []
    assert len(nonuniform(wg, np.array([[np.nan, 1, 1, 1]]), "x")) == 1
