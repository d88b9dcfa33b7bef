"""Which tensor-language version a source file is written in, from unambiguous markers.

Each file is one version.  The same text can mean different things in v0.3 and v0.4 (the `:`
annotation is the operand type in v0.3 and the result type in v0.4), so the version is never
guessed: `--lang`/`lang=` wins; else the markers below decide (a construct only one version
spells; the first one in the file decides); else, without markers, both parsers run and
must agree (an empty file, or one whose every line reads the same in both); differing
readings are checked (tlinterp/front/pipeline.py): one valid reading is taken, none reports the
errors of both, and only two valid readings ask the user for `--lang`.

The same tables explain a syntax error: a v0.3 construct in a v0.4 file (and the reverse) is
reported at its range as belonging to the other version.
"""

from __future__ import annotations

import re
from typing import Optional

from tlinterp.lang.diagnostics import Diagnostic, SourceError
from tlinterp.lang.ir import Span

VERSIONS = ("v0.3", "v0.4")

_T = r"(?:i8|i16|i32|i64|index|f16|bf16|f32|f64|c32|c64|bool)"

# (pattern, what it is) - matched on the text with comments blanked out (offsets preserved)
V04_MARKERS: tuple[tuple[re.Pattern, str], ...] = tuple((re.compile(p, re.M), w) for p, w in (
    (r"\b(?:group_id|num_groups|num_subgroups|subgroup_id)\.[xyz]\b", "a builtin with .x/.y/.z"),
    (r"=\s*(constant)\b", "the constant instruction"),
    (r"\binit\s*\(", "loop-carried values (for ... init(...))"),
    (r",\s*(?:global|local)\s*>", "a memref address space"),
    (r"(?<![\w%@$])(?:bf16|f16|c32|c64)(?![0-9A-Za-z_])", "a v0.4 scalar type"),
    (r"\bcoopmatrix<", "the coopmatrix type"),
    (r"\bcooperative_matrix_\w+", "a cooperative matrix instruction"),
    (r"\bsubgroup_(?:broadcast|exclusive_scan|inclusive_scan|reduce|linear_id|local_id)\w*",
     "a subgroup instruction"),
    (r"\b(?:cumsum|parallel|foreach_tile|associated|atomic_load|atomic_store|atomic_add"
     r"|atomic_max|atomic_min)\b", "a v0.4 instruction"),
    (r"=\s*(min|max|shl|shr|and|or|xor|not|abs|conj|re|im|cos|sin|exp2?|log2?"
     r"|native_\w+)\s+%", "an arithmetic instruction without the arith. prefix"),
    (r"=\s*(equal|not_equal|greater_than(?:_equal)?|less_than(?:_equal)?)\s+%",
     "a comparison without the cmp. prefix"),
    (r"\byield\s*\(", "yield (...)"),
    (r"\bforeach\s*\(", "foreach (...) = (...), (...)"),
    (r"\battributes\s*\{", "an attribute dictionary"),
    (r"\bcast\s+%\w+\s*:\s*" + _T + r"\s*$", "cast with only the result type"),
    (r"\balloca\s*(?:\{[^}\n]*\})?\s*:", "alloca : type"),
    (r"\bbarrier\.(?:global|local)\b", "a barrier with fences"),
    (r"\bgroup<memref<[^<>\n]*(?:<[^<>\n]*>)?[^<>\n]*>\s*x", "a group with a size"),
    (r"\b(?:gemm|gemv|sum|axpby|ger|hadamard|cumsum)\.atomic\b", "the .atomic modifier first"),
    (r"\b(?:gemm|gemv|sum|axpby|ger|hadamard)(?:\.\w+)*\s+%[^:\n]*$(?!\s*:)",
     "a BLAS instruction without types"),
    (r"\bstore\s+%[^:\n]*$(?!\s*:)", "store without a type"),
    (r"\bload\s+%\w+\[[^\]\n]*\]\s*:\s*" + _T + r"\b", "load : result type"),
    (r"\bsize\s+%\w+\[\s*\d+\s*\]\s*:\s*index\b", "size : index"),
))

