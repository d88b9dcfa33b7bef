"""Migration v0.3 -> v0.4 -> IR over every kernel of examples/ and corpus/valid/: each kernel
v0.4 can express prints as v0.4, reparses to an equal IR (its v0.4 form), passes v0.4's rules,
and runs to the same results on the interpreter; the others fail with a message naming what
v0.4 lacks.  And the reverse direction: a v0.4 program using only constructs v0.3 has prints
as v0.3."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tlinterp import check, parse, run
from tlinterp.checker.v04 import check as check_v04
from tlinterp.front.migrate import to_v03, to_v04
from tlinterp.lang.diagnostics import SourceError
from tlinterp.lang.v03.printer import format_program
from tlinterp.lang.v04.printer import format_program_v04

ROOT = Path(__file__).resolve().parents[1]
# v0.3 kernels only: corpus/valid/v04/ is written in v0.4 already
KERNELS = sorted([*ROOT.glob("examples/**/*.tl"),
                  *(p for p in ROOT.glob("corpus/valid/**/*.tl") if p.parent.name != "v04")])
# what v0.4 cannot express (the message of each kernel that does not convert)
NO_V04 = ("the v0.2 unsigned type", "a cast to i1", "with beta other than a constant 0 or 1",
          "lifetime_stop", "does not promote to")


def _v03(path: Path):
    return check(parse(path.read_text(encoding="utf-8"), str(path), lang="v0.3"))


def _valid(path: Path) -> bool:
    try:
        _v03(path)
    except SourceError:
        return False
    return True


def _converts(path: Path) -> bool:
    try:
        format_program_v04(_v03(path))
    except SourceError:
        return False
    return True


# examples/bad.tl shows diagnostics: the one kernel that is not valid v0.3 (tested below)
VALID = [p for p in KERNELS if _valid(p)]


def test_only_the_bad_example_is_not_valid_v03():
    assert [p.relative_to(ROOT).as_posix() for p in KERNELS if p not in VALID] == \
        ["examples/bad.tl"]


@pytest.mark.parametrize("path", VALID, ids=lambda p: str(p.relative_to(ROOT)))
def test_v03_to_v04_round_trip(path):
    program = _v03(path)
    try:
        text = format_program_v04(program)
    except SourceError as e:
        assert all(any(w in d.message for w in NO_V04) for d in e.diagnostics), e.format()
        assert all(d.span is not None for d in e.diagnostics)
        return
    again = parse(text, str(path), lang="v0.4")
    assert again == to_v04(program)
    check_v04(again)
    assert parse(text, str(path)) == again  # the printed text is detected as v0.4
    assert format_program_v04(again) == text


def test_most_kernels_convert():
    converted = 0
    for path in KERNELS:
        try:
            format_program_v04(check(parse(path.read_text(encoding="utf-8"), lang="v0.3")))
            converted += 1
        except SourceError:
            pass
    assert converted >= 0.85 * len(KERNELS)


# the kernels with arguments that v0.4 can express (the others: test_v03_to_v04_round_trip)
RUNNABLE = [p for p in VALID if (p.with_suffix("").with_suffix(".args.npz").exists()
                                 or Path(str(p)[:-3] + ".args.npz").exists()) and _converts(p)]


@pytest.mark.parametrize("path", RUNNABLE, ids=lambda p: str(p.relative_to(ROOT)))
def test_v04_form_runs_to_the_same_results(path):
    program = _v03(path)
    text = format_program_v04(program)
    with np.load(str(path)[:-3] + ".args.npz") as z:
        args = {k: z[k] for k in z.files}
    want = run(program, {k: v.copy() for k, v in args.items()})
    got = run(parse(text, str(path), lang="v0.4"), {k: v.copy() for k, v in args.items()})
    assert want.keys() == got.keys()
    for k in want:
        np.testing.assert_array_equal(got[k], want[k])


def test_v04_prints_as_v03_where_v03_has_everything():
    src = ("func @f(%a: memref<f32x8>) {\n"
           "    %c0 = constant 0 : index\n"
           "    %x = load %a[%c0] : f32\n"
           "    %y = add %x, %x : f32\n"
           "    store %y, %a[%c0]\n"
           "}\n")
    p4 = parse(src, "f.tl", lang="v0.4")
    text = format_program(to_v03(p4))
    assert "arith.add %x, %x : f32" in text and "load %a[0] : memref<f32x8>" in text
    back = parse(text, "f.tl", lang="v0.3")
    again = check_v04(parse(format_program_v04(back), "f.tl", lang="v0.4"))
    assert format_program(to_v03(again)) == text  # each literal use is its own constant


# --- generated programs --------------------------------------------------------------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402

from fuzz.strategies import FuzzCase, kernels  # noqa: E402
from tlinterp.lang.types import ScalarType  # noqa: E402

# v0.4 has no unsigned types: the generator draws the others
SIGNED = tuple(ScalarType[n] for n in ("i8", "i16", "i32", "i64", "index", "f32", "f64"))


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(kernels(max_groups=2, memref_types=SIGNED, scalar_types=SIGNED + (ScalarType.i1,)))
def test_generated_programs_print_as_v04_and_back(case: FuzzCase):
    """Hypothesis-generated IR (the fuzzer's v0.3 programs) in its v0.4 form: printed, it
    reparses to the same IR, passes v0.4's rules, prints identically, and runs to the same
    results."""
    try:
        text = format_program_v04(case.program)
    except SourceError as e:  # e.g. a generated unsigned type or cast to i1
        assert all(any(w in d.message for w in NO_V04) for d in e.diagnostics), e.format()
        return
    again = parse(text, "gen.tl", lang="v0.4")
    assert again == to_v04(case.program)
    check_v04(again)
    assert format_program_v04(again) == text
    args = {k: np.array(v, copy=True) for k, v in case.args.items()}
    try:
        want = run(case.program, args, func=case.func, groups=case.groups)
    except Exception:  # noqa: BLE001 - undefined behaviour the generator allows: both alike
        return
    got = run(again, {k: np.array(v, copy=True) for k, v in case.args.items()},
              func=case.func, groups=case.groups)
    for k in want:
        np.testing.assert_array_equal(got[k], want[k])


def test_a_conversion_that_breaks_a_v04_rule_is_an_error_at_its_range():
    """v0.3 lets alpha and beta be wider than the output (f64 into f32); v0.4 does not: the
    conversion says so instead of printing a v0.4 text its checker rejects."""
    src = ("func @k(%a: f64, %A: memref<f32x4x4>, %x: memref<f32x4>, %y: memref<f32x4>) {\n"
           "  gemv.n %a, %A, %x, 1.0, %y : f64, memref<f32x4x4>, memref<f32x4>, f64, "
           "memref<f32x4>\n}\n")
    with pytest.raises(SourceError) as e:
        format_program_v04(check(parse(src, "w.tl", lang="v0.3")))
    d = e.value.diagnostics[0]
    assert d.span.line == 2
    assert "no v0.4 equivalent: gemv: alpha of type f64 does not promote to f32" in d.message
