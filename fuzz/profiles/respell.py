"""A program's own text in a target's spellings: only the mnemonics the profile spells
differently change, in place, so comments, layout and every other position stay as written."""

from __future__ import annotations

import re
from collections.abc import Mapping

from tlinterp.lang import ir
from tlinterp.lang.v03.printer import mnemonic

__all__ = ["respell"]


def respell(text: str, program: ir.Program, spellings: Mapping[str, str]) -> str:
    """`text` (the source `program` was parsed from) with each instruction's canonical
    mnemonic replaced by `spellings[mnemonic]`. An instruction written in another accepted
    spelling (the target's already, or a v0.2 one) is left as it is."""
    if not spellings:
        return text
    lines = text.split("\n")
    edits: dict[int, list[tuple[int, str, str]]] = {}  # line -> (column, old, new)
    for fn in program.functions:
        for inst in ir.walk(fn.body):
            name = mnemonic(inst)
            span = getattr(inst, "span", None)
            if name not in spellings or span is None or span.line > len(lines):
                continue
            line = lines[span.line - 1]
            end = span.end_col if span.end_line == span.line else len(line)
            m = re.compile(rf"(?<![\w.]){re.escape(name)}(?![\w])").search(
                line, span.col - 1, end)
            if m is not None:
                edits.setdefault(span.line, []).append((m.start(), name, spellings[name]))
    for n, found in edits.items():
        line = lines[n - 1]
        for col, old, new in sorted(found, reverse=True):  # right to left: columns hold
            line = line[:col] + new + line[col + len(old):]
        lines[n - 1] = line
    return "\n".join(lines)
