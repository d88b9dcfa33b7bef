"""The v0.4 generator (`kernels(lang="v0.4")`, fuzz/gen/v04.py) and `tlfuzz --lang v0.4`:
generated v0.4 programs are valid, print and reparse to the same IR, run free of undefined
behaviour on the interpreter, and every construct the generator promises is reached."""

from __future__ import annotations

import glob
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import tlinterp
from fuzz.strategies import (
    FuzzCase,
    case_of,
    coverage_of,
    generated_kinds,
    kernel_functions,
    kernels,
    sample_function,
)
from tlinterp.front.migrate import to_v04
from tlinterp.interp import run
from tlinterp.lang import ir
from tlinterp.lang.types import MemrefType, ScalarType
from tlinterp.lang.v04.printer import format_program_v04

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = min(settings.default.max_examples, 60)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(kernels(lang="v0.4"))
def test_generated_v04_kernels_run_without_undefined_behaviour(case: FuzzCase):
    assert case.lang == "v0.4" and case.program.lang == "v0.4"
    assert tlinterp.parse(case.source, lang="v0.4") == case.program
    out = run(case.program, case.args, func=case.func, groups=case.groups, check=True)
    for key, value in case.args.items():
        if np.asarray(value).ndim:
            assert np.asarray(out[key]).shape == np.asarray(value).shape


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(kernel_functions(lang="v0.4"))
def test_generated_v04_ir_prints_and_reparses_to_itself(built):
    """Issue 33: the printer round trip over generated v0.4 programs, from the IR."""
    func, _, _ = built
    want = to_v04(ir.Program((func,), "gen.tl"))
    text = format_program_v04(want)
    again = tlinterp.check(tlinterp.parse(text, "gen.tl", lang="v0.4"))
    assert again == want
    assert format_program_v04(again) == text


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(kernel_functions(lang="v0.4", spmd_weight=0,
                        v04_weights={"atomic": 6, "foreach_nd": 1, "cumsum": 1},
                        statement_weights={"foreach": 6, "v04": 12, "store": 1,
                                           "scalar": 2, "for_": 1, "if_": 1}))
def test_atomic_updates_of_the_counter_use_one_operation(built):
    """add and max/min do not commute: a counter updated with both would end as the order
    of the updates decides, which a device need not share with the interpreter (found by
    fuzzing the lowering on Intel's runtime)."""
    func, _, _ = built
    ops = {i.op for i in ir.walk(func.body)
           if isinstance(i, ir.AtomicUpdate) and i.operand.name == "cnt"}
    assert len(ops) <= 1, ops


def constructs(fn: ir.Function) -> set[str]:
    """What of v0.4 a function uses beyond its instruction kinds: types, operations,
    attributes, loops that yield, a grid."""
    out = set()
    for a in fn.args:
        t = getattr(a.type, "memref", a.type)
        if isinstance(t, MemrefType):
            out.add("type:" + t.element.value)
        out.update("attr:" + k for k in a.attributes)
    if fn.subgroup_size:
        out.add("attr:subgroup_size")
    if fn.work_group_size:
        out.add("attr:work_group_size")
    for inst in ir.walk(fn.body):
        if isinstance(inst, (ir.Arith, ir.ArithUnary)):
            out.add("op:" + inst.op)
            out.add("type:" + inst.type.value)
        if isinstance(inst, ir.Cast):
            out.add(f"cast:{inst.from_type.value}->{inst.to_type.value}")
        if isinstance(inst, ir.For):
            if inst.inits:
                out.add("for-init")
                out.update("for-carries:" + t.value for t in inst.result_types)
            out.update("attr:" + k for k in inst.attributes)
        if isinstance(inst, ir.If) and inst.results:
            out.add("if-yields")
            out.update("if-yields:" + t.value for t in inst.result_types)
        if isinstance(inst, ir.Builtin):
            out.add(f"builtin:{inst.name}.{inst.comp}")
        if isinstance(inst, ir.AtomicUpdate):
            out.add("atomic_" + inst.op)
        if isinstance(inst, ir.Compare):
            out.add("compare:" + inst.type.value)
    return out


