"""The front end is one pipeline (tlinterp/front/pipeline.py `read`): preprocess, detect, parse,
check, each called once, in order, on the previous stage's result; an error ends it in the
stage that found it; nothing is parsed twice."""

from __future__ import annotations

import pytest

import tlinterp
from tlinterp.checker import v03 as checker_v03
from tlinterp.front import pipeline
from tlinterp.lang.diagnostics import SourceError
from tlinterp.lang.v03 import parser as parser_v03
from tlinterp.lang.v04 import parser as parser_v04

STAGES = ("preprocess", "detect", "parse", "check")

V03 = ("func @f(%a: memref<f32x4>) {\n  %x = load %a[0] : memref<f32x4>\n"
       "  %y = arith.add %x, 1.0 : f32\n}\n")
V04 = ("func @f(%a: memref<f32x4>) {\n    %c0 = constant 0 : index\n"
       "    %x = load %a[%c0] : f32\n}\n")
NO_MARKER = "func @f() {\n}\n"  # both readings parse, and agree
# both readings parse, differently (`barrier` fences both memories in v0.3, none in v0.4); only
# v0.3's is valid (the type after a load is its operand's in v0.3, its result's in v0.4)
DIFFERENT = "func @k(%0: memref<f32>) {\n  barrier\n  %1 = load %0[] : memref<f32>\n}\n"
DEFINED = ("func @f(%a: memref<f32x$n>) {\n    %c0 = constant 0 : index\n"
           "    %x = load %a[%c0] : f32\n}\n")


@pytest.fixture
def traced(monkeypatch):
    """Every stage wrapped: the calls in order, each with its argument and result; and the
    calls of each parser and of the checker."""
    calls: list[tuple[str, object, object]] = []
    counts = {"v0.3 parser": 0, "v0.4 parser": 0, "checker": 0}

    def stage(name: str, fn):
        def wrapper(*args, **kwargs):
            calls.append((name, args[0], None))
            result = fn(*args, **kwargs)
            calls[-1] = (name, args[0], result)
            return result
        monkeypatch.setattr(pipeline, f"stage_{name}", wrapper)

    def counted(module, attr: str, key: str):
        fn = getattr(module, attr)

        def wrapper(*args, **kwargs):
            counts[key] += 1
            return fn(*args, **kwargs)
        monkeypatch.setattr(module, attr, wrapper)

    for name in STAGES:
        stage(name, getattr(pipeline, f"stage_{name}"))
    counted(parser_v03, "parse", "v0.3 parser")
    counted(parser_v04, "parse", "v0.4 parser")
    counted(checker_v03, "check", "checker")
    return calls, counts


def _chained(calls) -> None:
    """Each stage took the result of the one before."""
    for (_, _, result), (_, arg, _) in zip(calls, calls[1:]):
        assert arg is result


@pytest.mark.parametrize("text, defines, lang, parses, checks, reason", [
    (V03, None, "v0.3", {"v0.3 parser": 1, "v0.4 parser": 0}, 1, "a marker"),
    (V04, None, "v0.4", {"v0.3 parser": 0, "v0.4 parser": 1}, 1, "a marker"),
    # without a marker detection parses both readings, and the parse stage none again
    (NO_MARKER, None, "v0.3", {"v0.3 parser": 1, "v0.4 parser": 1}, 1, "both readings agree"),
    # ... and checks both, and the check stage does not check the chosen one again
    (DIFFERENT, None, "v0.3", {"v0.3 parser": 1, "v0.4 parser": 1}, 2,
     "the only valid reading"),
    (DEFINED, {"n": "4"}, "v0.4", {"v0.3 parser": 0, "v0.4 parser": 1}, 1, "-D"),
], ids=["v0.3", "v0.4", "no-marker", "two-readings", "defines"])
def test_each_stage_once_in_order(traced, text, defines, lang, parses, checks, reason):
    calls, counts = traced
    program = pipeline.read(text, "k.tl", defines=defines)
    assert [name for name, _, _ in calls] == list(STAGES)
    _chained(calls)
    detected = calls[1][2]
    assert (detected.version, detected.reason) == (lang, reason)
    assert program.lang == lang and program is calls[2][2].program
    assert {k: counts[k] for k in parses} == parses
    assert counts["checker"] == checks
    if defines:  # the position map: the program quotes and counts in the text as written
        assert program.source == text and program.functions[0].args[0].type.shape == (4,)


def test_parse_is_the_pipeline_without_the_check(traced):
    calls, counts = traced
    assert tlinterp.parse(V04, "k.tl").lang == "v0.4"
    assert [name for name, _, _ in calls] == ["preprocess", "detect", "parse"]
    _chained(calls)
    assert counts["checker"] == 0


@pytest.mark.parametrize("text, kwargs, stops_at, message", [
    # a text v0.4 by `lang` that its expansion rejects
    ("func @f(%a: memref<f32x$n>) {\n}\n", {"lang": "v0.4"}, "preprocess",
     "1.24-25: undefined identifier $n"),
    ("func @f() {\n  barrier\n}\n", {}, "detect",
     "cannot tell the tensor-language version of this file"),
    (V03, {"defines": {"n": "4"}}, "detect",
     "-D makes definitions for the v0.4 preprocessor, but this file reads as tensor language "
     "v0.3"),
    (V03.replace("arith.add %x, 1.0", "arith.add %x 1.0"), {}, "parse",
     "k.tl:3.21-23: expected ',', found '1.0'"),
    # a v0.3 construct in a file v0.4 by its first marker
    (V04.replace("%x = load %a[%c0] : f32", "%x = arith.add %c0, %c0 : index"), {}, "parse",
     "k.tl:3.10-18: an arith. instruction (v0.4: add, mul, ... without prefix) is tensor "
     "language v0.3 syntax, but this file is parsed as v0.4"),
    (V03.replace("1.0 : f32", "1.0 : f64"), {}, "check",
     "k.tl:3.18-19: type mismatch: %x has type f32, the instruction says f64"),
], ids=["preprocess", "detect-ask", "detect-D", "parse", "parse-foreign", "check"])
def test_an_error_ends_the_pipeline_in_its_stage(traced, text, kwargs, stops_at, message):
    calls, _ = traced
    with pytest.raises(SourceError) as e:
        pipeline.read(text, "k.tl", **kwargs)
    names = [name for name, _, _ in calls]
    assert names == list(STAGES[:STAGES.index(stops_at) + 1])
    assert calls[-1][2] is None  # the last stage called is the one that raised
    _chained(calls[:-1])
    assert message in e.value.format()


def test_misuse_ends_in_the_first_stage(traced):
    calls, counts = traced
    with pytest.raises(ValueError, match="lang must be one of"):
        pipeline.read(V03, lang="v0.5")
    with pytest.raises(TypeError, match="parse\\(\\) needs str"):
        pipeline.read(b"func @f() {}")
    assert [name for name, _, _ in calls] == ["preprocess", "preprocess"]
    assert sum(counts.values()) == 0


def test_warnings_reach_the_caller_once():
    """The checker's warnings come back through `read` as through check(parse(...))."""
    text = ("func @k(%g: group<memref<f32x4>, offset: ?>) {\n"
            "  %a = load %g[0] : group<memref<f32x4>>\n}\n")
    direct: list = []
    tlinterp.check(tlinterp.parse(text, "k.tl"), direct)
    through: list = []
    pipeline.read(text, "k.tl", warnings=through)
    assert direct and [d.format(text) for d in through] == [d.format(text) for d in direct]
