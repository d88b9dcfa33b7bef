"""The tensor language v0.4 preprocessor: `$name = value` definitions, `$name` uses, `!calc(...)`.

A text-to-text pass run before the v0.4 parser. Definitions are removed, uses are replaced by
the (already expanded) text of their value, and a position map lets every diagnostic on the
expanded text be reported in the original text: a position in copied text maps to itself, a
position inside an expansion maps to the `$name` use that produced it.

What it accepts follows tinytc v0.4.0's parser, where the preprocessor is part of the grammar
(docs/language.md "Preprocessor", docs/semantics.md "v0.4: where the reference text and tinytc
v0.4.0 disagree"): a definition stands at global scope or directly in a region, where an
instruction could stand; its value is a constant, a string, a type, an array or dictionary
attribute, another definition, or `!calc(...)`, and is evaluated once, where it is defined; a
name is defined once in a scope and all the scopes inside it; a use must follow its definition.
Errors are `SourceError`s pointing into the original text; the first one ends preprocessing
(later ones would mostly be consequences).
"""

from __future__ import annotations

import argparse
import re
from bisect import bisect_right
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Optional

from tlinterp.lang.diagnostics import ArgumentError, Diagnostic, SourceError
from tlinterp.lang.ir import Span

INT_MAX = 2**63 - 1
# tinytc lexes integer literals into int64 and rejects -2**63 as a literal (as C++ does).
INT_MIN_LITERAL = -INT_MAX
# The expanded text may not grow beyond this many characters (definitions that double at
# every level would otherwise make 2**n characters from n lines).
MAX_EXPANDED = 1 << 24
# Nesting of brackets inside one definition's value (the value parser is recursive).
MAX_NESTING = 200

_NAME = r"(?:[0-9]+|[A-Za-z][A-Za-z0-9_]*)"
_DEF_NAME = re.compile(_NAME + r"\Z")
_DEF_TOKEN = re.compile(r"\$" + _NAME)

# Keywords of tinytc's lexer that a definition's value can contain; the lexer takes the
# longest keyword at a position (there is no identifier token), so `f32x4` is `f32` `x` `4`.
_SCALAR_TYPES = ("i8", "i16", "i32", "i64", "index", "bf16", "f16", "f32", "f64", "c32", "c64")
_ATTR_NAMES = ("alignment", "shape_gcd", "stride_gcd", "unroll", "work_group_size",
               "subgroup_size")
_VALUE_KEYWORDS = (*_SCALAR_TYPES, "bool", "coopmatrix", "memref", "group", "x", "strided",
                   "offset", "local", "global", "matrix_a", "matrix_b", "matrix_acc", "true",
                   "false", "min", "max", *_ATTR_NAMES)
# Words that cannot start a keyword match longer than the ones above (e.g. `xor`, `index`).
_OTHER_KEYWORDS = ("xor", "max", "min", "local", "global")
_KEYWORD = re.compile("|".join(sorted({re.escape(k) for k in _VALUE_KEYWORDS + _OTHER_KEYWORDS},
                                      key=len, reverse=True)))

_FLOAT = re.compile(
    r"[-+]?(?:0x(?:(?:[0-9a-fA-F]*\.[0-9a-fA-F]+|[0-9a-fA-F]+\.)(?:[pP][-+]?[0-9]+)?"
    r"|[0-9a-fA-F]+[pP][-+]?[0-9]+)"
    r"|(?:[0-9]*\.[0-9]+|[0-9]+\.)(?:[eE][-+]?[0-9]+)?|[0-9]+[eE][-+]?[0-9]+|inf|nan)")
_INT = re.compile(r"[-+]?[0-9]+")

