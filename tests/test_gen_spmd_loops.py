"""Generated SPMD kernels with coopmatrices carried by `for` loops and yielded by `if`s whose
trip counts and conditions differ between work-groups (fuzz/gen/spmd_loops.py): the
generator makes them, they run on the interpreter without undefined behaviour, their results
show a loop that loses the iterations of some work-groups, and pocl computes what the
interpreter does."""

from __future__ import annotations

import pytest
from opencl_devices import require_device
from test_gen_spmd import _outputs

import tlgpu
from fuzz.gen.spmd import sample_spmd, spmd_program
from fuzz.gen.spmd_model import NUMBER_TYPES
from fuzz.oracle.compare import compare_outputs
from tlinterp.interp import execute, run, spmd_exec
from tlinterp.lang import ir
from tlinterp.lang.types import CoopMatrixType, ScalarType

SEEDS = range(60)
# one sub-group per work-group: pocl's sub-group emulation runs coopmatrix code in loops
# one sub-group per work-group (pocl runs those whole), and no c64 atomics (the lowering
# refuses them by name: OpenCL has no 16-byte compare-and-swap)
ONE_SUBGROUP = dict(max_wx_subgroups=1, max_wy=1, max_statements=5,
                    atomic_types=tuple(t for t in NUMBER_TYPES if t != ScalarType.c64))


def _computed(fn: ir.Function) -> set[str]:
    """The names defined by something other than a `constant`."""
    return {r.name for i in ir.walk(fn.body) if not isinstance(i, ir.Constant)
            for r in ir.results_of(i)}


def _coop_loops(fn: ir.Function) -> list[ir.For]:
    """The `for`s carrying a coopmatrix whose bounds are computed (from the work-group id)."""
    computed = _computed(fn)
    return [i for i in ir.walk(fn.body) if isinstance(i, ir.For)
            and any(isinstance(t, CoopMatrixType) for t in i.result_types)
            and {i.start.name, i.stop.name} & computed]


def _coop_ifs(fn: ir.Function) -> list[ir.If]:
    return [i for i in ir.walk(fn.body) if isinstance(i, ir.If)
            and any(isinstance(t, CoopMatrixType) for t in i.result_types)]


def test_loops_and_branches_that_differ_between_work_groups_are_generated():
    per_group = zero = ifs = 0
    for seed in SEEDS:
        fn, args, groups, stats = sample_spmd(seed)
        if not (_coop_loops(fn) or _coop_ifs(fn)):
            continue
        program = spmd_program(fn)  # printed as v0.4, parsed back, checked
        assert program.functions[0] == fn
        run(program, args, groups=groups, check=True)  # raises on undefined behaviour
        per_group += bool(_coop_loops(fn)) and stats["coop.for.per_group"] > 0
        zero += stats["coop.for.zero_for_some"] > 0
        ifs += bool(_coop_ifs(fn))
    assert per_group >= 5 and zero >= 3 and ifs >= 5, (per_group, zero, ifs)


def _drop_partial_iterations(old, new, sel, n, t):
    """The planted bug: a coopmatrix keeps its value from before an iteration that only some
    work-groups ran (the others had left the loop)."""
    if sel is not None and isinstance(new, spmd_exec.CoopValue):
        return old
    return _MERGE(old, new, sel, n, t)


_MERGE = execute._merge


def test_a_loop_that_loses_some_work_groups_iterations_changes_a_generated_result(
        monkeypatch):
    kernels = [k[:3] for seed in SEEDS if (k := sample_spmd(seed))[3]["coop.for.per_group"]]
    right = [_outputs(*k) for k in kernels]
    monkeypatch.setattr(execute, "_merge", _drop_partial_iterations)
    wrong = [_outputs(*k) for k in kernels]
    assert all(isinstance(r, dict) for r in right)
    assert sum(r != w for r, w in zip(right, wrong)) >= 1


@pytest.mark.opencl
@pytest.mark.filterwarnings("ignore:Non-empty compiler output")
@pytest.mark.filterwarnings("ignore::tlgpu.runtime.launch.DeviceWorkaround")
def test_pocl_agrees_with_the_interpreter_on_per_group_trip_counts():
    device = require_device("pocl")
    ran = 0
    for seed in range(200):
        fn, args, groups, stats = sample_spmd(seed, **ONE_SUBGROUP)
        if not (stats["coop.for.per_group"] and _coop_loops(fn)) or isinstance(groups, tuple):
            continue
        program = spmd_program(fn)
        expected = run(program, {k: v.copy() for k, v in args.items()}, groups=groups)
        actual = tlgpu.run(program, {k: v.copy() for k, v in args.items()}, groups=groups,
                           device=device)
        assert compare_outputs(program, None, args, expected, actual, groups=groups) == [], seed
        ran += 1
        if ran == 3:
            break
    assert ran == 3


def test_the_profile_check_names_an_if_that_yields_coopmatrices():
    """The profile check (fuzz/profiles/check.py) names every instruction by its mnemonic; an
    `if` was named through its v0.3 header, which cannot spell a coopmatrix result type."""
    from fuzz.profiles import load
    from fuzz.profiles.check import violations
    from tlinterp.lang.v03.printer import mnemonic

    fn = next(fn for seed in SEEDS if _coop_ifs(fn := sample_spmd(seed)[0]))
    assert mnemonic(_coop_ifs(fn)[0]) == "if"
    violations(fn, load("tinytc-0.4.0"))  # raised TypeError: not a type: CoopMatrixType(...)
