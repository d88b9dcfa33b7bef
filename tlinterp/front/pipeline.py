"""The front door for source text of either tensor-language version.

    parse(text, filename, lang=None, defines=None)
                                       lang: None (detect), "v0.3" or "v0.4"; defines: -D
    read(text, ..., check=True, warnings=[...])
                                       the same, then the static check (tlrun, interp, ...)
    executable(program)                the v0.3 form the interpreter runs (or NotExecutable)
    lowerable(program)                 that form with no v0.4 construct left (the grid
                                       builtins excepted), as the OpenCL lowering needs (or
                                       NotExecutable "not yet lowered")

`read` is the whole front end, four stages called once each, in order, each taking the
previous one's result (an error ends it in the stage that found it):

    text ─preprocess─▶ Expanded ─detect─▶ Detected ─parse─▶ Parsed ─check─▶ checked IR

preprocess: the text each version reads: v0.3 the text as written, v0.4 its expansion
    (tlinterp/front/preprocess.py: `-D`, `$name` definitions, `!calc`) when it uses the
    preprocessor; an expansion error ends the front end at once only when the text is v0.4
    by `lang`, else it is the v0.4 reading's error.
detect: the version: `lang` wins; `-D` makes the text v0.4 (a v0.4 reading that fails where
    the text reads as v0.3 says that -D is wrong); else tlinterp/front/detect.py's markers;
    else both readings are parsed here and must agree; readings that differ are checked, one
    valid reading is taken, none gives the errors of both, and only two valid readings ask
    for --lang.  Where it parsed, the chosen reading goes on, so nothing is parsed twice.
parse: the chosen version's parser on its text, unless detection already did; a syntax
    error caused by a construct of the other version is reported as that (at its range).
check: the static rules (tlinterp/checker/), skipped by `parse`.
"""

from __future__ import annotations

import dataclasses
import re
from bisect import bisect_right
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Optional, Union

from tlinterp.front import preprocess as preprocessor
from tlinterp.front.detect import VERSIONS, ask_for_lang, blank_comments, detect, foreign_construct
from tlinterp.lang import ir
from tlinterp.lang.diagnostics import Diagnostic, NotExecutable, SourceError
from tlinterp.lang.ir import Span

_PREPROCESSOR = re.compile(r"\$[A-Za-z0-9_]|!calc\b")

Reading = Union[ir.Program, SourceError]  # one version's parse of the text, or its error


@dataclass(frozen=True)
class Expanded:
    """The preprocess stage's result: the text as written (what v0.3 reads) and, when the
    text uses the preprocessor, v0.4's text: its expansion with the position map back, or the
    error that stopped it. `expansion` None: v0.4 reads the text as written."""

    text: str
    filename: str
    lang: Optional[str]
    defines: Optional[Mapping[str, str]]
    expansion: Union[preprocessor.Preprocessed, SourceError, None] = None


@dataclass(frozen=True)
class Detected:
    """The detect stage's result: the version, why it was chosen, and the chosen reading when
    deciding needed a parse (None: the parse stage parses `version`). `warnings` are the
    checker's on that reading when deciding needed the checker too (None: not checked)."""

    source: Expanded
    version: str
    reason: str
    reading: Optional[Reading] = None
    warnings: Optional[tuple[Diagnostic, ...]] = None


@dataclass(frozen=True)
class Parsed:
    """The parse stage's result: the IR in one version."""

    program: ir.Program
    version: str
    warnings: Optional[tuple[Diagnostic, ...]] = None  # Detected.warnings, carried on


def parse(text: str, filename: str = "<input>", lang: Optional[str] = None,
          defines: Optional[Mapping[str, str]] = None) -> ir.Program:
    """Parse `text` as tensor language `lang` (None: detect it); raises `SourceError`.
    `defines` are v0.4 preprocessor definitions made before the text (`tlrun -D`); they make
    the text v0.4."""
    return read(text, filename, lang, defines, check=False)


def read(text: str, filename: str = "<input>", lang: Optional[str] = None,
         defines: Optional[Mapping[str, str]] = None, *, check: bool = True,
         warnings: Optional[list[Diagnostic]] = None) -> ir.Program:
    """The front end: preprocess, detect, parse and (with `check`) check `text`, each stage
    once and in order; raises `SourceError` from the stage that failed. The checker's
    warnings are appended to `warnings` when given."""
    expanded = stage_preprocess(text, filename, lang, defines)
    detected = stage_detect(expanded)
    parsed = stage_parse(detected)
    if not check:
        return parsed.program
    return stage_check(parsed, warnings)