# One token of the main scan: what the preprocessor must see (comments and strings, so that a
# `$` or a bracket inside them is ignored; definitions; brackets) and words, so that it knows
# the token before and after a definition.
_MAIN = re.compile(
    r"(?P<ws>[ \t\v\r\n]+)|(?P<comment>;[^\n]*)|(?P<string>\"[^\"]*\")"
    r"|(?P<def>\$" + _NAME + r")|(?P<calc>!calc)"
    r"|(?P<word>[%@.]?[A-Za-z0-9_]+)|(?P<arrow>->|<=)|(?P<punct>.)", re.S)
_SKIP = re.compile(r"(?:[ \t\v\r\n]+|;[^\n]*)*")

# Brackets whose contents can hold a definition (global scope is the bottom of the stack).
_REGION, _DICT, _ARRAY, _COMPLEX, _PAREN = "region", "dict", "array", "complex", "paren"
# A `{` after one of these opens a dictionary attribute, not a region.
_DICT_AFTER = {"attributes", "alloca", "=", ",", "["}
# A definition stands where an instruction could: first, after `{` or `}`, or after the last
# token of a complete instruction (a value, an integer, a type, `barrier` and its fences);
# values, definitions and integers are recognised by their first character.
_ENDS_STATEMENT = {"{", "}", ")", "]", ">", ".local", ".global", "barrier", "bool",
                   *_SCALAR_TYPES}
# ... and must be followed by what can start a statement.
_STATEMENT_START = {"func", "axpby", "barrier", "cumsum", "gemm", "gemv", "ger", "for",
                    "foreach", "foreach_tile", "hadamard", "sum", "yield", "if", "parallel",
                    "store", "atomic_store", "cooperative_matrix_prefetch",
                    "cooperative_matrix_atomic_store", "cooperative_matrix_store"}
_SEPARATE = set(" \t\v\r\n(),[]{}<>:=")


@dataclass(frozen=True)
class Definition:
    """One `$name = value`: its kind (int, float, bool, string, type, array, dict), the
    expanded value text, the int value of an integer, and where it was defined."""

    name: str
    kind: str
    text: str
    start: int  # offsets of the whole `$name = value` in the original (-1: from -D)
    end: int
    value: Optional[int] = None


@dataclass(frozen=True)
class Segment:
    """Expanded text [out, out+length) came from the original at orig (copied, one to one)
    or, for an expansion, from the use at original [orig, orig_end)."""

    out: int
    length: int
    orig: int
    orig_end: int
    expansion: Optional[Definition] = None


@dataclass
class Preprocessed:
    """The expanded text and the map back to the original."""

    text: str
    source: str
    segments: list[Segment] = field(default_factory=list)
    definitions: list[Definition] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._outs = [s.out for s in self.segments]
        self._src_lines = _line_starts(self.source)
        self._out_lines: Optional[list[int]] = None

    @property
    def identity(self) -> bool:
        """True when nothing was expanded or removed (the text is the original)."""
        return self.text is self.source or self.text == self.source

    def origin(self, pos: int) -> tuple[int, int]:
        """The original range [start, end) that expanded offset `pos` stands for: one character
        of copied text, or the whole `$name` use of an expansion."""
        if self.identity or not self.segments:
            return pos, pos + 1
        i = bisect_right(self._outs, pos) - 1
        if i < 0:
            return 0, 1
        seg = self.segments[i]
        if seg.expansion is not None:
            return seg.orig, seg.orig_end
        if pos >= seg.out + seg.length:  # past the last segment (end of text)
            off = seg.orig + seg.length + (pos - seg.out - seg.length)
            return off, off + 1
        off = seg.orig + (pos - seg.out)
        return off, off + 1

    def original_range(self, start: int, end: int) -> tuple[int, int]:
        """Expanded [start, end) -> original [start, end)."""
        a, _ = self.origin(start)
        _, b = self.origin(max(start, end - 1))
        return a, max(b, a + 1)

    def span(self, start: int, end: int) -> Span:
        """The `Span` in the original text of expanded text [start, end)."""
        a, b = self.original_range(start, end)
        return _span(self._src_lines, a, b)

    def original_span(self, span: Span) -> Span:
        """A `Span` over the expanded text (what the parser reports) as a `Span` over the
        original text."""
        if self.identity:
            return span
        if self._out_lines is None:
            self._out_lines = _line_starts(self.text)
        ls = self._out_lines
        start = ls[min(span.line, len(ls)) - 1] + span.col - 1
        end = ls[min(span.end_line, len(ls)) - 1] + span.end_col
        return self.span(start, max(end, start + 1))


