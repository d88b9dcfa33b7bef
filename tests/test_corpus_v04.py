"""The v0.4 front end's test material: corpus/v04/valid (check-only programs) together use every
v0.4 instruction and type; the invalid v0.4 programs of the conformance corpus
(corpus/cases/invalid_v04.py, generated to corpus/invalid/v04/) blame no comment, get through
the preprocessor unless it is the preprocessor that rejects them, and the front end reports
exactly their expected errors, every independent one, in order."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import tlinterp
from corpus.cases import InvalidCase, invalid_v04
from tlinterp.diagnostics import SourceError, TLError
from tlinterp.preprocess import preprocess

V04 = Path(__file__).resolve().parents[1] / "corpus" / "v04"
VALID = sorted((V04 / "valid").glob("*.tl"))
INVALID = invalid_v04.cases()

# The instruction names and types of v0.4 (docs/language.md "v0.4 syntax by example").
INSTRUCTIONS = """
alloca associated atomic_load atomic_store atomic_add atomic_max atomic_min axpby barrier cast
constant cumsum expand fuse for foreach foreach_tile gemm gemv ger hadamard if load parallel
size store subview sum yield add sub mul div rem shl shr and or xor min max abs neg not conj im
re group_id num_groups num_subgroups subgroup_size subgroup_id subgroup_linear_id
subgroup_local_id equal not_equal greater_than greater_than_equal less_than less_than_equal
cos sin exp exp2 log log2 native_cos native_sin native_exp native_exp2 native_log native_log2
subgroup_broadcast subgroup_exclusive_scan_add subgroup_exclusive_scan_max
subgroup_exclusive_scan_min subgroup_inclusive_scan_add subgroup_inclusive_scan_max
subgroup_inclusive_scan_min subgroup_reduce_add subgroup_reduce_max subgroup_reduce_min
cooperative_matrix_apply cooperative_matrix_atomic_add cooperative_matrix_atomic_load
cooperative_matrix_atomic_max cooperative_matrix_atomic_min cooperative_matrix_atomic_store
cooperative_matrix_construct cooperative_matrix_extract cooperative_matrix_insert
cooperative_matrix_load cooperative_matrix_mul_add cooperative_matrix_prefetch
cooperative_matrix_reduce_add cooperative_matrix_reduce_max cooperative_matrix_reduce_min
cooperative_matrix_scale cooperative_matrix_store
""".split()
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
    assert sorted(set(INSTRUCTIONS + TYPES) - words) == []
    assert [w for w in ALSO if w not in text] == []


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