def stage_preprocess(text: str, filename: str, lang: Optional[str],
                     defines: Optional[Mapping[str, str]]) -> Expanded:
    """The inputs checked, and v0.4's text of a text that uses the preprocessor (`-D`, or
    `$name`/`!calc` outside comments) expanded."""
    if lang is not None and lang not in VERSIONS:
        raise ValueError(f"lang must be one of {', '.join(VERSIONS)} or None, got {lang!r}")
    if defines and lang == "v0.3":
        raise ValueError("preprocessor definitions (-D) are tensor language v0.4; "
                         "the input is read as v0.3")
    if not isinstance(text, str):
        raise TypeError(f"parse() needs str, got {type(text).__name__}")
    if lang == "v0.3" or not (defines or _uses_preprocessor(text)):
        return Expanded(text, filename, lang, defines)
    try:
        expansion: Union[preprocessor.Preprocessed, SourceError] = preprocessor.preprocess(
            text, filename=filename, defines=defines)
    except SourceError as e:
        if lang == "v0.4":
            raise
        expansion = e  # the v0.4 reading's error, should detection choose v0.4
    return Expanded(text, filename, lang, defines, expansion)


def _uses_preprocessor(text: str) -> bool:
    # the substring test first: most texts have neither, and blanking comments of a large
    # file costs more than parsing its first lines
    return ("$" in text or "!calc" in text) and bool(_PREPROCESSOR.search(blank_comments(text)))


def stage_detect(source: Expanded) -> Detected:
    """The version of the text (see the module's docstring); raises `SourceError` when the
    text itself cannot decide (both readings valid and different, or neither valid), or when
    `-D` was given for a text that reads as v0.3."""
    if source.lang is not None:
        return Detected(source, source.lang, "lang")
    if source.defines:
        reading = _read(source, "v0.4")
        if isinstance(reading, SourceError) and _reads_as_v03(source):
            raise SourceError([Diagnostic(
                "-D makes definitions for the v0.4 preprocessor, but this file reads as "
                "tensor language v0.3 (leave -D out, or give --lang v0.4 to read it as "
                "v0.4 and see its errors)", None, source.filename)], source.text)
        return Detected(source, "v0.4", "-D", reading)
    marked = detect(source.text)
    if marked is not None:
        return Detected(source, marked, "a marker")
    return _decide(source, {version: _read(source, version) for version in VERSIONS})


def _reads_as_v03(source: Expanded) -> bool:
    """The text has a marker of v0.3, or parses as v0.3."""
    return detect(source.text) == "v0.3" or isinstance(_read(source, "v0.3"), ir.Program)


def _decide(source: Expanded, readings: dict[str, Reading]) -> Detected:
    """No marker decides: the reading that parses; of two different ones, the one the checker
    accepts; of two failed ones, the parse that got further (its error goes on to the parse
    stage)."""
    p3, p4 = readings["v0.3"], readings["v0.4"]
    if isinstance(p3, ir.Program) and isinstance(p4, ir.Program):
        if p3 == p4:
            return Detected(source, "v0.3", "both readings agree", p3)
        return _valid_reading(source, {"v0.3": p3, "v0.4": p4})
    if isinstance(p3, ir.Program):
        return Detected(source, "v0.3", "only v0.3 parses", p3)
    if isinstance(p4, ir.Program):
        return Detected(source, "v0.4", "only v0.4 parses", p4)
    # a tie: v0.3 (the established messages)
    version = max(VERSIONS, key=lambda v: _furthest(readings[v]))
    return Detected(source, version, "neither parses; this one got further", readings[version])


def _valid_reading(source: Expanded, readings: dict[str, ir.Program]) -> Detected:
    """Both versions parse the text, with different meanings: the reading the checker
    accepts.  Only when both are valid is the version a real question (--lang); when neither
    is, the user needs the errors of both readings, each named by its version, not a question
    about the version."""
    from tlinterp.checker.v03 import check

    errors: dict[str, SourceError] = {}
    warnings: dict[str, list[Diagnostic]] = {}
    for version, program in readings.items():
        warnings[version] = []
        try:
            check(program, warnings[version])
        except SourceError as e:
            errors[version] = e
    valid = [v for v in readings if v not in errors]
    if len(valid) == 2:
        raise ask_for_lang(source.filename,
                           "it reads as both v0.3 and v0.4, with different meanings")
    if valid:
        version = valid[0]
        return Detected(source, version, "the only valid reading", readings[version],
                        tuple(warnings[version]))
    raise SourceError([Diagnostic("this file is valid neither as tensor language v0.3 nor as "
                                  "v0.4 (no construct of only one version decides); the "
                                  "errors of both readings follow (--lang picks one)",
                                  None, source.filename)]
                      + [dataclasses.replace(d, message=f"(read as {v}) {d.message}")
                         for v, e in errors.items() for d in e.diagnostics], source.text)