def _line_starts(text: str) -> list[int]:
    starts = [0]
    starts.extend(m.end() for m in re.finditer("\n", text))
    return starts


def _span(ls: list[int], start: int, end: int) -> Span:
    line = bisect_right(ls, start)
    col = start - ls[line - 1] + 1
    last = max(start, end - 1)
    eline = bisect_right(ls, last)
    return Span(line, col, eline, last - ls[eline - 1] + 1)


class _Error(Exception):
    def __init__(self, message: str, start: int, end: int):
        super().__init__(message)
        self.message, self.start, self.end = message, start, end


_FLAG_SHOWN = 60  # characters of a -D flag quoted in a message; a flag may be 100 KB


def _flag_text(flag: str) -> str:
    """A -D flag as messages quote it: its start, and its length when cut."""
    if len(flag) <= _FLAG_SHOWN:
        return flag
    return f"{flag[:_FLAG_SHOWN]}... ({len(flag)} characters)"


def parse_define_flag(flag: str) -> tuple[str, str]:
    """`-D NAME=VALUE` (also `$NAME=VALUE`) -> (NAME, VALUE); for argparse's `type=`."""
    name, eq, value = flag.partition("=")
    name = name.strip()
    if name.startswith("$"):
        name = name[1:]
    if not eq or not _DEF_NAME.match(name):
        raise argparse.ArgumentTypeError(
            f"-D {_flag_text(flag)!r}: expected NAME=VALUE with NAME a letter followed by "
            "letters, digits and '_' (or only digits)")
    if not value.strip():
        raise argparse.ArgumentTypeError(f"-D {_flag_text(flag)!r}: the value is empty")
    return name, value


def define_flags(flags: Iterable[tuple[str, str]]) -> dict[str, str]:
    """The (NAME, VALUE) pairs of `-D` flags as definitions; a name given twice is an
    `ArgumentError` naming it (the second no longer overrides the first unseen)."""
    defines: dict[str, str] = {}
    for name, value in flags:
        if name in defines:
            raise ArgumentError(f"-D {_flag_text(name)} is given twice "
                                f"({_flag_text(defines[name])!r} and {_flag_text(value)!r}): "
                                "define each name once")
        defines[name] = value
    return defines


def preprocess(text: str, *, defines: Optional[Mapping[str, str]] = None,
               filename: str = "<input>") -> Preprocessed:
    """Expand `text` (v0.4 source). `defines` are definitions made before the text, in order,
    as if the text began with `$NAME = VALUE` lines. Raises `SourceError`."""
    if not defines and "$" not in text and "!calc" not in text:
        return Preprocessed(text, text)
    return _Expander(text, filename).run(defines or {})


def _join(tokens: list[str]) -> str:
    """Value tokens as one text: a space only where two tokens would otherwise merge."""
    out: list[str] = []
    prev = ""
    for t in tokens:
        if prev and (prev[-1] not in _SEPARATE and t[0] not in _SEPARATE
                     or t == "x" or prev == "x"):  # `memref<f32 x 4>`, as people write it
            out.append(" ")
        out.append(t)
        if t == ",":
            out.append(" ")
        prev = out[-1]
    return "".join(out)


