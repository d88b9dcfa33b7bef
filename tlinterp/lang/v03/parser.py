"""Parser: tensor-language source text -> `ir.Program`.

The grammar is `grammar.peg` (parsimonious).  Functions are matched one at a time with the
`function_definition` rule (it keeps the packrat cache small), and the IR is built by a direct
walk over the parse tree (no NodeVisitor: its generic dispatch dominated the run time).

Every failure a user can cause ends in `SourceError`: syntax errors name the tokens expected at
the furthest position the parser reached; integer constants outside [-2^63+1, 2^63-1] and
floating constants that overflow double are rejected; nesting deeper than `MAX_NESTING`
regions is rejected up front.  Deep (but allowed) nesting is parsed in a helper thread with a
large stack and a raised recursion limit, so the caller's limits are left alone.
"""

from __future__ import annotations

import gc
import math
import re
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Optional

from parsimonious.exceptions import ParseError, ParsimoniousError
from parsimonious.expressions import Literal, OneOf, Quantifier, Regex, Sequence
from parsimonious.grammar import Grammar

from tlinterp.lang import blas_syntax, ir, ops
from tlinterp.lang.diagnostics import Diagnostic, SourceError
from tlinterp.lang.ir import Const, Span, Value
from tlinterp.lang.types import (
    INDEX,
    SCALAR_ALIASES,
    GroupType,
    MemrefType,
    ScalarType,
    Type,
    VoidType,
)

GRAMMAR_PATH = Path(__file__).with_name("grammar.peg")
_TRAILING = blas_syntax.TOKEN_END

# The operation tokens, generated from the table of scalar operations: (rule, family, what
# precedes the name, only the names that v0.2 spells bare).
_OP_TOKENS = (("arith_binary_type", ops.BINARY, ".", False),
              ("arith_unary_type", ops.UNARY, ".", False),
              ("comparison_type", ops.COMPARE, ".", False),
              ("binary_op", ops.BINARY, "", True),
              ("unary_op", ops.UNARY, "", True))


def _op_names(family: str, v02: bool) -> list[str]:
    return [o.name for o in ops.OPS if o.family == family and (o.v02 or not v02)]


def grammar_text() -> str:
    """grammar.peg with the rules of the operation tokens appended. The keyword end
    (?![A-Za-z0-9_]) makes the alternatives' order irrelevant (`or` never matches in `ord`)."""
    rules = [f'{rule} = ~r"{re.escape(lead)}({"|".join(_op_names(family, v02))}){_TRAILING}"'
             for rule, family, lead, v02 in _OP_TOKENS]
    return (GRAMMAR_PATH.read_text(encoding="utf-8") + "\n" + "\n".join(rules) + "\n"
            + blas_syntax.rules("v0.3"))


GRAMMAR = Grammar(grammar_text())


def _use_stdlib_re(grammar: Grammar) -> None:
    """parsimonious compiles with the `regex` module when it is installed; the stdlib `re` runs
    these simple token patterns about twice as fast and matches them identically."""
    seen: set[int] = set()
    todo = list(grammar.values())
    while todo:
        e = todo.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, Regex):
            e.re = re.compile(e.re.pattern)  # the grammar uses no regex flags
        todo.extend(getattr(e, "members", ()))


_use_stdlib_re(GRAMMAR)

MAX_NESTING = 1000  # regions inside regions (the function body is level 1); also attributes
INT_MAX = 2**63 - 1  # integer constants lie in [-INT_MAX, INT_MAX] (spec)

_FUNCTION = GRAMMAR["function_definition"]
_SKIP = GRAMMAR["_"]
_WS_OR_COMMENT = re.compile(r"[ \t\r\n;]")
_ECHO = 40  # characters of an unexpected token echoed in a syntax error
_LEXEME = re.compile(r"[%@+-]?[A-Za-z0-9_.]+|->|\S")
_BRACES = re.compile(r';[^\n]*|"(?:[^"\\\n]|\\.)*"|[{}\[\]]')

