"""The v0.4 front end's test material: corpus/v04/valid (check-only programs) together use every
v0.4 instruction and type; the invalid v0.4 programs of the conformance corpus
(corpus/cases/v04/invalid.py, generated to corpus/invalid/v04/) blame no comment, get through
the preprocessor unless it is the preprocessor that rejects them, and the front end reports
exactly their expected errors, every independent one, in order."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import tlinterp
from corpus.cases import InvalidCase, all_undefined, all_valid
from corpus.cases.v04 import invalid as invalid_v04
from corpus.cases.v04.tags import INSTRUCTIONS, instructions_of, layouts_of
from tlinterp.front.preprocess import preprocess
from tlinterp.lang.diagnostics import SourceError, TLError

V04 = Path(__file__).resolve().parents[1] / "corpus" / "v04"
VALID = sorted((V04 / "valid").glob("*.tl"))
INVALID = invalid_v04.cases()

# The types of v0.4 (docs/language.md "v0.4 syntax by example"); the instructions: v04tags.
TYPES = "bool i8 i16 i32 i64 index bf16 f16 f32 f64 c32 c64 memref group coopmatrix".split()
ALSO = ["local", "global", "strided", "offset", "matrix_a", "matrix_b", "matrix_acc",
        "attributes", "init", "else", "alignment", "shape_gcd", "stride_gcd", "subgroup_size",
        "work_group_size", "unroll", ".atomic", ".t", ".rows_checked", ".cols_checked",
        ".both_checked", ".row", ".column", ".device", ".acquire", "barrier.global.local",
        "!calc", "$"]


def test_the_corpus_is_there() -> None:
    assert len(VALID) >= 25 and len(INVALID) >= 80
    assert all(c.lang == "v0.4" and c.id.startswith("invalid/v04/") for c in INVALID)


def test_valid_programs_cover_every_instruction_and_type() -> None:
    words: set[str] = set()
    text = ""
    for p in VALID:
        body = re.sub(r";[^\n]*", "", p.read_text())
        text += body
        words |= set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", body))
    assert sorted((set(INSTRUCTIONS) | set(TYPES)) - words) == []
    assert [w for w in ALSO if w not in text] == []


SCALAR_TYPES = [t for t in TYPES if t not in ("memref", "group", "coopmatrix")]


def test_the_runnable_cases_cover_every_instruction_type_and_layout() -> None:
    """The runnable v0.4 cases (tags read from their kernels) use every v0.4 instruction,
    scalar type and layout, and a grid of work-groups."""
    cases = [c for c in all_valid() if c.lang == "v0.4"]
    for c in cases:
        assert c.tags["instruction"] == instructions_of(c.source), c.id
        assert c.tags["layout"] == layouts_of(c.source), c.id
    tagged = {dim: {t for c in cases for t in c.tags[dim]} for dim in c.tags}
    assert sorted(set(INSTRUCTIONS) - tagged["instruction"]) == []
    assert sorted(set(SCALAR_TYPES) - tagged["type"]) == []
    assert tagged["layout"] == {"canonical", "strided", "dynshape", "dynstride"}
    assert any(isinstance(c.groups, tuple) and len(c.groups) == 3 for c in cases)


def test_the_undefined_cases_cover_every_v04_only_kind() -> None:
    kinds = {c.kind for c in all_undefined() if c.lang == "v0.4"}
    assert kinds >= {"non-uniform", "barrier-divergence", "data-race", "out-of-bounds",
                     "uninitialised-read"}


@pytest.mark.parametrize("params, want", [
    ("%A: memref<f32 x 4 x 3>", ["canonical"]),
    ("%A: memref<f32 x 4 x 3, strided<1, 4>>", ["canonical"]),
    ("%A: memref<f32 x 4 x 3, strided<1, 5>, global>", ["strided"]),
    ("%A: memref<f32 x ? x 3>", ["dynshape"]),
    ("%A: memref<f32 x 16 x ?, strided<1, 16>>", ["dynshape"]),
    ("%A: memref<f32 x 4, strided<?>>, %b: f32", ["dynstride"]),
    ("%G: group<memref<f32 x ? x 2> x ?, offset: ?>, %B: memref<i16>", ["canonical", "dynshape"]),
])
def test_layout_tags_read_from_the_parameters(params: str, want: list[str]) -> None:
    assert layouts_of(f"func @k({params}) attributes{{subgroup_size=8}} {{\n}}\n") == want


def _ranges(case: InvalidCase) -> list[str]:
    return [case.blame_range(), *case.more_ranges()]


@pytest.mark.parametrize("case", INVALID, ids=lambda c: c.name)
def test_invalid_programs_blame_code_not_comments(case: InvalidCase) -> None:
    lines = case.source.splitlines()
    assert lines[0].startswith("; "), "the first line says the rule"
    for r in _ranges(case):
        line = int(r.split(".")[0])
        assert not lines[line - 1].lstrip().startswith(";"), "the range blames a comment"


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.stem)
def test_valid_programs_get_through_the_preprocessor(path: Path) -> None:
    preprocess(path.read_text())


@pytest.mark.parametrize("case", INVALID, ids=lambda c: c.name)
def test_preprocessor_errors_are_where_the_corpus_expects(case: InvalidCase) -> None:
    """Programs without preprocessor errors come through (the parser judges them later);
    the ones the preprocessor rejects are rejected at their expected range."""
    try:
        preprocess(case.source)
    except SourceError as e:
        (diag,) = e.diagnostics
        assert str(diag.span) == case.blame_range(), str(e)


def test_preprocessor_rejects_what_it_should_among_the_invalid() -> None:
    rejected = set()
    for c in INVALID:
        try:
            preprocess(c.source)
        except SourceError:
            rejected.add(c.name)
    assert rejected == {"v04/def_undefined", "v04/def_redefined", "v04/def_complex_part",
                        "v04/calc_bad_operator"}


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.stem)
def test_the_front_end_accepts_every_valid_program(path: Path) -> None:
    program = tlinterp.parse(path.read_text(), str(path), lang="v0.4")
    tlinterp.check(program)
    assert program.lang == "v0.4"


@pytest.mark.parametrize("case", INVALID, ids=lambda c: c.name)
def test_the_front_end_reports_exactly_the_expected_errors(case: InvalidCase) -> None:
    """Every expected diagnostic, in order, at its range, and no other (independent errors
    are all reported)."""
    with pytest.raises(TLError) as e:
        tlinterp.check(tlinterp.parse(case.source, f"{case.id}.tl", lang="v0.4"))
    got = [str(d.span) for d in e.value.diagnostics]
    assert got == _ranges(case), e.value.format()