class _ValueParser:
    """A definition's value (tinytc's `def_rhs`), read with tinytc's tokens; uses inside it
    are expanded from the scopes at the definition."""

    def __init__(self, text: str, lookup):
        self.text = text
        self.lookup = lookup  # (name, start, end) -> Definition
        self.depth = 0

    # tokens ---------------------------------------------------------------------------
    def skip(self, pos: int) -> int:
        return _SKIP.match(self.text, pos).end()

    def token(self, pos: int) -> tuple[str, str, int, int]:
        """(kind, text, start, end) of the token at pos (after space and comments)."""
        t = self.text
        pos = self.skip(pos)
        if pos >= len(t):
            return "eof", "", pos, pos
        c = t[pos]
        if c == "$":
            m = _DEF_TOKEN.match(t, pos)
            if m:
                return "def", m.group(), pos, m.end()
        if c == '"':
            end = t.find('"', pos + 1)
            if end < 0:
                raise _Error("unterminated string", pos, pos + 1)
            return "string", t[pos:end + 1], pos, end + 1
        if t.startswith("!calc", pos):
            return "calc", "!calc", pos, pos + 5
        mf, mi = _FLOAT.match(t, pos), _INT.match(t, pos)
        kw = _KEYWORD.match(t, pos)
        best = max((m for m in (mf, mi) if m), key=lambda m: m.end() - m.start(), default=None)
        if best and (not kw or best.end() > kw.end()):
            return ("float" if best is mf and (not mi or mf.end() > mi.end()) else "int",
                    best.group(), pos, best.end())
        if kw:
            return "kw", kw.group(), pos, kw.end()
        return "punct", c, pos, pos + 1

    def expect(self, pos: int, what: str) -> int:
        kind, tok, a, b = self.token(pos)
        if tok != what:
            raise _Error(f"expected '{what}', found {_found(kind, tok)}", a, max(b, a + 1))
        return b

    # values ---------------------------------------------------------------------------
    def rhs(self, pos: int) -> tuple[str, str, Optional[int], int]:
        """(kind, text, int value, end) of the value at pos."""
        kind, tok, a, b = self.token(pos)
        if kind == "int":
            return "int", str(_int_literal(tok, a, b)), _int_literal(tok, a, b), b
        if kind == "float":
            return "float", tok, None, b
        if kind == "string":
            return "string", tok, None, b
        if tok in ("true", "false"):
            return "bool", tok, None, b
        if kind == "def":
            d = self.lookup(tok[1:], a, b)
            return d.kind, d.text, d.value, b
        if kind == "calc":
            value, end = self.calc(b)
            return "int", str(value), value, end
        if tok == "[":
            toks, end = self.array(a)
            return "array", _join(toks), None, end
        if tok == "{":
            toks, end = self.dict(a)
            return "dict", _join(toks), None, end
        if kind == "kw" and (tok in _SCALAR_TYPES or tok in ("bool", "memref", "coopmatrix",
                                                             "group")):
            toks, end = self.type(a)
            return "type", _join(toks), None, end
        raise _Error("expected a constant, a string, a type, an array or dictionary attribute,"
                     f" a definition or !calc(...) after '=', found {_found(kind, tok)}",
                     a, max(b, a + 1))

    def nest(self, pos: int) -> None:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise _Error(f"value nested more than {MAX_NESTING} deep", pos, pos + 1)

    def int_or_def(self, pos: int, dynamic: bool = False) -> tuple[str, int]:
        kind, tok, a, b = self.token(pos)
        if kind == "int":
            return str(_int_literal(tok, a, b)), b
        if dynamic and tok == "?":
            return "?", b
        if kind == "def":
            d = self.lookup(tok[1:], a, b)
            if d.kind != "int":
                raise _Error(f"${d.name} is not an integer (it is {_a(d.kind)})", a, b)
            return d.text, b
        raise _Error(f"expected an integer{' or ?' if dynamic else ''},"
                     f" found {_found(kind, tok)}", a, max(b, a + 1))

    def type(self, pos: int) -> tuple[list[str], int]:
        kind, tok, a, b = self.token(pos)
        if kind == "def":
            d = self.lookup(tok[1:], a, b)
            if d.kind != "type":
                raise _Error(f"${d.name} is not a type (it is {_a(d.kind)})", a, b)
            return [d.text], b
        if tok in _SCALAR_TYPES or tok == "bool":
            return [tok], b
        if tok not in ("memref", "coopmatrix", "group"):
            raise _Error(f"expected a type, found {_found(kind, tok)}", a, max(b, a + 1))
        self.nest(a)
        toks = [tok, "<"]
        pos = self.expect(b, "<")
        inner_at = self.skip(pos)
        inner, pos = self.type(pos)
        toks += inner
        # what tinytc checks when it makes the type (also for a definition never used)
        inner_kind = inner[0].split("<")[0]
        if tok == "group" and inner_kind != "memref":
            raise _Error("a group's members must be memrefs", inner_at, pos)
        if tok != "group" and inner_kind not in _SCALAR_TYPES:
            raise _Error(f"the element type of a {tok} must be a number type", inner_at, pos)
        modes = 0
        if tok == "coopmatrix":
            for _ in range(2):
                pos = self.expect(pos, "x")
                n, pos = self.int_or_def(pos)
                toks += ["x", n]
            pos = self.expect(pos, ",")
            kind, use, a, b = self.token(pos)
            if use not in ("matrix_a", "matrix_b", "matrix_acc"):
                raise _Error(f"expected matrix_a, matrix_b or matrix_acc, found"
                             f" {_found(kind, use)}", a, max(b, a + 1))
            toks += [",", use]
            pos = b
        elif tok == "group":
            pos = self.expect(pos, "x")
            n, pos = self.int_or_def(pos, dynamic=True)
            toks += ["x", n]
            if self.token(pos)[1] == ",":
                pos = self.expect(self.expect(self.expect(pos, ","), "offset"), ":")
                n, pos = self.int_or_def(pos, dynamic=True)
                toks += [",", "offset", ":", n]
        else:
            while self.token(pos)[1] == "x":
                n, pos = self.int_or_def(self.token(pos)[3], dynamic=True)
                toks += ["x", n]
                modes += 1
            if self.token(pos)[1] == "," and self.token(self.token(pos)[3])[1] == "strided":
                pos = self.expect(self.expect(self.expect(pos, ","), "strided"), "<")
                toks += [",", "strided", "<"]
                strides, strides_at = 0, self.skip(pos)
                if self.token(pos)[1] != ">":
                    while True:
                        n, pos = self.int_or_def(pos, dynamic=True)
                        toks.append(n)
                        strides += 1
                        if self.token(pos)[1] != ",":
                            break
                        toks.append(",")
                        pos = self.token(pos)[3]
                if strides != modes:
                    raise _Error(f"{strides} strides for {modes} modes: shape and stride list"
                                 " must have the same length", strides_at, max(pos, strides_at + 1))
                pos = self.expect(pos, ">")
                toks.append(">")
            if self.token(pos)[1] == ",":
                kind, space, a, b = self.token(self.token(pos)[3])
                if space not in ("local", "global"):
                    raise _Error(f"expected local or global, found {_found(kind, space)}", a,
                                 max(b, a + 1))
                toks += [",", space]
                pos = b
        pos = self.expect(pos, ">")
        self.depth -= 1
        return toks + [">"], pos

    def attribute(self, pos: int) -> tuple[list[str], int]:
        kind, tok, a, b = self.token(pos)
        if tok == "[":
            return self.array(a)
        if tok == "{":
            return self.dict(a)
        if kind in ("int", "string") or tok in ("true", "false"):
            return [str(_int_literal(tok, a, b)) if kind == "int" else tok], b
        if kind == "def":
            d = self.lookup(tok[1:], a, b)
            if d.kind in ("float", "type"):
                raise _Error(f"${d.name} is {_a(d.kind)}, not an attribute", a, b)
            return [d.text], b
        raise _Error(f"expected an attribute, found {_found(kind, tok)}", a, max(b, a + 1))

    def array(self, pos: int) -> tuple[list[str], int]:
        return self.listed(pos, "[", "]", self.attribute)

    def dict(self, pos: int) -> tuple[list[str], int]:
        return self.listed(pos, "{", "}", self.entry)

    def entry(self, pos: int) -> tuple[list[str], int]:
        """`name=attribute` in a dictionary."""
        kind, name, a, b = self.token(pos)
        if not (kind == "string" or name in _ATTR_NAMES):
            raise _Error("expected an attribute name (alignment, shape_gcd, stride_gcd,"
                         " subgroup_size, unroll, work_group_size or a string), found"
                         f" {_found(kind, name)}", a, max(b, a + 1))
        pos = self.expect(b, "=")
        inner, pos = self.attribute(pos)
        return [name, "="] + inner, pos

    def listed(self, pos: int, opening: str, closing: str,
               item: Callable[[int], tuple[list[str], int]]) -> tuple[list[str], int]:
        """`opening item, item, ... closing` (an array or a dictionary), possibly empty."""
        self.nest(pos)
        pos = self.expect(pos, opening)
        toks = [opening]
        if self.token(pos)[1] != closing:
            while True:
                inner, pos = item(pos)
                toks += inner
                if self.token(pos)[1] != ",":
                    break
                toks.append(",")
                pos = self.token(pos)[3]
        pos = self.expect(pos, closing)
        self.depth -= 1
        return toks + [closing], pos

    def calc(self, pos: int) -> tuple[int, int]:
        """`(rpn)` after `!calc`: int64 arithmetic as tinytc does it in C++ (division
        truncates toward zero, the remainder takes the dividend's sign), but overflow and
        division by zero, undefined there, are errors here."""
        open_at = self.skip(pos)
        pos = self.expect(pos, "(")
        stack: list[tuple[int, int]] = []  # (value, start offset of its expression)
        while True:
            kind, tok, a, b = self.token(pos)
            if tok == ")":
                break
            if kind == "int":
                stack.append((_int_literal(tok, a, b), a))
            elif kind == "def":
                d = self.lookup(tok[1:], a, b)
                if d.kind != "int" or d.value is None:
                    raise _Error(f"${d.name} is not an integer (it is {_a(d.kind)})", a, b)
                stack.append((d.value, a))
            elif tok in ("+", "-", "*", "/", "%", "^", "min", "max"):
                if len(stack) < 2:
                    raise _Error(f"'{tok}' needs two operands before it", a, b)
                (y, _), (x, start) = stack.pop(), stack.pop()
                stack.append((_apply(tok, x, y, start, b), start))
            else:
                raise _Error("expected an integer, a definition, + - * / % ^ min max or ')',"
                             f" found {_found(kind, tok)}", a, max(b, a + 1))
            pos = b
        if len(stack) != 1:
            what = "nothing" if not stack else f"{len(stack)} values"
            raise _Error(f"!calc must leave exactly one value, leaves {what}", open_at, b)
        return stack[0][0], b


