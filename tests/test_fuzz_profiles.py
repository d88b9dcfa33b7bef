"""Target profiles (fuzz/profiles): the generator stays inside one, kernels reach the
implementation in its spellings, tlconform skips what lies outside, and a rejected construct
is one finding however many cases meet it."""

from __future__ import annotations

import json
import re
import sys
from collections import Counter

import pytest

import tlinterp
from fuzz.campaign.harness import differential_impl
from fuzz.campaign.rejections import REJECTED, count, drop_known, save_rejection
from fuzz.profiles import ProfileError, describe, from_dict, load, names
from fuzz.profiles.check import integer_product, violations
from fuzz.strategies import case_of, sample_function
from tlinterp.impl import ImplOptions, resolve
from tlinterp.lang import ir
from tlinterp.lang.v03.printer import format_program

TINYTC = "tinytc-0.3.1"


def _text_problems(text: str) -> list[str]:
    """What tinytc 0.3.1 rejects, read off the text alone (independent of check.py)."""
    found = []
    if re.search(r"\bu(8|16|32|64)\b|\bu(8|16|32|64)x", text):
        found.append("unsigned type")
    for word in ("barrier", "lifetime_stop", "hadamard_product"):
        if re.search(rf"^\s*{word}\b", text, re.M):
            found.append(word)
    if re.search(r"^\s*store -?[0-9]", text, re.M):
        found.append("store of a constant")
    m = re.search(r"work_group_size\((\d+),", text)
    if m and int(m.group(1)) % 32:
        found.append("work_group_size")
    return found


def test_tinytc_profile_never_generates_a_construct_outside_it():
    """1,000 seeded kernels (plain sampling: the generator itself, no filter behind it)."""
    profile = load(TINYTC)
    seen: Counter = Counter()
    for seed in range(1000):
        func, _, _, _ = sample_function(seed, profile=profile)
        assert violations(func, profile) == [], seed
        text = format_program(ir.Program((func,), "k.tl"), profile.spellings)
        assert _text_problems(text) == [], (seed, text)
        for inst in ir.walk(func.body):
            seen[type(inst).__name__] += 1
    # still the language minus the exclusions: collectives, hadamard on vectors, allocas
    for kind in ("Gemm", "Gemv", "Ger", "Hadamard", "Axpby", "Sum", "Alloca", "If", "For",
                 "Foreach", "Store"):
        assert seen[kind] > 0, kind


def test_the_new_bugs_profile_leaves_out_the_reported_constructs():
    """The campaign profile without tinytc's reported bugs: no ger, no integer gemm/gemv, while
    float gemm/gemv and integer axpby stay."""
    profile = load("tinytc-0.3.1-new-bugs")
    seen: Counter = Counter()
    for seed in range(300):
        func, _, _, _ = sample_function(seed, profile=profile)
        assert violations(func, profile) == [], seed
        for inst in ir.walk(func.body):
            assert not isinstance(inst, ir.Ger) and not integer_product(inst), seed
            assert not (isinstance(inst, ir.Axpby) and inst.b_type.order == 0), seed
            assert not (isinstance(inst, ir.Sum) and inst.trans and inst.a_type.order == 2)
            assert not (isinstance(inst, ir.Expand) and inst.type.stride[inst.mode] is None)
            seen[type(inst).__name__] += 1
    assert seen["Gemm"] > 0 and seen["Gemv"] > 0 and seen["Axpby"] > 0 and seen["Sum"] > 0
    loose = load(TINYTC)
    found = {v.construct for seed in range(300)
             for v in violations(sample_function(seed, profile=loose)[0], profile)}
    # what the checks above rule out does occur without the profile
    assert {"ger", "integer-products", "order0-axpby", "transposed-sum",
            "expand-inferred-dynamic", "expand-dynamic-stride"} <= found


