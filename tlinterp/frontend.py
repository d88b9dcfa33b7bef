"""The front door for source text of either tensor-language version.

    parse(text, filename, lang=None)   lang: None (detect), "v0.3" or "v0.4"
    executable(program)                the v0.3 form the interpreter runs (or NotExecutable)

The version: `lang` wins; else tlinterp/langdetect.py's markers; else both parsers run and
must agree, or the error asks for --lang.  A syntax error caused by a construct of the other
version is reported as that (at its range).  v0.4 text using the preprocessor (`$name`
definitions, `!calc`) goes through tlinterp/preprocess.py first.
"""

from __future__ import annotations

import importlib
import re
from bisect import bisect_right
from typing import Optional

from . import ir
from .diagnostics import Diagnostic, SourceError
from .ir import Span
from .langdetect import VERSIONS, ask_for_lang, blank_comments, detect, foreign_construct

_PREPROCESSOR = re.compile(r"\$[A-Za-z0-9_]|!calc\b")


def parse(text: str, filename: str = "<input>", lang: Optional[str] = None) -> ir.Program:
    """Parse `text` as tensor language `lang` (None: detect it); raises `SourceError`."""
    if lang is not None and lang not in VERSIONS:
        raise ValueError(f"lang must be one of {', '.join(VERSIONS)} or None, got {lang!r}")
    if not isinstance(text, str):
        raise TypeError(f"parse() needs str, got {type(text).__name__}")
    lang = lang or detect(text)
    if lang is not None:
        return _parse(text, filename, lang)
    results: dict[str, object] = {}
    for version in VERSIONS:
        try:
            results[version] = _parse(text, filename, version)
        except SourceError as e:
            results[version] = e
    p3, p4 = results["v0.3"], results["v0.4"]
    if isinstance(p3, ir.Program) and isinstance(p4, ir.Program):
        if p3 == p4:
            return p3
        raise ask_for_lang(filename, "it reads as both v0.3 and v0.4, with different meanings")
    if isinstance(p3, ir.Program):
        return p3
    if isinstance(p4, ir.Program):
        return p4
    # neither: the error of the parse that got further
    e3, e4 = p3, p4
    assert isinstance(e3, SourceError) and isinstance(e4, SourceError)
    return _raise(max((e3, e4), key=_furthest))  # a tie: v0.3 (the established messages)


def _raise(e: SourceError):
    raise e


def _furthest(e: SourceError) -> tuple[int, int]:
    spans = [d.span for d in e.diagnostics if d.span is not None]
    return max(((s.line, s.col) for s in spans), default=(0, 0))


def _parse(text: str, filename: str, lang: str) -> ir.Program:
    if lang == "v0.3":
        from .parser import parse as parse03

        parse_one = parse03
    else:
        from .parser_v04 import parse as parse04

        parse_one = parse04
        if _PREPROCESSOR.search(blank_comments(text)):
            text = _preprocess(text, filename)
    try:
        return parse_one(text, filename)
    except SourceError as e:
        raise _explained(e, text, filename, lang) from None


def _preprocess(text: str, filename: str) -> str:
    try:  # by name: the preprocessor is a separate module (another branch), maybe absent here
        pre = importlib.import_module("tlinterp.preprocess")
    except ImportError:
        raise SourceError([Diagnostic("this v0.4 file uses the preprocessor ($name "
                                      "definitions, !calc), which this build lacks", None,
                                      filename)]) from None
    out = pre.preprocess(text)
    return out[0] if isinstance(out, tuple) else out


def _explained(e: SourceError, text: str, filename: str, lang: str) -> SourceError:
    """A syntax error at a construct of the other version, said so at its range."""
    if len(e.diagnostics) != 1 or e.diagnostics[0].span is None:
        return e
    d = e.diagnostics[0]
    starts = [0] + [m.end() for m in re.finditer("\n", text)]
    pos = starts[d.span.line - 1] + d.span.col - 1 if d.span.line <= len(starts) else len(text)

    def span_of(a: int, b: int) -> Span:
        line = bisect_right(starts, a)
        eline = bisect_right(starts, b - 1)
        return Span(line, a - starts[line - 1] + 1, eline, b - 1 - starts[eline - 1] + 1)

    found = foreign_construct(text, lang, pos, span_of)
    if found is None:
        return e
    return SourceError([Diagnostic(found.message, found.span, filename)], e.source)


def executable(program: ir.Program) -> ir.Program:
    """What the interpreter runs: a v0.4 program in its v0.3 form (checked by the v0.3
    rules too), or `NotExecutable` naming the first constructs it cannot run yet."""
    if program.lang != "v0.4":
        return program
    from .checker import check
    from .migrate import to_v03

    converted = to_v03(program, "run")
    converted.lang = "v0.3"
    if any(isinstance(i, ir.V04_INSTRUCTIONS) for f in converted.functions
           for i in ir.walk(f.body)):
        return converted  # SPMD constructs kept for the interpreter: the v0.4 checker's rules
    return check(converted)


__all__ = ["parse", "executable"]