def _apply(op: str, x: int, y: int, start: int, end: int) -> int:
    if op in ("/", "%") and y == 0:
        raise _Error("division by zero in !calc", start, end)
    if op == "^":
        if y < 0:
            raise _Error("exponent must be larger or equal than 0", start, end)
        if abs(x) >= 2 and y >= 64:
            raise _Error("!calc result does not fit a 64-bit integer", start, end)
        r = x ** y
    elif op == "/":
        r = abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)
    elif op == "%":
        r = x - y * (abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1))
    else:
        r = {"+": x + y, "-": x - y, "*": x * y, "min": min(x, y), "max": max(x, y)}[op]
    if not -INT_MAX - 1 <= r <= INT_MAX:
        raise _Error("!calc result does not fit a 64-bit integer", start, end)
    return r


def _int_literal(tok: str, a: int, b: int) -> int:
    digits = tok.lstrip("+-").lstrip("0")
    v = int(tok) if len(digits) <= 19 else None  # int() of huge strings is slow
    if v is None or not INT_MIN_LITERAL <= v <= INT_MAX:
        raise _Error(f"integer overflow: {tok[:40]}{'...' if len(tok) > 40 else ''}", a, b)
    return v


def _a(kind: str) -> str:
    return {"int": "an integer", "float": "a floating constant", "bool": "a boolean",
            "string": "a string", "type": "a type", "array": "an array attribute",
            "dict": "a dictionary attribute"}[kind]