V03_MARKERS: tuple[tuple[re.Pattern, str], ...] = tuple((re.compile(p, re.M), w) for p, w in (
    (r"\barith\.\w+", "an arith. instruction (v0.4: add, mul, ... without prefix)"),
    (r"\bcmp\.\w+", "a cmp. comparison (v0.4: equal, less_than, ...)"),
    (r"\balloca\s*->", "alloca -> type (v0.4: alloca : type)"),
    (r"\bgroup_id(?![.\w])", "group_id (v0.4: group_id.x : index)"),
    (r"\bgroup_size(?![.\w])", "group_size (v0.4: num_groups.x : index)"),
    (r"\bforeach\s+%", "foreach %i = a, b (v0.4: foreach (%i)=(%a),(%b))"),
    (r"\byield\b[^\n(]*:", "yield with types (v0.4: yield (%a, ...))"),
    (r"\bcast\b[^\n]*->", "cast : from -> to (v0.4: cast %x : to)"),
    (r"(?<![\w%@$])(?:u8|u16|u32|u64|i1)(?=[^0-9A-Za-z_]|x[0-9?])",
     "a v0.2/v0.3 type (u8...u64, i1)"),
    (r"\b(?:work_group_size|subgroup_size)\s*\(", "a v0.3 function attribute"),
    (r"\bfor\s+%\w+\s*=[^{\n]*:\s*(?:i\d+|index)\s*\{", "a typed for loop"),
    (r"\b(?:gemm|gemv|ger|sum|axpby|hadamard(?:_product)?)(?:\.\w+)*\s+[-+]?[\d.]",
     "a literal BLAS operand"),
    (r"\b(?:gemm|gemv|sum|axpby)\.[nt](?:\.[nt])?\.atomic\b", ".atomic after the transposes"),
    (r"\bhadamard_product\b", "hadamard_product (v0.4: hadamard)"),
    (r"\bstore\b[^\n]*:", "store with a type"),
    (r"\bstore\s+[-+]?[\d.]", "store of a literal"),
    (r"\bsubview\s+%\w+\[[^\]\n]*(?:\[\s*:|,\s*:|:\s*\?|^\s*:)", "a v0.3 slice (: or :?)"),
    (r"\bsubview\s+%\w+\[\s*:", "a v0.3 slice (:)"),
    (r"\bexpand\s+%\w+\[[^\]\n]*\?", "? in an expand shape"),
    (r"\blifetime_stop\b", "lifetime_stop"),
    (r"=\s*((?:add|sub|mul|div|rem)\s+[^%\s]+)", "a literal arithmetic operand"),
    (r"\b(?:if|for)\s+[^\n{]*?(?<![\w%])[-+]?\d", "a literal operand"),
    (r"\bgroup<memref<[^<>\n]*(?:<[^<>\n]*>)?[^<>\n]*>\s*[,>]", "a group without a size"),
    (r"\bsize\s+%\w+\[\s*\d+\s*\]\s*:\s*memref<", "size : memref type"),
))


def _either(table) -> str:
    return "|".join(f"(?:{p.pattern})" for p, _ in table)


_ANY_MARKER = re.compile(f"(?P<v03>{_either(V03_MARKERS)})|(?P<v04>{_either(V04_MARKERS)})",
                         re.M)

_COMMENT = re.compile(r';[^\n]*|"[^"\n]*"')


def blank_comments(text: str) -> str:
    """`text` with comments (and attribute strings) replaced by spaces, offsets kept."""
    return _COMMENT.sub(lambda m: " " * len(m.group()) if m.group().startswith(";")
                        else m.group(), text)


def markers(text: str, version: str, first_only: bool = False,
            start: int = 0) -> list[tuple[int, int, str]]:
    """(start, end, description) of each marker of `version` in `text` (comments blanked),
    from offset `start` on."""
    table = V04_MARKERS if version == "v0.4" else V03_MARKERS
    out = []
    for pattern, what in table:
        for m in pattern.finditer(text, start):
            at = 1 if m.lastindex else 0  # group 1, where given, is the construct itself
            out.append((m.start(at), m.end(at), what))
            if first_only:
                break
    return sorted(out)


def detect(text: str) -> Optional[str]:
    """The version of the first marker in `text` (comments skipped); None without markers.
    A file mixing versions then fails to parse at a construct of the other version, which
    is reported as such.  The text is searched in growing windows from its start, so the
    usual file, with a marker in its first lines, costs a few small searches."""
    n = len(text)
    size = 4096
    while True:
        end = n if size >= n else text.find("\n", size)
        end = n if end < 0 else end
        clean = blank_comments(text[:end])
        # a marker must not touch the window's end (it may go on in the next window)
        limit = end if end == n else max(0, end - 400)
        # one scan for the leftmost marker of either version (47 scans of a 4 MB line took
        # half a minute); at one place the v0.3 markers come first, as they always did
        m = _ANY_MARKER.search(clean, 0, end)
        if m and m.end() <= limit:
            return "v0.3" if m.group("v03") is not None else "v0.4"
        if end >= n:
            return None
        size *= 8


_REACH = 1024  # characters a construct of the other version spans, at most


def foreign_construct(text: str, version: str, pos: int, span_of) -> Optional[Diagnostic]:
    """A construct of the other version on the line of `pos` (where a `version` parse
    failed) that begins at or before `pos`, as one diagnostic at its range; None when the
    line has none. (One after `pos` cannot be why the parse stopped there: with a whole
    program on one line, it would blame a construct the parser never reached.)"""
    other = "v0.3" if version == "v0.4" else "v0.4"
    clean = blank_comments(text)
    start = clean.rfind("\n", 0, pos) + 1
    end = clean.find("\n", pos)
    end = len(clean) if end < 0 else end
    # the failing line, and the line before (a construct may end there)
    prev = clean.rfind("\n", 0, max(start - 1, 0)) + 1 if start else 0
    # only these two lines, and no further past `pos` than a construct reaches: a scan of
    # the whole file took half a minute on a 4 MB line
    found = markers(clean[:min(end, pos + _REACH)], other, start=prev)
    for lo in (start, prev):
        for a, b, what in found:
            if lo <= a <= pos:
                while b > a and clean[b - 1] in " \t\r\n":
                    b -= 1
                return Diagnostic(f"{what} is tensor language {other} syntax, but this file "
                                  f"is parsed as {version}", span_of(a, b))
    return None


def ask_for_lang(filename: str, reason: str) -> SourceError:
    return SourceError([Diagnostic(f"cannot tell the tensor-language version of this file "
                                   f"({reason}); give it with --lang v0.3|v0.4 "
                                   "(API: lang=...)", None, filename)])


__all__ = ["VERSIONS", "detect", "markers", "foreign_construct", "blank_comments",
           "ask_for_lang", "Span"]
