"""What a campaign's throughput rests on (docs/testing-a-compiler.md, "Throughput"): no
generated kernel is thrown away for nothing. A kernel outside the target's profile is drawn
again instead of dropping its whole batch, and the SPMD generator draws only work-group sizes
the target takes."""

from __future__ import annotations

import random

import pytest
from hypothesis.errors import UnsatisfiedAssumption
from hypothesis.internal.conjecture.data import ConjectureData

import fuzz.strategies as strategies
from fuzz.gen.spmd import sample_spmd
from fuzz.profiles.check import violations

PROFILE = "tinytc-0.4.0-new-bugs"
def draw_one(strategy, seed: int = 0):
    """One example of `strategy` drawn from random choices, as a campaign's search draws it
    (Hypothesis' own search would begin with the simplest example, whose every draw of a
    kernel is the same one); UnsatisfiedAssumption when it is dropped."""
    return ConjectureData(random=random.Random(seed)).draw(strategy)


@pytest.mark.parametrize("spmd_weight", [0, 100])
def test_a_kernel_outside_the_profile_is_drawn_again_within_its_example(monkeypatch,
                                                                         spmd_weight):
    """The first kernel drawn "violates" the profile: the same example draws another one
    (`assume`, as before, dropped the example, and with it the batch's other kernels)."""
    judged = []

    def first_one_violates(func, profile):
        judged.append(func.name)
        return ["planted"] if len(judged) == 1 else []

    monkeypatch.setattr(strategies, "violations", first_one_violates)
    case = draw_one(strategies.kernels(name="k", profile=PROFILE, spmd_weight=spmd_weight))
    assert case.func == "k" and len(judged) == 2


def test_a_kernel_that_never_fits_drops_the_example_after_the_tries(monkeypatch):
    judged = []

    def always(func, profile):
        judged.append(func.name)
        return ["planted"]

    monkeypatch.setattr(strategies, "violations", always)
    with pytest.raises(UnsatisfiedAssumption):
        draw_one(strategies.kernels(profile=PROFILE, spmd_weight=0))
    assert len(judged) == strategies.PROFILE_TRIES


def test_spmd_work_group_sizes_are_the_multiples_the_target_takes():
    """tinytc 0.4.0 takes a first work-group mode that is a multiple of 32: the profile's
    knobs draw only those; without `wx_multiple` about a quarter of the kernels had 16."""
    profile = strategies.profile_of(PROFILE)
    knobs = strategies.spmd_knobs(profile)
    assert knobs["wx_multiple"] == profile.work_group_size_multiple == 32
    loose = 0
    firsts = set()
    for seed in range(120):
        fn = sample_spmd(seed, **knobs)[0]
        assert "work_group_size" not in {v.construct for v in violations(fn, profile)}, seed
        firsts.add(int(fn.work_group_size[0]))
        free = sample_spmd(seed, **{**knobs, "wx_multiple": 1})[0]
        loose += "work_group_size" in {v.construct for v in violations(free, profile)}
    assert firsts == {32, 64} and loose > 10


def test_no_multiple_any_size_can_give_falls_back_to_the_plain_draw():
    """A multiple no sub-group size reaches (64 with one sub-group of 16 or 32 along the
    first mode) leaves the draw as it was: the profile check then drops such a kernel."""
    fn = sample_spmd(3, subgroup_sizes=(16, 32), max_wx_subgroups=1, wx_multiple=64)[0]
    assert int(fn.work_group_size[0]) in (16, 32)


def test_tree_cpu_counts_a_running_child_and_not_its_own_reading():
    """bench/external.py charges a stage the CPU of every process that did its work: a
    child still running (a kept worker) counts while it runs, reading /proc does not."""
    import subprocess
    import sys
    import time

    from tests.benches import bench

    external = bench("external")
    child = subprocess.Popen([sys.executable, "-c", "import sys, time\n"
                              "t = time.process_time()\n"
                              "while time.process_time() - t < 0.5: pass\n"
                              "print(flush=True); sys.stdin.read()"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        before = external.tree_cpu_seconds()
        child.stdout.readline()  # it has burnt its half second and waits, alive
        time.sleep(0.1)
        grew = external.tree_cpu_seconds() - before
        assert grew >= 0.45, grew
        idle = external.tree_cpu_seconds()
        for _ in range(20):  # reading /proc costs this process CPU, which is left out
            external.tree_cpu_seconds()
        assert external.tree_cpu_seconds() - idle < 0.05
    finally:
        child.stdin.close()
        child.wait(10)