def test_every_v04_construct_is_generated_within_300_kernels():
    seen_kinds, seen, grids = set(), set(), 0
    for s in range(300):
        fn, args, groups, _ = sample_function(s, lang="v0.4")
        program = ir.Program((fn,), "<sample>")
        seen_kinds |= coverage_of(to_v04(program))
        seen |= constructs(fn)
        grids += isinstance(groups, tuple)
    assert set(generated_kinds("v0.4", spmd=False)) - seen_kinds == set()
    wanted = {"type:f16", "type:bf16", "type:c32", "type:c64", "compare:f16",
              "op:cos", "op:sin", "op:exp", "op:exp2", "op:log", "op:log2", "op:native_cos",
              "op:native_exp", "op:min", "op:max", "op:abs", "op:conj", "op:re", "op:im",
              "cast:f32->f16", "cast:f16->bf16", "cast:c32->c64", "cast:f64->c32",
              "for-init", "for-carries:i1", "if-yields:i1", "attr:unroll", "attr:alignment",
              "attr:shape_gcd", "attr:stride_gcd", "attr:subgroup_size",
              "attr:work_group_size", "builtin:group_id.y", "builtin:group_id.z",
              "builtin:num_groups.y", "atomic_add", "atomic_max", "atomic_min"}
    assert wanted - seen == set()
    assert grids > 0


def test_v03_generation_stays_v03():
    fn, args, groups, _ = sample_function(3)
    case = case_of(fn, args, groups)
    assert case.lang == "v0.3" and isinstance(groups, int)
    assert "LifetimeStop" in generated_kinds("v0.3")
    assert "LifetimeStop" not in generated_kinds("v0.4")
    with pytest.raises(ValueError, match="lang must be one of"):
        sample_function(3, lang="v0.5")


def test_a_grid_case_indexes_its_slices_by_the_linear_group_id():
    for s in range(200):
        fn, args, groups, _ = sample_function(s, lang="v0.4")
        if isinstance(groups, tuple) and groups[1] * groups[2] > 1:
            break
    else:
        pytest.fail("no grid with y or z > 1 in 200 kernels")
    case = case_of(fn, args, groups, lang="v0.4")
    assert "group_id.y" in case.source or "group_id.z" in case.source
    run(case.program, case.args, func=case.func, groups=groups, check=True)


# --- tlfuzz --lang v0.4 -------------------------------------------------------------------------

PLUGINS = '''
import numpy as np
import tlinterp


def good(source, args, func=None, groups=None):
    return tlinterp.run(tlinterp.parse(source, lang="v0.4"), args, func=func, groups=groups)


def wrong(source, args, func=None, groups=None):
    """The reference, with every integer output one too large."""
    out = good(source, args, func=func, groups=groups)
    return {k: (v + 1 if np.asarray(v).dtype.kind == "i" and not k.endswith((".strides",
            ".offset")) else v) for k, v in out.items()}
'''


def _tlfuzz(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess:
    (tmp_path / "v04plugins.py").write_text(PLUGINS)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)]),
           "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "fuzz.campaign.cli", *argv], env=env,
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)


def test_tlfuzz_v04_against_a_correct_plugin_finds_nothing(tmp_path):
    r = _tlfuzz(tmp_path, "--lang", "v0.4", "--impl", "python:v04plugins:good", "--time", "12s",
                "-j", "1", "-q", "--batch", "2", "--rounds", "3", "--out",
                str(tmp_path / "out"))
    assert r.returncode == 0, r.stderr
    assert "0 new findings" in r.stderr
    assert f"/{len(generated_kinds('v0.4'))}" in r.stderr  # coverage counts v0.4's kinds


