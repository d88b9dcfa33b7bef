"""The tensor language reference: parse, check and run kernels.

    program = tlinterp.parse(text, filename="k.tl")   # lang="v0.3"/"v0.4", else detected
    tlinterp.check(program)             # raises SourceError with every diagnostic
    out = tlinterp.run(program, args)   # dict of arrays, .npz convention
"""

from collections.abc import Mapping
from typing import Optional

from tlinterp.lang.diagnostics import (
    ArgumentError,
    BackendError,
    Diagnostic,
    ExecutionError,
    SourceError,
    TLError,
    UndefinedBehaviour,
)


def parse(text: str, filename: str = "<input>", lang: Optional[str] = None,
          defines: Optional[Mapping[str, str]] = None):
    """Parse tensor-language source into an `ir.Program`; raises `SourceError`. `lang` is
    "v0.3" or "v0.4"; None detects it from markers (tlinterp/front/pipeline.py) and asks for it
    (an error) when the file reads as both versions with different meanings. `defines`
    ({NAME: VALUE}) are v0.4 preprocessor definitions made before the text."""
    from tlinterp.apitypes import expect
    from tlinterp.front.pipeline import parse as _parse

    expect("parse", "filename", filename, str, "a file name (str)", optional=False)
    return _parse(text, filename=filename, lang=lang, defines=defines)


def check(program, warnings=None):
    """Check every static rule; returns the program, raises `SourceError` listing all errors.
    Warnings of an accepted program are appended to the list `warnings` when given. Misuse
    (anything but an `ir.Program`) is a `TypeError` naming the parameter."""
    from tlinterp.checker.v03 import check as _check
    from tlinterp.lang.ir import Program

    if not isinstance(program, Program):
        hint = "; parse it first with tlinterp.parse" if isinstance(program, str) else ""
        raise TypeError(f"check(program): expected an ir.Program, got "
                        f"{type(program).__name__}{hint}")
    from tlinterp.apitypes import expect

    expect("check", "warnings", warnings, list, "a list to append the warnings to")
    return _check(program, warnings)


def run(program, args, func=None, groups=None, check=True, **options):
    """Run a function of `program` (IR or source text) on `args` (the .npz convention).
    Misuse of a parameter (wrong type) is a `TypeError` naming it; bad values in `args` or
    `groups` are an `ArgumentError`."""
    from tlinterp.interp import run as _run
    from tlinterp.lang.ir import Program

    if not isinstance(program, (str, Program)):
        raise TypeError(f"run(program): expected source text or an ir.Program, got "
                        f"{type(program).__name__}")
    if func is not None and not isinstance(func, str):
        raise TypeError(f"run(func=...): expected a function name (str) or None, got "
                        f"{type(func).__name__}")
    from tlinterp.apitypes import expect

    expect("run", "check", check, bool, "True or False", optional=False)
    steps = options.get("max_steps")
    if steps is not None and (isinstance(steps, bool) or not isinstance(steps, int)):
        raise TypeError(f"run(max_steps=...): expected an int or None, got "
                        f"{type(steps).__name__}")
    if steps is not None and steps < 0:
        raise ArgumentError(f"max_steps must be >= 0, got {steps}")

    return _run(program, args, func=func, groups=groups, check=check, **options)


__all__ = [
    "parse", "check", "run", "Diagnostic", "TLError", "SourceError", "ArgumentError",
    "UndefinedBehaviour", "ExecutionError", "BackendError",
]
