"""The front door for source text of either tensor-language version.

    parse(text, filename, lang=None, defines=None)
                                       lang: None (detect), "v0.3" or "v0.4"; defines: -D
    executable(program)                the v0.3 form the interpreter runs (or NotExecutable)
    lowerable(program)                 that form with no v0.4 construct left (the grid
                                       builtins excepted), as the OpenCL lowering needs (or
                                       NotExecutable "not yet lowered")

The version: `lang` wins; else tlinterp/front/detect.py's markers; else both parsers run and
must agree; readings that differ are checked, and one valid reading is taken, none gives the
errors of both, and only two valid readings ask for --lang.  A syntax error caused by a
construct of the other version is reported as that (at its range).  v0.4 text using the
preprocessor (`$name` definitions, `!calc`) goes through tlinterp/front/preprocess.py first.
"""

from __future__ import annotations

import dataclasses
import importlib
import re
from bisect import bisect_right
from collections.abc import Mapping
from typing import Optional

from tlinterp.front.detect import VERSIONS, ask_for_lang, blank_comments, detect, foreign_construct
from tlinterp.lang import ir
from tlinterp.lang.diagnostics import Diagnostic, NotExecutable, SourceError
from tlinterp.lang.ir import Span

_PREPROCESSOR = re.compile(r"\$[A-Za-z0-9_]|!calc\b")


def parse(text: str, filename: str = "<input>", lang: Optional[str] = None,
          defines: Optional[Mapping[str, str]] = None) -> ir.Program:
    """Parse `text` as tensor language `lang` (None: detect it); raises `SourceError`.
    `defines` are v0.4 preprocessor definitions made before the text (`tlrun -D`); they make
    the text v0.4."""
    if lang is not None and lang not in VERSIONS:
        raise ValueError(f"lang must be one of {', '.join(VERSIONS)} or None, got {lang!r}")
    if defines:
        if lang == "v0.3":
            raise ValueError("preprocessor definitions (-D) are tensor language v0.4; "
                             "the input is read as v0.3")
        try:
            return _parse_preprocessed(text, filename, _parser_v04(), defines)
        except SourceError:
            if lang is None and _reads_as_v03(text, filename):
                raise SourceError([Diagnostic(
                    "-D makes definitions for the v0.4 preprocessor, but this file reads as "
                    "tensor language v0.3 (leave -D out, or give --lang v0.4 to read it as "
                    "v0.4 and see its errors)", None, filename)], text) from None
            raise
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
        return _valid_reading({"v0.3": p3, "v0.4": p4}, filename, text)
    if isinstance(p3, ir.Program):
        return p3
    if isinstance(p4, ir.Program):
        return p4
    # neither: the error of the parse that got further
    e3, e4 = p3, p4
    assert isinstance(e3, SourceError) and isinstance(e4, SourceError)
    return _raise(max((e3, e4), key=_furthest))  # a tie: v0.3 (the established messages)


def _valid_reading(readings: dict[str, ir.Program], filename: str, text: str) -> ir.Program:
    """Both versions parse the text, with different meanings: the reading the checker
    accepts.  Only when both are valid is the version a real question (--lang); when neither
    is, the user needs the errors of both readings, each named by its version, not a question
    about the version."""
    from tlinterp.checker.v03 import check

    errors: dict[str, SourceError] = {}
    for version, program in readings.items():
        try:
            check(program, [])
        except SourceError as e:
            errors[version] = e
    valid = [v for v in readings if v not in errors]
    if len(valid) == 2:
        raise ask_for_lang(filename, "it reads as both v0.3 and v0.4, with different meanings")
    if valid:
        return readings[valid[0]]
    raise SourceError([Diagnostic("this file is valid neither as tensor language v0.3 nor as "
                                  "v0.4 (no construct of only one version decides); the "
                                  "errors of both readings follow (--lang picks one)",
                                  None, filename)]
                      + [dataclasses.replace(d, message=f"(read as {v}) {d.message}")
                         for v, e in errors.items() for d in e.diagnostics], text)


def _reads_as_v03(text: str, filename: str) -> bool:
    """The text has a marker of v0.3, or parses as v0.3."""
    if detect(text) == "v0.3":
        return True
    try:
        _parse(text, filename, "v0.3")
    except SourceError:
        return False
    return True


def _raise(e: SourceError):
    raise e


def _furthest(e: SourceError) -> tuple[int, int]:
    spans = [d.span for d in e.diagnostics if d.span is not None]
    return max(((s.line, s.col) for s in spans), default=(0, 0))


def _parse(text: str, filename: str, lang: str) -> ir.Program:
    if lang == "v0.3":
        from tlinterp.lang.v03.parser import parse as parse03

        try:
            return parse03(text, filename)
        except SourceError as e:
            raise _explained(e, text, filename, lang) from None
    parse04 = _parser_v04()
    if not _PREPROCESSOR.search(blank_comments(text)):
        try:
            return parse04(text, filename)
        except SourceError as e:
            raise _explained(e, text, filename, lang) from None
    return _parse_preprocessed(text, filename, parse04)


def _parser_v04():
    from tlinterp.lang.v04.parser import parse

    return parse


def _parse_preprocessed(text: str, filename: str, parse04,
                        defines: Optional[Mapping[str, str]] = None) -> ir.Program:
    """v0.4 text with `$name` definitions or `!calc`: expanded first; a parse error in the
    expansion is reported at the original text's range (the program keeps the expanded text
    as its source, so later diagnostics quote what was checked)."""
    try:  # by name: no import edge back into the package's front door
        pre_mod = importlib.import_module("tlinterp.front.preprocess")
    except ImportError:
        raise SourceError([Diagnostic("this v0.4 file uses the preprocessor ($name "
                                      "definitions, !calc), which this build lacks", None,
                                      filename)]) from None
    pre = pre_mod.preprocess(text, filename=filename, defines=defines)
    try:
        program = parse04(pre.text, filename)
    except SourceError as e:
        diags = [Diagnostic(d.message, pre.original_span(d.span) if d.span else None,
                            d.filename, d.severity) for d in e.diagnostics]
        raise SourceError(diags, text) from None
    if pre.identity:
        return program
    # every later diagnostic (checker, interpreter, lowering line tables) then quotes and
    # counts in the text as written, where a `$name` use stands for its expansion
    _remap_spans(program, pre.original_span)
    program.pending = [(m, pre.original_span(s) if s else None) for m, s in program.pending]
    program.source = text
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


__all__ = ["parse", "executable", "lowerable"]
