"""The .npz argument convention (tlinterp.io.args): binding, layouts, errors, work-group count."""

import numpy as np
import pytest

import tlinterp
from tlinterp.io.args import bind, count_groups, unbind
from tlinterp.lang.diagnostics import ArgumentError

SRC = """
func @k(%s: f32, %A: group<memref<f32x2x?>, offset: ?>, %D: memref<i32x3x?,strided<2,?>>) {
  %g = group_id
}
"""


def function():
    return tlinterp.check(tlinterp.parse(SRC)).function()


def good_args(**over):
    args = {"s": np.float32(1.5), "A": np.arange(12, dtype=np.float32).reshape(3, 2, 2),
            "A.offset": np.int64(5), "D": np.arange(6, dtype=np.int32).reshape(3, 2)}
    args.update(over)
    return args


def test_bind_places_elements_by_strides_and_offsets():
    b = bind(function(), good_args())
    d = b.values["D"]
    assert d.strides == (2, 6)  # static 2, dynamic stride canonical: 2 * 3
    assert d.buffer[d.offset + 1 * 2 + 1 * 6] == 3  # D[1, 1]
    members = b.values["A"].members
    assert len({id(m.buffer) for m in members}) == 1  # one buffer for the whole group
    assert [m.offset for m in members] == [5, 14, 23]  # slot = offset 5 + extent 4
    assert members[2].buffer[members[2].offset + 3] == 11  # A[2][1, 1]


def test_unbind_round_trips_the_input_layout():
    args = good_args(**{"D.strides": np.array([2, 7])})
    out = unbind(bind(function(), args))
    for k in ("A", "D"):
        np.testing.assert_array_equal(out[k], args[k])
    assert out["D.strides"].tolist() == [2, 7] and int(out["A.offset"]) == 5


def test_separate_members_of_different_sizes():
    args = good_args(**{"A.0": np.ones((2, 1), np.float32), "A.1": np.ones((2, 4), np.float32)})
    del args["A"]
    b = bind(function(), args)
    assert [m.shape for m in b.values["A"].members] == [(2, 1), (2, 4)]
    assert sorted(unbind(b)) == ["A.0", "A.1", "A.offset", "D"]


@pytest.mark.parametrize("over,message", [
    ({"s": np.int32(1)}, "argument 's' is f32: expected float data, got int32"),
    ({"s": np.float64(1e300)}, "does not fit in f32"),
    ({"D": np.zeros((4, 2), np.int32)}, "mode 0 must be 3, got 4"),
    ({"D": np.zeros((3, 2), np.int64)}, "expected dtype int32, got int64"),
    ({"D.strides": np.array([2, 5])}, "overlap"),
    ({"D.strides": np.array([3, 9])}, "stride 0 must be 2, got 3"),
    ({"E": np.zeros(2)}, "unexpected entries 'E'"),
    ({"A.offset": np.int64(-1)}, "group offset must be >= 0"),
])
def test_bad_arguments_are_rejected_with_a_clear_message(over, message):
    with pytest.raises(ArgumentError, match=message.replace("(", r"\(").replace(")", r"\)")):
        bind(function(), good_args(**over))


def test_missing_dynamic_group_offset_is_named():
    args = good_args()
    del args["A.offset"]
    with pytest.raises(ArgumentError, match="missing entry 'A.offset'"):
        bind(function(), args)


@pytest.mark.parametrize("groups", [None, 7])
def test_count_groups_agrees_with_bind(groups):
    f = function()
    args = good_args()
    assert count_groups(f, args, groups) == bind(f, args).num_groups(groups)
    args = good_args(**{"A.0": np.ones((2, 1), np.float32)})
    del args["A"]
    assert count_groups(f, args, groups) == bind(f, args).num_groups(groups)


def test_npy_headers_are_parsed_one_thread_at_a_time(tmp_path, monkeypatch):
    """numpy parses headers with ast.literal_eval, whose constructor state CPython 3.11 shares
    between threads: tlconform -j 2 once failed a case with "SystemError: AST constructor
    recursion depth mismatch". load_npz must never parse two headers at once."""
    import threading
    import time

    from tlinterp.io import npzcheck

    inside, most = [0], [0]
    count = threading.Lock()

    def one_at_a_time(real):
        def slow(*a, **k):
            with count:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
            time.sleep(0.002)
            try:
                return real(*a, **k)
            finally:
                with count:
                    inside[0] -= 1
        return slow

    # every header load_npz parses goes through one of these (read_array parses it again)
    for name in ("read_array_header_1_0", "read_array_header_2_0", "read_array"):
        monkeypatch.setattr(npzcheck.npy, name, one_at_a_time(getattr(npzcheck.npy, name)))
    np.savez(tmp_path / "a.npz", **{f"x{i}": np.zeros(3) for i in range(5)})
    threads = [threading.Thread(target=lambda: [npzcheck.load_npz(str(tmp_path / "a.npz"))
                                                for _ in range(5)]) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most[0] == 1