@pytest.mark.opencl  # the saved line names --device, which tlfuzz reproduce checks first
def test_tlfuzz_v04_finding_is_saved_as_v04_and_reproduces(tmp_path):
    out = tmp_path / "out"
    r = _tlfuzz(tmp_path, "--lang", "v0.4", "--impl", "python:v04plugins:wrong", "--time",
                "20s", "-j", "1", "-q", "--batch", "2", "--rounds", "2", "--shrink-time", "2",
                "--triage-time", "0", "--out", str(out))
    assert r.returncode == 1, r.stderr
    saved = sorted(glob.glob(str(out / "mismatch-*.tl")))
    assert saved, r.stderr
    base = saved[0][:-3]
    line = open(base + ".txt").readline()
    assert line.startswith("tlfuzz reproduce ") and "--lang v0.4" in line
    assert tlinterp.parse(open(base + ".tl").read(), lang="v0.4").lang == "v0.4"
    again = _tlfuzz(tmp_path, "reproduce", base)
    assert again.returncode == 1, again.stderr
    assert "differs from the reference" in again.stderr
    ok = _tlfuzz(tmp_path, "reproduce", base, "--impl", "python:v04plugins:good")
    assert ok.returncode == 0, ok.stderr


def test_tlfuzz_v04_runs_our_opencl_lowering_through_the_registry(capsys):
    """`--lang v0.4` with our lowering (named or the default): one case per job through the
    registry's `opencl` (which lowers the v0.3 form and refuses what it does not lower yet as
    a rejected construct), not the batched v0.3 path."""
    from fuzz.campaign.cli import _impl_ref, build_parser

    for argv in (["--lang", "v0.4"], ["--lang", "v0.4", "--impl", "opencl"]):
        ns = build_parser().parse_args(argv)
        ref = _impl_ref(ns)
        assert ref is not None and ref[0] == "opencl", argv
    assert _impl_ref(build_parser().parse_args(["--lang", "v0.3"])) is None


def test_tlfuzz_v04_with_our_opencl_lowering_leaves_out_what_it_does_not_lower():
    """The harness runs the generated v0.4 kernels our lowering takes and leaves out those
    with a construct it does not lower yet ("not yet lowered" is no finding)."""
    from fuzz.campaign.cli import main
    from fuzz.campaign.harness import lowerable_cases
    from tlinterp.front.pipeline import lowerable
    from tlinterp.lang.diagnostics import NotExecutable

    cases = [case_of(*sample_function(seed, lang="v0.4")[:3], lang="v0.4")
             for seed in range(12)]
    kept = lowerable_cases(cases)
    taken = []
    for c in cases:
        try:
            lowerable(c.program)
        except NotExecutable:
            continue
        if not isinstance(c.groups, tuple) or c.groups[1:] == (1, 1):
            taken.append(c.program)
    assert [c.program for c in kept] == taken
    assert all(isinstance(c.groups, int) for c in kept)
    assert 0 < len(kept) < len(cases)  # the sample has kernels of both kinds
    assert main(["--lang", "v0.5"]) == 2


# --- what the generator found in the code it exercises --------------------------------------


def test_migration_keeps_a_reused_name_global_after_an_alloca_region():
    """Names are scoped by region: %t is an alloca in one branch and a view of an argument
    in the other; its v0.4 form said `local` for both (and failed to reparse)."""
    text = """func @k(%A: memref<f32x4>, %c: i1) {
  if %c {
    %t = alloca -> memref<f32x4>
    %x = load %A[0] : memref<f32x4>
    store %x, %t[0] : memref<f32x4>
  } else {
    %t = subview %A[0:2] : memref<f32x4>
    %u = subview %t[1:1] : memref<f32x2>
    %x = load %u[0] : memref<f32x1,strided<1>>
    store %x, %A[0] : memref<f32x4>
  }
}
"""
    program = tlinterp.check(tlinterp.parse(text, lang="v0.3"))
    v04 = format_program_v04(program)
    assert "local>" not in v04.split("else")[1]
    assert tlinterp.check(tlinterp.parse(v04, lang="v0.4")) == to_v04(program)


