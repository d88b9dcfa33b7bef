"""Diagnostics (`FILE:LINE.COL-COL: message` + source line + `~~~~`) and the error hierarchy.

Every failure a user can cause ends in a `TLError`; its `exit_status` is what the CLIs return:
2 for rejected source or arguments, 1 for undefined behaviour or a run-time failure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Optional

from tlinterp.lang.ir import Span

ERROR = "error"
WARNING = "warning"  # the program is accepted; `--werror` rejects it


@dataclass(frozen=True)
class Diagnostic:
    message: str
    span: Optional[Span] = None
    filename: str = "<input>"
    severity: str = ERROR

    def format(self, source: str = "") -> str:
        """The message, then the source line(s) with the range underlined. Errors carry no
        severity word (the established format); warnings say `warning:` after the place."""
        label = "warning: " if self.severity == WARNING else ""
        if self.span is None:  # not about a place in a file: no "<input>:" noise
            where = self.severity if self.filename == "<input>" else self.filename
            return f"{where}: {label if where != self.severity else ''}{self.message}"
        head = f"{self.filename}:{self.span}: {label}{self.message}"
        lines = _lines(source)
        if not (1 <= self.span.line <= len(lines)):
            return head
        text = lines[self.span.line - 1].expandtabs(1)
        start = self.span.col
        end = self.span.end_col if self.span.end_line == self.span.line else len(text)
        end = max(start, min(end, max(len(text), start)))
        text, start, end = _clip(text, start, end)
        return f"{head}\n{text}\n{' ' * (start - 1)}{'~' * (end - start + 1)}"


# A quoted source line is cut to a window around the blamed range (a minified or generated
# file can have one multi-megabyte line); the columns in the header stay exact.
MAX_LINE = 160
_CONTEXT = 40


def _clip(text: str, start: int, end: int) -> tuple[str, int, int]:
    """`text` cut to at most about MAX_LINE characters around columns start..end (1-based),
    with '...' where it was cut; returns the new text and columns."""
    if len(text) <= MAX_LINE:
        return text, start, end
    lo = max(0, start - 1 - _CONTEXT)
    hi = min(len(text), max(end, start + MAX_LINE - 2 * _CONTEXT) + _CONTEXT)
    hi = min(hi, lo + MAX_LINE)  # an enormous range is underlined only in part
    left = "..." if lo else ""
    right = "..." if hi < len(text) else ""
    shift = len(left) - lo
    return left + text[lo:hi] + right, start + shift, min(end, hi) + shift


@lru_cache(maxsize=4)  # split once per source, not once per diagnostic (was quadratic)
def _lines(source: str) -> list[str]:
    return source.splitlines()


# Diagnostics shown by TLError.format; the rest are counted (all stay in `.diagnostics`).
MAX_SHOWN = 100


class TLError(Exception):
    """Base of every error the tools report to a user (never a traceback)."""

    exit_status = 1

    def __init__(self, diagnostics: Sequence[Diagnostic] | str, source: str = ""):
        if isinstance(diagnostics, str):
            diagnostics = [Diagnostic(diagnostics)]
        self.diagnostics = list(diagnostics)
        self.source = source
        super().__init__(self.format())

    def format(self) -> str:
        shown = [d.format(self.source) for d in self.diagnostics[:MAX_SHOWN]]
        rest = len(self.diagnostics) - len(shown)
        if rest > 0:
            shown.append(f"... and {rest} more error(s) not shown")
        return "\n".join(shown)


class SourceError(TLError):
    """The source was rejected: a syntax error or a violated static rule."""

    exit_status = 2


class ArgumentError(TLError):
    """The arguments (`.npz` or the `args` dict) do not match the function."""

    exit_status = 2


class UndefinedBehaviour(TLError):
    """The program did something undefined at run time (reported by the checking interpreter)."""

    exit_status = 1


class ExecutionError(TLError):
    """A run-time failure that is not undefined behaviour (step budget, memory guard, device)."""

    exit_status = 1


class BackendError(TLError):
    """The OpenCL backend cannot run this (no device, build failure, missing extension)."""

    exit_status = 2


def decode_source(data: bytes, filename: str) -> str:
    """`data` as UTF-8 source text; a byte that is not UTF-8 is a SourceError at its line and
    column (counted in characters, as every diagnostic), not at a byte offset."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line_start = data.rfind(b"\n", 0, e.start) + 1
        line = data.count(b"\n", 0, e.start) + 1
        col = len(data[line_start:e.start].decode("utf-8", "replace")) + 1
        text = data.decode("utf-8", "replace")
        bad = " ".join(f"0x{b:02x}" for b in data[e.start:e.end])
        raise SourceError([Diagnostic(f"the source is not UTF-8 text (byte {bad}: {e.reason})",
                                      Span(line, col, line, col), filename)], text) from None


class NotExecutable(TLError):
    """A v0.4 construct this pass (the interpreter, the lowering, the v0.3 printer) does not
    handle yet; `tlrun --check` and `--emit ir --lang v0.4` still accept it. Exit status 2:
    the program is rejected for running, not wrong."""

    exit_status = 2


def not_yet(inst, what: str = "executable") -> NotExecutable:
    """`not yet executable: cumsum at 3.5-40` for a v0.4 instruction (raise the result)."""
    from tlinterp.lang.v04.names import construct

    span = getattr(inst, "span", None)
    where = f" at {span}" if span is not None else ""
    return NotExecutable([Diagnostic(f"not yet {what}: {construct(inst)}{where}", span)])


def no_equivalent(what: str, lang: str, span: Optional[Span] = None) -> SourceError:
    """`cumsum has no v0.3 equivalent` at `span` (migration and printing; raise the result)."""
    return SourceError([Diagnostic(f"{what} has no {lang} equivalent", span)])
