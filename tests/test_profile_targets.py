"""Profiles per target: `extends` (a target's profile is its compiler's plus what the target
lacks), the tgl profiles never generating f64, c64 or bf16, and every instruction of v0.4
generated under a profile of each of tinytc v0.4.0's targets (tgl, and pvc, its default)."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from fuzz.gen.spmd import sample_spmd
from fuzz.profiles import ProfileError, from_dict, load
from fuzz.profiles.check import violations
from fuzz.strategies import coverage_of, generated_kinds, kernels, sample_function, spmd_knobs
from tlinterp.front.migrate import to_v04
from tlinterp.lang import ir
from tlinterp.lang.types import ScalarType

TGL = ("tinytc-0.4.0-tgl", "tinytc-0.4.0-tgl-new-bugs")
# the profiles a campaign uses on each target (pvc: the compiler's default device)
TARGETS = {"tgl": "tinytc-0.4.0-tgl-new-bugs", "pvc": "tinytc-0.4.0-new-bugs"}
MISSING_ON_TGL = {ScalarType.f64, ScalarType.c64, ScalarType.bf16}


def test_a_target_profile_extends_its_compilers_profile():
    base, tgl = load("tinytc-0.4.0"), load("tinytc-0.4.0-tgl")
    assert tgl.exclude_types == base.exclude_types | MISSING_ON_TGL
    assert tgl.exclude_features == base.exclude_features
    assert (tgl.lang, tgl.subgroup_sizes, tgl.work_group_size_multiple) == (
        base.lang, base.subgroup_sizes, base.work_group_size_multiple)
    assert tgl.description != base.description and tgl.name == "tinytc-0.4.0-tgl"
    for t in MISSING_ON_TGL:  # the compiler's words, kept with the profile
        assert "A required SPIR-V feature is unavailable" in tgl.reason(t.value)
    assert base.reason("nan-constants") == tgl.reason("nan-constants")
    both = load("tinytc-0.4.0-tgl-new-bugs")  # extends two: the union of both
    assert both.exclude_types == tgl.exclude_types
    assert both.exclude_features == load("tinytc-0.4.0-new-bugs").exclude_features


def test_extends_problems_are_named(tmp_path):
    with pytest.raises(ProfileError, match="unknown profile 'nope'"):
        from_dict({"name": "x", "extends": "nope"})
    with pytest.raises(ProfileError, match="'extends' must name a profile"):
        from_dict({"name": "x", "extends": [3]})
    # a base's exclusions still need their why; the profile's own exclusions need theirs
    with pytest.raises(ProfileError, match="say why in 'why' for: f16"):
        from_dict({"name": "x", "extends": "tinytc-0.4.0", "exclude_types": ["f16"]})
    own = tmp_path / "mine.json"
    own.write_text(json.dumps({"name": "mine", "extends": ["tinytc-0.4.0-tgl"],
                               "exclude_types": ["f16"], "why": {"f16": "no halves"}}))
    p = load(str(own))
    assert p.exclude_types == load("tinytc-0.4.0-tgl").exclude_types | {ScalarType.f16}


@pytest.mark.parametrize("profile", TGL)
def test_tgl_campaign_kernels_have_no_f64_c64_or_bf16(profile):
    """The campaign's own path (`kernels`, SPMD kernels included) under the tgl profiles:
    no type tgl lacks in any printed kernel, so no "float64 unavailable" or
    "bfloat16_conversion unavailable" case; the same draws under tinytc-0.4.0 do have them."""
    seen: dict[str, int] = {"kernels": 0, "spmd": 0}
    # the type words, not value names such as %c64 (a memref spells f64x4)
    pattern = re.compile(r"(?<![%@\w])(?:f64|c64|bf16)(?![0-9a-wyz_])")
    assert pattern.search("memref<f64x4>") and not pattern.search("%c64 = constant 1 : f32")

    @settings(max_examples=60, database=None, derandomize=True, deadline=None,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @given(kernels(profile=profile, spmd_weight=50))
    def run(case):
        seen["kernels"] += 1
        seen["spmd"] += any(isinstance(i, ir.Parallel) for i in ir.walk(
            case.program.functions[0].body))
        assert not pattern.search(case.source), case.source

    run()
    assert seen["kernels"] == 60 and seen["spmd"] >= 10  # both generators were reached
    loose = 0
    for seed in range(40):  # the plain tinytc-0.4.0 profile does make them
        func, _, _, _ = sample_function(seed, profile="tinytc-0.4.0")
        loose += bool(violations(func, load(profile)))
    assert loose >= 5


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_every_instruction_is_generated_on_each_target(target):
    """Seeded plain sampling (the generator itself, not a filter) under the target's campaign
    profile reaches every instruction kind of v0.4's coverage (tlfuzz's 52), gemm.atomic,
    gemv.atomic and cooperative_matrix_apply among them, without leaving the profile."""
    profile = load(TARGETS[target])
    want = set(generated_kinds("v0.4"))
    got: set = set()
    knobs = spmd_knobs(profile)
    for seed in range(600):
        func, _, _, _ = sample_function(seed, profile=profile)
        assert violations(func, profile) == [], seed
        got |= coverage_of(to_v04(ir.Program((func,), "<seed>")))
        if seed < 150:  # SPMD kernels: about a third of a campaign's (spmd_weight 30)
            spmd, _, _, _ = sample_spmd(seed, **knobs)
            # the SPMD generator's W0 may be 16; kernels() drops those by the profile
            assert {v.construct for v in violations(spmd, profile)} <= {"work_group_size"}
            got |= coverage_of(to_v04(ir.Program((spmd,), "<seed>")))
        if got >= want:
            break
    assert sorted(want - got) == [], f"never generated on {target}"