def test_the_all_profile_generates_what_tinytc_rejects():
    """The checks above can fail: the default profile reaches every excluded construct."""
    profile = load(TINYTC)
    found: set = set()
    for seed in range(300):
        func, _, _, _ = sample_function(seed)
        found |= {v.construct for v in violations(func, profile)}
    assert {"u8", "u16", "u32", "u64", "barrier", "lifetime_stop", "store-constant",
            "hadamard-matrix", "mixed-static-dynamic-sizes", "alloca-in-if",
            "work_group_size"} <= found


def test_profiles_load_and_bad_ones_are_named():
    assert {"all", TINYTC} <= set(names())
    assert not load("all").restricts and load(TINYTC).spellings == {
        "hadamard_product": "hadamard"}
    assert TINYTC in describe()
    with pytest.raises(ProfileError, match=r"unknown profile 'nope' \(known: all, "):
        load("nope")
    with pytest.raises(ProfileError, match="say why in 'why' for: u8"):
        from_dict({"name": "x", "exclude_types": ["u8"]})
    with pytest.raises(ProfileError, match="unknown feature 'bogus'"):
        from_dict({"name": "x", "exclude_features": ["bogus"], "why": {"bogus": "?"}})
    with pytest.raises(ProfileError, match="type 'index' cannot be excluded"):
        from_dict({"name": "x", "exclude_types": ["index"], "why": {"index": "?"}})
    with pytest.raises(ProfileError, match="unknown key"):
        from_dict({"name": "x", "exclude_typo": []})


def test_a_profile_file_of_ones_own(tmp_path):
    path = tmp_path / "mine.json"
    path.write_text(json.dumps({"name": "mine", "exclude_types": ["f64"],
                                "why": {"f64": "no doubles"}}))
    profile = load(str(path))
    for seed in range(30):
        func, _, _, _ = sample_function(seed, profile=profile)
        assert "f64" not in format_program(ir.Program((func,), "k.tl"))
    path.write_text("{not json")
    with pytest.raises(ProfileError, match="cannot read it"):
        load(str(path))


def test_printer_spellings_round_trip():
    text = ("func @k(%a: memref<f32x4>, %b: memref<f32x4>, %c: memref<f32x4>) {\n"
            "  hadamard_product.atomic 1.0, %a, %b, 0.0, %c : f32, memref<f32x4>, "
            "memref<f32x4>, f32, memref<f32x4>\n}\n")
    program = tlinterp.parse(text, "k.tl")
    spelled = format_program(program, {"hadamard_product": "hadamard"})
    assert "  hadamard.atomic 1.0" in spelled and "hadamard_product" not in spelled
    assert tlinterp.parse(spelled, "k.tl") == program
    assert format_program(program) == text  # canonical stays the default


# --- the implementation under test: a fake compiler that rejects one construct ------------

FAKE = r'''
import re, sys
kernel, record = sys.argv[1], sys.argv[2]
text = open(kernel).read()
with open(record, "a") as f:
    f.write(text + "\n=====\n")
for n, line in enumerate(text.split("\n"), 1):
    m = re.search(r"\bhadamard(_product)?\b", line)
    if m and line.lstrip().startswith(m.group(0)):
        print(f"{kernel}:{n}.{m.start() + 1}-{m.end()}: Unknown token", file=sys.stderr)
        sys.exit(2)
sys.exit(3)  # everything else: no output (a crash, not a rejection)
'''


def _hadamard_cases(profile, n: int) -> list:
    """n generated kernels holding a (vector) hadamard_product, as the campaign writes them."""
    cases = []
    for seed in range(5000):
        func, args, groups, _ = sample_function(
            seed, profile=profile, collective_weights={"hadamard": 20})
        if any(isinstance(i, ir.Hadamard) for i in ir.walk(func.body)):
            cases.append(case_of(func, args, groups, profile))
            if len(cases) == n:
                return cases
    raise AssertionError("the generator made too few hadamards")


@pytest.mark.parametrize("profile,spelled", [(TINYTC, "hadamard"),
                                             ("all", "hadamard_product")])
