"""The front end never lets anything but SourceError escape, and stays bounded on big inputs.

Random text, random token soup, and token-level mutations (delete / duplicate / swap / replace)
of valid programs must either parse or raise SourceError.  The large cases (1 MB of garbage,
500 nested ifs, 50,000 instructions) are bounded by construction: linear-time grammar, a
nesting cap checked before parsing, no timing assertions.
"""

from __future__ import annotations

import random
import re
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_parser import INSTRUCTIONS, SAMPLE, SPEC_IF, SPEC_VIEWS, view_function
from test_printer import OLD_SPELLINGS

from tlinterp.lang import ir
from tlinterp.lang.diagnostics import SourceError
from tlinterp.lang.v03.parser import MAX_NESTING, parse
from tlinterp.lang.v03.printer import format_program


def parse_or_source_error(text: str):
    """The property: success, or SourceError with at least one diagnostic; nothing else."""
    try:
        return parse(text, "fuzz.tl")
    except SourceError as e:
        assert e.diagnostics
        e.format()  # formatting the report must not fail either
        return None


VALID = [SAMPLE, SPEC_IF, OLD_SPELLINGS]
VALID += [view_function(v) for v, _ in SPEC_VIEWS]
VALID += [f"func @f(%a: f32) {{\n  {t}\n}}\n" for t, _ in INSTRUCTIONS]

# A token, and the white space / comment after it (kept so that unmutated text is unchanged).
_TOKEN = re.compile(r"(memref<|group<|strided<|[%@]?[A-Za-z0-9_.+-]+|->|\S)(\s*(?:;[^\n]*\s*)*)")


def tokens(text: str) -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in _TOKEN.finditer(text)]


def test_tokenizer_keeps_text():
    for text in VALID:
        start = re.match(r"\s*", text).end()
        assert "".join(t + s for t, s in tokens(text)) == text[start:]


VOCAB = sorted({t for text in VALID for t, _ in tokens(text)} | {
    "func", "@f", "(", ")", "{", "}", "[", "]", "<", ">", ",", ":", "=", "->", "?", "x",
    "if", "else", "for", "foreach", "yield", "true", "false", "0x1p3", "1e5", "-7", ";",
    "9223372036854775808", "1e999", "offset", "strided<", "work_group_size", "subgroup_size",
})


@st.composite
def mutated(draw) -> str:
    text = draw(st.sampled_from(VALID))
    toks = tokens(text)
    for _ in range(draw(st.integers(1, 4))):
        if not toks:
            break
        i = draw(st.integers(0, len(toks) - 1))
        op = draw(st.sampled_from(["delete", "duplicate", "swap", "replace", "insert"]))
        if op == "delete":
            del toks[i]
        elif op == "duplicate":
            toks.insert(i, toks[i])
        elif op == "swap":
            j = draw(st.integers(0, len(toks) - 1))
            toks[i], toks[j] = toks[j], toks[i]
        elif op == "replace":
            toks[i] = (draw(st.sampled_from(VOCAB)), toks[i][1])
        else:
            toks.insert(i, (draw(st.sampled_from(VOCAB)), " "))
    return "".join(t + s for t, s in toks)


token_soup = st.lists(st.sampled_from(VOCAB), max_size=60).map(" ".join)


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=300))
def test_random_text(text):
    parse_or_source_error(text)


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(token_soup)
def test_random_token_soup(text):
    parse_or_source_error(text)


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_mutated_valid_programs(text):
    p = parse_or_source_error(text)
    if p is not None:  # whatever parses also prints and re-parses to the same IR
        assert parse(format_program(p)) == p


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(VALID), st.integers(0, 10_000))
def test_every_prefix_of_valid_programs(text, cut):
    parse_or_source_error(text[: cut % (len(text) + 1)])


# --- large inputs ------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["printable", "bytes", "parens", "open_braces", "tokens",
                                  "one_line_comment"])
def test_one_megabyte_of_garbage(kind):
    rnd = random.Random(1234)
    n = 1 << 20
    if kind == "printable":
        text = "".join(rnd.choice("%@{}()[]<>:,=-x?;. \n\tabcfi0123456789") for _ in range(n))
    elif kind == "bytes":
        text = rnd.randbytes(n).decode("latin-1")
    elif kind == "parens":
        text = "func @f(" * (n // 8)
    elif kind == "open_braces":  # stopped by the nesting cap before any parsing
        text = "func @f() {" + "if %c {" * (n // 7)
    elif kind == "tokens":
        text = " ".join(rnd.choice(VOCAB) for _ in range(n // 4))
    else:
        text = ";" + "x" * n
    parse_or_source_error(text)


def test_nesting_cap_gives_clean_diagnostic():
    depth = MAX_NESTING + 5
    text = "func @f() {\n" + "if %c {\n" * depth + "}\n" * (depth + 1)
    with pytest.raises(SourceError) as e:
        parse(text)
    (d,) = e.value.diagnostics
    assert "nested deeper than" in d.message
    assert d.span.line == MAX_NESTING + 1


def nested_ifs(depth: int) -> str:
    lines = ["func @deep(%c: i1) {"]
    for k in range(depth):
        lines.append("  " * (k + 1) + "if %c {")
    lines.append("  " * (depth + 1) + "barrier")
    for k in reversed(range(depth)):
        lines.append("  " * (k + 1) + "}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def test_500_nested_ifs():
    text = nested_ifs(500)
    limit = sys.getrecursionlimit()
    p = parse(text)
    assert sys.getrecursionlimit() == limit  # the caller's limit is left alone
    region, depth = p.function().body, 0
    while region.instructions and isinstance(region.instructions[0], ir.If):
        region, depth = region.instructions[0].then, depth + 1
    assert depth == 500 and isinstance(region.instructions[0], ir.Barrier)
    assert region.instructions[0].span.line == 502
    printed = format_program(p)  # the printer is iterative
    assert printed == text
    assert format_program(parse(printed)) == printed


@pytest.mark.parametrize("depth", [3, 60])
def test_nested_ifs_from_a_deep_caller(depth):
    """A caller that already used most of its recursion budget still gets a result."""

    def recurse(n: int):
        return recurse(n - 1) if n else parse(nested_ifs(depth))

    limit = sys.getrecursionlimit()
    assert recurse(limit - 150).function().name == "deep"


def test_50000_instructions():
    n = 50_000
    lines = ["func @long(%x: i32) {", "  %v0 = arith.add %x, 1 : i32"]
    lines += [f"  %v{k} = arith.add %v{k - 1}, {k} : i32" for k in range(1, n)]
    lines.append("}")
    p = parse("\n".join(lines))
    insts = p.function().body.instructions
    assert len(insts) == n
    assert insts[-1].span.line == n + 1
    assert insts[-1].rhs == ir.Const(n - 1)


def test_syntax_error_deep_in_a_long_function():
    lines = ["func @long(%x: i32) {"]
    lines += [f"  %v{k} = arith.add %x, {k} : i32" for k in range(20_000)]
    lines += ["  %bad = arith.add %x : i32", "}"]
    with pytest.raises(SourceError) as e:
        parse("\n".join(lines))
    (d,) = e.value.diagnostics
    assert (d.message, str(d.span)) == ("expected ',', found ':'", "20002.23-23")