def test_migration_turns_literals_of_v04_instructions_into_constants():
    i, j, r = ir.Value("i"), ir.Value("j"), ir.Value("r")
    a, n = ir.Value("A"), ir.Value("n")
    body = ir.Region([
        ir.ForeachNd((i, j), (ir.Const(0), ir.Const(1)), (ir.Const(2), ir.Const(3)),
                     ScalarType.index, ir.Region([
                         ir.AtomicStore(ir.Const(5), a, (i, j))])),
        ir.AtomicUpdate(r, "add", ir.Const(1), n, (ir.Const(0),), ScalarType.i32),
        ir.Cumsum(False, ir.Const(1.0, True), a, 0, ir.Const(0.0, True), a)])
    fn = ir.Function("k", (ir.Argument(a, MemrefType.make(ScalarType.f32, (2, 3))),
                           ir.Argument(n, MemrefType.make(ScalarType.i32, (1,)))), body)
    text = format_program_v04(ir.Program((fn,)))
    again = tlinterp.check(tlinterp.parse(text, lang="v0.4"))
    assert again == to_v04(ir.Program((fn,)))
    assert "foreach (%i,%j)" in text.replace(", ", ",")


def test_foreach_atomic_add_runs_once_per_iteration_also_without_checks():
    """Inside a foreach an atomic_add is an SPMD instruction (once per iteration); with
    check=False the interpreter took it for a collective one (once per work-item) and
    asked for a work_group_size (the fuzzer's magnitude run does not check)."""
    text = """func @k(%C: memref<i32x1>) {
    %c0 = constant 0 : index
    %c4 = constant 4 : index
    %one = constant 1 : i32
    foreach (%i) = (%c0), (%c4) {
        %old = atomic_add %one, %C[%c0] : i32
    }
}
"""
    program = tlinterp.parse(text, lang="v0.4")
    for check in (True, False):
        out = run(program, {"C": np.zeros(1, np.int32)}, groups=2, check=check)
        assert out["C"][0] == 8


# --- the tinytc-0.4.0 profile -------------------------------------------------------------------


def test_tinytc_040_profile_generates_v04_inside_the_profile():
    from fuzz.profiles import load
    from fuzz.profiles.check import violations

    profile = load("tinytc-0.4.0")
    assert profile.lang == "v0.4" and profile.subgroup_sizes == (16, 32)
    narrow = 0
    for s in range(150):
        fn, args, groups, _ = sample_function(s, profile=profile)
        assert violations(fn, profile) == [], s
        assert fn.subgroup_size in (None, 16, 32)
        assert fn.work_group_size is None or fn.work_group_size[0] % 32 == 0
        assert case_of(fn, args, groups, profile).lang == "v0.4"
        # the same seed without the profile: what it would have left out
        free, _, _, _ = sample_function(s, lang="v0.4")
        narrow += any(v.construct in ("subgroup_size", "atomic-narrow-types")
                      for v in violations(free, profile))
    assert narrow > 0  # the profile does exclude something the generator makes


def test_v04_profile_keys_are_validated():
    from fuzz.profiles import ProfileError, from_dict

    with pytest.raises(ProfileError, match="'lang' must be"):
        from_dict({"name": "x", "lang": "v0.5"})
    with pytest.raises(ProfileError, match="subgroup_sizes"):
        from_dict({"name": "x", "subgroup_sizes": [0]})
    with pytest.raises(ProfileError, match="say why in 'why' for: subgroup_size"):
        from_dict({"name": "x", "subgroup_sizes": [16]})
    with pytest.raises(ProfileError, match="say why"):
        from_dict({"name": "x", "exclude_features": ["atomic-narrow-types"]})


def test_tlfuzz_profile_and_lang_must_agree(tmp_path, capsys):
    from fuzz.campaign.cli import main

    assert main(["--lang", "v0.3", "--profile", "tinytc-0.4.0", "--out",
                 str(tmp_path / "out")]) == 2
    assert "is a v0.4 profile, not v0.3" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_gemm_atomic_with_beta_one_is_outside_tinytc_040():
    from fuzz.profiles import load
    from fuzz.profiles.check import violations

    text = """func @k(%A: memref<f32x4x3>, %B: memref<f32x3x2>, %C: memref<f32x4x2>) {
    %a = constant 1.0 : f32
    %b = constant BETA : f32
    gemm.atomic %a, %A, %B, %b, %C
}
"""
    profile = load("tinytc-0.4.0")
    for beta, want in (("1.0", ["gemm-atomic-beta-one"]), ("0.0", [])):
        program = tlinterp.check(tlinterp.parse(text.replace("BETA", beta), lang="v0.4"))
        assert [v.construct for v in violations(program, profile)] == want