def test_the_spelling_reaches_the_implementation_and_rejections_dedupe(tmp_path, profile,
                                                                        spelled):
    fake, record = tmp_path / "fake.py", tmp_path / "record.txt"
    fake.write_text(FAKE)
    impl = resolve(f"{sys.executable} {fake} {{kernel}} {record} --out {{out}}",
                   ImplOptions())
    cases = _hadamard_cases(profile, 4)
    findings = differential_impl(cases, impl, timeout=60)
    got = record.read_text().split("\n=====\n")[:-1]
    assert len(got) == 4
    for text in got:
        assert re.search(rf"^\s*{spelled}[ .]", text, re.M), text
        if spelled == "hadamard":
            assert "hadamard_product" not in text
    rejected = [f for f in findings if f.kind == REJECTED]
    assert len(rejected) == 4
    assert {f.construct for f in rejected} == {"hadamard_product: Unknown token"}
    # four cases, one finding: the first is saved, the others counted
    out = tmp_path / "findings"
    saved = [save_rejection(f, str(out)) for f in rejected]
    assert [first for _, first in saved] == [True, False, False, False]
    assert len({base for base, _ in saved}) == 1
    base = saved[0][0]
    assert sorted(p.name for p in out.iterdir()) == sorted(
        f"{base.rsplit('/', 1)[1]}{ext}" for ext in (".cases", ".npz", ".tl", ".txt"))
    assert count(base) == 4
    assert (out / (base.rsplit("/", 1)[1] + ".tl")).read_text() == cases[0].source
    # a search meeting it again counts it and goes on; while shrinking it only drops it
    assert drop_known(rejected[:2], str(out), count_them=True) == []
    assert count(base) == 6
    assert drop_known(rejected[:1], str(out), count_them=False) == [] and count(base) == 6


# --- tlconform --profile ------------------------------------------------------------------


def test_tlconform_profile_skips_with_the_reason_and_respells(tmp_path):
    from fuzz.conform.cli import main

    report = tmp_path / "r.json"
    status = main(["--impl", "interp", "--profile", TINYTC, "--filter", "valid/views",
                   "--json", str(report), "--quiet"])
    assert status == 0
    data = json.loads(report.read_text())
    skipped = {c["id"]: c["detail"] for c in data["cases"] if c["status"] == "skip"}
    assert data["summary"]["skip"] == len(skipped) > 0
    assert data["summary"]["by_kind"]["valid"]["skip"] == len(skipped)
    assert "lifetime_stop: no lifetime_stop instruction" in \
        skipped["valid/views/alloca_lifetime"]
    assert "barrier" in skipped["valid/views/group_id_size"]
    ran = [c for c in data["cases"] if c["status"] != "skip"]
    assert ran and all(c["status"] == "pass" for c in ran)

    # the kernel handed over is in the target's spelling, the expected results unchanged
    record = tmp_path / "record.txt"
    template = (f"sh -c 'cat \"$1\" >> {record}; exec \"$0\" -m tlinterp.cli \"$@\"' "
                f"{sys.executable} {{kernel}} --args {{args}} --out {{out}} "
                "[--func {func}] [--groups {groups}]")
    assert main(["--impl", template, "--profile", TINYTC, "--filter",
                 "valid/blas/hadamard_atomic_f32", "--quiet"]) == 0
    text = record.read_text()
    assert "  hadamard.atomic 1.5, %a_g" in text and "hadamard_product" not in text


def test_unknown_profiles_exit_2_naming_the_known_ones(tmp_path, capsys):
    from fuzz.campaign.cli import main as tlfuzz
    from fuzz.conform.cli import main as tlconform

    assert tlfuzz(["--profile", "nope", "--out", str(tmp_path / "out")]) == 2
    assert "unknown profile 'nope' (known: all, tinytc-0.3.1" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    assert tlconform(["--impl", "interp", "--profile", "nope"]) == 2
    assert "known: all, tinytc-0.3.1" in capsys.readouterr().err
    assert tlfuzz(["--profile", "list"]) == 0
    assert TINYTC in capsys.readouterr().out
