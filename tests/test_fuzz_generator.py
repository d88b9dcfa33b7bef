"""Generated kernels are well-typed, print/parse round-trip and are free of undefined
behaviour (the interpreter's checker is the safety net: any report is a generator bug)."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings

import tlinterp
from fuzz.gen.params import GenParams
from fuzz.strategies import FuzzCase, coverage_of, kernels, sample_function
from tlinterp.interp import run
from tlinterp.lang.v03.printer import format_program

EXAMPLES = min(settings.default.max_examples, 150)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(kernels())
def test_generated_kernels_check_and_run_without_undefined_behaviour(case: FuzzCase):
    # kernels() already printed, reparsed and checked the program; check the round trip too
    again = tlinterp.check(tlinterp.parse(format_program(case.program)))
    assert again == case.program
    out = run(case.program, case.args, func=case.func, groups=case.groups, check=True)
    for key, value in case.args.items():
        if np.asarray(value).ndim:  # every memref and group comes back in the same layout
            assert np.asarray(out[key]).shape == np.asarray(value).shape


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(kernels(max_groups=1, max_size=2, memref_types=(tlinterp.lang.types.ScalarType.i32,),
               collective_weights={"gemm": 10, "axpby": 0, "gemv": 0, "ger": 0,
                                   "hadamard": 0, "sum": 0}))
def test_parameters_bias_the_mix(case: FuzzCase):
    f = case.program.functions[0]
    assert case.groups == 1
    for a in f.args:
        t = getattr(a.type, "memref", a.type)
        if hasattr(t, "element"):
            assert t.element is tlinterp.lang.types.ScalarType.i32
    assert not coverage_of(case.program) & {"Axpby", "Gemv", "Ger", "Hadamard", "Sum"}


def test_every_instruction_kind_is_generated():
    # plain random sampling of the same generator: many kernels quickly (rare kinds such as
    # Gemv.atomic need a few hundred)
    from tlinterp.lang import ir

    seen: set[str] = set()
    for s in range(800):
        fn, _, _, _ = sample_function(s)
        seen.update(coverage_of(ir.Program((fn,), "<sample>")))
    from fuzz.campaign.cli import ALL_KINDS

    assert set(ALL_KINDS) - seen == set()


def test_unknown_parameter_is_rejected():
    import pytest

    with pytest.raises(TypeError):
        GenParams().with_(no_such_knob=1)