_SCALARS: dict[str, ScalarType] = {t.value: t for t in ScalarType}
_SCALARS.update(SCALAR_ALIASES)


def parse(text: str, filename: str = "<input>", builder: Optional[type] = None) -> ir.Program:
    """Parse tensor-language source; raises `SourceError` (and nothing else) on bad input.
    `builder` is the _Builder subclass of another surface syntax (tlinterp/lang/v04/parser.py)."""
    if not isinstance(text, str):
        raise TypeError(f"parse() needs str, got {type(text).__name__}")
    builder = builder or _Builder
    depth, too_deep = _max_nesting(text)
    if too_deep is not None:
        where, what = too_deep
        b = builder(text, filename)
        raise SourceError(
            [Diagnostic(f"{what} nested deeper than {MAX_NESTING} levels are not supported",
                        b.span(where, where + 1), filename)], text)
    if depth <= 40:  # the usual case: no thread, no change to the recursion limit
        try:
            return _parse(text, filename, builder)
        except RecursionError:  # the caller was already deep; retry with room to spare
            pass
    return _parse_deep(text, filename, depth, builder)


# --- driver ------------------------------------------------------------------------------------


def _parse(text: str, filename: str, builder: type) -> ir.Program:
    # Parse trees and IR hold no reference cycles, so the cyclic GC only burns time here (it
    # rescans the growing heap of nodes again and again: half the run time on 20k lines).
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _parse_functions(text, filename, builder)
    finally:
        if was_enabled:
            gc.enable()


def _parse_functions(text: str, filename: str, builder_class: type) -> ir.Program:
    builder = builder_class(text, filename)
    functions = []
    pos = builder.SKIP.match(text, 0).end
    n = len(text)
    while pos < n:
        try:
            node = builder.FUNCTION.match(text, pos)
        except ParseError:
            raise builder.syntax_error(pos) from None
        except ParsimoniousError as e:  # never expected; still not a traceback for the user
            raise SourceError([Diagnostic(f"parser failure: {e}", None, filename)], text) from None
        functions.append(builder.function(node))
        pos = node.end
    if builder.diags:
        raise SourceError(builder.diags, text)
    return builder.finish(ir.Program(tuple(functions), filename=filename, source=text,
                                     lang=builder.LANG))


def _parse_deep(text: str, filename: str, depth: int, builder: type) -> ir.Program:
    """Run `_parse` in a thread whose stack and recursion limit fit `depth` nested regions."""
    from tlinterp.lang.deepstack import call_with_frames

    try:
        return call_with_frames(lambda: _parse(text, filename, builder), 30 * depth)
    except RecursionError:
        raise SourceError([Diagnostic("regions nested too deeply to parse", None, filename)],
                          text) from None


def _max_nesting(text: str) -> tuple[int, Optional[tuple[int, str]]]:
    """Deepest nesting of braces and brackets together (comments and strings skipped: what
    the parser recurses on), and, where braces or brackets alone nest deeper than
    MAX_NESTING, the offset of the first that went too deep with what nests there."""
    braces = brackets = best = 0
    for m in _BRACES.finditer(text):
        c = m.group()
        if c == "{":
            braces += 1
            if braces > MAX_NESTING:
                return braces + brackets, (m.start(), "regions and attribute dictionaries")
        elif c == "[":
            brackets += 1
            if brackets > MAX_NESTING:
                return braces + brackets, (m.start(), "attribute arrays")
        elif c == "}":
            braces -= 1
        elif c == "]":
            brackets -= 1
        best = max(best, braces + brackets)
    return best, None


# --- error messages ----------------------------------------------------------------------------