def test_a_v04_profile_skips_the_v03_corpus_cases():
    from fuzz.conform.corpus import apply_profile, default_corpus, load_corpus
    from fuzz.profiles import load

    cases = load_corpus(default_corpus(), "valid/")
    run_, skipped = apply_profile(cases, load("tinytc-0.4.0"))
    assert {c.lang for c in run_} == {"v0.4"}
    assert skipped and all("a v0.3 case (the target reads v0.4)" in why
                           for c, why in skipped if c.lang == "v0.3")


@pytest.mark.parametrize("body, outside", [
    ("%r = constant nan : f32", True),
    ("%a = constant 3.25 : f32\n    %z = constant -0.0 : f32\n    %r = rem %a, %z : f32", True),
    ("%a = constant 3.25 : f32\n    %z = constant 2.0 : f32\n    %r = rem %a, %z : f32", False),
])
def test_nan_constants_are_outside_tinytc_040(body, outside):
    from fuzz.profiles import load
    from fuzz.profiles.check import violations

    text = f"func @k(%A: memref<f32x1>) {{\n    {body}\n    %c0 = constant 0 : index\n" \
           "    store %r, %A[%c0]\n}\n"
    program = tlinterp.check(tlinterp.parse(text, lang="v0.4"))
    found = [v.construct for v in violations(program, load("tinytc-0.4.0"))]
    assert found == (["nan-constants"] if outside else [])


def test_spmd_weight_draws_from_the_spmd_generator_when_it_exists(monkeypatch):
    """The hook for fuzz.gen.spmd (another generator of whole SPMD v0.4 kernels):
    spmd_weight percent of the v0.4 cases come from its spmd_cases(name=..., **spmd_params),
    within the profile (its sub-group sizes, atomics only of the types it compiles)."""
    import types

    from hypothesis import Phase, find
    from hypothesis import strategies as st

    from fuzz.profiles.check import violations
    from fuzz.strategies import profile_of

    # a stand-in kernel within tinytc-0.4.0 (else every draw under that profile is dropped)
    fn, args, groups, _ = next(
        k for k in (sample_function(s, name="s", lang="v0.4") for s in range(5, 100))
        if not violations(k[0], profile_of("tinytc-0.4.0")))
    seen = {}

    def spmd_cases(name="k", **knobs):
        seen.update(knobs, name=name)
        return st.just((fn, args, groups))

    monkeypatch.setitem(sys.modules, "fuzz.gen.spmd", types.SimpleNamespace(
        spmd_cases=spmd_cases))
    once = settings(max_examples=1, phases=[Phase.generate], database=None)
    case = find(kernels(lang="v0.4", spmd_weight=100, spmd_params={"max_groups": 2}),
                lambda c: True, settings=once)
    assert case.func == "s" and case.lang == "v0.4" and seen == {"name": "k", "max_groups": 2}
    find(kernels(spmd_weight=100, profile="tinytc-0.4.0"), lambda c: True, settings=once)
    assert seen["subgroup_sizes"] == (16, 32)
    assert ScalarType.i16 not in seen["atomic_types"] and ScalarType.i32 in seen["atomic_types"]
    assert "CoopMulAdd" in generated_kinds("v0.4", spmd=True)
    assert "CoopMulAdd" not in generated_kinds("v0.4", spmd=False)
    monkeypatch.setitem(sys.modules, "fuzz.gen.spmd", None)  # absent: the builder here
    case = find(kernels(lang="v0.4", spmd_weight=100), lambda c: True, settings=once)
    assert case.func == "k" and case.lang == "v0.4"
