"""corpus/v04 (test material for the v0.4 front end): the `; expect:` headers are well formed
and lie inside their files, the valid programs together use every v0.4 instruction and type,
every program gets through the preprocessor, and the preprocessor's own errors in the invalid
programs are at the expected ranges."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import tlinterp
from tlinterp.diagnostics import SourceError, TLError
from tlinterp.preprocess import preprocess

V04 = Path(__file__).resolve().parents[1] / "corpus" / "v04"
VALID = sorted((V04 / "valid").glob("*.tl"))
INVALID = sorted((V04 / "invalid").glob("*.tl"))
# L.C-C on one line, L.C-L2.C2 across lines (as diagnostics print their ranges)
EXPECT = re.compile(r"^; expect: (\d+)\.(\d+)-(?:(\d+)\.)?(\d+) (\S.*)$", re.M)

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
    assert len(VALID) >= 25 and len(INVALID) >= 20


def test_valid_programs_cover_every_instruction_and_type() -> None:
    words: set[str] = set()
    text = ""
    for p in VALID:
        body = re.sub(r";[^\n]*", "", p.read_text())
        text += body
        words |= set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", body))
    assert sorted(set(INSTRUCTIONS + TYPES) - words) == []
    assert [w for w in ALSO if w not in text] == []


@pytest.mark.parametrize("path", INVALID, ids=lambda p: p.stem)
def test_invalid_programs_say_what_to_expect(path: Path) -> None:
    text = path.read_text()
    lines = text.splitlines()
    expects = EXPECT.findall(text)
    assert expects, "no '; expect: LINE.COL-COL FRAGMENT' line"
    assert len(expects) == text.count("; expect:")
    for line, col, end_line, end, _ in expects:
        line, col, end = int(line), int(col), int(end)
        end_line = int(end_line or line)
        assert 1 <= line <= end_line <= len(lines)
        assert 1 <= col <= len(lines[line - 1]) and 1 <= end <= len(lines[end_line - 1])
        assert line < end_line or col <= end
        assert not lines[line - 1].lstrip().startswith(";"), "the range blames a comment"


@pytest.mark.parametrize("path", VALID + INVALID, ids=lambda p: p.parent.name + "/" + p.stem)
def test_preprocessor_errors_are_where_the_corpus_expects(path: Path) -> None:
    """Programs without preprocessor errors come through (the parser judges them later);
    the ones the preprocessor rejects are rejected at their expected range."""
    text = path.read_text()
    expects = EXPECT.findall(text)
    try:
        preprocess(text)
    except SourceError as e:
        assert path.parent.name == "invalid", str(e)
        (diag,) = e.diagnostics
        ranges = {_range(*e[:4]): e[4] for e in expects}
        assert str(diag.span) in ranges, str(e)
        assert ranges[str(diag.span)].lower() in diag.message.lower()


def _range(line: str, col: str, end_line: str, end: str) -> str:
    return f"{line}.{col}-{end_line + '.' if end_line else ''}{end}"


def test_preprocessor_rejects_what_it_should_among_the_invalid() -> None:
    rejected = set()
    for p in INVALID:
        try:
            preprocess(p.read_text())
        except SourceError:
            rejected.add(p.stem)
    assert rejected == {"def_undefined", "def_redefined", "def_complex_part",
                        "calc_bad_operator"}


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.stem)
def test_the_front_end_accepts_every_valid_program(path: Path) -> None:
    program = tlinterp.parse(path.read_text(), str(path), lang="v0.4")
    tlinterp.check(program)
    assert program.lang == "v0.4"


@pytest.mark.parametrize("path", INVALID, ids=lambda p: p.stem)
def test_the_front_end_reports_exactly_the_expected_errors(path: Path) -> None:
    """Every expected diagnostic, in order, at its range, and no other (independent errors
    are all reported)."""
    text = path.read_text()
    with pytest.raises(TLError) as e:
        tlinterp.check(tlinterp.parse(text, str(path), lang="v0.4"))
    got = [(str(d.span), d.message) for d in e.value.diagnostics]
    want = [(_range(*x[:4]), x[4]) for x in EXPECT.findall(text)]
    assert [r for r, _ in got] == [r for r, _ in want], e.value.format()
    for (_, message), (_, fragment) in zip(got, want):
        assert fragment.lower() in message.lower(), e.value.format()
