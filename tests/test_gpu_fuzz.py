"""Differential test: random UB-free kernels (fuzz.strategies) on pocl against the interpreter,
under random lowering configs. Each example is one pocl build, so the count stays small."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings

import tlgpu
from fuzz.oracle.compare import compare_outputs
from fuzz.strategies import kernels, lowering_configs
from tlinterp.interp import run as interp_run

pytestmark = pytest.mark.opencl  # needs an OpenCL device (pocl in CI)


# TLGPU_FUZZ_EXAMPLES=1000 for a longer local campaign
@settings(max_examples=int(os.environ.get("TLGPU_FUZZ_EXAMPLES", "30")), deadline=None,
          suppress_health_check=list(HealthCheck))
@given(case=kernels(), config=lowering_configs())
def test_random_kernels_agree_with_the_interpreter(case, config):
    expected = interp_run(case.program, case.args, func=case.func, groups=case.groups)
    actual = tlgpu.run(case.program, case.args, func=case.func, groups=case.groups,
                       config=config)
    mismatches = compare_outputs(case.program, case.func, case.args, expected, actual,
                                 groups=case.groups)
    assert not mismatches, "\n".join(str(m) for m in mismatches[:5])
