"""The UB-report helper: the first MAX_PER_KIND offenders, the rest counted, raised on leaving
a `checks()` block."""

from __future__ import annotations

import numpy as np
import pytest

from tlinterp.interp.ub import MAX_PER_KIND, Collector
from tlinterp.interp.values import Lanes
from tlinterp.lang.diagnostics import UndefinedBehaviour


def _lanes(n: int, live=None) -> Lanes:
    return Lanes(np.arange(10, 10 + n, dtype=np.int64), live=live)


def test_add_lanes_reports_the_first_lanes_and_counts_the_rest():
    col = Collector("k.tl")
    mask = np.zeros(9, bool)
    mask[[1, 3, 4, 5, 7, 8]] = True
    col.add_lanes("division-by-zero", mask, _lanes(9), None,
                  lambda lane, g: (None, f"lane {lane} group {g}"))
    assert [r.message for r in col.reports] == [
        "lane 1 group 11", "lane 3 group 13", "lane 4 group 14", "lane 5 group 15"]
    assert len(col.reports) == MAX_PER_KIND
    assert col.dropped == {("division-by-zero", "element(s) "): 2}


def test_add_lanes_skips_lanes_that_do_not_run_and_counts_the_rest_as_lanes():
    """Without `count_rest` the rest are lanes, not elements: still counted, never dropped
    without a word (an "N more like the above" line)."""
    col = Collector()
    live = np.array([False, True, True, True, True, True, True])
    col.add_lanes("out-of-bounds", True, _lanes(7, live), None,
                  lambda lane, g: ((lane,), f"x{lane}"), count_rest=False)
    assert [r.element for r in col.reports] == [(1,), (2,), (3,), (4,)]
    assert col.dropped == {("out-of-bounds", ""): 2}
    with pytest.raises(UndefinedBehaviour) as err:
        with col.checks():
            pass
    assert err.value.diagnostics[-1].message == "out of bounds: 2 more like the above"


def test_add_first_passes_positions_of_any_array():
    col = Collector()
    mask = np.zeros((2, 3), bool)
    mask[1, 2] = True
    col.add_first("data-race", mask, None, lambda p: ((p[0], 7), p, f"at {p}"))
    (r,) = col.reports
    assert (r.groups, r.element, r.message) == ((1, 7), (1, 2), "at (1, 2)")


def test_checks_raises_on_leaving_the_block_and_not_before():
    col = Collector("k.tl", "source")
    effects = []
    with pytest.raises(UndefinedBehaviour) as err:
        with col.checks():
            col.add_lanes("signed-overflow", np.ones(6, bool), _lanes(6), None,
                          lambda lane, g: (None, f"work-group {g}"))
            effects.append("inside")
        effects.append("after")  # the instruction's effects: must not happen
    assert effects == ["inside"]
    text = [d.message for d in err.value.diagnostics]
    assert text[-1] == "signed overflow: 2 more element(s) like the above"
    with Collector().checks():  # nothing reported: nothing raised
        effects.append("clean")
    assert effects == ["inside", "clean"]