def stage_parse(detected: Detected) -> Parsed:
    """The IR of the detected version: the reading detection made, else one parse."""
    reading = detected.reading
    if reading is None:
        reading = _read(detected.source, detected.version)
    if isinstance(reading, SourceError):
        raise reading
    return Parsed(reading, detected.version, detected.warnings)


def stage_check(parsed: Parsed, warnings: Optional[list[Diagnostic]] = None) -> ir.Program:
    """The static rules (both versions: tlinterp/checker/v03.py sends v0.4 to v04.py); a
    reading detection already checked is not checked again."""
    if parsed.warnings is not None:
        if warnings is not None:
            warnings.extend(parsed.warnings)
        return parsed.program
    from tlinterp.checker.v03 import check

    return check(parsed.program, warnings)


def _furthest(e: Reading) -> tuple[int, int]:
    assert isinstance(e, SourceError)
    spans = [d.span for d in e.diagnostics if d.span is not None]
    return max(((s.line, s.col) for s in spans), default=(0, 0))


def _read(source: Expanded, version: str) -> Reading:
    """One version's reading of the text: its IR, or the `SourceError` that ends it."""
    text, filename = source.text, source.filename
    try:
        if version == "v0.3":
            from tlinterp.lang.v03.parser import parse as parse03

            try:
                return parse03(text, filename)
            except SourceError as e:
                return _explained(e, text, filename, version)
        from tlinterp.lang.v04.parser import parse as parse04

        if source.expansion is None:
            try:
                return parse04(text, filename)
            except SourceError as e:
                return _explained(e, text, filename, version)
        if isinstance(source.expansion, SourceError):
            return source.expansion
        return _parse_expanded(source.expansion, filename, parse04)
    except SourceError as e:
        return e


def _parse_expanded(pre: preprocessor.Preprocessed, filename: str, parse04) -> ir.Program:
    """v0.4 text with `$name` definitions or `!calc`, expanded: a parse error in the expansion
    is reported at the original text's range (the program keeps the original text as its
    source, so later diagnostics quote what was written)."""
    try:
        program = parse04(pre.text, filename)
    except SourceError as e:
        diags = [Diagnostic(d.message, pre.original_span(d.span) if d.span else None,
                            d.filename, d.severity) for d in e.diagnostics]
        raise SourceError(diags, pre.source) from None
    if pre.identity:
        return program
    # every later diagnostic (checker, interpreter, lowering line tables) then quotes and
    # counts in the text as written, where a `$name` use stands for its expansion
    _remap_spans(program, pre.original_span)
    program.pending = [(m, pre.original_span(s) if s else None) for m, s in program.pending]
    program.source = pre.source
    return program