def _found(kind: str, tok: str) -> str:
    return "end of input" if kind == "eof" else repr(tok[:40])


class _Expander:
    def __init__(self, text: str, filename: str):
        self.text = text
        self.filename = filename
        self.scopes: list[dict[str, Definition]] = [{}]
        self.out: list[str] = []
        self.out_len = 0
        self.segments: list[Segment] = []
        self.definitions: list[Definition] = []
        self.last_char = ""  # last character written to the output

    def run(self, defines: Mapping[str, str]) -> Preprocessed:
        for name, value in defines.items():
            self.define_flag(name, value)
        try:
            self.scan()
        except _Error as e:
            raise SourceError([Diagnostic(e.message, _span(_line_starts(self.text), e.start,
                                                           max(e.end, e.start + 1)),
                                          self.filename)], self.text) from None
        return Preprocessed("".join(self.out), self.text, self.segments, self.definitions)

    def define_flag(self, name: str, value: str) -> None:
        where = f"-D {_flag_text(f'{name}={value}')}"
        if not _DEF_NAME.match(name):
            raise SourceError([Diagnostic(f"{where}: not a definition name")])
        try:
            self.check_new(name, -1, -1)
            kind, text, val, end = _ValueParser(value, self.lookup_in(value)).rhs(0)
            if _SKIP.match(value, end).end() != len(value):
                raise _Error(f"unexpected {value[end:].strip()[:40]!r} after the value", end,
                             len(value))
        except _Error as e:
            raise SourceError([Diagnostic(f"{where}: {e.message}")]) from None
        d = Definition(name, kind, text, -1, -1, val)
        self.scopes[0][name] = d
        self.definitions.append(d)

    # names ------------------------------------------------------------------------------
    def find(self, name: str) -> Optional[Definition]:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def lookup_in(self, source: str, defining: str = ""):
        def lookup(name: str, a: int, b: int) -> Definition:
            d = self.find(name)
            if d is None:
                if name == defining:
                    raise _Error(f"${name} is used in its own definition", a, b)
                raise _Error(f"undefined identifier ${name}", a, b)
            return d
        return lookup

    def check_new(self, name: str, a: int, b: int) -> None:
        other = self.find(name)
        if other is not None:
            where = ("by -D" if other.start < 0
                     else f"at {_span(_line_starts(self.text), other.start, other.end)}")
            raise _Error(f"${name} is already defined {where}", a, b)

    # output -----------------------------------------------------------------------------
    def emit(self, s: str, orig: int, orig_end: int, expansion: Optional[Definition]) -> None:
        if not s:
            return
        if self.last_char and self.last_char not in _SEPARATE and s[0] not in _SEPARATE:
            # keep tokens apart that touched only through a removed or expanded text
            self.segments.append(Segment(self.out_len, 1, orig, orig, None) if expansion is None
                                 else Segment(self.out_len, 1, orig, orig_end, expansion))
            self.out.append(" ")
            self.out_len += 1
        self.segments.append(Segment(self.out_len, len(s), orig, orig_end, expansion))
        self.out.append(s)
        self.out_len += len(s)
        self.last_char = s[-1]
        if self.out_len > MAX_EXPANDED:
            raise _Error(f"the expanded text exceeds {MAX_EXPANDED} characters", orig,
                         max(orig_end, orig + 1))

    # the scan ---------------------------------------------------------------------------
    def scan(self) -> None:
        text = self.text
        stack: list[str] = []
        prev = ""  # previous significant token
        copy_from = 0
        pos = 0
        n = len(text)
        while pos < n:
            m = _MAIN.match(text, pos)
            kind, tok, end = m.lastgroup, m.group(), m.end()
            if kind in ("ws", "comment"):
                pos = end
                continue
            if kind == "string" or (kind == "punct" and tok == '"'):
                if kind == "punct":  # an unterminated string: the parser reports it
                    pos = n
                    continue
            elif kind == "calc":
                raise _Error("!calc may only stand on the right of a definition ($name ="
                             " !calc(...))", pos, end)
            elif kind == "def":
                after = _SKIP.match(text, end).end()
                is_def = text.startswith("=", after) and not text.startswith("==", after)
                top = stack[-1] if stack else _REGION
                if is_def and top == _DICT:
                    raise _Error(f"{tok} cannot be defined here, nor name an attribute",
                                 pos, end)
                if is_def:
                    self.emit(text[copy_from:pos], copy_from, pos, None)
                    pos = copy_from = self.definition(pos, end, after, top, prev)
                    prev = "}"  # a definition ends like a complete statement
                    continue
                if top == _COMPLEX:
                    raise _Error(f"{tok} cannot stand for a part of a complex constant: only"
                                 " floating literals are accepted there", pos, end)
                d = self.find(tok[1:])
                if d is None:
                    raise _Error(f"undefined identifier {tok}", pos, end)
                self.emit(text[copy_from:pos], copy_from, pos, None)
                self.emit(d.text, pos, end, d)
                copy_from = end
            elif tok == "{":
                stack.append(_DICT if prev in _DICT_AFTER or (
                    stack and stack[-1] == _PAREN) else _REGION)
                if stack[-1] == _REGION:
                    self.scopes.append({})
            elif tok == "[":
                stack.append(_COMPLEX if prev == "constant" else _ARRAY)
            elif tok == "(":
                stack.append(_PAREN)
            elif tok in ("}", "]", ")") and stack:
                closed = stack.pop()
                if closed == _REGION and len(self.scopes) > 1:
                    self.scopes.pop()
            prev = tok
            pos = end
        self.emit(text[copy_from:], copy_from, n, None)

    def definition(self, start: int, name_end: int, eq: int, top: str, prev: str) -> int:
        text = self.text
        name = text[start + 1:name_end]
        if top != _REGION:
            raise _Error("a definition may only stand at global scope or in a region",
                         start, name_end)
        if prev and not (prev in _ENDS_STATEMENT or prev[0] in "%$0123456789"):
            raise _Error(f"a definition cannot follow {prev!r}: it must stand where an"
                         " instruction could", start, name_end)
        self.check_new(name, start, name_end)
        parser = _ValueParser(text, self.lookup_in(text, defining=name))
        kind, value_text, value, end = parser.rhs(eq + 1)
        if len(value_text) > MAX_EXPANDED:
            raise _Error(f"the value of ${name} exceeds {MAX_EXPANDED} characters", start, end)
        nxt = _MAIN.match(text, _SKIP.match(text, end).end()) if end < len(text) else None
        if nxt is not None and nxt.end() > nxt.start():
            word = nxt.group()
            if not (word in ("}", "") or nxt.lastgroup in ("def", "ws", "comment")
                    or word[0] == "%" or word in _STATEMENT_START):
                raise _Error(f"unexpected {word[:40]!r} after the definition of ${name}: a"
                             " definition is followed by an instruction, a definition, a"
                             " function or the end of a region", nxt.start(), nxt.end())
        d = Definition(name, kind, value_text, start, end, value)
        self.scopes[-1][name] = d
        self.definitions.append(d)
        return end
