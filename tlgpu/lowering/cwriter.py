"""An indenting OpenCL C writer that remembers which tensor-language span each line came from,
so the device's build log can be mapped back to instructions."""

from __future__ import annotations

from typing import Optional

from tlinterp.lang.ir import Span


class CWriter:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.spans: list[Optional[Span]] = []
        self.depth = 0
        self.span: Optional[Span] = None  # span of the instruction being lowered

    def line(self, text: str = "") -> None:
        self.lines.append(("    " * self.depth + text) if text else "")
        self.spans.append(self.span)

    def open(self, text: str) -> None:
        self.line(text + " {")
        self.depth += 1

    def close(self, text: str = "}") -> None:
        self.depth -= 1
        self.line(text)

    def extend(self, other: CWriter) -> None:
        """Append lines written into a scratch writer (same indentation base)."""
        self.lines.extend(other.lines)
        self.spans.extend(other.spans)

    def scratch(self) -> CWriter:
        w = CWriter()
        w.depth = self.depth
        w.span = self.span
        return w

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"
