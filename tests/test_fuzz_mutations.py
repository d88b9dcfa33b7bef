"""The fuzzer finds planted lowering bugs and shrinks them to small programs.

Each mutation in fuzz.mutants.lowering_v03 monkeypatches one tlgpu lowering rule into a wrong one in
the sandboxed OpenCL process; a short seeded search must report a mismatch whose program is
small. (The time limit of the issue, 60 s, is the shrink budget given here.)"""

from __future__ import annotations

import pytest

from fuzz.campaign.hunt import HuntOptions, hunt
from tlinterp.lang import ir

# Small kernels on purpose: without the alloca read-back copies and position fills (whose
# reach tests/test_fuzz_edges.py and bench/mutants.py check), so that what is left after a
# time-boxed shrink measures the shrinker, not the size of a minimal read-back loop nest.
BIAS = dict(statement_weights=dict(collective=10, foreach=2, store=2, alloca=4, for_=0, if_=0,
                                   barrier=0, scalar=0), max_statements=4,
            dump_percent=0, position_fill_percent=0, alloca_pair_percent=0)
GEMM_ONLY = dict(BIAS, collective_weights=dict(gemm=1, axpby=0, gemv=0, ger=0, hadamard=0,
                                                sum=0))


@pytest.mark.opencl
@pytest.mark.slow
@pytest.mark.parametrize("mutation,params,seed", [
    ("off-by-one-k", BIAS, 2),
    ("wrong-transpose", GEMM_ONLY, 1),
    ("missing-barrier", BIAS, 2),
])
def test_planted_bug_is_found_and_shrunk(mutation, params, seed):
    opts = HuntOptions(batch=4, shrink_time=60, params=params, mutation=mutation,
                       kinds=frozenset({"mismatch"}))  # real backend bugs may show up too
    for s in (seed, seed + 1, seed + 2):  # a search may miss: the next seed, not a retry
        found = hunt(opts, seed=s, max_batches=40)
        mismatches = [f for f in found if f.kind == "mismatch"]
        if mismatches:
            break
    assert mismatches, [str(f) for f in found]
    f = mismatches[0]
    assert len(f.case.program.functions) == 1
    size = len(list(ir.walk(f.case.program.functions[0].body)))
    # shrinking is time-boxed, and where it stops depends on the whole draw sequence and on the
    # machine's load (missing-barrier stopped at 44 instructions alone, at 50 in a loaded CI run
    # on 2 cores); unshrunk, these programs have well over a hundred
    assert size <= 64, f.case.source
