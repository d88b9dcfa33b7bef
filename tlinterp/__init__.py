"""The tensor language reference: parse, check and run kernels.

    program = tlinterp.parse(text, filename="k.tl")
    tlinterp.check(program)             # raises SourceError with every diagnostic
    out = tlinterp.run(program, args)   # dict of arrays, .npz convention
"""

from .diagnostics import (
    ArgumentError,
    BackendError,
    Diagnostic,
    ExecutionError,
    SourceError,
    TLError,
    UndefinedBehaviour,
)


def parse(text: str, filename: str = "<input>"):
    """Parse tensor-language source into an `ir.Program`; raises `SourceError`."""
    from .parser import parse as _parse

    return _parse(text, filename=filename)


def check(program, warnings=None):
    """Check every static rule; returns the program, raises `SourceError` listing all errors.
    Warnings of an accepted program are appended to the list `warnings` when given."""
    from .checker import check as _check

    return _check(program, warnings)


def run(program, args, func=None, groups=None, check=True, **options):
    """Run a function of `program` (IR or source text) on `args` (the .npz convention)."""
    from .interp import run as _run

    return _run(program, args, func=func, groups=groups, check=check, **options)


__all__ = [
    "parse", "check", "run", "Diagnostic", "TLError", "SourceError", "ArgumentError",
    "UndefinedBehaviour", "ExecutionError", "BackendError",
]
