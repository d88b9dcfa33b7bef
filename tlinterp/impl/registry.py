"""Finding implementations by name.

A name is `NAME` or `NAME:ARGUMENT` where NAME is registered in the entry-point group
`tensor_language.implementations`, or a command template (any text with `{kernel}`). An entry
point refers to a factory `f(argument: str | None, options: ImplOptions) -> Implementation`;
the first line of its docstring describes it in `--list-impls`.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import metadata
from typing import Optional

from tlinterp.impl.base import Implementation, ImplOptions, SpecError

GROUP = "tensor_language.implementations"

Factory = Callable[[Optional[str], ImplOptions], Implementation]


def _builtin() -> dict[str, Factory]:
    # the base package's own adapters, also usable from a source tree without installed
    # metadata (an installed distribution registers the same factories as entry points)
    from tlinterp.impl.inprocess import interp_factory, python_factory
    from tlinterp.impl.irpass import ir_factory

    return {"interp": interp_factory, "tlinterp": interp_factory, "python": python_factory,
            "ir": ir_factory}


def _entry_points() -> dict[str, metadata.EntryPoint]:
    return {ep.name: ep for ep in metadata.entry_points(group=GROUP)}


def _load(name: str, ep: Optional[metadata.EntryPoint]) -> Factory:
    if ep is None:
        return _builtin()[name]
    try:
        factory = ep.load()
    except Exception as e:  # noqa: BLE001 - a broken plug-in package is a usage problem
        raise SpecError(f"implementation '{name}' ({ep.value}) cannot be loaded: "
                        f"{type(e).__name__}: {e}") from None
    if not callable(factory):
        raise SpecError(f"implementation '{name}' ({ep.value}) is not a factory")
    return factory


def names() -> list[str]:
    return sorted(set(_builtin()) | set(_entry_points()))


def available() -> list[tuple[str, str]]:
    """(name, one-line description) of every registered implementation, plus templates."""
    eps = _entry_points()
    rows = []
    for name in names():
        try:
            doc = (_load(name, eps.get(name)).__doc__ or "").strip().splitlines()
        except SpecError as e:
            doc = [f"(unavailable: {e})"]
        rows.append((name, doc[0] if doc else ""))
    rows.append(("'TEMPLATE'", "a command: TOOL {kernel} --args {args} --out {out} "
                 "[--func {func}] [--groups {groups}]"))
    return rows


def is_template(spec: str) -> bool:
    """Whether `spec` names a command template rather than a registered implementation (whose
    argument may hold placeholders too: `opencl-c:cc {tl}`, `ir:pass {tl}`), as `resolve`
    decides."""
    name = spec.partition(":")[0]
    return "{" in spec and ("{" in name or name not in set(_builtin()) | set(_entry_points()))


def resolve(spec: str, options: Optional[ImplOptions] = None) -> Implementation:
    """The implementation `spec` names; SpecError with the known names otherwise."""
    options = options or ImplOptions()
    eps = _entry_points()
    known = set(_builtin()) | set(eps)
    name, sep, arg = spec.partition(":")
    if name in known and "{" not in name:
        impl = _load(name, eps.get(name))(arg if sep else None, options)
        if not isinstance(impl, Implementation):
            raise SpecError(f"implementation '{name}' returned {type(impl).__name__}, "
                            "not an Implementation")
        return impl
    if "{" in spec:
        from tlinterp.impl.template import Template

        return Template(spec, options)
    raise SpecError(f"'{spec}' is not an implementation; known: {', '.join(sorted(known))}, "
                    "python:MODULE:FUNCTION, or a command template with {kernel} {args} "
                    "{out} (see --list-impls; names come from installed package metadata, so "
                    "a package whose entry points changed must be reinstalled)")
