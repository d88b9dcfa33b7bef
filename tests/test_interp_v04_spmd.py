"""The interpreter runs v0.4's SPMD model: parallel regions per work-item, sub-group builtins and
operations, barriers, foreach_tile; its undefined behaviour at work-item granularity. Each
kernel is ours, with an independent NumPy reference; each UB kernel has a corrected twin."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from v04run import run_v04 as _run
from v04run import ub_v04 as _ub

from tlinterp.lang.diagnostics import ExecutionError

ROOT = Path(__file__).resolve().parent.parent


def _head(sgs: int = 8, wgs=(16, 2), args: str = "%A: memref<i32 x 64>") -> str:
    return (f"func @k({args}) attributes{{subgroup_size={sgs}, "
            f"work_group_size=[{wgs[0]}, {wgs[1]}]}} {{\n")


# the linear work-item id, lx + wx * ly, from the sub-group builtins
LINEAR = """\
        %sl = subgroup_linear_id : i32
        %sk = subgroup_local_id : i32
        %ss = subgroup_size : i32
        %t = mul %sl, %ss : i32
        %l = add %t, %sk : i32
        %li = cast %l : index
"""


@pytest.mark.parametrize("builtin,ref", [
    ("subgroup_local_id", lambda lx, ly: lx % 8),
    ("subgroup_linear_id", lambda lx, ly: lx // 8 + 2 * ly),
    ("subgroup_id.x", lambda lx, ly: lx // 8),
    ("subgroup_id.y", lambda lx, ly: ly),
    ("subgroup_id.z", lambda lx, ly: 0 * lx),
    ("num_subgroups.x", lambda lx, ly: 0 * lx + 2),
    ("num_subgroups.y", lambda lx, ly: 0 * lx + 2),
    ("subgroup_size", lambda lx, ly: 0 * lx + 8),
])
def test_builtins_per_work_item(builtin, ref):
    src = _head() + "    parallel {\n" + LINEAR + (
        f"        %v = {builtin} : i32\n        store %v, %A[%li]\n    }}\n}}\n")
    out = _run(src, {"A": np.full(64, -1, np.int32)})["A"]
    lin = np.arange(32)
    assert (out[:32] == ref(lin % 16, lin // 16)).all()
    assert (out[32:] == -1).all()


def test_subgroup_reduce_scans_broadcast():
    ops = ["reduce_add", "reduce_max", "reduce_min", "inclusive_scan_add",
           "inclusive_scan_max", "exclusive_scan_add", "exclusive_scan_min"]
    args = "%A: memref<i32 x 32>, %R: memref<i32 x 32 x 8>"
    body = "".join(f"        %r{k} = subgroup_{op} %x : i32\n"
                   f"        %c{k} = constant {k} : index\n"
                   f"        store %r{k}, %R[%li, %c{k}]\n" for k, op in enumerate(ops))
    src = (_head(args=args) + "    parallel {\n" + LINEAR + "        %x = load %A[%li] : i32\n"
           + body + "        %lane5 = constant 5 : i32\n"
           "        %b = subgroup_broadcast %x, %lane5 : i32\n        %c7 = constant 7 : index\n"
           "        store %b, %R[%li, %c7]\n    }\n}\n")
    a = np.random.default_rng(3).integers(-50, 50, 32).astype(np.int32)
    out = _run(src, {"A": a, "R": np.zeros((32, 8), np.int32)})["R"]
    sg = a.reshape(4, 8)
    big = np.iinfo(np.int32).max
    ref = [np.repeat(sg.sum(1), 8), np.repeat(sg.max(1), 8), np.repeat(sg.min(1), 8),
           np.cumsum(sg, 1).ravel(), np.maximum.accumulate(sg, 1).ravel(),
           (np.cumsum(sg, 1) - sg).ravel(),
           np.concatenate([np.full((4, 1), big), np.minimum.accumulate(sg, 1)[:, :-1]],
                          1).ravel(),
           np.repeat(sg[:, 5], 8)]
    for k, r in enumerate(ref):
        assert (out[:, k] == r).all(), k


def test_several_work_groups_get_their_own_work_items():
    src = (_head(args="%A: memref<f32 x 16 x ?>") + "    parallel {\n" + LINEAR +
           "        %g = subgroup_linear_id : i32\n" + "    }\n}\n")
    # no group_id here (another module's); a read-only kernel over 3 groups runs cleanly
    _run(src, {"A": np.zeros((16, 3), np.float32)}, groups=3)


SHIFT = """\
    %L = alloca : memref<i32 x 32, local>
    parallel {
""" + LINEAR + """\
        %x = load %A[%li] : i32
        store %x, %L[%li]
BARRIER
        %c1 = constant 1 : index
        %c32 = constant 32 : index
        %n = add %li, %c1 : index
        %m = rem %n, %c32 : index
        %y = load %L[%m] : i32
        store %y, %A[%li]
    }
}
"""


def test_barrier_orders_local_memory():
    src = _head(args="%A: memref<i32 x 32>") + SHIFT.replace("BARRIER", "        barrier.local")
    a = np.arange(32, dtype=np.int32) * 3
    assert (_run(src, {"A": a})["A"] == np.roll(a, -1)).all()


def test_missing_barrier_is_a_race_between_work_items():
    src = _head(args="%A: memref<i32 x 32>") + SHIFT.replace("BARRIER\n", "")
    msg = _ub(src, {"A": np.arange(32, dtype=np.int32)}, "data-race")
    assert "two work-items in work-group 0" in msg


RACE = """\
    parallel {
        %k = subgroup_local_id : i32
        %ki = cast %k : index
        %x = load %A[%ki] : i32
        store %x, %A[%ki]
    }
}
"""


def test_race_between_sub_groups_and_twin():
    src = _head(args="%A: memref<i32 x 32>")
    _ub(src + RACE, {"A": np.arange(32, dtype=np.int32)}, "data-race")
    twin = src + RACE.replace("%k = subgroup_local_id : i32\n        %ki = cast %k : index\n",
                              LINEAR.replace("        %li", "        %ki"))
    twin = twin.replace("%li", "%ki")
    assert (_run(twin, {"A": np.arange(32, dtype=np.int32)})["A"] == np.arange(32)).all()


DIVERGENT = """\
    parallel {
        %k = subgroup_local_id : i32
        %c4 = constant 4 : i32
        %p = less_than %k, %c4 : bool
        if %p {
            barrier.local
        }
    }
}
"""


def test_barrier_not_reached_by_the_whole_group_and_twin():
    src = _head(args="%A: memref<i32 x 32>")
    msg = _ub(src + DIVERGENT, {"A": np.zeros(32, np.int32)}, "barrier-divergence")
    assert "only 16 of the 32 work-items" in msg
    twin = DIVERGENT.replace("%c4 = constant 4", "%c4 = constant 8")  # every lane < 8
    _run(src + twin, {"A": np.zeros(32, np.int32)})


BROADCAST = """\
    parallel {
""" + LINEAR + """\
        %x = load %A[%li] : i32
        %k = subgroup_local_id : i32
        %c2 = constant 2 : i32
        %q = div INDEX, %c2 : i32
        %b = subgroup_broadcast %x, %q : i32
        store %b, %A[%li]
    }
}
"""


def test_nonuniform_broadcast_index_and_twin():
    src = _head(args="%A: memref<i32 x 32>")
    msg = _ub(src + BROADCAST.replace("INDEX", "%k"), {"A": np.arange(32, dtype=np.int32)},
              "non-uniform")
    assert "subgroup_broadcast index is not dynamically uniform" in msg
    out = _run(src + BROADCAST.replace("INDEX", "%ss"), {"A": np.arange(32, dtype=np.int32)})
    assert (out["A"] == np.repeat(np.arange(32).reshape(4, 8)[:, 4], 8)).all()


def test_subgroup_operation_in_divergent_control_flow():
    body = """\
    parallel {
        %k = subgroup_local_id : i32
        %ki = cast %k : index
        %c4 = constant LIMIT : i32
        %p = less_than %k, %c4 : bool
        if %p {
            %x = load %A[%ki] : i32
            %r = subgroup_reduce_add %x : i32
        }
    }
}
"""
    src = _head(wgs=(8, 1), args="%A: memref<i32 x 32>")
    msg = _ub(src + body.replace("LIMIT", "4"), {"A": np.zeros(32, np.int32)}, "non-uniform")
    assert "reached by only some work-items of sub-group 0" in msg
    _run(src + body.replace("LIMIT", "8"), {"A": np.zeros(32, np.int32)})


def test_subgroup_size_is_required():
    src = ("func @k(%A: memref<i32 x 8>) {\n    parallel {\n"
           "        %k = subgroup_local_id : i32\n    }\n}\n")
    with pytest.raises(ExecutionError, match="gives no subgroup_size"):
        _run(src, {"A": np.zeros(8, np.int32)})


def test_work_group_size_defaults_to_one_subgroup():
    src = ("func @k(%A: memref<i32 x 16>) attributes{subgroup_size=4} {\n    parallel {\n"
           + LINEAR + "        store %l, %A[%li]\n    }\n}\n")
    out = _run(src, {"A": np.full(16, -1, np.int32)})["A"]
    assert (out == np.r_[np.arange(4), np.full(12, -1)]).all()


TILE = """\
func @k(%A: memref<f32 x ? x ?>, %B: memref<f32 x ? x ?>) attributes{subgroup_size=8, \
work_group_size=[16, 1]} {
    %c0 = constant 0 : index
    %m = size %A[0] : index
    %n = size %A[1] : index
    foreach_tile (%i, %j) = (%c0, %c0), (%m, %n) as (%si, %sj) <= (8, 4) {
        %k = subgroup_local_id : i32
        %ki = cast %k : index
        %in = less_than %ki, %si : bool
        if %in {
            %r = add %i, %ki : index
            %c0b = constant 0 : index
            for %jj = %c0b, %sj {
                %c = add %j, %jj : index
                %x = load %A[%r, %c] : f32
                %y = add %x, %x : f32
                store %y, %B[%r, %c]
            }
        }
    }
}
"""


@pytest.mark.parametrize("shape", [(16, 8), (21, 10), (3, 1)])
def test_foreach_tile_covers_the_range_once(shape):
    a = np.random.default_rng(5).standard_normal(shape).astype(np.float32)
    out = _run(TILE, {"A": a, "B": np.zeros_like(a)})["B"]
    assert (out == 2 * a).all()


def test_foreach_tile_overlapping_writes_race():
    src = TILE.replace("store %y, %B[%r, %c]", "store %y, %B[%ki, %jj]")
    _ub(src, {"A": np.ones((16, 8), np.float32), "B": np.zeros((16, 8), np.float32)},
        "data-race")


@pytest.mark.parametrize("name", ["subgroup_ops", "parallel_barrier", "foreach_tile"])
def test_corpus_kernels_run(name):
    src = (ROOT / "corpus" / "v04" / "valid" / f"{name}.tl").read_text()
    a = np.arange(16, dtype=np.float32)
    if name == "foreach_tile":
        _run(src, {"A": np.ones((20, 9), np.float32)})
        return
    out = _run(src, {"A": a})["A"]
    assert (out == (np.cumsum(a) if name == "subgroup_ops" else a)).all()