def _remap_spans(root: object, remap) -> None:
    """Replace every `span` of the IR under `root` (nodes are frozen dataclasses; spans do not
    take part in equality or hashing, so this is safe) by `remap(span)`."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, (tuple, list)):
            stack.extend(obj)
        elif isinstance(obj, dict):
            stack.extend(obj.values())
        elif dataclasses.is_dataclass(obj) and not isinstance(obj, (type, Span)):
            for f in dataclasses.fields(obj):
                value = getattr(obj, f.name)
                if f.name == "span":
                    if value is not None:
                        object.__setattr__(obj, "span", remap(value))
                elif not isinstance(value, (str, int, float, type(None))):
                    stack.append(value)


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
    """What the interpreter runs: a v0.4 program in its v0.3 form, or `NotExecutable` naming
    the first constructs it cannot run yet. The v0.4 checker has checked the program; the
    v0.3 rules are not applied again to the form made for running, since its literals (the
    folded constants) make sizes static that the program declares dynamic:
    `expand %A[0 -> %c8 x 1] : memref<f32x?x1>` with `%c8 = constant 8` is valid v0.4 (and
    what tinytc's constant propagation writes) but a type mismatch to the v0.3 checker."""
    if program.lang != "v0.4":
        return program
    from tlinterp.front.migrate import to_v03

    converted = to_v03(program, "run")
    converted.lang = "v0.3"
    return converted


def lowerable(program: ir.Program) -> ir.Program:
    """What the OpenCL lowering takes: the program in its v0.3 form; `NotExecutable` ("not yet
    lowered: ... at L.C-C") at the first v0.4 type, operation or instruction that remains (the
    grid builtins group_id/num_groups .y/.z excepted: the lowering takes them)."""
    converted = executable(program)
    left = _v04_leftover(converted)  # also a v0.3 form executable() already made
    if left is not None:
        what, span = left
        where = f" at {span}" if span is not None else ""
        raise NotExecutable([Diagnostic(f"not yet lowered: {what}{where}", span,
                                        program.filename)])
    return converted


def _lowered_builtin(inst) -> bool:
    """The grid builtins (group_id / num_groups .x/.y/.z), which the lowering takes."""
    from tlinterp.lang.v04.names import GRID_BUILTINS

    return isinstance(inst, ir.Builtin) and inst.name in GRID_BUILTINS


# v0.4 instructions the lowering takes: control flow and memory (tlgpu/lowering/
# controlflow_v04.py, atomics.py, cumsum.py; `for` with loop-carried values is lowered too)
# and the SPMD constructs (spmd.py, subgroups.py, coopmatrix.py; every builtin is lowered, the
# sub-group ones from the work-item's ids, and the constants left in the v0.3 form are
# coopmatrix constants)
_LOWERED_CTRL = (ir.Associated, ir.ForeachNd, ir.AtomicLoad, ir.AtomicStore,
                 ir.AtomicUpdate, ir.Cumsum)
_LOWERED_SPMD = (ir.Parallel, ir.ForeachTile, ir.SubgroupBroadcast, ir.SubgroupOp, ir.Builtin,
                 ir.Constant, ir.CoopApply, ir.CoopLoad, ir.CoopStore, ir.CoopAtomicUpdate,
                 ir.CoopConstruct, ir.CoopExtract, ir.CoopInsert, ir.CoopMulAdd,
                 ir.CoopPrefetch, ir.CoopReduce, ir.CoopScale)


def _v04_leftover(program: ir.Program) -> Optional[tuple[str, Optional[Span]]]:
    """The first construct v0.3 cannot write that the v0.3 form still holds: (what, where)."""
    from tlinterp.lang.types import ScalarType
    from tlinterp.lang.v04.names import V04_ONLY_BINARY, construct

    # the v0.4 types (f16, bf16, c32, c64), their operations (abs, conj, re, im, the math
    # functions) and inf/NaN constants are lowered in scalar code, memory, control flow, the
    # collectives (tlgpu/lowering/v04/lowp.py, complexnum.py) and the atomics and cumsum
    # (v04/atomics.py, cumsum.py); not yet atomics into c64 (16 bytes: no compare-and-swap)
    for fn in program.functions:
        memrefs = _memref_elements(fn)
        for inst in ir.walk(fn.body):
            span = getattr(inst, "span", None)
            if isinstance(inst, ir.V04_INSTRUCTIONS) and not _lowered_builtin(inst) \
                    and not isinstance(inst, _LOWERED_CTRL + _LOWERED_SPMD):
                return construct(inst), span
            if getattr(inst, "op", None) in V04_ONLY_BINARY:
                return inst.op, span
            if isinstance(inst, ir.Blas) and inst.atomic:  # into c64 (16 bytes: no CAS)
                out = inst.memref_type(inst.output())
                if out.element is ScalarType.c64:
                    return "an atomic update of c64 elements", span
            if isinstance(inst, _LOWERED_CTRL):
                refused = _atomic_v04_refusal(inst, memrefs)
                if refused is not None:
                    return refused, span
    return None


def _memref_elements(fn: ir.Function) -> dict[str, object]:
    """The written type of each memref value of `fn` (arguments and results), by name."""
    from tlinterp.lang.typerules import TypeRuleError, result_types

    types = {a.value.name: a.type for a in fn.args}
    for inst in ir.walk(fn.body):
        try:
            results = result_types(inst)
        except TypeRuleError:  # v0.4 scalar operations (exp, ...): the v0.3 rules lack them
            continue
        for v, t in zip(ir.results_of(inst), results):
            types[v.name] = t
    return types


def _atomic_v04_refusal(inst, types: dict) -> Optional[str]:
    """What of an atomic or `cumsum` on a v0.4 element type the lowering cannot take
    (tlgpu/lowering/v04/atomics.py, cumsum.py take f16, bf16 and c32): a c64 element is 16 bytes,
    with no compare-and-swap that wide; max/min have no order on complex numbers."""
    from tlinterp.lang.types import ScalarType

    if not isinstance(inst, (ir.AtomicLoad, ir.AtomicStore, ir.AtomicUpdate, ir.Cumsum)):
        return None  # associated, foreach: no element type
    target = inst.b if isinstance(inst, ir.Cumsum) else inst.operand
    element = getattr(types.get(target.name), "element", None)
    if element is None or not element.is_complex:
        return None
    if isinstance(inst, ir.AtomicUpdate) and inst.op in ("max", "min"):
        return f"atomic_{inst.op} of complex elements"
    atomic = not isinstance(inst, ir.Cumsum) or inst.atomic
    if atomic and element is ScalarType.c64:
        return "an atomic access to c64 elements"
    return None


__all__ = ["parse", "read", "executable", "lowerable", "Expanded", "Detected", "Parsed",
           "stage_preprocess", "stage_detect", "stage_parse", "stage_check"]