class _Expected:
    """Stands in for parsimonious's ParseError during a second, failing match: it records every
    expression that failed at the furthest position (parsimonious keeps only the last one)."""

    __slots__ = ("_pos", "_pending", "found")

    def __init__(self) -> None:
        self._pos = -1
        self._pending = None
        self.found: list = []

    @property
    def expr(self):  # None makes match_core record unnamed expressions too
        return None

    @expr.setter
    def expr(self, e) -> None:
        self._pending = e

    @property
    def pos(self) -> int:
        return self._pos

    @pos.setter
    def pos(self, p: int) -> None:  # match_core sets expr, then pos
        if p > self._pos:
            self._pos = p
            self.found = [self._pending]
        else:
            self.found.append(self._pending)


# Human names of the lexical rules; keywords and punctuation are shown as the quoted token.
_WORDS: dict[str, list[str]] = {
    "void_type": ["'void'"],
    "scalar_type": ["a scalar type"],
    "integer_type": ["an integer type"],
    **{rule: [f"'{lead}{n}'" for n in _op_names(family, v02)]
       for rule, family, lead, v02 in _OP_TOKENS},
    "transpose": ["'.n'", "'.t'"],
    "local_identifier": ["a local identifier (%name)"],
    "global_identifier": ["a global identifier (@name)"],
    "integer_constant": ["an integer constant"],
    "floating_constant": ["a floating-point constant"],
    "digits": ["a number"],
    **blas_syntax.words("v0.3"),
    "_": [],
}


