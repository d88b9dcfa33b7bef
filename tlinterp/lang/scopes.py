"""Names scoped by region, with the rule both versions state: a name cannot be defined where it
is visible (in its own region or an enclosing one), while sibling regions may reuse one.  The
v0.3 checker (tlinterp/checker/v03.py) and the v0.4 parser (tlinterp/lang/v04/parser.py, which
needs the types of the values in scope) keep their names here and report a redefinition with
`redefinition`."""

from __future__ import annotations

from typing import Any, NamedTuple, Optional

from tlinterp.lang.ir import Span


class Binding(NamedTuple):
    type: Any
    span: Optional[Span]  # of the definition
    defined: bool = True  # False: assumed after an error, so that it is reported once


def where(span: Optional[Span]) -> str:
    """`LINE.COL` of a definition in messages."""
    return "?" if span is None else f"{span.line}.{span.col}"


def redefinition(name: str, depth: int, at: Optional[Span], hint: str = "") -> str:
    """The message for a definition of `name` that is visible `depth` regions out (0: the
    same region), defined `at`; `hint` follows the one about an enclosing region."""
    if depth == 0:
        return f"%{name} is already defined at {where(at)}"
    return f"%{name} shadows the definition at {where(at)} in an enclosing region{hint}"


class Scopes:
    """The chain of regions being walked, innermost last."""

    __slots__ = ("stack",)

    def __init__(self) -> None:
        self.stack: list[dict[str, Binding]] = [{}]

    def open(self) -> None:
        self.stack.append({})

    def close(self) -> dict[str, Binding]:
        """Leave the innermost region; its bindings."""
        return self.stack.pop()

    def lookup(self, name: str) -> Optional[Binding]:
        for scope in reversed(self.stack):
            b = scope.get(name)
            if b is not None:
                return b
        return None

    def conflict(self, name: str) -> Optional[tuple[int, Optional[Span]]]:
        """(regions out, where) of the visible definition a new one of `name` would break."""
        for depth, scope in enumerate(reversed(self.stack)):
            b = scope.get(name)
            if b is not None and b.defined:
                return depth, b.span
        return None

    def bind(self, name: str, t: Any, span: Optional[Span], defined: bool = True) -> None:
        self.stack[-1][name] = Binding(t, span, defined)


__all__ = ["Binding", "Scopes", "redefinition", "where"]
