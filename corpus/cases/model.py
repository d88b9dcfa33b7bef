"""The kinds of corpus case (valid, invalid, undefined) and where a diagnostic's range lies in
a source; every case module builds these."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from tlinterp.io.args import Groups


@dataclass
class ValidCase:
    """A kernel, its arguments and the expected output (.npz convention, all keys)."""

    category: str  # directory under valid/
    name: str
    source: str
    args: dict[str, np.ndarray]
    expected: dict[str, np.ndarray]
    tags: dict[str, list[str]]  # instruction, type, layout
    func: Optional[str] = None
    groups: Optional[Groups] = None  # a count, or a v0.4 grid
    warns: str = ""  # source text an expected warning covers; "" for none
    warns_line: int = 1  # its first match at or after this line
    warning: str = ""  # its message, filled in from the checker at generation time
    lang: str = "v0.3"  # the kernel's tensor-language version ("v0.4": its meta says so)

    @property
    def id(self) -> str:
        return f"valid/{self.category}/{self.name}"

    def warning_range(self) -> str:
        return text_range(self.source, self.warns, self.warns_line, 1)


@dataclass
class InvalidCase:
    """A program that must be rejected; `blame` is the source text the diagnostic must cover
    (its `occurrence`-th match at or after line `line`; "" is the end of the input)."""

    name: str
    rule: str
    source: str
    blame: str
    line: int = 1
    occurrence: int = 1  # which match of `blame` from line `line` on
    message: str = ""  # filled in from the checker at generation time, reviewed by eye
    restriction: str = ""  # set when the v0.3 text does not state the rule: why we keep it
    lang: str = "v0.3"  # the program's tensor-language version ("v0.4": its meta says so)
    # further independent errors the reference reports after the first, in order: (blame,
    # line, occurrence) each; only the first decides the case, the tests check them all
    more: tuple = ()

    @property
    def id(self) -> str:
        return f"invalid/{self.name}"

    def more_ranges(self) -> list[str]:
        return [text_range(self.source, b, line, occ) for b, line, occ in self.more]

    def blame_range(self) -> str:
        """`L.C-C` (or `L.C-L2.C2` when the blamed text spans lines), 1-based, inclusive."""
        try:
            return text_range(self.source, self.blame, self.line, self.occurrence)
        except ValueError as e:
            raise ValueError(f"{self.name}: {e}") from None


def text_range(source: str, text: str, line: int, occurrence: int) -> str:
    """The range of the `occurrence`-th match of `text` at or after line `line` ("" is the
    end of the input), as `L.C-C` or `L.C-L2.C2`."""
    starts = [0] + [i + 1 for i, ch in enumerate(source) if ch == "\n"]
    if not text:
        return f"{len(starts)}.1-1"
    begin = starts[min(line, len(starts)) - 1] - 1
    for _ in range(occurrence):
        begin = source.find(text, begin + 1)
        if begin < 0:
            raise ValueError(f"blame text {text!r} not in the source")
    end = begin + len(text) - 1

    def pos(offset):
        n = max(i for i, s in enumerate(starts) if s <= offset)
        return n + 1, offset - starts[n] + 1

    (l1, c1), (l2, c2) = pos(begin), pos(end)
    return f"{l1}.{c1}-{c2}" if l1 == l2 else f"{l1}.{c1}-{l2}.{c2}"


@dataclass
class UndefinedCase:
    """A kernel whose run is undefined; the reference must report `kind`."""

    name: str
    kind: str
    source: str
    args: dict[str, np.ndarray]
    func: Optional[str] = None
    groups: Optional[Groups] = None  # a count, or a v0.4 grid
    tags: dict[str, list[str]] = field(default_factory=dict)
    lang: str = "v0.3"  # the kernel's tensor-language version ("v0.4": its meta says so)

    @property
    def id(self) -> str:
        return f"undefined/{self.name}"