def _keyword(pattern: str) -> str:
    """`func(?![A-Za-z0-9_])[ \\t...` -> 'func'; `\\(` -> '('."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            out.append(pattern[i + 1])
            i += 2
            continue
        if c in "([":
            break
        out.append(c)
        i += 1
    return "'" + "".join(out) + "'"


def _words(expr, words: Optional[dict[str, list[str]]] = None) -> list[str]:
    words = _WORDS if words is None else words
    if expr.name in words:
        return words[expr.name]
    if isinstance(expr, Regex):
        return [_keyword(expr.re.pattern)]
    return [repr(getattr(expr, "literal", expr.name))]


def _first(expr, memo: dict) -> tuple[frozenset, bool]:
    """FIRST set (terminal rule names) and nullability of a grammar expression."""
    key = id(expr)
    if key in memo:
        return memo[key]
    memo[key] = (frozenset(), False)  # no left recursion in the grammar; cycles end here
    if isinstance(expr, (Regex, Literal)):
        res = (frozenset([expr.name]), expr.name == "_")
    elif isinstance(expr, Quantifier):
        f, null = _first(expr.members[0], memo)
        res = (f, null or expr.min == 0)
    elif isinstance(expr, OneOf):
        parts = [_first(m, memo) for m in expr.members]
        res = (frozenset().union(*(p[0] for p in parts)), any(p[1] for p in parts))
    elif isinstance(expr, Sequence):
        acc: frozenset = frozenset()
        null = True
        for m in expr.members:
            f, n = _first(m, memo)
            acc |= f
            if not n:
                null = False
                break
        res = (acc, null)
    else:
        res = (frozenset(), True)
    memo[key] = res
    return res


def _collapses(grammar: Grammar = GRAMMAR,
               extra: tuple[tuple[str, str], ...] = (("memref_or_group_type",
                                                      "a memref or group type"),),
               ) -> list[tuple[frozenset, str]]:
    """Token sets shown as one phrase when all of them are expected (largest first)."""
    memo: dict = {}
    first = lambda e: _first(e, memo)[0]  # noqa: E731
    value_ops = first(grammar["value_instruction"].members[2]) | {"IF"}
    groups = [
        (first(grammar["instruction"]), "an instruction"),
        (value_ops, "an instruction"),
        (first(grammar["type"]), "a type"),
        *((first(grammar[rule]), phrase) for rule, phrase in extra),
    ]
    return sorted(groups, key=lambda g: -len(g[0]))


_COLLAPSES = _collapses()


def expected_message(names: list[str], extra: Optional[list[str]] = None,
                     grammar: Grammar = GRAMMAR, collapses: Optional[list] = None,
                     words_of: Optional[dict[str, list[str]]] = None) -> str:
    """'expected A, B or C' for the terminal rule names that failed (in the order tried),
    followed by the `extra` words (`grammar`, `collapses`, `words_of`: another syntax's)."""
    collapses = _COLLAPSES if collapses is None else collapses
    names = list(dict.fromkeys(n for n in names if n and n != "_"))
    items: list[object] = list(names)
    present = set(names)
    for group, phrase in collapses:
        if group <= present:
            idx = min(items.index(n) for n in group)
            items = [i for i in items if i not in group]
            items.insert(min(idx, len(items)), ("phrase", phrase))
            present -= group
            present.add(phrase)
    words: list[str] = []
    for it in items:
        if isinstance(it, tuple):
            words.append(it[1])
        else:
            words.extend(_words(grammar[it], words_of))
    words = list(dict.fromkeys(words + (extra or [])))
    if not words:
        return "syntax error"
    if len(words) == 1:
        return f"expected {words[0]}"
    return f"expected {', '.join(words[:-1])} or {words[-1]}"


# --- IR construction ---------------------------------------------------------------------------


def _leaf(node):
    """The rightmost non-empty leaf (a token) of a node."""
    while node.children:
        for c in reversed(node.children):
            if c.end > c.start:
                node = c
                break
        else:
            return node
    return node


class _Builder:
    """Builds IR from parse trees; collects lexical diagnostics (constant ranges)."""

    LANG = "v0.3"
    FUNCTION = _FUNCTION  # the rule one function matches
    SKIP = _SKIP

    def expected(self, names: list[str], extra: list[str]) -> str:
        return expected_message(names, extra)

    def finish(self, program: ir.Program) -> ir.Program:
        """The parsed program (a subclass may attach what it found for the checker)."""
        return program

    def __init__(self, text: str, filename: str):
        self.text = text
        self.filename = filename
        self.line_starts = [0]
        self.line_starts.extend(m.end() for m in re.finditer("\n", text))
        self.diags: list[Diagnostic] = []
        self.types: dict[str, Type] = {}  # written type text -> Type (types repeat a lot)

    # spans ----------------------------------------------------------------------------------

    def span(self, start: int, end: int) -> Span:
        """Span of text[start:end] (end exclusive, > start)."""
        ls = self.line_starts
        line = bisect_right(ls, start)
        col = start - ls[line - 1] + 1
        last = end - 1
        if line == len(ls) or last < ls[line]:
            return Span(line, col, line, col + (last - start))
        eline = bisect_right(ls, last)
        return Span(line, col, eline, last - ls[eline - 1] + 1)

    def token_end(self, node) -> int:
        """End of the token a terminal node matched, without the trailing space/comments."""
        m = _WS_OR_COMMENT.search(self.text, node.start, node.end)
        return m.start() if m else node.end

    def node_span(self, node) -> Span:
        return self.span(node.start, self.token_end(_leaf(node)))

    def error(self, message: str, span: Optional[Span]) -> None:
        self.diags.append(Diagnostic(message, span, self.filename))

    def syntax_error(self, pos: int) -> SourceError:
        expected = _Expected()
        node = self.FUNCTION.match_core(self.text, pos, defaultdict(dict), expected)
        if node is not None or expected.pos < 0:  # cannot happen: the first match failed
            where, names = pos, ["FUNC"]
        else:
            where, names = expected.pos, [getattr(e, "name", "") for e in expected.found
                                          if isinstance(e, (Regex, Literal))]
        # At the start of a top-level item the input may also just end.
        message = self.expected(names, ["end of input"] if where == pos else [])
        if where >= len(self.text):
            ls = self.line_starts
            line = len(ls)
            col = len(self.text) - ls[-1] + 1
            return SourceError([Diagnostic(f"{message}, found end of input",
                                           Span(line, col, line, col), self.filename)],
                               self.text)
        special = self._unexpected_character(where)
        if special is not None:
            return special
        tok = _LEXEME.match(self.text, where)
        end = tok.end() if tok else where + 1
        found = self.text[where:end]
        if len(found) > _ECHO:  # a megabyte-long token is not echoed whole
            found = f"{found[:_ECHO]}... ({len(found)} characters)"
            shown = repr(found[:_ECHO + 3]) + found[_ECHO + 3:]
        else:
            shown = repr(found)
        return SourceError([Diagnostic(f"{message}, found {shown}", self.span(where, end),
                                       self.filename)], self.text)

    def _unexpected_character(self, where: int) -> Optional[SourceError]:
        """A syntax error at a character no token can hold says what the character is: a byte
        order mark, or a non-ASCII letter where an identifier goes (after `%` or `@`)."""
        at = where + 1 if self.text[where] in "%@" and where + 1 < len(self.text) else where
        ch = self.text[at]
        if ch == "\ufeff":
            message = ("byte order mark (U+FEFF): tensor-language source is UTF-8 without one; "
                       "remove it (e.g. save the file as 'UTF-8', not 'UTF-8 with BOM')")
        elif ord(ch) > 127 and at > where:
            message = (f"identifiers are ASCII letters, digits and '_': found {ch!r} "
                       f"(U+{ord(ch):04X})")
        elif ord(ch) > 127:
            message = (f"unexpected character {ch!r} (U+{ord(ch):04X}): "
                       "the language's tokens are ASCII")
        else:
            return None
        return SourceError([Diagnostic(message, self.span(at, at + 1), self.filename)],
                           self.text)

    # terminals ------------------------------------------------------------------------------

    def value(self, node) -> Value:
        """local_identifier -> Value."""
        m = node.match
        return Value(m.group(1), self.span(node.start, m.end(1)))

    def int_token(self, node) -> tuple[int, Optional[Span]]:
        m = node.match
        tok = m.group(1)
        if tok == "true":
            return 1, None
        if tok == "false":
            return 0, None
        digits = tok.lstrip("+-").lstrip("0")
        if len(digits) <= 19:  # int() of huge strings is slow (and limited in Python 3.11)
            v = int(tok)
            if -INT_MAX <= v <= INT_MAX:
                return v, None
        sp = self.span(node.start, m.end(1))
        self.error(f"integer constant {tok if len(tok) < 40 else tok[:37] + '...'} is outside "
                   f"the range [-2^63+1, 2^63-1]", sp)
        return 0, sp

    def int_value(self, node) -> int:
        return self.int_token(node)[0]

    def const_int(self, node) -> Const:
        v, _ = self.int_token(node)
        m = node.match
        return Const(v, False, self.span(node.start, m.end(1)))

    def const_float(self, node) -> Const:
        m = node.match
        tok = m.group(1)
        sp = self.span(node.start, m.end(1))
        try:  # strtod semantics: correctly rounded, hexadecimal exact
            v = float.fromhex(tok) if ("x" in tok or "X" in tok) else float(tok)
        except (OverflowError, ValueError):
            v = math.inf
        if math.isinf(v):
            self.error(f"floating constant {tok if len(tok) < 40 else tok[:37] + '...'} is "
                       "outside the range of double precision", sp)
            v = 0.0
        return Const(v, True, sp)

    def operand(self, node) -> ir.Operand:
        """identifier_or_constant / identifier_or_int_constant / const_or_val -> Operand."""
        while not isinstance(node.expr, Regex):
            node = node.children[0]
        name = node.expr.name
        if name == "local_identifier":
            return self.value(node)
        if name == "integer_constant":
            return self.const_int(node)
        return self.const_float(node)

    @staticmethod
    def items(node) -> list:
        """`x (COMMA x)*` -> [x nodes]."""
        first, rest = node.children
        return [first] + [s.children[1] for s in rest.children]

    def dyn(self, node) -> Optional[int]:
        """constant_or_dynamic -> int or None for '?'."""
        c = node.children[0]
        if c.expr.name == "QUESTION":
            return None
        return self.int_value(c)

    # types ----------------------------------------------------------------------------------

    def type(self, node) -> Type:
        key = self.text[node.start:node.end]
        t = self.types.get(key)
        if t is None:
            t = self.types[key] = self._type(node)
        return t

    def scalar(self, node) -> ScalarType:
        return _SCALARS[node.match.group(1)]

    def _type(self, node) -> Type:
        while isinstance(node.expr, OneOf):  # type, memref_or_group_type
            node = node.children[0]
        name = node.expr.name
        if name in ("scalar_type", "integer_type"):
            return self.scalar(node)
        if name == "memref_type":
            return self.memref(node)
        if name == "group_type":
            _, memref, opt, _ = node.children
            offset: Optional[int] = 0
            if opt.children:
                offset = self.dyn(opt.children[0].children[3])
            return GroupType(self.memref(memref), offset)
        return VoidType()

    def memref(self, node) -> MemrefType:
        _, scalar, shape_node, opt, _ = node.children
        shape = tuple(self.dyn(s.children[1]) for s in shape_node.children)
        stride = None
        if opt.children:
            layout = opt.children[0].children[1]  # strided_layout
            lst = layout.children[1]
            stride = tuple(self.dyn(d) for d in self.items(lst.children[0])) \
                if lst.children else ()
        return MemrefType.make(self.scalar(scalar), shape, stride)

    # functions and regions ------------------------------------------------------------------

    def function(self, node) -> ir.Function:
        _, gid, _, args_opt, _, attrs, body = node.children
        args = []
        if args_opt.children:
            for a in self.items(args_opt.children[0]):
                lid, _, ty = a.children
                args.append(ir.Argument(self.value(lid), self.type(ty), self.node_span(a)))
        wgs: Optional[tuple[int, int]] = None
        sgs: Optional[int] = None
        for attr in attrs.children:
            a = attr.children[0]
            if a.expr.name == "work_group_size_attribute":
                if wgs is not None:
                    self.error("work_group_size given twice", self.node_span(a))
                wgs = (self.int_value(a.children[2]), self.int_value(a.children[4]))
            else:
                if sgs is not None:
                    self.error("subgroup_size given twice", self.node_span(a))
                sgs = self.int_value(a.children[2])
        return ir.Function(gid.match.group(1), tuple(args), self.region(body), wgs, sgs,
                           self.node_span(node))

    def region(self, node) -> ir.Region:
        _, insts, rbrace = node.children
        instruction = self.instruction
        body = [instruction(c.children[0]) for c in insts.children]
        return ir.Region(body, self.span(node.start, self.token_end(rbrace)))

    def instruction(self, node) -> ir.Instruction:
        """node: the chosen alternative of `instruction`."""
        sp = self.node_span(node)
        name = node.expr.name
        if name == "value_instruction":
            lid, _, op = node.children
            op = op.children[0]
            return self.value_instruction(op, self.value(lid), sp)
        return self.other_instruction(node, name, sp)

    # the dialect's hooks (tlinterp/lang/v04/parser.py also defines what it builds)
    def value_instruction(self, op, r: Value, sp) -> ir.Instruction:
        """`op`: the chosen alternative of a `%r = ...` instruction."""
        return _VALUE_BUILDERS[op.expr.name](self, op, r, sp)

    def other_instruction(self, node, name: str, sp) -> ir.Instruction:
        """`node`: an instruction without a single result; `name`: its grammar rule."""
        return _OTHER_BUILDERS[name](self, node, sp)

    # value instructions (node, result, span) -------------------------------------------------

    def load(self, n, r, s):
        _, lid, _, idx, _, _, ty = n.children
        indices = tuple(self.operand(i) for i in self.items(idx.children[0])) \
            if idx.children else ()
        return ir.Load(r, self.value(lid), indices, self.type(ty), s)

    def arith_binary(self, n, r, s):
        _, op, a, _, b, _, ty = n.children
        return ir.Arith(r, op.match.group(1), self.operand(a), self.operand(b),
                        self.scalar(ty), s)

    def arith_unary(self, n, r, s):
        _, op, a, _, ty = n.children
        return ir.ArithUnary(r, op.match.group(1), self.operand(a), self.scalar(ty), s)

    def binary_op(self, n, r, s):
        op, a, _, b, _, ty = n.children
        return ir.Arith(r, op.match.group(1), self.operand(a), self.operand(b),
                        self.scalar(ty), s)

    def unary_op(self, n, r, s):
        op, a, _, ty = n.children
        return ir.ArithUnary(r, op.match.group(1), self.operand(a), self.scalar(ty), s)

    def subview(self, n, r, s):
        _, lid, _, lst, _, _, ty = n.children
        slices = tuple(self.slice(i) for i in self.items(lst.children[0])) \
            if lst.children else ()
        return ir.Subview(r, self.value(lid), slices, self.type(ty), s)

    def slice(self, node) -> ir.Slice:
        alt = node.children[0]
        sp = self.node_span(node)
        if alt.expr.name == "COLON":  # ':' is '0:?'
            return ir.Slice(Const(0, False, sp), None, True, sp)
        off_node, opt = alt.children
        offset = self.operand(off_node)
        if not opt.children:
            return ir.Slice(offset, None, False, sp)
        size_node = opt.children[0].children[1].children[0]
        if size_node.expr.name == "QUESTION":
            return ir.Slice(offset, None, True, sp)
        return ir.Slice(offset, self.operand(size_node), True, sp)

    def alloca(self, n, r, s):
        return ir.Alloca(r, self.type(n.children[2]), s)

    def cast(self, n, r, s):
        _, a, _, t1, _, t2 = n.children
        return ir.Cast(r, self.operand(a), self.scalar(t1), self.scalar(t2), s)

    def compare(self, n, r, s):
        _, cond, a, _, b, _, ty = n.children
        return ir.Compare(r, cond.match.group(1), self.operand(a), self.operand(b),
                          self.scalar(ty), s)

    def expand(self, n, r, s):
        _, lid, _, mode, _, shape, _, _, ty = n.children
        first, rest = shape.children
        entries: list[ir.ExpandEntry] = []
        for e in [first] + [x.children[1] for x in rest.children]:
            c = e.children[0]
            name = c.expr.name
            if name == "QUESTION":
                entries.append(None)
            elif name == "local_identifier":
                entries.append(self.value(c))
            else:
                entries.append(self.int_value(c))
        return ir.Expand(r, self.value(lid), self.int_value(mode), tuple(entries),
                         self.type(ty), s)

    def fuse(self, n, r, s):
        _, lid, _, a, _, b, _, _, ty = n.children
        return ir.Fuse(r, self.value(lid), self.int_value(a), self.int_value(b),
                       self.type(ty), s)

    def group_id(self, n, r, s):
        return ir.GroupId(r, s)

    def group_size(self, n, r, s):
        return ir.GroupSize(r, s)

    def size(self, n, r, s):
        _, lid, _, mode, _, _, ty = n.children
        return ir.Size(r, self.value(lid), self.int_value(mode), self.type(ty), s)

    # other instructions (node, span) --------------------------------------------------------

    def multi_value(self, n, s):
        opt, ifn = n.children
        results = tuple(self.value(v) for v in self.items(opt.children[0].children[0])) \
            if opt.children else ()
        _, cond, types_opt, then, else_opt = ifn.children
        listed = types_opt.children[0].children[2] if types_opt.children else None
        types = tuple(self.scalar(t) for t in self.items(listed.children[0])) \
            if listed is not None and listed.children else ()
        otherwise = self.region(else_opt.children[0].children[1]) if else_opt.children else None
        return ir.If(results, self.operand(cond), types, self.region(then), otherwise, s,
                     empty_arrow=listed is not None and not listed.children)

    def yield_(self, n, s):
        _, vals, _, types = n.children
        values = tuple(self.operand(v) for v in self.items(vals.children[0])) \
            if vals.children else ()
        tys = tuple(self.scalar(t) for t in self.items(types.children[0])) \
            if types.children else ()
        return ir.Yield(values, tys, s)

    def for_(self, n, s):
        _, var, _, a, _, b, step_opt, ty_opt, body = n.children
        step = self.operand(step_opt.children[0].children[1]) if step_opt.children else None
        ty = self.scalar(ty_opt.children[0].children[1]) if ty_opt.children else INDEX
        return ir.For(self.value(var), self.operand(a), self.operand(b), step, ty,
                      self.region(body), s)

    def foreach(self, n, s):
        _, var, _, a, _, b, ty_opt, body = n.children
        ty = self.scalar(ty_opt.children[0].children[1]) if ty_opt.children else INDEX
        return ir.Foreach(self.value(var), self.operand(a), self.operand(b), ty,
                          self.region(body), s)

    def barrier(self, n, s):
        return ir.Barrier(s)

    def lifetime_stop(self, n, s):
        return ir.LifetimeStop(self.value(n.children[1]), s)

    def store(self, n, s):
        _, val, _, lid, _, idx, _, _, ty = n.children
        indices = tuple(self.operand(i) for i in self.items(idx.children[0])) \
            if idx.children else ()
        return ir.Store(self.operand(val), self.value(lid), indices, self.type(ty), s)

    @staticmethod
    def _is_t(node) -> bool:
        return node.match.group(1) == "t"

    def blas(self, n, s):
        return blas_syntax.build(n, "v0.3", s, self._is_t, lambda x: (self.operand(x), None),
                                 self.scalar, self.type)


# Instruction builders by expression name.  A rule that only renames another
# (`barrier_instruction = BARRIER`) is the same expression as its target, so the names are
# looked up in the grammar.  Plain functions, not bound methods: no builder <-> table cycle.
_VALUE_BUILDERS: dict[str, Callable] = {GRAMMAR[k].name: f for k, f in {
    "load_instruction": _Builder.load,
    "arith_binary_instruction": _Builder.arith_binary,
    "arith_unary_instruction": _Builder.arith_unary,
    "subview_instruction": _Builder.subview,
    "alloca_instruction": _Builder.alloca,
    "cast_instruction": _Builder.cast,
    "comparison_instruction": _Builder.compare,
    "expand_instruction": _Builder.expand,
    "fuse_instruction": _Builder.fuse,
    "group_id_instruction": _Builder.group_id,
    "group_size_instruction": _Builder.group_size,
    "size_instruction": _Builder.size,
    "binary_op_instruction": _Builder.binary_op,
    "unary_op_instruction": _Builder.unary_op,
}.items()}
_OTHER_BUILDERS: dict[str, Callable] = {GRAMMAR[k].name: f for k, f in {
    "multi_value_instruction": _Builder.multi_value,
    blas_syntax.RULE: _Builder.blas,
    "barrier_instruction": _Builder.barrier,
    "for_instruction": _Builder.for_,
    "foreach_instruction": _Builder.foreach,
    "lifetime_stop_instruction": _Builder.lifetime_stop,
    "store_instruction": _Builder.store,
    "yield_instruction": _Builder.yield_,
}.items()}

__all__ = ["parse", "GRAMMAR", "GRAMMAR_PATH", "MAX_NESTING", "INT_MAX", "expected_message"]
