"""Type checks of the public API's parameters (tlinterp.parse/check/run, tlgpu.*): a value of
the wrong type is a TypeError naming the call and the parameter, raised before it reaches code
that would fail on it with an AttributeError deep inside."""

from __future__ import annotations

from typing import Any


def expect(api: str, name: str, value: Any, types: type | tuple[type, ...], what: str,
           optional: bool = True) -> None:
    """TypeError "API(NAME=...): expected WHAT, got TYPE" unless `value` is of `types` (or
    None when `optional`); a bool is never taken for an int."""
    if value is None and optional:
        return
    kinds = types if isinstance(types, tuple) else (types,)
    if isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds):
        return
    raise TypeError(f"{api}({name}=...): expected {what}{' or None' if optional else ''}, "
                    f"got {type(value).__name__}")
